/*
 * debugcache.c - separate debug files with their compressed sections
 * inflated, kept on disk by build id (debugcache.h says why).
 *
 * A cache entry is <dir>/<build id in hex>.debug: the debug file with every
 * SHF_COMPRESSED section inflated and the rest copied as it is, laid out
 * anew by libelf. It is written under a temporary name, synced, then
 * renamed: a reader sees a whole entry or none, and two memkits making the
 * same entry at once both rename a whole copy. An entry is used only when
 * its build id is the module's.
 */
#define _GNU_SOURCE
#include "debugcache.h"

#include "../trace/kv_table.h"

#include <elfutils/libdwelf.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The cache's directory into buf; false when the cache is off or there is
 * no home to put it in. */
static bool cache_dir(char *buf, size_t cap)
{
    const char *dir = getenv("MEMKIT_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (dir)
        n = dir[0] ? snprintf(buf, cap, "%s/debug", dir) : -1;
    else if (xdg && xdg[0] == '/') /* the XDG rule: a relative one is ignored */
        n = snprintf(buf, cap, "%s/memkit/debug", xdg);
    else if (home && home[0] == '/')
        n = snprintf(buf, cap, "%s/.cache/memkit/debug", home);
    else
        n = -1;
    return n > 0 && (size_t)n < cap;
}

/* mkdir -p: true when path is a directory at the end. */
static bool make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return false;
    }
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

/* Does elf's build id equal id? */
static bool has_build_id(Elf *elf, const unsigned char *id, int len)
{
    const void *got;
    ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &got) : -1;
    return n == len && memcmp(got, id, (size_t)len) == 0;
}

/* The cache entry at path, opened, if it is there and of this build. */
static int open_entry(const char *path, const unsigned char *id, int len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    bool ok = has_build_id(elf, id, len);
    elf_end(elf);
    if (!ok)
        close(fd);
    return ok ? fd : -1;
}

/* Is the file worth an entry: compressed sections, and nothing that a copy
 * elsewhere would break (a dwz alternate file named relative to it; more
 * sections than the plain section count can say)? */
static bool worth_caching(Elf *elf)
{
    size_t nsections, strndx;
    if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrnum(elf, &nsections) != 0 ||
        elf_getshdrstrndx(elf, &strndx) != 0 || nsections >= SHN_LORESERVE)
        return false;
    bool compressed = false;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            return false;
        const char *name = elf_strptr(elf, strndx, sh.sh_name);
        if (name && strcmp(name, ".gnu_debugaltlink") == 0)
            return false;
        compressed |= (sh.sh_flags & SHF_COMPRESSED) != 0;
    }
    return compressed;
}

/* Writes in, its compressed sections inflated, to fd. Sections keep their
 * order, so their indices (sh_link, sh_info, e_shstrndx) stay right; libelf
 * places them and the tables anew. */
static bool write_inflated(Elf *in, int fd)
{
    GElf_Ehdr eh;
    size_t nphdrs;
    Elf *out = elf_begin(fd, ELF_C_WRITE, NULL);
    bool ok = out && gelf_getehdr(in, &eh) && elf_getphdrnum(in, &nphdrs) == 0 &&
              gelf_newehdr(out, gelf_getclass(in)) && gelf_update_ehdr(out, &eh) &&
              (nphdrs == 0 || gelf_newphdr(out, nphdrs));
    for (size_t i = 0; ok && i < nphdrs; i++) {
        GElf_Phdr ph;
        ok = gelf_getphdr(in, (int)i, &ph) && gelf_update_phdr(out, (int)i, &ph);
    }
    for (Elf_Scn *scn = elf_nextscn(in, NULL); ok && scn; scn = elf_nextscn(in, scn)) {
        GElf_Shdr sh;
        ok = gelf_getshdr(scn, &sh) != NULL;
        if (ok && (sh.sh_flags & SHF_COMPRESSED)) /* inflated in memory, in place */
            ok = elf_compress(scn, 0, 0) >= 0 && gelf_getshdr(scn, &sh) != NULL;
        Elf_Scn *copy = ok ? elf_newscn(out) : NULL;
        Elf_Data *data = ok ? elf_getdata(scn, NULL) : NULL;
        ok = copy != NULL;
        if (ok && data) {
            Elf_Data *to = elf_newdata(copy);
            ok = to != NULL;
            if (ok) {
                to->d_buf = data->d_buf;
                to->d_type = data->d_type;
                to->d_size = data->d_size;
                to->d_align = data->d_align;
                to->d_version = data->d_version;
                to->d_off = 0;
            }
        }
        ok = ok && gelf_update_shdr(copy, &sh);
    }
    ok = ok && elf_update(out, ELF_C_WRITE) >= 0;
    elf_end(out);
    return ok;
}

/* May this process write files of any size? Under a file-size limit
 * (ulimit -f), writing past it raises SIGXFSZ, which would kill memkit for
 * the sake of a cache: such a process makes no entry. */
static bool no_size_limit(void)
{
    struct rlimit lim;
    return getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur == RLIM_INFINITY;
}

/* Makes the entry for the debug file open at fd; returns it opened, or -1
 * when the file is not worth one or the cache cannot be written. */
static int make_entry(int fd, char *dir, const char *path)
{
    Elf *in = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int out = -1;
    char tmp[PATH_MAX];
    if (worth_caching(in) && no_size_limit() && make_dirs(dir) &&
        snprintf(tmp, sizeof tmp, "%s/.entry.XXXXXX", dir) < (int)sizeof tmp &&
        (out = mkostemp(tmp, O_CLOEXEC)) >= 0) {
        /* a whole entry or none, even across a crash of the machine */
        bool ok = fchmod(out, 0644) == 0 && write_inflated(in, out) &&
                  fdatasync(out) == 0 && rename(tmp, path) == 0;
        if (!ok) {
            unlink(tmp);
            close(out);
            out = -1;
        }
    }
    elf_end(in);
    return out;
}

/* Where the distribution puts a debug file by build id, and the global
 * debug directory: libdw's default search path (debuginfo_path NULL). */
#define MK_DEBUG_DIR  "/usr/lib/debug"
#define MK_DEBUG_ROOT MK_DEBUG_DIR "/.build-id"

/* Formats dir/<id in hex><suffix>, the first byte apart when split. */
static bool id_path(char *buf, size_t cap, const char *dir, const unsigned char *id,
                    int len, bool split, const char *suffix)
{
    int at = snprintf(buf, cap, "%s/", dir);
    for (int i = 0; i < len && at > 0 && (size_t)at < cap; i++)
        at += snprintf(buf + at, cap - (size_t)at, i == 1 && split ? "/%02x" : "%02x",
                       id[i]);
    return at > 0 && (size_t)at < cap &&
           (size_t)snprintf(buf + at, cap - (size_t)at, "%s", suffix) < cap - (size_t)at;
}

/* Hands path to libdwfl as the name of the file open at fd. */
static int found_at(int fd, const char *path, char **name)
{
    char *copy = strdup(path);
    if (!copy) {
        close(fd);
        return -1;
    }
    free(*name);
    *name = copy;
    return fd;
}

/* Modules that have no separate debug file, by path: libdwfl asks twice for
 * each (for its symbol table, then for its DWARF), and a search is a dozen
 * failed opens. */
static uint64_t missing[256];
static unsigned nmissing;
static pthread_mutex_t missing_lock = PTHREAD_MUTEX_INITIALIZER;

static bool known_missing(const char *file_name, bool add)
{
    uint64_t h = mk_hash_bytes(file_name, strlen(file_name));
    bool known = false;
    pthread_mutex_lock(&missing_lock);
    for (unsigned i = 0; i < nmissing && !known; i++)
        known = missing[i] == h;
    if (!known && add && nmissing < sizeof missing / sizeof *missing)
        missing[nmissing++] = h;
    pthread_mutex_unlock(&missing_lock);
    return known;
}

/* The candidate paths of a module's debug file, in libdw's default order:
 * by build id, then by its debug link (or its own name + ".debug") in its
 * directory, in .debug/ there, and under the global debug directory. */
static bool candidate(int k, const char *file_name, const char *link,
                      const unsigned char *id, int len, char *buf, size_t cap)
{
    char dir[PATH_MAX], own[NAME_MAX + 8];
    const char *slash = strrchr(file_name, '/');
    if (k == 0)
        return id_path(buf, cap, MK_DEBUG_ROOT, id, len, true, ".debug");
    if (!slash || (size_t)(slash - file_name) >= sizeof dir)
        return false;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - file_name), file_name);
    if (!link) {
        if (snprintf(own, sizeof own, "%s.debug", slash + 1) >= (int)sizeof own)
            return false;
        link = own;
    }
    int n = k == 1   ? snprintf(buf, cap, "%s/%s", dir, link)
            : k == 2 ? snprintf(buf, cap, "%s/.debug/%s", dir, link)
            : k == 3 ? snprintf(buf, cap, "%s%s/%s", MK_DEBUG_DIR, dir, link)
                     : -1;
    return n > 0 && (size_t)n < cap && strcmp(buf, file_name) != 0;
}

/* The module's debug file by libdw's default search, opened, its build id
 * checked, its path in path; -1 when there is none. */
static int search(const char *file_name, const char *link, const unsigned char *id,
                  int len, char *path, size_t cap)
{
    for (int k = 0; k < 4; k++) {
        if (!candidate(k, file_name, link, id, len, path, cap))
            continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        bool ours = has_build_id(elf, id, len);
        elf_end(elf);
        if (ours)
            return fd;
        close(fd);
    }
    return -1;
}

/* Everything libdw's standard search does, debuginfod included, for a
 * module the search above cannot serve; the entry made from what it finds
 * serves from the next run on, as libdwfl may hold that file open already. */
static int standard_find(Dwfl_Module *mod, void **userdata, const char *modname,
                         Dwarf_Addr base, const char *file_name, const char *link,
                         GElf_Word crc, char **name, char *dir, const char *entry_path)
{
    int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, link,
                                          crc, name);
    int entry = fd >= 0 && entry_path ? make_entry(fd, dir, entry_path) : -1;
    if (entry >= 0)
        close(entry);
    return fd;
}

int mk_debugcache_find(Dwfl_Module *mod, void **userdata, const char *modname,
                       Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                       GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    const unsigned char *id;
    GElf_Addr id_vaddr;
    int len = dwfl_module_build_id(mod, &id, &id_vaddr);
    char dir[PATH_MAX], entry_path[PATH_MAX + 160], found[PATH_MAX];
    bool cached = len > 0 && len <= 64 && cache_dir(dir, sizeof dir) &&
                  id_path(entry_path, sizeof entry_path, dir, id, len, false, ".debug");
    /* Without a build id to check files by, or with debuginfod servers to
     * ask, libdw searches (its first call loads libdebuginfod and the 27
     * libraries it needs: 3 ms, spared otherwise). */
    const char *servers = getenv("DEBUGINFOD_URLS");
    if (len <= 0 || len > 64 || !file_name || (servers && servers[0]))
        return standard_find(mod, userdata, modname, base, file_name, debuglink_file,
                             debuglink_crc, debuginfo_file_name, dir,
                             cached ? entry_path : NULL);
    if (known_missing(file_name, false))
        return errno = ENOENT, -1;
    int entry = cached ? open_entry(entry_path, id, len) : -1;
    if (entry >= 0)
        return found_at(entry, entry_path, debuginfo_file_name);
    int fd = search(file_name, debuglink_file, id, len, found, sizeof found);
    if (fd < 0) {
        known_missing(file_name, true);
        return errno = ENOENT, -1;
    }
    entry = cached ? make_entry(fd, dir, entry_path) : -1;
    if (entry < 0)
        return found_at(fd, found, debuginfo_file_name); /* not compressed, or no cache */
    close(fd);
    return found_at(entry, entry_path, debuginfo_file_name);
}
