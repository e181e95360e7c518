/*
 * memkit/memkit.h - all of libmemkit's C API in one include.
 *
 *   mk_stack  stack/frame allocator: bump allocation, whole frames released at once
 *   mk_pool   fixed-size pool: O(1) allocation and free of same-size objects
 *   mk_fifo   FIFO allocator: bump allocation, chunks recycled when their blocks are
 * freed mk_ring   ring allocator: frames built by one thread, released by any
 */
#ifndef MEMKIT_MEMKIT_H
#define MEMKIT_MEMKIT_H

#include <memkit/common.h>
#include <memkit/stack.h>
#include <memkit/pool.h>
#include <memkit/fifo.h>
#include <memkit/ring.h>
#include <memkit/tlsf.h>
#include <memkit/localbuf.h>
#include <memkit/smallvec.h>

#endif /* MEMKIT_MEMKIT_H */
