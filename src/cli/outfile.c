/*
 * outfile.c - checked output, and files that appear whole (outfile.h).
 */
#define _GNU_SOURCE
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say_cannot_write(const char *path, int err)
{
    fprintf(stderr, "memkit: cannot write %s: %s\n", path ? path : "standard output",
            err ? strerror(err) : "write error");
}

/* A temporary file beside path, with the mode a new file would get, or
 * old's mode and owner (where the owner can be given) when it replaces old. */
static FILE *open_beside(const char *path, char *tmp, size_t cap, const struct stat *old)
{
    char dirbuf[PATH_MAX], basebuf[PATH_MAX];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    snprintf(basebuf, sizeof basebuf, "%s", path);
    if (snprintf(tmp, cap, "%s/.%s.XXXXXX", dirname(dirbuf), basename(basebuf)) >=
        (int)cap) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return NULL;
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, old ? old->st_mode & 07777 : 0666 & ~mask);
    if (old && (old->st_uid != geteuid() || old->st_gid != getegid()) &&
        fchown(fd, old->st_uid, old->st_gid) != 0) {
        /* not ours to give: the file is then the writer's, its mode kept */
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
    }
    return f;
}

/* Was the link at path planted by another user in a directory anyone may
 * write (a sticky /tmp): the case fs.protected_symlinks guards, when off? */
static bool planted_link(const char *path, const struct stat *link)
{
    char dirbuf[PATH_MAX];
    struct stat dir;
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    return link->st_uid != geteuid() && stat(dirname(dirbuf), &dir) == 0 &&
           (dir.st_mode & S_IWOTH) && (dir.st_mode & S_ISVTX);
}

bool mk_outfile_open(mk_outfile_t *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return true;
    }
    o->path = path;
    struct stat lst, st;
    bool exists = lstat(path, &lst) == 0, link = exists && S_ISLNK(lst.st_mode);
    bool target = exists && stat(path, &st) == 0;
    if (link && target && !S_ISREG(st.st_mode) && planted_link(path, &lst)) {
        /* Another user's link in a shared directory, to a FIFO or a device:
         * written in place, the report would feed their reader, or block
         * with none. One's own links (and /dev/stdout) are followed. */
        fprintf(stderr,
                "memkit: %s is another user's symbolic link to something other than a "
                "file, in a directory anyone may write; not written (name the target "
                "itself to write there)\n",
                path);
        return false;
    }
    if (target && !S_ISREG(st.st_mode)) { /* /dev/full, /dev/stdout, a FIFO: in place */
        if (S_ISDIR(st.st_mode)) {
            say_cannot_write(path, EISDIR);
            return false;
        }
        o->f = fopen(path, "w");
    } else { /* a new file, or one replaced whole: its mode and owner kept */
        o->f = open_beside(path, o->tmp, sizeof o->tmp, target ? &st : NULL);
    }
    if (!o->f) {
        say_cannot_write(path, errno);
        return false;
    }
    return true;
}

/* Flushes f and tells whether every write to it succeeded (errno set). */
static bool flushed_whole(FILE *f)
{
    errno = 0;
    bool ok = fflush(f) == 0 && !ferror(f);
    if (!ok && !errno)
        errno = EIO; /* an earlier write failed; its errno is gone */
    return ok;
}

bool mk_outfile_close(mk_outfile_t *o, bool keep)
{
    if (!o->f)
        return false;
    if (o->f == stdout) {
        o->f = NULL;
        return mk_stdout_close();
    }
    bool ok = flushed_whole(o->f);
    int err = errno;
    if (fclose(o->f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    o->f = NULL;
    if (ok && keep && o->tmp[0] && rename(o->tmp, o->path) != 0) {
        ok = false;
        err = errno;
    }
    if ((!ok || !keep) && o->tmp[0])
        unlink(o->tmp);
    if (!ok)
        say_cannot_write(o->path, err);
    return ok;
}

bool mk_stdout_close(void)
{
    static bool said;
    if (flushed_whole(stdout))
        return true;
    if (!said)
        say_cannot_write(NULL, errno);
    said = true; /* one line, however many callers check */
    return false;
}
