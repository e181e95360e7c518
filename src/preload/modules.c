/*
 * modules.c - the module map: which object is loaded where, with its build id,
 * so stacks can be symbolized offline. A full snapshot is written at start
 * and after every dlopen/dlclose; readers use the latest snapshot that covers
 * an address.
 */
#define _GNU_SOURCE
#include "modules.h"

#include "output.h"
#include "thread.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SNAP_CAP (4u << 20)

typedef struct snap {
    uint8_t *buf, *p;
    uint64_t count;
} snap_t;

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *snap_buf;

/* Copies the GNU build id note of a loaded object, if it has one. */
static size_t build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name_len = (nh->n_namesz + 3) & ~3u,
                   desc_len = (nh->n_descsz + 3) & ~3u;
            const uint8_t *name = p + sizeof *nh, *desc = name + name_len;
            if (desc + desc_len > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= cap) {
                memcpy(out, desc, nh->n_descsz);
                return nh->n_descsz;
            }
            p = desc + desc_len;
        }
    }
    return 0;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    snap_t *s = arg;
    const char *path = info->dlpi_name;
    uint8_t id[64];
    size_t id_len, path_len, nseg = 0;

    (void)size;
    if (!path || !*path) {
        /* The main program has no name here; the first such object is it. */
        size_t n;
        path = s->count == 0 ? mk_exe_path(&n) : "";
    }
    path_len = strnlen(path, PATH_MAX);
    for (int i = 0; i < info->dlpi_phnum; i++)
        nseg += info->dlpi_phdr[i].p_type == PT_LOAD;
    if ((size_t)(s->p - s->buf) + path_len + 128 + nseg * 20 > SNAP_CAP)
        return 1; /* a map this large is cut; symbols past it stay unknown */
    id_len = build_id(info, id, sizeof id);

    s->p = mk_put_u64(s->p, info->dlpi_addr);
    s->p = mk_put_varint(s->p, path_len);
    memcpy(s->p, path, path_len);
    s->p += path_len;
    s->p = mk_put_varint(s->p, id_len);
    memcpy(s->p, id, id_len);
    s->p += id_len;
    s->p = mk_put_varint(s->p, nseg);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        s->p = mk_put_varint(s->p, ph->p_vaddr);
        s->p = mk_put_varint(s->p, ph->p_memsz);
    }
    s->count++;
    return 0;
}

void mk_modules_write(void)
{
    static uint8_t *body;
    snap_t s;
    mk_shield_t shield; /* a handler calling dlopen would wait on snap_lock */

    mk_shield(&shield);
    pthread_mutex_lock(&snap_lock);
    if (!snap_buf) {
        void *m = mk_sys_mmap(NULL, 2 * (size_t)SNAP_CAP, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            pthread_mutex_unlock(&snap_lock);
            mk_unshield(&shield);
            return;
        }
        snap_buf = m;
        body = snap_buf + SNAP_CAP;
    }
    s.buf = s.p = body;
    s.count = 0;
    dl_iterate_phdr(add_module, &s);

    /* The count goes first; the modules were built after it. */
    uint8_t *p = mk_put_varint(snap_buf, s.count);
    size_t body_len = (size_t)(s.p - s.buf);
    memmove(p, body, body_len);
    mk_output_record(NULL, MK_REC_MODULES, snap_buf, (size_t)(p - snap_buf) + body_len);
    pthread_mutex_unlock(&snap_lock);
    mk_unshield(&shield);
}

void mk_modules_after_fork_child(void)
{
    pthread_mutex_init(&snap_lock, NULL);
}
