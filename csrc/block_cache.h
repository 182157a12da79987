/* Internal: large freed blocks of ORT's tensors kept for reuse.
 *
 * A model runs the same graph every frame, so ORT asks for the same large
 * blocks (whole-plane intermediates, a Loop's slabs) in the same order every
 * run. Taken from malloc, each one above glibc's mmap threshold is a fresh
 * mapping whose pages the kernel zeroes on first touch, and is unmapped
 * again when freed, and smaller ones come back from the top of a heap that
 * malloc trimmed: at 1080p that cost VMAF's features graph 12,227 page
 * faults and about a tenth of its time (docs/security.md, "Memory"). The budget
 * allocator (ort_backend.c) hands such blocks back here instead, and takes
 * them from here first.
 *
 * Bounded: at most VDNN_BLOCK_CACHE_BLOCKS blocks and
 * VDNN_BLOCK_CACHE_BYTES bytes are kept; blocks below
 * VDNN_BLOCK_CACHE_MIN_BYTES are never kept (malloc serves those from its
 * heap). Kept blocks belong to no session's budget; vdnn_block_cache_purge
 * frees them all (the backend calls it when its last session closes).
 * Thread-safe, and safe across fork() (its lock is taken around it).
 * VMAFDNN_NO_BLOCK_CACHE=1 in the environment (read once) keeps nothing, to
 * measure what the cache saves. */
#ifndef VMAFDNN_BLOCK_CACHE_H
#define VMAFDNN_BLOCK_CACHE_H

#include <stddef.h>

#define VDNN_BLOCK_CACHE_BLOCKS 256
#define VDNN_BLOCK_CACHE_BYTES ((size_t)64 << 20)
#define VDNN_BLOCK_CACHE_MIN_BYTES ((size_t)64 << 10)

/* A kept block of at least `bytes` and at most 1/8 more, the closest fit;
 * its capacity in *capacity. NULL when none fits (then allocate). */
void *vdnn_block_cache_take(size_t bytes, size_t *capacity);

/* Offers a block of `capacity` bytes (from posix_memalign or malloc): 1 when
 * kept (the oldest kept blocks are freed to make room), 0 when the caller
 * must free it itself (too small, too big, or the cache is off). */
int vdnn_block_cache_put(void *block, size_t capacity);

/* Frees every kept block. */
void vdnn_block_cache_purge(void);

/* Bytes kept now (for tests and diagnostics). */
size_t vdnn_block_cache_bytes(void);

#endif
