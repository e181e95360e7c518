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

/* A temporary file beside path, with the mode a new file would get. */
static FILE *open_beside(const char *path, char *tmp, size_t cap)
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
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
    }
    return f;
}

bool mk_outfile_open(mk_outfile_t *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return true;
    }
    o->path = path;
    struct stat st;
    bool in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (in_place) { /* /dev/full, /dev/stdout, a FIFO: nothing to rename over */
        if (S_ISDIR(st.st_mode)) {
            say_cannot_write(path, EISDIR);
            return false;
        }
        o->f = fopen(path, "w");
    } else {
        o->f = open_beside(path, o->tmp, sizeof o->tmp);
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
