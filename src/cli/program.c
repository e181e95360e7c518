/*
 * program.c - what the subcommands that run a user's program need to know
 * about it before running it: where exec finds it, whether the loader would
 * honour LD_PRELOAD for it, and where a drop-in allocator library lives.
 */
#include "cli.h"

#include <elf.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

bool mk_resolve_command(const char *cmd, char *out, size_t cap)
{
    if (strchr(cmd, '/')) {
        snprintf(out, cap, "%s", cmd);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t len = strcspn(path, ":");
        snprintf(out, cap, "%.*s/%s", (int)len, len ? path : ".", cmd);
        struct stat st;
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return true;
        path += len + (path[len] == ':');
    }
    return false;
}

/* A 64-bit ELF file without a PT_INTERP segment is started by the kernel
 * directly: no dynamic loader, so nothing reads LD_PRELOAD. */
static bool elf_is_static(int fd)
{
    Elf64_Ehdr eh;

    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
        return false; /* a script, or not ours to judge: exec decides */
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph,
                  (off_t)(eh.e_phoff + i * (uint64_t)eh.e_phentsize)) !=
            (ssize_t)sizeof ph)
            return false;
        if (ph.p_type == PT_INTERP)
            return false;
    }
    return true;
}

/* Would exec run it in secure mode (AT_SECURE), where the loader ignores
 * LD_PRELOAD? The kernel asks for it when exec changes the effective user or
 * group away from the real one, or raises capabilities: a set-id bit naming
 * someone else, or file capabilities for anyone but root (who has them all).
 * A set-id bit naming the caller changes nothing (root running su), and a
 * nosuid mount ignores the bits and the capabilities alike. */
static bool exec_is_secure(int fd, const struct stat *st)
{
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
        return false;
    if ((st->st_mode & S_ISUID) && st->st_uid != getuid())
        return true;
    if ((st->st_mode & S_ISGID) && st->st_gid != getgid())
        return true;
    return getuid() != 0 && fgetxattr(fd, "security.capability", NULL, 0) > 0;
}

mk_program_kind mk_program_kind_of(const char *file)
{
    struct stat st;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    mk_program_kind kind = MK_PROGRAM_PRELOADABLE;

    if (fd < 0)
        return kind; /* exec will say why */
    if (fstat(fd, &st) == 0 && exec_is_secure(fd, &st))
        kind = MK_PROGRAM_SETID;
    else if (elf_is_static(fd))
        kind = MK_PROGRAM_STATIC;
    close(fd);
    return kind;
}

const char *mk_find_own_library(const char *name, char *buf, size_t len)
{
    char exe[PATH_MAX], rel[PATH_MAX], path[2 * PATH_MAX + 2], full[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    if (n <= 0)
        return NULL;
    exe[n] = 0;
    const char *bindir = dirname(exe);
    /* beside the binary (a build tree), then where the tracer is installed
     * (MEMKIT_PRELOAD_REL: from the bindir to the tracer) */
    snprintf(rel, sizeof rel, "%s", MEMKIT_PRELOAD_REL);
    for (int i = 0; i < 2; i++) {
        if (i == 0)
            snprintf(path, sizeof path, "%s/%s", bindir, name);
        else
            snprintf(path, sizeof path, "%s/%s/%s", bindir, dirname(rel), name);
        if (access(path, R_OK) == 0 && realpath(path, full) &&
            (size_t)snprintf(buf, len, "%s", full) < len)
            return buf;
    }
    return NULL;
}

const char *mk_find_library(const char *soname, char *buf, size_t len)
{
    static const char *const dirs[] = {
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/lib/x86_64-linux-gnu",
    };

    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(buf, len, "%s/%s", dirs[i], soname);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    return NULL;
}

void mk_last_line(int fd, char *out, size_t len)
{
    char buf[4096];
    struct stat sb;
    off_t at = fstat(fd, &sb) == 0 && sb.st_size > (off_t)sizeof buf - 1
                   ? sb.st_size - (off_t)sizeof buf + 1
                   : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, at);

    out[0] = 0;
    if (n <= 0)
        return;
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
    char *nl = strrchr(buf, '\n');
    snprintf(out, len, "%s", nl ? nl + 1 : buf);
}
