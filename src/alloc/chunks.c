/*
 * chunks.c - equal-sized chunks with a spare list, for the FIFO and the ring
 * (internal.h). An empty chunk of the standard size is kept for the next request
 * instead of being unmapped and faulted in again, up to max_spare of them.
 *
 * Invariants: spare <= chunks; spare <= max_spare after every put; mapped is the sum
 * of the sizes of every chunk mapped and not unmapped, spares included.
 */
#include "internal.h"

void mk__chunks_init(struct mk__chunks *src, size_t chunk_size, size_t max_spare,
                     bool size_aligned)
{
    *src = (struct mk__chunks){
        .chunk_size = chunk_size, .max_spare = max_spare, .size_aligned = size_aligned};
}

void *mk__chunks_get(struct mk__chunks *src, size_t size, bool *fresh)
{
    void *c = src->spares;

    if (c && size == src->chunk_size) {
        MK_ASSERT(src->spare > 0 && src->spare <= src->chunks);
        src->spares = *(void **)c;
        src->spare--;
        *fresh = false;
        return c;
    }
    if (!(c = mk__pages_map(size, src->size_aligned ? src->chunk_size : 0)))
        return NULL;
    src->chunks++;
    src->mapped += size;
    if (src->chunks > src->peak_chunks)
        src->peak_chunks = src->chunks;
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

bool mk__chunks_put(struct mk__chunks *src, void *c, size_t size)
{
    if (size == src->chunk_size && src->spare < src->max_spare) {
        *(void **)c = src->spares;
        src->spares = c;
        src->spare++;
        MK_ASSERT(src->spare <= src->max_spare && src->spare <= src->chunks);
        return true;
    }
    mk__chunks_unmap(src, c, size);
    return false;
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
