/*
 * elf_sym.h - a loaded object's dynamic symbol, by name, through the
 * object's GNU hash table (elf_sym.c).
 *
 * dladdr and dladdr1 answer "which symbol is at this address" by walking
 * every dynamic symbol of the object: 1.9 ms in gcc's cc1, which exports
 * 28,401, paid in every process the tracer starts in. The tracer always
 * knows the name it wants, so it asks the hash table, as the dynamic linker
 * does: a few probes.
 */
#ifndef MEMKIT_PRELOAD_ELF_SYM_H
#define MEMKIT_PRELOAD_ELF_SYM_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct mk_elf_sym {
    const char *path;      /* the object's, as the loader has it: "" for the program */
    uintptr_t base;        /* its load bias: a symbol is at base + st_value */
    const ElfW(Sym) * sym; /* its dynamic symbol `name`, NULL if it has none */
} mk_elf_sym_t;

enum mk_elf_found {
    MK_ELF_NO_OBJECT = 0, /* no loaded object holds the address */
    MK_ELF_FOUND = 1,     /* *out describes the object; out->sym may be NULL */
    MK_ELF_NO_HASH = -1,  /* the object has no GNU hash table: ask dladdr1 */
};

/* The loaded object that holds addr, and its dynamic symbol `name`. Takes
 * the loader's lock (dl_iterate_phdr); allocates nothing. */
enum mk_elf_found mk_elf_symbol_at(const void *addr, const char *name, mk_elf_sym_t *out);

/* The bounds of the loaded segment that holds addr: false if none does. */
bool mk_elf_segment_of(const void *addr, uintptr_t *lo, uintptr_t *hi);

/* The code around n functions of one object (fns[0]'s): from the end of the
 * highest dynamic function below all of them to the start of the lowest
 * above, within their segment. A compiler lays one source file's functions
 * out together, so where the n are one file's exports (glibc's malloc.c)
 * this holds its static ones too (_int_malloc, malloc_consolidate). False
 * when the object has no GNU hash table or the functions are not in one
 * segment. */
bool mk_elf_bracket(const void *const *fns, int n, uintptr_t *lo, uintptr_t *hi);

#endif /* MEMKIT_PRELOAD_ELF_SYM_H */
