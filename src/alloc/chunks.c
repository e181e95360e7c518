/*
 * chunks.c - equal-sized chunks with a spare list, for the FIFO and the ring
 * (internal.h). An empty chunk of the standard size is kept for the next request
 * instead of being unmapped and faulted in again, for as long as the retention
 * policy (retain.c) keeps it.
 *
 * Invariants: spare <= chunks; mapped is the sum
 * of the sizes of every chunk mapped and not unmapped, spares included.
 */
#include "internal.h"

void mk__chunks_init(struct mk__chunks *src, size_t chunk_size, size_t limit,
                     unsigned decay_ms, bool size_aligned)
{
    *src = (struct mk__chunks){.chunk_size = chunk_size, .size_aligned = size_aligned};
    mk__retain_init(&src->retain, limit, chunk_size, decay_ms);
}

static size_t in_use_bytes(const struct mk__chunks *src)
{
    return src->mapped - src->spare * src->chunk_size;
}

void *mk__chunks_get(struct mk__chunks *src, size_t size, bool *fresh)
{
    void *c = src->spares;

    if (c && size == src->chunk_size) {
        MK_ASSERT(src->spare > 0 && src->spare <= src->chunks);
        src->spares = *(void **)c;
        src->spare--;
        mk__retain_note(&src->retain, in_use_bytes(src), src->spare * src->chunk_size);
        *fresh = false;
        return c;
    }
    if (!(c = mk__pages_map(size, src->size_aligned ? src->chunk_size : 0)))
        return NULL;
    src->chunks++;
    src->mapped += size;
    if (src->chunks > src->peak_chunks)
        src->peak_chunks = src->chunks;
    mk__retain_note(&src->retain, in_use_bytes(src), src->spare * src->chunk_size);
    *fresh = true;
    MK_ASSERT(src->spare <= src->chunks && src->mapped >= src->chunks * src->chunk_size);
    return c;
}

void mk__chunks_unmap(struct mk__chunks *src, void *c, size_t size)
{
    MK_ASSERT(src->chunks > src->spare && src->mapped >= size);
    src->chunks--;
    src->mapped -= size;
    /* ASan's shadow outlives the mapping: leave it clean for whoever maps next. */
    MK_UNPOISON(c, size);
    mk__pages_unmap(c, size);
}

void mk__chunks_put(struct mk__chunks *src, void *c, size_t size)
{
    size_t excess;

    if (size != src->chunk_size) {
        mk__chunks_unmap(src, c, size);
        return;
    }
    *(void **)c = src->spares;
    src->spares = c;
    src->spare++;
    MK_ASSERT(src->spare <= src->chunks);
    excess =
        mk__retain_excess(&src->retain, in_use_bytes(src), src->spare * src->chunk_size,
                          src->chunks - src->spare <= 1);
    mk__chunks_trim(src, src->spare - excess / src->chunk_size);
}

void mk__chunks_trim(struct mk__chunks *src, size_t keep)
{
    while (src->spare > keep) {
        void *c = src->spares;

        src->spares = *(void **)c;
        src->spare--;
        mk__chunks_unmap(src, c, src->chunk_size);
    }
}
