/* Large freed blocks kept for reuse (block_cache.h). A small array under
 * one lock, oldest first: at most VDNN_BLOCK_CACHE_BLOCKS entries, searched
 * from the newest (a run asks again first for what it freed last). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "block_cache.h"

typedef struct Kept {
    void *block;
    size_t bytes;
    uint64_t owner;
} Kept;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static Kept kept[VDNN_BLOCK_CACHE_BLOCKS];
static size_t n_kept, kept_bytes;
static long open_sessions; /* under cache_lock: put keeps nothing at 0 */
static int disabled;       /* VMAFDNN_NO_BLOCK_CACHE=1 */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    const char *off = getenv("VMAFDNN_NO_BLOCK_CACHE");
    disabled = off && strcmp(off, "1") == 0;
}

/* Removes every entry (all) or those of `owner` into gone[]; under the
 * lock. Returns how many. */
static size_t remove_kept(int all, uint64_t owner, Kept *gone)
{
    size_t n_gone = 0, n = 0;
    for (size_t i = 0; i < n_kept; i++) {
        if (all || kept[i].owner == owner) {
            gone[n_gone++] = kept[i];
            kept_bytes -= kept[i].bytes;
        } else {
            kept[n++] = kept[i];
        }
    }
    n_kept = n;
    return n_gone;
}

static void free_all(const Kept *gone, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(gone[i].block);
}

void vdnn_block_cache_session_opened(void)
{
    pthread_once(&env_once, read_env);
    pthread_mutex_lock(&cache_lock);
    open_sessions++;
    pthread_mutex_unlock(&cache_lock);
}

void vdnn_block_cache_session_closed(uint64_t owner)
{
    Kept gone[VDNN_BLOCK_CACHE_BLOCKS];
    pthread_mutex_lock(&cache_lock);
    open_sessions--;
    const size_t n = remove_kept(open_sessions <= 0, owner, gone);
    pthread_mutex_unlock(&cache_lock);
    free_all(gone, n);
}

void *vdnn_block_cache_take(size_t bytes)
{
    if (bytes < VDNN_BLOCK_CACHE_MIN_BYTES || bytes > VDNN_BLOCK_CACHE_BYTES)
        return NULL;
    void *block = NULL;
    pthread_mutex_lock(&cache_lock);
    for (size_t i = n_kept; i-- > 0;)
        if (kept[i].bytes == bytes) {
            block = kept[i].block;
            kept_bytes -= bytes;
            memmove(kept + i, kept + i + 1, (--n_kept - i) * sizeof(kept[0]));
            break;
        }
    pthread_mutex_unlock(&cache_lock);
    return block;
}

int vdnn_block_cache_put(void *block, size_t bytes, uint64_t owner)
{
    if (!block || bytes < VDNN_BLOCK_CACHE_MIN_BYTES || bytes > VDNN_BLOCK_CACHE_BYTES)
        return 0;
    Kept gone[VDNN_BLOCK_CACHE_BLOCKS];
    size_t n_gone = 0;
    pthread_mutex_lock(&cache_lock);
    const int keep = open_sessions > 0 && !disabled;
    if (keep) {
        /* The oldest kept blocks make room. */
        size_t drop = 0, total = kept_bytes;
        while (drop < n_kept && (n_kept - drop >= VDNN_BLOCK_CACHE_BLOCKS ||
                                 total > VDNN_BLOCK_CACHE_BYTES - bytes))
            total -= kept[drop++].bytes;
        for (size_t i = 0; i < drop; i++)
            gone[n_gone++] = kept[i];
        memmove(kept, kept + drop, (n_kept - drop) * sizeof(kept[0]));
        n_kept -= drop;
        kept[n_kept++] = (Kept){block, bytes, owner};
        kept_bytes = total + bytes;
    }
    pthread_mutex_unlock(&cache_lock);
    free_all(gone, n_gone);
    return keep;
}

void vdnn_block_cache_purge(void)
{
    Kept gone[VDNN_BLOCK_CACHE_BLOCKS];
    pthread_mutex_lock(&cache_lock);
    const size_t n = remove_kept(1, 0, gone);
    pthread_mutex_unlock(&cache_lock);
    free_all(gone, n);
}

size_t vdnn_block_cache_bytes(void)
{
    pthread_mutex_lock(&cache_lock);
    const size_t n = kept_bytes;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

void vdnn_block_cache_fork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&cache_lock, &fresh, sizeof(fresh));
    n_kept = kept_bytes = 0;
}
