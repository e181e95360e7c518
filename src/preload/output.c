/*
 * output.c - the trace file: opening it safely and appending records.
 *
 * One file per process: <prefix>.<pid>.mkt, or <prefix>.<pid>.<n>.mkt when
 * that exists (a program that exec'd keeps its pid). It is created with
 * O_EXCL|O_NOFOLLOW (never through a symlink, never over another file) and
 * mode 0644 less the umask. Records are compressed by the thread that filled
 * them and appended with one write under a lock held only for that write.
 */
#define _GNU_SOURCE
#include "output.h"

#include "fds.h"
#include "raw_frame.h"
#include "thread.h"

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced: stable since zstd 1.3 */
#include <zstd.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A thread's output state, in its room of the thread state (thread.h). */
struct mk_output_thread {
    void *cctx;    /* this thread's zstd context */
    uint8_t *zbuf; /* and its output buffer */
    size_t zcap;
};
_Static_assert(sizeof(struct mk_output_thread) <= sizeof(((mk_thread_t *)0)->room_output),
               "the output state outgrew its room (thread.h)");

static inline struct mk_output_thread *mk_output_of(mk_thread_t *t)
{
    return (struct mk_output_thread *)(void *)t->room_output;
}

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static char out_path[PATH_MAX];
/* The trace file as it was created, to find it again (trace_fd_ready); its
 * path is absolute (the prefix is made so at start-up). */
static dev_t trace_dev;
static ino_t trace_ino;

void mk_output_lock(void)
{
    pthread_mutex_lock(&out_lock);
}

void mk_output_unlock(void)
{
    pthread_mutex_unlock(&out_lock);
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* write_all for the trace, with signals blocked (mk_shield). A trace that
 * outgrows the program's file-size limit (ulimit -f) gets EFBIG and the
 * kernel queues SIGXFSZ, whose default action would kill a program that
 * never wrote a byte too many: it is taken back (mk_take_back) before the
 * signals open again, and the failure is said once. */
static bool write_trace(int fd, const uint8_t *p, size_t n)
{
    sigset_t pending_before;
    sigpending(&pending_before);
    bool ok = write_all(fd, p, n);
    if (!ok && errno == EFBIG)
        mk_take_back(SIGXFSZ, &pending_before);
    return ok;
}

/* Is this process the first of its run to report an output failure? A
 * full disk or a missing directory fails every process of a tree alike (a
 * build: hundreds), and one line says it all; more would also reach the
 * programs that read their children's stderr (cmake parsing a compiler's).
 * The first claims a marker named by the run id in /dev/shm, which memkit
 * trace removes at the end; without one (no run id, no /dev/shm) each says.
 * A process that outlives memkit trace (whose pid starts the run id) says
 * for itself and claims nothing: no one would remove the marker. */
static bool first_to_say(void)
{
    char marker[128];
    if (!mk_st.cfg.run_id[0] || snprintf(marker, sizeof marker, "/dev/shm/memkit-%s.said",
                                         mk_st.cfg.run_id) >= (int)sizeof marker)
        return true;
    long tracer = strtol(mk_st.cfg.run_id, NULL, 10);
    if (tracer > 0 && kill((pid_t)tracer, 0) != 0 && errno == ESRCH)
        return true;
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        mk_fd_close(fd);
    return fd >= 0 || errno != EEXIST;
}

static void fail(const char *what, int err)
{
    /* Stop recording first: the message below may allocate. */
    atomic_store(&mk_st.phase, MK_PHASE_FAILED);
    if (first_to_say())
        mk_warn_once("memkit: %s '%s': %s; the program runs on untraced", what, out_path,
                     strerror(err));
}

/* A trace that failed before its header was whole holds nothing a reader
 * could use: it goes, rather than leave an empty file per process. */
static void remove_unstarted_trace(int fd)
{
    struct stat st;
    if (lstat(out_path, &st) == 0 && st.st_dev == trace_dev && st.st_ino == trace_ino)
        unlink(out_path);
    mk_fd_forget(fd);
    mk_fd_close(fd);
    mk_st.fd = -1;
}

static void put_str(uint8_t **p, const char *s, size_t n)
{
    *p = mk_put_varint(*p, n);
    memcpy(*p, s, n);
    *p += n;
}

/* Reads a small /proc file into buf; returns its length (0 if unreadable). */
static size_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, cap);
    mk_fd_close(fd);
    return n > 0 ? (size_t)n : 0;
}

static bool write_header(void)
{
    static uint8_t raw[3 * 4096 + 256];
    char cmd[4096];
    size_t exe_len;
    const char *exe = mk_exe_path(&exe_len);
    size_t cmd_len = read_small("/proc/self/cmdline", cmd, sizeof cmd);
    struct timespec rt;
    uint8_t *p = raw;

    clock_gettime(CLOCK_REALTIME, &rt);
    p = mk_put_u32(p, MK_TRACE_VERSION);
    p = mk_put_u32(p, (mk_st.cfg.depth > 1 ? 1u : 0u) |
                          (mk_st.cfg.mode == MK_MODE_SUMMARY ? 2u : 0u) |
                          (mk_st.cfg.syscalls ? 4u : 0u) | (mk_st.use_tsc ? 8u : 0u) |
                          (mk_st.cfg.mode == MK_MODE_FULL_SUMMARY ? 16u : 0u) |
                          (mk_st.timing ? 32u : 0u));
    p = mk_put_u32(p, (uint32_t)mk_st.cfg.depth);
    p = mk_put_u32(p, (uint32_t)mk_st.pid);
    p = mk_put_u32(p, (uint32_t)getppid());
    p = mk_put_u64(p, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    p = mk_put_u64(p, mk_st.t_start);
    p = mk_put_u64(p, mk_st.tick_start);
    put_str(&p, mk_st.cfg.run_id, strlen(mk_st.cfg.run_id));
    put_str(&p, exe, exe_len);
    put_str(&p, cmd, cmd_len);
    return mk_output_record(NULL, MK_REC_HEADER, raw, (size_t)(p - raw));
}

/* Does fd refer to the trace file as it was created? */
static bool is_trace_file(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == trace_dev &&
           st.st_ino == trace_ino;
}

/* Is mk_st.fd still the trace file? The program may have closed it behind
 * the hooks (closefrom) and opened a file of its own under the number: then
 * that file is the program's, and the trace is opened again by path. Called
 * under out_lock, before each write. */
static bool trace_fd_ready(void)
{
    if (is_trace_file(mk_st.fd))
        return true;
    mk_fd_forget(mk_st.fd); /* never close or write what may be the program's */
    mk_st.fd = -1;
    int fd = open(out_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    if (!is_trace_file(fd)) {
        mk_fd_close(fd); /* another file took the name */
        errno = ENOENT;
        return false;
    }
    mk_st.fd = mk_fd_make_private(fd, true);
    return true;
}

bool mk_output_open(void)
{
    int fd = -1;

    for (int n = 1; n < 1000 && fd < 0; n++) {
        int len = n == 1 ? snprintf(out_path, sizeof out_path, "%s.%d.mkt",
                                    mk_st.cfg.prefix, (int)mk_st.pid)
                         : snprintf(out_path, sizeof out_path, "%s.%d.%d.mkt",
                                    mk_st.cfg.prefix, (int)mk_st.pid, n);
        if (len < 0 || (size_t)len >= sizeof out_path) {
            fail("trace path too long", ENAMETOOLONG);
            return false;
        }
        fd = open(out_path,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            fail("cannot create trace", errno);
            return false;
        }
    }
    if (fd < 0) {
        fail("cannot create trace", EEXIST);
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fail("cannot create trace", errno);
        mk_fd_close(fd);
        return false;
    }
    trace_dev = st.st_dev;
    trace_ino = st.st_ino;
    fd = mk_st.fd = mk_fd_make_private(fd, true);
    mk_shield_t shield;
    mk_shield(&shield);
    bool wrote = write_trace(fd, (const uint8_t *)MK_TRACE_MAGIC, MK_TRACE_MAGIC_LEN);
    mk_unshield(&shield);
    if (!wrote) {
        fail("cannot write trace", errno ? errno : ENOSPC);
        remove_unstarted_trace(fd);
        return false;
    }
    if (!write_header()) {
        remove_unstarted_trace(fd);
        return false;
    }
    return true;
}

/* The staging buffer of records written without a thread (header, modules,
 * end); used under out_lock. */
static void *shared_cctx;
static uint8_t *shared_zbuf;
static size_t shared_zcap;

/* zstd calls these tracing hooks when something defines them: they are weak
 * references, which a copy of zstd linked into the tracer would resolve
 * against a program's own definitions. The tracer's say "no tracing". */
unsigned long long ZSTD_trace_compress_begin(const void *cctx);
void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace);

unsigned long long ZSTD_trace_compress_begin(const void *cctx)
{
    (void)cctx;
    return 0;
}

void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace)
{
    (void)ctx;
    (void)trace;
}

/* zstd's memory comes from mmap, not malloc: a record may be written from a
 * signal handler (signals.c, _exit) that interrupted malloc holding its
 * lock. Each block keeps its length in front of it for the free. */
static void *zstd_alloc(void *opaque, size_t size)
{
    (void)opaque;
    size_t len = (size + 16 + 4095) & ~(size_t)4095;
    void *p = mk_sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    memcpy(p, &len, sizeof len);
    return (uint8_t *)p + 16; /* 16: malloc's alignment, which zstd assumes */
}

static void zstd_free(void *opaque, void *address)
{
    (void)opaque;
    if (!address)
        return;
    uint8_t *p = (uint8_t *)address - 16;
    size_t len;
    memcpy(&len, p, sizeof len);
    mk_sys_munmap(p, len);
}

static uint8_t *zbuf_for(size_t need, uint8_t **buf, size_t *cap)
{
    if (*cap >= need)
        return *buf;
    if (*buf)
        mk_sys_munmap(*buf, *cap);
    need = (need + 4095) & ~(size_t)4095;
    void *p = mk_sys_mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (p == MAP_FAILED) {
        *buf = NULL;
        *cap = 0;
        return NULL;
    }
    *buf = p;
    *cap = need;
    return p;
}

#define SMALL_RECORD (16u << 10)

/* Records below this are stored raw (raw_frame.h): a short process's every
 * record is (its header, its modules: about 4 KiB for cmake's 20 libraries,
 * its samples and its end), and it never pays for a zstd context. Its
 * modules would compress by a third, build ids being random. */
#define RAW_RECORD_MAX (8u << 10)

static uint8_t raw_buf[MK_RECORD_HEAD_LEN + RAW_RECORD_MAX + 16];

static uint8_t *put_record_head(uint8_t *h, mk_thread_t *t, unsigned type, size_t zn,
                                size_t len)
{
    bool events = t && type == MK_REC_EVENTS;
    h = mk_put_u32(h, MK_RECORD_SYNC);
    h = mk_put_u32(h, type);
    h = mk_put_u32(h, (uint32_t)zn);
    h = mk_put_u32(h, (uint32_t)len);
    h = mk_put_u32(h, events ? t->index : 0);
    h = mk_put_u32(h, 0);
    h = mk_put_u64(h, events ? t->w.anchor_ns : 0);
    return mk_put_u64(h, events ? t->w.anchor_tick : 0);
}

/* Appends the record; called under out_lock, which it releases. */
static bool append_record(mk_thread_t *t, unsigned type, const uint8_t *rec, size_t n)
{
    if (MK_UNLIKELY(mk_st.cfg.test_signal) && t && type == MK_REC_EVENTS) {
        int sig = mk_st.cfg.test_signal; /* tests: a signal at the worst moment */
        mk_st.cfg.test_signal = 0;
        raise(sig);
    }
    errno = 0;
    bool ok = trace_fd_ready() && write_trace(mk_st.fd, rec, n);
    int err = errno ? errno : ENOSPC;
    mk_output_unlock();
    if (!ok)
        fail("cannot write trace", err);
    return ok;
}

/* A small record as a raw frame, built in raw_buf under out_lock. */
static bool write_raw_record(mk_thread_t *t, unsigned type, const void *const *part,
                             const size_t *plen, int nparts, size_t len)
{
    assert(len < RAW_RECORD_MAX && mk_raw_frame_bound(len) <= len + 16);
    mk_output_lock();
    size_t zn = mk_raw_frame_write(raw_buf + MK_RECORD_HEAD_LEN, part, plen, nparts, len);
    put_record_head(raw_buf, t, type, zn, len);
    return append_record(t, type, raw_buf, MK_RECORD_HEAD_LEN + zn);
}

/* Compresses the parts as one zstd frame and appends the record. An EVENTS
 * record's parts are its head and its streams: each stream ends a zstd
 * block, so that each block's Huffman table is fitted to one kind of number
 * (format.h). Blocks straddling streams cost 2.3 MB of a 67 MB trace. */
static bool write_record(mk_thread_t *t, unsigned type, const void *const *part,
                         const size_t *plen, int nparts)
{
    bool events = t && type == MK_REC_EVENTS;
    size_t len = 0;

    for (int i = 0; i < nparts; i++)
        len += plen[i];
    if (len < RAW_RECORD_MAX)
        return mk_st.fd >= 0 && write_raw_record(t, type, part, plen, nparts, len);
    /* A small record (a short thread's only one, its last) goes through the
     * shared context under the output lock: a context of its own costs a
     * thread about 32 KB resident for as long as its state lives, and a
     * program with thousands of threads would hold that many. */
    mk_thread_t *own = t && (mk_output_of(t)->cctx || len >= SMALL_RECORD) ? t : NULL;
    void **cctx = own ? &mk_output_of(own)->cctx : &shared_cctx;
    /* A flush ends a block early: 3 bytes of block head, and each flushed
     * block may hold its data raw (no bigger than the input) */
    size_t need = MK_RECORD_HEAD_LEN + ZSTD_compressBound(len) + 8 * (size_t)nparts;
    if (mk_st.fd < 0)
        return false;
    if (!own)
        mk_output_lock();
    uint8_t *z = own ? zbuf_for(need, &mk_output_of(own)->zbuf, &mk_output_of(own)->zcap)
                     : zbuf_for(need, &shared_zbuf, &shared_zcap);
    if (!*cctx) {
        ZSTD_CCtx *c = ZSTD_createCCtx_advanced((ZSTD_customMem){
            zstd_alloc, zstd_free, NULL}); /* no malloc: see zstd_alloc */
        if (c) {
            ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
            ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
        }
        *cctx = c;
    }
    if (!z || !*cctx) {
        if (!own)
            mk_output_unlock();
        fail("out of memory compressing trace", ENOMEM);
        return false;
    }
    ZSTD_CCtx_reset(*cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setPledgedSrcSize(*cctx, len);
    ZSTD_outBuffer out = {z + MK_RECORD_HEAD_LEN, need - MK_RECORD_HEAD_LEN, 0};
    size_t rc = 0;
    for (int i = 0; i < nparts && !ZSTD_isError(rc); i++) {
        ZSTD_inBuffer in = {part[i], plen[i], 0};
        ZSTD_EndDirective end = i == nparts - 1   ? ZSTD_e_end
                                : events && i > 0 ? ZSTD_e_flush
                                                  : ZSTD_e_continue;
        do
            rc = ZSTD_compressStream2(*cctx, &out, &in, end);
        while (!ZSTD_isError(rc) &&
               (end == ZSTD_e_continue ? in.pos < in.size : rc != 0));
    }
    if (ZSTD_isError(rc)) {
        if (!own)
            mk_output_unlock();
        fail("cannot compress trace", EIO);
        return false;
    }
    put_record_head(z, t, type, out.pos, len);
    if (own)
        mk_output_lock();
    return append_record(t, type, z, MK_RECORD_HEAD_LEN + out.pos);
}

/* Signals and cancellation wait while a record is compressed and written
 * (mk_shield): a handler that exits would flush this thread's buffer again,
 * meeting its compression context mid-use or, inside the write, the lock
 * this thread holds (the program hung at exit: a SIGALRM handler calling
 * exit(), about one run in 200). */
bool mk_output_parts(mk_thread_t *t, unsigned type, const void *const *part,
                     const size_t *plen, int nparts)
{
    mk_shield_t shield;
    mk_shield(&shield);
    bool ok = write_record(t, type, part, plen, nparts);
    mk_unshield(&shield);
    return ok;
}

bool mk_output_record(mk_thread_t *t, unsigned type, const void *raw, size_t len)
{
    return mk_output_parts(t, type, &raw, &len, 1);
}

/* In a forked child: the parent's file is the parent's. */
void mk_output_after_fork_child(void)
{
    pthread_mutex_init(&out_lock, NULL);
    mk_fd_close_private(mk_st.fd);
    mk_st.fd = -1;
}
