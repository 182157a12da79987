/* Picture buffers: see picture_memory.h.
 *
 * One registry for the process, as a buffer may outlive the context it came
 * from (a reader's frames still held by the caller after close). A context
 * keeps up to KEPT_PER_OWNER of its freed buffers for its next allocations
 * of the same size: a reader allocates one a frame, and a device's
 * host-accessible memory is slow to get and to give back (CUDA's
 * cudaHostAlloc maps pages for the device; cudaFreeHost waits for it). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "picture_memory.h"

enum { KEPT_PER_OWNER = 16, PLAIN_ALIGNMENT = 64 };

typedef struct PictureBuffer {
    void *data;
    size_t bytes;
    const VdnnHostMemory *memory; /* NULL: plain memory (posix_memalign) */
    void *handle;                 /* ORT's owner of a block of `memory` */
    const void *owner;            /* NULL once the owner went away */
    int kept;                     /* freed, kept for the owner's next allocation */
} PictureBuffer;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static PictureBuffer *buffers;
static size_t n_buffers, cap_buffers;

/* fork() copies only the calling thread, and the lock is taken inside
 * others (a session's host blocks, a WebGPU run's turn) whose fork handlers
 * run in their own order: it is not taken around fork; the child starts
 * with a registry of its own, fresh and empty (the parent's buffers are not
 * the child's to free, and its copy of the list may be half written). */
static void fork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&lock, &fresh, sizeof(fresh));
    buffers = NULL;
    n_buffers = cap_buffers = 0;
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

static void lock_registry(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    pthread_mutex_lock(&lock);
}

/* Room for one more buffer, the lock held: 0 or -ENOMEM. */
static int make_room(void)
{
    if (n_buffers < cap_buffers)
        return 0;
    const size_t cap = cap_buffers ? 2 * cap_buffers : 16;
    PictureBuffer *grown = realloc(buffers, cap * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    buffers = grown;
    cap_buffers = cap;
    return 0;
}

static void give_back(const PictureBuffer *b)
{
    if (b->memory)
        vdnn_ort_host_memory_release(b->handle);
    else
        free(b->data);
}

/* Drops buffers[k] from the registry (the caller gives it back after
 * unlocking: ORT's release may wait for the device). */
static PictureBuffer take_out(size_t k)
{
    const PictureBuffer b = buffers[k];
    buffers[k] = buffers[--n_buffers];
    return b;
}

static int reuse_kept(const void *owner, const VdnnHostMemory *memory, size_t bytes, void **out)
{
    for (size_t k = 0; k < n_buffers; k++) {
        PictureBuffer *b = &buffers[k];
        if (b->kept && b->owner == owner && b->memory == memory && b->bytes == bytes) {
            b->kept = 0;
            *out = b->data;
            return 1;
        }
    }
    return 0;
}

int vdnn_picture_buffer_new(const void *owner, const VdnnHostMemory *memory, size_t bytes,
                            void **out)
{
    *out = NULL;
    if (!bytes)
        return vdnn_fail(-EINVAL, "picture_buffer_alloc: size is 0");
    lock_registry();
    const int reused = reuse_kept(owner, memory, bytes, out);
    pthread_mutex_unlock(&lock);
    if (reused)
        return 0;

    PictureBuffer b = {NULL, bytes, memory, NULL, owner, 0};
    if (memory)
        b.data = vdnn_ort_host_memory_block(memory, bytes, &b.handle);
    if (!b.data) { /* host-accessible memory is scarce: plain memory still works */
        b.memory = NULL;
        if (bytes > SIZE_MAX - PLAIN_ALIGNMENT || posix_memalign(&b.data, PLAIN_ALIGNMENT, bytes))
            return vdnn_fail(-ENOMEM, "picture_buffer_alloc: out of memory for %zu bytes",
                             bytes);
    }
    /* The block first, outside the lock (pinned memory is slow to get); the
     * registry may have been emptied and freed meanwhile (disown). */
    lock_registry();
    if (make_room()) {
        pthread_mutex_unlock(&lock);
        give_back(&b);
        return vdnn_fail(-ENOMEM, "picture_buffer_alloc: out of memory");
    }
    buffers[n_buffers++] = b;
    pthread_mutex_unlock(&lock);
    *out = b.data;
    return 0;
}

int vdnn_picture_buffer_free(void *data)
{
    if (!data)
        return 0;
    lock_registry();
    size_t k = 0, kept = 0;
    while (k < n_buffers && !(buffers[k].data == data && !buffers[k].kept))
        k++;
    if (k == n_buffers) {
        pthread_mutex_unlock(&lock);
        return vdnn_fail(-EINVAL, "picture_buffer_free: %p is not a buffer of "
                         "vmaf_dnn_picture_buffer_alloc, or was freed already", data);
    }
    const void *owner = buffers[k].owner;
    for (size_t i = 0; owner && i < n_buffers; i++)
        kept += buffers[i].kept && buffers[i].owner == owner;
    if (owner && kept < KEPT_PER_OWNER) {
        buffers[k].kept = 1;
        pthread_mutex_unlock(&lock);
        return 0;
    }
    const PictureBuffer b = take_out(k);
    pthread_mutex_unlock(&lock);
    give_back(&b);
    return 0;
}

void vdnn_picture_buffers_disown(const void *owner)
{
    PictureBuffer gone[KEPT_PER_OWNER];
    size_t n_gone = 0;
    lock_registry();
    for (size_t k = 0; k < n_buffers;) {
        if (buffers[k].owner != owner) {
            k++;
        } else if (buffers[k].kept && n_gone < KEPT_PER_OWNER) {
            gone[n_gone++] = take_out(k);
        } else {
            buffers[k++].owner = NULL;
        }
    }
    if (!n_buffers) { /* nothing out: the registry's own memory goes too */
        free(buffers);
        buffers = NULL;
        cap_buffers = 0;
    }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n_gone; i++)
        give_back(&gone[i]);
}

int vdnn_picture_memory_holds(const VdnnHostMemory *memory, const void *p, size_t bytes)
{
    const uintptr_t at = (uintptr_t)p;
    int inside = 0;
    lock_registry();
    for (size_t k = 0; !inside && k < n_buffers; k++) {
        const PictureBuffer *b = &buffers[k];
        inside = b->memory == memory && !b->kept && at >= (uintptr_t)b->data &&
                 bytes <= b->bytes && at - (uintptr_t)b->data <= b->bytes - bytes;
    }
    pthread_mutex_unlock(&lock);
    return inside;
}
