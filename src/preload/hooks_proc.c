/*
 * hooks_proc.c - process events: exec (flush first; keep the children
 * traced), _exit and syscall(SYS_exit_group) (flush first), dlopen/dlclose (new module
 * map), unwind tables registered at run time (--sample's stack walks), and with
 * --syscalls the memory system calls mmap, munmap, mremap, brk and sbrk.
 */
#define _GNU_SOURCE
#include "record.h"

#include "child_env.h"
#include "modules.h"
#include "stacks.h"

#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

/* ---- unwind tables registered at run time (JIT compilers) ----
 *
 * Passed on unchanged; the first one sends --sample's stack walks from
 * libgcc's unwinder back to libunwind (stacks.c says why). */

#define REGISTER_FRAME_HOOK(name, params, args)                                          \
    MK_EXPORT void name params;                                                          \
    MK_EXPORT void name params                                                           \
    {                                                                                    \
        typedef void(*name##_fn) params;                                                 \
        atomic_store(&mk_frames_registered, true);                                       \
        name##_fn next = NEXT(name##_fn, #name);                                         \
        if (next)                                                                        \
            next args;                                                                   \
    }

REGISTER_FRAME_HOOK(__register_frame, (void *begin), (begin))
REGISTER_FRAME_HOOK(__register_frame_table, (void *begin), (begin))
REGISTER_FRAME_HOOK(__register_frame_info, (const void *begin, void *ob), (begin, ob))
REGISTER_FRAME_HOOK(__register_frame_info_table, (void *begin, void *ob), (begin, ob))
REGISTER_FRAME_HOOK(__register_frame_info_bases,
                    (const void *begin, void *ob, void *tbase, void *dbase),
                    (begin, ob, tbase, dbase))
REGISTER_FRAME_HOOK(__register_frame_info_table_bases,
                    (void *begin, void *ob, void *tbase, void *dbase),
                    (begin, ob, tbase, dbase))

/* ---- exec: the environment that keeps a child traced (child_env.h) ---- */

#define TRACE_ENV(envp)                                                                  \
    mk_child_env(envp,                                                                   \
                 alloca((mk_env_count(envp) + MK_CHILD_ENV_VARS + 1) * sizeof(char *)))

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

/* execve and execvpe: the trace ended, the child's environment made; execv
 * and execvp: the same with the process's own environment. */
#define EXEC_HOOK(name, without_env)                                                     \
    MK_EXPORT int name(const char *file, char *const argv[], char *const envp[])         \
    {                                                                                    \
        execve_fn next = NEXT(execve_fn, #name);                                         \
        mk_before_exec();                                                                \
        return next(file, argv, TRACE_ENV(envp));                                        \
    }                                                                                    \
    MK_EXPORT int without_env(const char *file, char *const argv[])                      \
    {                                                                                    \
        return name(file, argv, environ);                                                \
    }

EXEC_HOOK(execve, execv)
EXEC_HOOK(execvpe, execvp)

MK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    typedef int (*fexecve_fn)(int, char *const[], char *const[]);
    fexecve_fn next = NEXT(fexecve_fn, "fexecve");
    mk_before_exec();
    return next(fd, argv, TRACE_ENV(envp));
}

/* posix_spawn starts the child with the envp it is given, often one the
 * program built itself: the tracer's variables go in, as for exec. */
typedef int (*posix_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                              const posix_spawnattr_t *, char *const[], char *const[]);

#define SPAWN_HOOK(name)                                                                 \
    MK_EXPORT int name(                                                                  \
        pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,         \
        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])           \
    {                                                                                    \
        posix_spawn_fn next = NEXT(posix_spawn_fn, #name);                               \
        return next(pid, file, actions, attr, argv, TRACE_ENV(envp));                    \
    }

SPAWN_HOOK(posix_spawn)
SPAWN_HOOK(posix_spawnp)

/* The execl family: gather the variadic arguments into an argv. */
#define GATHER_ARGS(first, argv, envp_out)                                               \
    do {                                                                                 \
        va_list ap_;                                                                     \
        size_t n_ = 1;                                                                   \
        va_start(ap_, first);                                                            \
        while (va_arg(ap_, char *))                                                      \
            n_++;                                                                        \
        va_end(ap_);                                                                     \
        argv = alloca((n_ + 1) * sizeof(char *));                                        \
        argv[0] = (char *)(first);                                                       \
        va_start(ap_, first);                                                            \
        for (size_t i_ = 1; i_ <= n_; i_++)                                              \
            argv[i_] = va_arg(ap_, char *);                                              \
        envp_out = va_arg(ap_, char **);                                                 \
        va_end(ap_);                                                                     \
    } while (0)

MK_EXPORT int execl(const char *path, const char *arg, ...)
{
    char **argv, **unused;
    GATHER_ARGS(arg, argv, unused);
    (void)unused;
    return execve(path, argv, environ);
}

MK_EXPORT int execlp(const char *file, const char *arg, ...)
{
    char **argv, **unused;
    GATHER_ARGS(arg, argv, unused);
    (void)unused;
    return execvpe(file, argv, environ);
}

MK_EXPORT int execle(const char *path, const char *arg, ...)
{
    char **argv, **envp;
    GATHER_ARGS(arg, argv, envp);
    return execve(path, argv, envp);
}

/* ---- exits that skip the destructors ---- */

MK_EXPORT __attribute__((noreturn)) void _exit(int status)
{
    typedef void (*exit_fn)(int);
    exit_fn next = NEXT(exit_fn, "_exit");
    mk_finish(MK_END_EXIT_NOW);
    if (next)
        next(status);
    mk_syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

MK_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
    _exit(status);
}

/*
 * syscall(SYS_exit_group, status): the end of a process that skips exit and
 * _exit both. The trace is ended first, as _exit does; every call then goes to
 * the kernel through mk_syscall (base.c), which the tracer's own calls use.
 */
MK_EXPORT long syscall(long nr, ...)
{
    va_list ap;

    if (nr == SYS_exit_group)
        mk_finish(MK_END_EXIT_NOW);
    va_start(ap, nr);
    long ret = mk_syscall_v(nr, ap);
    va_end(ap);
    return ret;
}

/* ---- dlopen/dlclose: the module map changes ---- */

MK_EXPORT void *dlopen(const char *file, int mode)
{
    typedef void *(*dlopen_fn)(const char *, int);
    dlopen_fn next = NEXT(dlopen_fn, "dlopen");
    void *h = next ? next(file, mode) : NULL;
    if (h && atomic_load(&mk_st.phase) == MK_PHASE_ON) {
        int saved = errno;
        mk_guard++;
        mk_modules_write();
        mk_guard--;
        errno = saved;
    }
    return h;
}

MK_EXPORT int dlclose(void *h)
{
    typedef int (*dlclose_fn)(void *);
    dlclose_fn next = NEXT(dlclose_fn, "dlclose");
    int rc = next ? next(h) : -1;
    if (atomic_load(&mk_st.phase) == MK_PHASE_ON) {
        mk_guard++;
        mk_stacks_flush_cache();
        mk_modules_write();
        mk_guard--;
    }
    return rc;
}

/* ---- --syscalls: the memory system calls that go through the PLT ---- */

static inline mk_thread_t *enter_syscalls(void)
{
    /* Off by default: then these hooks cost one load and a branch. */
    if (MK_LIKELY(!mk_st.cfg.syscalls))
        return NULL;
    return mk_enter();
}

MK_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
    mmap_fn next = NEXT(mmap_fn, "mmap");
    mk_thread_t *t = enter_syscalls();
    void *p = next(addr, len, prot, flags, fd, off);
    if (t) {
        record_sysmap(t, MK_K_MMAP, len, p == MAP_FAILED ? NULL : p, NULL);
        mk_leave(t);
    }
    return p;
}

MK_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

MK_EXPORT int munmap(void *addr, size_t len)
{
    typedef int (*munmap_fn)(void *, size_t);
    munmap_fn next = NEXT(munmap_fn, "munmap");
    mk_thread_t *t = enter_syscalls();
    if (t) {
        record_sysmap(t, MK_K_MUNMAP, len, addr, NULL);
        mk_leave(t);
    }
    return next(addr, len);
}

MK_EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
    va_list ap;
    void *fixed = NULL;
    if (flags & MREMAP_FIXED) {
        va_start(ap, flags);
        fixed = va_arg(ap, void *);
        va_end(ap);
    }
    typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
    mremap_fn next = NEXT(mremap_fn, "mremap");
    mk_thread_t *t = enter_syscalls();
    void *p = next(old, old_len, len, flags, fixed);
    if (t) {
        record_sysmap(t, MK_K_MREMAP, len, p == MAP_FAILED ? NULL : p, old);
        mk_leave(t);
    }
    return p;
}

MK_EXPORT void *sbrk(intptr_t inc)
{
    typedef void *(*sbrk_fn)(intptr_t);
    sbrk_fn next = NEXT(sbrk_fn, "sbrk");
    mk_thread_t *t = inc ? enter_syscalls() : NULL;
    void *p = next(inc);
    if (t) {
        if (p != (void *)-1)
            record_sysmap(t, MK_K_BRK, (size_t)inc, (char *)p + inc, NULL);
        mk_leave(t);
    }
    return p;
}

MK_EXPORT int brk(void *addr)
{
    typedef int (*brk_fn)(void *);
    brk_fn next = NEXT(brk_fn, "brk");
    mk_thread_t *t = enter_syscalls();
    void *was = t ? sbrk(0) : NULL;
    int rc = next(addr);
    if (t) {
        if (rc == 0)
            record_sysmap(t, MK_K_BRK, (size_t)((char *)addr - (char *)was), addr, NULL);
        mk_leave(t);
    }
    return rc;
}
