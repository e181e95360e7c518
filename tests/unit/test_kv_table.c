/*
 * test_kv_table.c - kv_table.h against a model, and its reserve.
 *
 *   - random puts, finds and removes of keys from a small range (so keys
 *     come back after removal and probe runs meet) agree with a plain array
 *     of counts, and every key sits in the probe run from its home (the
 *     table's invariant, which backward-shift deletion must keep);
 *   - a table filled in another table's slot order, after mk_kv_reserve,
 *     puts each key a slot or so from its home: grown as it goes instead,
 *     such keys lap the smaller table, the slots of the lap before get a
 *     second share, and the sum of displacements is 500 times larger (the
 *     tracer's merge of its threads' sites, and the report reading them).
 */
#include "../../src/trace/reader.h" /* kv_table.h, mk_kv_heap_table */
#include "check.h"

#define KEYS 5000

/* Slots between a key's home and where it sits. */
static size_t displacement(const mk_kv_table_t *t, size_t i)
{
    return (i - mk_kv_home(t->slots[i].key, t->cap, false)) & (t->cap - 1);
}

/* Every key is in the run from its home: no empty slot between. */
static bool runs_whole(const mk_kv_table_t *t)
{
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].key)
            continue;
        for (size_t d = displacement(t, i); d > 0; d--)
            if (!t->slots[(i - d) & (t->cap - 1)].key)
                return false;
    }
    return true;
}

static void run_model(unsigned long long seed)
{
    static uint64_t model[KEYS + 1]; /* a = times put, per key; 0: absent */
    memset(model, 0, sizeof model);
    mk_kv_table_t t = mk_kv_heap_table();
    uint64_t rng = seed | 1;
    size_t live = 0;
    for (int step = 0; step < 200000; step++) {
        uint64_t key = 1 + xorshift64(&rng) % KEYS;
        unsigned op = (unsigned)(xorshift64(&rng) % 3);
        if (op < 2) {
            bool fresh;
            mk_kv_t *s = mk_kv_put(&t, key, &fresh);
            CHECK(s && s->key == key && fresh == !model[key]);
            live += fresh;
            s->a++;
            model[key]++;
        } else {
            mk_kv_t *s = mk_kv_find(&t, key);
            CHECK_MSG((s != NULL) == (model[key] != 0), "key %llu, seed %#llx\n",
                      (unsigned long long)key, seed);
            if (s) {
                CHECK(s->a == model[key]);
                mk_kv_remove(&t, s);
                model[key] = 0;
                live--;
            }
        }
        if (step % 20000 == 0)
            CHECK(runs_whole(&t));
    }
    CHECK(t.used == live);
    for (uint64_t k = 1; k <= KEYS; k++) {
        const mk_kv_t *s = mk_kv_find(&t, k);
        CHECK((s ? s->a : 0) == model[k]);
    }
    CHECK(runs_whole(&t));
    mk_kv_release(&t);
}

/* b filled from a's slots in order, reserved first or grown as it goes; the
 * sum of its keys' displacements as they went in. */
static size_t copy_in_slot_order(const mk_kv_table_t *a, mk_kv_table_t *b, bool reserve)
{
    *b = mk_kv_heap_table();
    if (reserve)
        CHECK(mk_kv_reserve(b, a->used) && b->cap * 3 >= a->used * 4);
    size_t moved = 0;
    for (size_t i = 0; i < a->cap; i++) {
        uint64_t key = a->slots[i].key;
        bool fresh;
        mk_kv_t *s = key ? mk_kv_put(b, key, &fresh) : NULL;
        if (!key)
            continue;
        CHECK(s && fresh);
        moved += displacement(b, (size_t)(s - b->slots));
    }
    CHECK(b->used == a->used && runs_whole(b));
    return moved;
}

static void run_reserve(void)
{
    /* A compiler's stack ids, 1..33,000, counted in a thread's table; merged
     * into one table (the tracer's SUMMARY), in that one's order; read back
     * into the report's (its sites come in the record in the merged table's
     * order). Each copy in slot order, as the code did without reserving. */
    mk_kv_table_t thread = mk_kv_heap_table(), merged, report;
    for (uint64_t k = 1; k <= 33000; k++) {
        bool fresh;
        CHECK(mk_kv_put(&thread, k, &fresh) && fresh);
    }
    size_t merge_grown = copy_in_slot_order(&thread, &merged, false);
    size_t read_grown = copy_in_slot_order(&merged, &report, false);
    mk_kv_release(&report);
    size_t read_reserved = copy_in_slot_order(&merged, &report, true);
    mk_kv_release(&report);
    mk_kv_release(&merged);
    size_t merge_reserved = copy_in_slot_order(&thread, &merged, true);
    mk_kv_release(&merged);
    printf("displacement, copied in slot order: merge %zu grown, %zu reserved; "
           "read back %zu grown, %zu reserved\n",
           merge_grown, merge_reserved, read_grown, read_reserved);
    /* reserved, a key lands a slot or so from home on average */
    CHECK_MSG(merge_reserved <= 33000 && read_reserved <= 33000, "%zu, %zu\n",
              merge_reserved, read_reserved);
    mk_kv_release(&thread);
}

int main(void)
{
    unsigned long long seed = test_seed();
    for (unsigned i = 0; i < 3; i++)
        run_model(seed + i);
    run_reserve();
    return check_report("test_kv_table");
}
