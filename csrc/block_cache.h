/* Internal: large freed blocks of ORT's tensors kept for reuse.
 *
 * A model runs the same graph every frame, so ORT asks for the same large
 * blocks (whole-plane intermediates, a Loop's slabs) in the same order every
 * run. Taken from malloc, each one above glibc's mmap threshold is a fresh
 * mapping whose pages the kernel zeroes on first touch, and is unmapped
 * again when freed, and smaller ones come back from the top of a heap that
 * malloc trimmed: at 1080p that cost VMAF's features graph 12,227 page
 * faults a frame and about a tenth of its time (docs/security.md, "Memory").
 * The budget allocator (ort_backend.c) hands such blocks back here instead,
 * and takes them from here first.
 *
 * Bounded: at most VDNN_BLOCK_CACHE_BLOCKS blocks and
 * VDNN_BLOCK_CACHE_BYTES bytes are kept, the oldest freed first to make
 * room; blocks below VDNN_BLOCK_CACHE_MIN_BYTES are never kept (malloc serves
 * those from its heap). A block is kept only while some session is open, and
 * only until the session it belonged to closes: a closed session's blocks
 * never outlive it, whatever other sessions stay open. Kept blocks count
 * against no session's budget, and their contents are not cleared (as
 * malloc's are not).
 * Thread-safe. fork(): the child starts with an empty cache (the parent's
 * kept blocks stay there as unused copy-on-write pages); see
 * vdnn_block_cache_fork_child. VMAFDNN_NO_BLOCK_CACHE=1 in the environment
 * (read at the first session) keeps nothing, to measure what the cache
 * saves. */
#ifndef VMAFDNN_BLOCK_CACHE_H
#define VMAFDNN_BLOCK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define VDNN_BLOCK_CACHE_BLOCKS 256
#define VDNN_BLOCK_CACHE_BYTES ((size_t)64 << 20)
#define VDNN_BLOCK_CACHE_MIN_BYTES ((size_t)64 << 10)

/* A session opened: blocks may be kept from now on. */
void vdnn_block_cache_session_opened(void);

/* Session `owner` (the tag its blocks were put with) closed: its kept blocks
 * are freed, and every kept block when no session is open any more. */
void vdnn_block_cache_session_closed(uint64_t owner);

/* A kept block of exactly `bytes` (the newest such), or NULL (then
 * allocate). Exact, so that a session is charged what it holds. */
void *vdnn_block_cache_take(size_t bytes);

/* Offers a block of `bytes` bytes (from posix_memalign or malloc) that
 * belonged to session `owner` (0: to none): 1 when kept (the oldest kept
 * blocks are freed to make room), 0 when the caller must free it itself
 * (too small or too big, no session open, or the cache is off). */
int vdnn_block_cache_put(void *block, size_t bytes, uint64_t owner);

/* Frees every kept block (the allocator does, before it reports the host
 * out of memory). */
void vdnn_block_cache_purge(void);

/* Bytes kept now (for tests and diagnostics). */
size_t vdnn_block_cache_bytes(void);

/* For the library's pthread_atfork child handler: the child's cache is
 * empty and its lock free (another thread may have held it at the fork).
 * The sessions the child inherited still count as open. */
void vdnn_block_cache_fork_child(void);

#endif
