/* Large freed blocks kept for reuse (block_cache.h). A small array under
 * one lock, oldest first: at most VDNN_BLOCK_CACHE_BLOCKS entries, searched
 * whole (a model's runs free and take a few dozen large blocks a frame). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "block_cache.h"

typedef struct Kept {
    void *block;
    size_t capacity;
} Kept;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static Kept kept[VDNN_BLOCK_CACHE_BLOCKS];
static size_t n_kept, kept_bytes;

/* fork() copies only the calling thread: a lock another thread held then
 * would stay locked in the child for ever. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&cache_lock);
}

static void fork_done(void)
{
    pthread_mutex_unlock(&cache_lock);
}

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static int disabled; /* VMAFDNN_NO_BLOCK_CACHE=1: keep nothing, for comparison */

static void setup(void)
{
    const char *off = getenv("VMAFDNN_NO_BLOCK_CACHE");
    disabled = off && strcmp(off, "1") == 0;
    pthread_atfork(fork_prepare, fork_done, fork_done);
}

static void lock(void)
{
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&cache_lock);
}

void *vdnn_block_cache_take(size_t bytes, size_t *capacity)
{
    if (bytes < VDNN_BLOCK_CACHE_MIN_BYTES)
        return NULL;
    lock();
    /* Newest first: a run asks again for the sizes it freed last, and an
     * exact fit ends the search. */
    size_t best = n_kept;
    for (size_t i = n_kept; i-- > 0;)
        if (kept[i].capacity >= bytes && kept[i].capacity - bytes <= bytes / 8 &&
            (best == n_kept || kept[i].capacity <= kept[best].capacity)) {
            best = i;
            if (kept[i].capacity == bytes)
                break;
        }
    void *block = NULL;
    if (best < n_kept) {
        block = kept[best].block;
        *capacity = kept[best].capacity;
        kept_bytes -= kept[best].capacity;
        memmove(kept + best, kept + best + 1, (--n_kept - best) * sizeof(kept[0]));
    }
    pthread_mutex_unlock(&cache_lock);
    return block;
}

int vdnn_block_cache_put(void *block, size_t capacity)
{
    if (!block || capacity < VDNN_BLOCK_CACHE_MIN_BYTES || capacity > VDNN_BLOCK_CACHE_BYTES)
        return 0;
    /* The oldest kept blocks make room: a run takes back soon what it
     * freed last. kept[] is in the order blocks came (take keeps it). */
    Kept evicted[VDNN_BLOCK_CACHE_BLOCKS];
    size_t n_evicted = 0;
    lock();
    int keep = !disabled;
    if (keep) {
        size_t drop = 0, bytes = kept_bytes;
        while (drop < n_kept && (n_kept - drop >= VDNN_BLOCK_CACHE_BLOCKS ||
                                 bytes > VDNN_BLOCK_CACHE_BYTES - capacity))
            bytes -= kept[drop++].capacity;
        for (size_t i = 0; i < drop; i++)
            evicted[n_evicted++] = kept[i];
        memmove(kept, kept + drop, (n_kept - drop) * sizeof(kept[0]));
        n_kept -= drop;
        kept_bytes = bytes;
        kept[n_kept++] = (Kept){block, capacity};
        kept_bytes += capacity;
    }
    pthread_mutex_unlock(&cache_lock);
    for (size_t i = 0; i < n_evicted; i++)
        free(evicted[i].block);
    return keep;
}

void vdnn_block_cache_purge(void)
{
    lock();
    Kept gone[VDNN_BLOCK_CACHE_BLOCKS];
    const size_t n = n_kept;
    for (size_t i = 0; i < n; i++)
        gone[i] = kept[i];
    n_kept = kept_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
    for (size_t i = 0; i < n; i++)
        free(gone[i].block);
}

size_t vdnn_block_cache_bytes(void)
{
    lock();
    const size_t n = kept_bytes;
    pthread_mutex_unlock(&cache_lock);
    return n;
}
