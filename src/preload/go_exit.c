/*
 * go_exit.c - the end of a Go program. Go's runtime ends the process with
 * its own exit_group system call (runtime.exit, on every way out: main
 * returning, os.Exit, a fatal panic), never through libc, so neither the
 * destructors nor the _exit and syscall() hooks see it: a cgo program's
 * 80,000 calls left a trace of none, its threads' records unwritten.
 *
 * In a program that carries Go's build-id note, the first 16-byte-aligned
 * 12 bytes of its code that are exactly what runtime.exit's assembly source
 * assembles to (mov 8(%rsp),%edi; mov $231,%eax; syscall; ret: the exit code
 * from the stack, ABI0) become a jump to mk_go_exit_entry, which ends the
 * trace on a stack of its own, as _exit does, and then makes the same
 * system call. Any such 12 bytes are an exit_group of the code on the stack,
 * so taking the first is safe wherever it is; the runtime's code comes
 * first in a Go program's text, so the search reads a few hundred KB.
 * Anything else (another Go's or another architecture's code, a text page
 * that cannot be made writable) leaves the program as it was, and a trace
 * without its end says so, as before. The patch is made from the
 * constructor, before Go's runtime starts: no other thread runs yet.
 */
#define _GNU_SOURCE
#include "go_exit.h"

#include <elf.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)

/* runtime.exit (Go 1.x, linux/amd64, src/runtime/sys_linux_amd64.s) */
static const uint8_t go_exit_code[12] = {0x8b, 0x7c, 0x24, 0x08, /* mov 8(%rsp),%edi */
                                         0xb8, 0xe7, 0x00, 0x00, 0x00, /* mov $231,%eax */
                                         0x0f, 0x05,                   /* syscall */
                                         0xc3};                        /* ret */

static void (*end_trace)(int reason);

/* Where the ending thread runs the trace's end: a goroutine's stack is a
 * few KB, and a second thread that exits meanwhile waits (the first one's
 * exit_group ends it). Untouched, it costs no memory. */
#define GO_EXIT_STACK (256u << 10)
MK_HIDDEN _Alignas(64) uint8_t mk_go_exit_stack[GO_EXIT_STACK];
MK_HIDDEN int mk_go_exit_busy;

MK_HIDDEN __attribute__((noreturn, used)) void mk_go_exit(int code);

void mk_go_exit(int code)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    end_trace(MK_END_EXIT_NOW);
    for (;;)
        mk_syscall(SYS_exit_group, code);
}

/* The jump's target: the exit code from the Go caller's stack, then our own
 * stack, then mk_go_exit. */
__asm__(".text\n"
        ".globl mk_go_exit_entry\n"
        ".hidden mk_go_exit_entry\n"
        ".type mk_go_exit_entry, @function\n"
        "mk_go_exit_entry:\n"
        "    endbr64\n"
        "    movl 8(%rsp), %edi\n"
        "1:  movl $1, %eax\n"
        "    xchgl %eax, mk_go_exit_busy(%rip)\n"
        "    testl %eax, %eax\n"
        "    jz 2f\n"
        "    pause\n"
        "    jmp 1b\n"
        "2:  leaq mk_go_exit_stack+262144(%rip), %rsp\n"
        "    andq $-16, %rsp\n"
        "    call mk_go_exit\n"
        "    ud2\n"
        ".size mk_go_exit_entry, .-mk_go_exit_entry\n");
_Static_assert(GO_EXIT_STACK == 262144, "the entry's stack top is the array's end");

MK_HIDDEN void mk_go_exit_entry(void);

typedef struct program {
    bool go;
    uintptr_t text_lo, text_hi; /* its first executable segment */
} program_t;

/* Does a PT_NOTE segment hold Go's build id (owner "Go", type 4; the Go
 * linker writes the name's size as 4)? */
static bool has_go_note(const uint8_t *p, size_t n)
{
    while (n >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *h = (const void *)p;
        size_t name = (h->n_namesz + 3) & ~3u, desc = (h->n_descsz + 3) & ~3u;
        size_t all = sizeof *h + name + desc;
        if (all > n)
            return false;
        if (h->n_type == 4 && (h->n_namesz == 3 || h->n_namesz == 4) && /* "Go\0\0" */
            memcmp(p + sizeof *h, "Go", 3) == 0)
            return true;
        p += all;
        n -= all;
    }
    return false;
}

/* The program is the first object dl_iterate_phdr gives. */
static int look_at_program(struct dl_phdr_info *info, size_t size, void *data)
{
    program_t *prog = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE &&
            has_go_note((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz))
            prog->go = true;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && !prog->text_lo) {
            prog->text_lo = info->dlpi_addr + ph->p_vaddr;
            prog->text_hi = prog->text_lo + ph->p_memsz;
        }
    }
    return 1;
}

void mk_go_exit_arm(void (*end)(int reason))
{
    program_t prog = {0};
    dl_iterate_phdr(look_at_program, &prog);
    if (!prog.go || !prog.text_lo)
        return;
    uint8_t *at = NULL;
    for (uintptr_t a = (prog.text_lo + 15) & ~(uintptr_t)15;
         a + sizeof go_exit_code <= prog.text_hi; a += 16)
        if (memcmp((const void *)a, go_exit_code, sizeof go_exit_code) == 0) {
            at = (uint8_t *)a;
            break;
        }
    if (!at)
        return;
    /* 16-byte aligned: the 12 bytes sit in one page */
    long page = sysconf(_SC_PAGESIZE);
    void *pg = (void *)((uintptr_t)at & ~(uintptr_t)(page - 1));
    if (mprotect(pg, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return;
    end_trace = end;
    uint64_t target = (uint64_t)(uintptr_t)mk_go_exit_entry;
    uint8_t jump[12] = {0x48, 0xb8}; /* movabs $target,%rax; jmp *%rax */
    memcpy(jump + 2, &target, sizeof target);
    jump[10] = 0xff;
    jump[11] = 0xe0;
    memcpy(at, jump, sizeof jump);
    mprotect(pg, (size_t)page, PROT_READ | PROT_EXEC);
}

#else

void mk_go_exit_arm(void (*end)(int reason))
{
    (void)end; /* runtime.exit is recognized on x86-64 only */
}

#endif
