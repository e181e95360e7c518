/*
 * merge.c - mk_trace_walk: every thread's events in one time order.
 *
 * Each thread's records are in file order and its events in time order, but
 * a thread that flushes rarely writes its records late. So the walk reads the
 * file twice: first to index the EVENTS records by thread (and absorb the
 * module map, END and SUMMARY), then to merge the threads, holding one
 * record per thread that has begun: its decompressed bytes, decoded WINDOW
 * events at a time (decoded whole, a record of 262,144 events took 14.7 MB;
 * its bytes take about 1 MB). A thread's first record is
 * decoded only when the merge reaches the time it began (its anchor: no
 * event of the record is earlier), and a thread's memory goes when its
 * last event has: a program that ran 20,000 threads one after the other
 * holds a few at a time. A one-thread trace is just read in order.
 *
 * Threads that all run at once each hold a record open. Past SPILL_AT bytes
 * of records in memory, the next record opened goes to a temporary file
 * (TMPDIR, else /tmp; O_TMPFILE, so nothing is left behind) and each of its
 * streams is read back a page at a time (SPILL_WINDOW events fit in what is
 * left of a page before it is refilled); its stack definitions stay in
 * memory. A thread then holds its decoder's state and a page a stream, not
 * its record of about 1 MB (PERFORMANCE.md: the report's memory against the
 * thread count). Without a temporary file the records stay in memory. The
 * decoder's state is mapped, not allocated: its pages are touched only for
 * the size classes the thread used, and its writer-only part never is.
 */
#define _GNU_SOURCE
#include "reader.h"
#include "reader_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WINDOW 256 /* events decoded at a time from a thread's record */

/* The most record bytes the merge holds at once, across threads: a trace
 * whose threads all run at once asks a record each (about 1 MB), and one
 * crafted to begin a million threads together must not take the machine.
 * Past it the walk stops with one line, as at damage. MEMKIT_MERGE_MAX_BYTES
 * lowers it, and MEMKIT_MERGE_SPILL_BYTES sets SPILL_AT (for tests). */
#define HELD_MAX (1ull << 30)

/* Record bytes held in memory before the next record opened goes to the
 * spill file: 8 threads' worth, so that a few threads never touch it. */
#define SPILL_AT (8u << 20)
/* A spilled record's streams: a page's buffer each, refilled whenever
 * fewer bytes are left in it than SPILL_WINDOW events may take. */
#define SPILL_PAGE   4096
#define SPILL_WINDOW 64
#define SPILL_LOW    (SPILL_WINDOW * MK_EVENT_STREAM_MAX)
_Static_assert(SPILL_LOW < SPILL_PAGE, "a window's bytes fit in a page");

typedef struct stream {
    uint32_t thread;
    bool loaded;         /* its records are being decoded */
    uint64_t first_tick; /* the anchor of its first record: no event earlier */
    uint64_t *offsets;   /* this thread's records, in file order */
    size_t n, cap, next;
    uint8_t *bytes; /* the current record's, decompressed (cur reads them) */
    size_t bytes_cap;
    /* Or, spilled: each stream's next bytes in the spill file are
     * [at[i], to[i]), its unread ones so far in win + i * SPILL_PAGE, and
     * DEFS whole in defs. */
    bool spilled;
    uint8_t *win, *defs;
    uint64_t at[MK_S_COUNT], to[MK_S_COUNT];
    uint64_t spill_off, spill_len; /* the record's place in the spill file */
    mk_event_cursor_t *cur;
    mk_event_t *ev; /* WINDOW decoded from it, ev[pos] next (a stream of
                     * each thread that ever ran: none until it is loaded) */
    size_t nev, pos;
    mk_decoder_t dec; /* with an addr state of its own (dec.addr) */
} stream_t;

typedef struct merge {
    mk_trace_t *tr;
    stream_t *streams;
    size_t nstreams, cap;
    mk_kv_table_t stream_of;  /* key thread + 1, a = its stream's index */
    mk_addr_state_t *scratch; /* every decoder's per-record state: one record
                               * is decoded at a time */
    stream_t **heap;          /* min-heap on the head event's time */
    size_t nheap;
    uint64_t last_tick, last_ns;  /* the latest clock anchor seen */
    uint64_t held, held_max;      /* record bytes (in memory or spilled) and
                                   * decoder states the streams hold; HELD_MAX */
    uint64_t in_memory, spill_at; /* of held, record bytes in memory; SPILL_AT */
    int spill_fd;                 /* -1: none yet; -2: none to be had */
    uint64_t spill_end;           /* the spill file's next record goes here */
} merge_t;

/* What a stream holds besides its record, once loaded: counted in held, so
 * that a trace beginning a million threads at once meets the bound too. */
#define STATE_BYTES                                                                      \
    (sizeof(mk_addr_state_t) + WINDOW * sizeof(mk_event_t) + MK_S_COUNT * SPILL_PAGE)

/* Ticks to ns: the slope between the header's anchor and the latest one. */
static void calibrate(mk_trace_t *tr, const merge_t *m)
{
    uint64_t tick = m->last_tick, ns = m->last_ns;
    if (tr->end.present && tr->end.end_tick > tick) {
        tick = tr->end.end_tick;
        ns = tr->end.duration_ns;
    }
    /* Under a millisecond of span the slope is mostly noise: keep the default. */
    if (tick > tr->header.start_tick && ns > 1000000)
        tr->ns_per_tick = (double)ns / (double)(tick - tr->header.start_tick);
}

/* A thread's stream, made on its first record. By a table: a program may run
 * tens of thousands of threads, one after the other. */
static stream_t *stream_for(merge_t *m, uint32_t thread)
{
    bool fresh;
    mk_kv_t *e = mk_kv_put(&m->stream_of, (uint64_t)thread + 1, &fresh);
    if (!e)
        return NULL;
    if (!fresh)
        return &m->streams[e->a];
    if (!mk_grow((void **)&m->streams, &m->cap, m->nstreams + 1, sizeof *m->streams)) {
        mk_kv_remove(&m->stream_of, e);
        return NULL;
    }
    e->a = m->nstreams;
    stream_t *s = &m->streams[m->nstreams++];
    memset(s, 0, sizeof *s);
    s->thread = thread;
    mk_decoder_init(&s->dec, NULL); /* its addr state: when it is loaded */
    return s;
}

/* The spilled record a stream is done with: its file space punched out, so
 * that the file holds only the records open. */
static void unspill(merge_t *m, stream_t *s)
{
    if (!s->spilled)
        return;
    fallocate(m->spill_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
              (off_t)s->spill_off, (off_t)s->spill_len);
    m->held -= s->spill_len;
    free(s->defs);
    s->defs = NULL;
    s->spilled = false;
}

/* The spill file's bytes at off, read, or written whole from p (write). */
static bool spill_io(int fd, bool write, uint8_t *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t r = write ? pwrite(fd, p, n, (off_t)off) : pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return true;
}

/* Before a window of a spilled record: each stream left with fewer bytes
 * than SPILL_WINDOW events take is topped up from the file. False on a
 * read error (said as damage). */
static bool refill(merge_t *m, stream_t *s)
{
    const uint8_t *p[MK_S_COUNT], *end[MK_S_COUNT];
    mk_events_streams(s->cur, p, end);
    for (int i = 0; i < MK_S_COUNT; i++) {
        size_t left = (size_t)(end[i] - p[i]);
        if (i == MK_S_DEFS || s->at[i] == s->to[i] || left >= SPILL_LOW)
            continue;
        uint8_t *buf = s->win + (size_t)i * SPILL_PAGE;
        memmove(buf, p[i], left);
        size_t n = SPILL_PAGE - left;
        if (n > s->to[i] - s->at[i])
            n = (size_t)(s->to[i] - s->at[i]);
        if (!spill_io(m->spill_fd, false, buf + left, n, s->at[i])) {
            mk_trace_damage(m->tr, "the report's temporary file could not be read: %s",
                            strerror(errno ? errno : EIO));
            return false;
        }
        s->at[i] += n;
        mk_events_move_stream(s->cur, i, buf, buf + left + n);
    }
    return true;
}

/* The record just opened (its bytes raw, the trace's buffer) into the spill
 * file, the cursor's streams moved to their windows; false when it cannot
 * be (no temporary file here, a full disk: memory serves). */
static bool spill(merge_t *m, stream_t *s, const uint8_t *raw, size_t len)
{
    if (m->spill_fd == -1) {
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir)
            dir = "/tmp";
        m->spill_fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
        if (m->spill_fd < 0)
            m->spill_fd = -2;
    }
    if (m->spill_fd < 0)
        return false;
    if (!s->win && !(s->win = malloc(MK_S_COUNT * SPILL_PAGE)))
        return false;
    const uint8_t *p[MK_S_COUNT], *end[MK_S_COUNT];
    mk_events_streams(s->cur, p, end);
    size_t ndefs = (size_t)(end[MK_S_DEFS] - p[MK_S_DEFS]);
    uint8_t *defs = malloc(ndefs ? ndefs : 1);
    if (!defs)
        return false;
    uint64_t off = m->spill_end;
    if (!spill_io(m->spill_fd, true, (uint8_t *)raw, len, off)) {
        free(defs);
        return false;
    }
    m->spill_end = off + ((len + SPILL_PAGE - 1) & ~(uint64_t)(SPILL_PAGE - 1));
    m->held += len;
    s->spill_off = off;
    s->spill_len = len;
    memcpy(defs, p[MK_S_DEFS], ndefs);
    s->defs = defs;
    for (int i = 0; i < MK_S_COUNT; i++) {
        s->at[i] = s->to[i] = off + (uint64_t)(end[i] - raw);
        if (i == MK_S_DEFS) {
            mk_events_move_stream(s->cur, i, defs, defs + ndefs);
            continue;
        }
        /* the window's first bytes from raw, the rest from the file */
        size_t n = (size_t)(end[i] - p[i]);
        if (n > SPILL_PAGE)
            n = SPILL_PAGE;
        uint8_t *buf = s->win + (size_t)i * SPILL_PAGE;
        memcpy(buf, p[i], n);
        s->at[i] = off + (uint64_t)(p[i] - raw) + n;
        mk_events_move_stream(s->cur, i, buf, buf + n);
    }
    s->spilled = true;
    return true;
}

/* A stream whose records are all delivered gives its memory back at once. */
static void stream_done(merge_t *m, stream_t *s)
{
    unspill(m, s);
    m->held -= s->bytes_cap;
    m->in_memory -= s->bytes_cap;
    if (s->cur)
        m->held -= STATE_BYTES;
    mk_decoder_free(&s->dec);
    free(s->bytes);
    free(s->win);
    s->win = NULL;
    free(s->ev);
    mk_events_free(s->cur);
    if (s->dec.addr)
        munmap(s->dec.addr, sizeof *s->dec.addr);
    s->bytes = NULL;
    s->ev = NULL;
    s->cur = NULL;
    s->dec.addr = NULL;
    s->bytes_cap = s->nev = s->pos = 0;
}

/* An EVENTS record's head repeats its thread and clock anchor (format.h),
 * which the merge orders and calibrates by: the copy must be the record's. */
static bool head_agrees(const mk_record_head_t *h, const uint8_t *raw, size_t len)
{
    mk_cursor_t c = {raw, raw + len, 0};
    mk_events_anchor_t a = mk_get_events_anchor(&c);
    return !c.err && a.thread == h->thread && a.anchor_ns == h->anchor_ns &&
           a.anchor_tick == h->anchor_tick;
}

/* Pass one: EVENTS records by thread from their heads; the other (small)
 * records are read and absorbed. Every record is decompressed here, which
 * checks its checksum, and the index ends before the first damaged one: the
 * walk then covers exactly the records before it, in every thread, as a
 * trace cut there would (the merge reaches records out of file order, so a
 * fault met only then could not take back what later records gave). It
 * costs one decompression more, a few percent of a report. */
static bool index_file(merge_t *m)
{
    mk_trace_t *tr = m->tr;
    mk_record_head_t h;
    unsigned type;
    const uint8_t *raw;
    size_t len;

    while (mk_trace_next_head(tr, &h)) {
        uint64_t next = tr->offset;
        if (mk_trace_record_at(tr, h.offset, &type, &raw, &len) != 1)
            return true;
        tr->offset = next;
        if (h.type != MK_REC_EVENTS) {
            mk_trace_absorb(tr, type, raw, len);
            continue;
        }
        if (!head_agrees(&h, raw, len)) {
            mk_trace_damage(tr,
                            "corrupt record at offset %" PRIu64 " (its head disagrees "
                            "with its events)",
                            h.offset);
            return true;
        }
        if (h.anchor_tick > m->last_tick) {
            m->last_tick = h.anchor_tick;
            m->last_ns = h.anchor_ns;
        }
        stream_t *s = stream_for(m, h.thread);
        if (!s)
            return false;
        if (s->n == 0)
            s->first_tick = h.anchor_tick;
        if (!mk_grow((void **)&s->offsets, &s->cap, s->n + 1, sizeof *s->offsets))
            return false;
        s->offsets[s->n++] = h.offset;
    }
    return true;
}

/* The stream's next window of events: from its current record, else from
 * its next records that have events; false when none is left. A record's
 * bytes are copied: the trace's buffer is the next record's. */
static bool load_next(merge_t *m, stream_t *s)
{
    unsigned type;
    const uint8_t *raw;
    size_t len;

    s->nev = s->pos = 0;
    if (!s->cur) {
        if (!(s->cur = mk_events_new()))
            return false;
        m->held += STATE_BYTES;
    }
    if (!s->ev && !(s->ev = malloc(WINDOW * sizeof *s->ev)))
        return false;
    /* The rings start anywhere: zero. Mapped, so that only the pages its
     * size classes use are touched (its writer-only part never is). */
    if (!s->dec.addr) {
        void *a = mmap(NULL, sizeof *s->dec.addr, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED)
            return false;
        s->dec.addr = a;
    }
    for (;;) {
        if (s->spilled) {
            if (!refill(m, s))
                return false;
            s->nev = mk_events_read(m->tr, &s->dec, s->cur, s->ev, SPILL_WINDOW);
            if (s->nev > 0)
                return true;
        } else if (s->bytes) {
            s->nev = mk_events_read(m->tr, &s->dec, s->cur, s->ev, WINDOW);
            if (s->nev > 0)
                return true;
        }
        unspill(m, s);
        if (s->next == s->n || m->tr->damage[0])
            return false;
        if (mk_trace_record_at(m->tr, s->offsets[s->next++], &type, &raw, &len) != 1)
            return false;
        size_t had = s->bytes_cap;
        if (len > s->bytes_cap && m->held - had + len > m->held_max) {
            size_t open = 0;
            for (size_t i = 0; i < m->nstreams; i++)
                open += m->streams[i].cur != NULL;
            m->tr->bounded = true;
            mk_trace_damage(m->tr,
                            "%zu threads' records at once need more than %.3g MB "
                            "(the report's bound): reported up to here",
                            open, (double)m->held_max / 1048576);
            return false;
        }
        if (len > s->bytes_cap && m->in_memory - had + len > m->spill_at) {
            mk_events_open(m->tr, &s->dec, s->cur, raw, len);
            if (spill(m, s, raw, len)) {
                m->held -= had; /* its buffer is not needed while it spills */
                m->in_memory -= had;
                free(s->bytes);
                s->bytes = NULL;
                s->bytes_cap = 0;
                continue;
            }
        }
        if (len > s->bytes_cap) { /* exactly: doubling held twice the bytes */
            uint8_t *b = realloc(s->bytes, len);
            if (!b)
                return false;
            s->bytes = b;
            s->bytes_cap = len;
        }
        m->held += s->bytes_cap - had;
        m->in_memory += s->bytes_cap - had;
        memcpy(s->bytes, raw, len);
        mk_events_open(m->tr, &s->dec, s->cur, s->bytes, len);
    }
}

/* A stream's place in the merge: its head event's time, or before it is
 * loaded, the time its first record began (a lower bound). */
static inline uint64_t head_time(const merge_t *m, const stream_t *s)
{
    return s->loaded ? s->ev[s->pos].time : mk_trace_tick_ns(m->tr, s->first_tick);
}

/* Heads in time order; at equal times frees first, so that a block freed by
 * one thread and reused by another within one tick replays in that order.
 * A stream not loaded yet wins a tie: loaded, it compares by its events. */
static inline bool earlier(const merge_t *m, const stream_t *a, const stream_t *b)
{
    uint64_t ta = head_time(m, a), tb = head_time(m, b);
    if (ta != tb)
        return ta < tb;
    if (!a->loaded || !b->loaded)
        return !a->loaded && b->loaded;
    return mk_kind_class(a->ev[a->pos].kind) == MK_CLASS_FREE &&
           mk_kind_class(b->ev[b->pos].kind) != MK_CLASS_FREE;
}

static void sift_down(merge_t *m, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, min = i;
        if (l < m->nheap && earlier(m, m->heap[l], m->heap[min]))
            min = l;
        if (r < m->nheap && earlier(m, m->heap[r], m->heap[min]))
            min = r;
        if (min == i)
            return;
        stream_t *t = m->heap[i];
        m->heap[i] = m->heap[min];
        m->heap[min] = t;
        i = min;
    }
}

static bool merge_streams(merge_t *m, mk_event_fn fn, void *ctx)
{
    m->heap = calloc(m->nstreams ? m->nstreams : 1, sizeof *m->heap);
    if (!m->heap)
        return true;
    for (size_t i = 0; i < m->nstreams; i++)
        if (m->streams[i].n > 0)
            m->heap[m->nheap++] = &m->streams[i];
    for (size_t i = m->nheap / 2; i-- > 0;)
        sift_down(m, i);
    while (m->nheap > 0 && !m->tr->damage[0]) {
        stream_t *s = m->heap[0];
        if (s->loaded) {
            if (!fn(ctx, &s->ev[s->pos]))
                return false;
            s->pos++;
        } else {
            s->loaded = true; /* the merge reached its start: decode it below */
        }
        if (s->pos == s->nev && !load_next(m, s)) {
            stream_done(m, s);
            m->heap[0] = m->heap[--m->nheap];
        }
        sift_down(m, 0);
    }
    return true;
}

typedef struct pass {
    mk_event_fn fn;
    void *ctx;
    bool stopped;
} pass_t;

static bool pass_on(void *ctx, const mk_event_t *ev)
{
    pass_t *p = ctx;
    if (!p->fn(p->ctx, ev)) {
        p->stopped = true;
        return false;
    }
    return true;
}

bool mk_trace_walk(mk_trace_t *tr, mk_event_fn fn, void *ctx)
{
    merge_t m = {.tr = tr,
                 .stream_of = mk_kv_heap_table(),
                 .held_max = HELD_MAX,
                 .spill_at = SPILL_AT,
                 .spill_fd = -1};
    const char *v = getenv("MEMKIT_MERGE_MAX_BYTES");
    if (v && *v && strtoull(v, NULL, 10) > 0)
        m.held_max = strtoull(v, NULL, 10);
    if ((v = getenv("MEMKIT_MERGE_SPILL_BYTES")) && *v)
        m.spill_at = strtoull(v, NULL, 10);
    bool ok = true;

    m.scratch = calloc(1, sizeof *m.scratch); /* the rings start anywhere: zero */
    if (!m.scratch)
        return true; /* as when a stream cannot be made: nothing to walk */
    index_file(&m);
    if (tr->header.flags & MK_TF_TSC)
        calibrate(tr, &m);
    /* The index's fault ends what is walked; the walk's own (a record whose
     * checksum holds but whose events do not decode: a crafted file) stops
     * it, since the decoders' models are out of step after it. */
    char damage_after_index[sizeof tr->damage];
    memcpy(damage_after_index, tr->damage, sizeof damage_after_index);
    tr->damage[0] = '\0';
    if (m.nstreams == 1) {
        /* One thread: its records in file order are already in time order. */
        stream_t *s = &m.streams[0];
        pass_t p = {fn, ctx, false};
        s->dec.addr = m.scratch; /* one record at a time */
        unsigned type;
        const uint8_t *raw;
        size_t len;
        for (size_t i = 0; i < s->n && !p.stopped && !tr->damage[0]; i++)
            if (mk_trace_record_at(tr, s->offsets[i], &type, &raw, &len) == 1)
                mk_trace_decode_events(tr, &s->dec, raw, len, pass_on, &p);
        ok = !p.stopped;
    } else if (m.nstreams > 1) {
        ok = merge_streams(&m, fn, ctx);
    }
    if (damage_after_index[0]) /* report the first fault in file order */
        memcpy(tr->damage, damage_after_index, sizeof tr->damage);
    for (size_t i = 0; i < m.nstreams; i++) {
        free(m.streams[i].offsets);
        if (m.streams[i].dec.addr == m.scratch)
            m.streams[i].dec.addr = NULL; /* the one-thread walk's */
        stream_done(&m, &m.streams[i]);
    }
    /* every record and state taken was given back */
    assert(m.held == 0 && m.in_memory == 0);
    if (m.spill_fd >= 0)
        close(m.spill_fd);
    free(m.streams);
    free(m.heap);
    free(m.stream_of.slots); /* a heap table (mk_kv_heap_table) */
    free(m.scratch);
    return ok;
}
