/* The cache of large freed blocks (csrc/block_cache.h): which blocks it
 * keeps and hands out, its bounds, its sessions, threads, and fork(). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "block_cache.h"
#include "check.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define MIN VDNN_BLOCK_CACHE_MIN_BYTES

static void *block(size_t n)
{
    void *p = malloc(n);
    CHECK(p != NULL);
    if (p)
        memset(p, 0x5a, n < 64 ? n : 64);
    return p;
}

/* Offers a fresh block of n bytes; frees it when refused. */
static int offer(size_t n, uint64_t owner)
{
    void *p = block(n);
    const int kept = vdnn_block_cache_put(p, n, owner);
    if (!kept)
        free(p);
    return kept;
}

/* Nothing is kept while no session is open; exact sizes only, newest
 * first. */
static void test_exact_fit(void)
{
    CHECK_EQ_INT(offer(MIN, 1), 0); /* no session open */
    vdnn_block_cache_session_opened();
    void *a = block(200 * KIB), *b = block(200 * KIB), *c = block(400 * KIB);
    CHECK_EQ_INT(vdnn_block_cache_put(a, 200 * KIB, 1), 1);
    CHECK_EQ_INT(vdnn_block_cache_put(b, 200 * KIB, 1), 1);
    CHECK_EQ_INT(vdnn_block_cache_put(c, 400 * KIB, 1), 1);
    CHECK(vdnn_block_cache_bytes() == 800 * KIB);
    CHECK(vdnn_block_cache_take(199 * KIB) == NULL); /* no exact size */
    CHECK(vdnn_block_cache_take(201 * KIB) == NULL);
    CHECK(vdnn_block_cache_take(200 * KIB) == b);    /* the newest */
    CHECK(vdnn_block_cache_take(200 * KIB) == a);
    CHECK(vdnn_block_cache_take(200 * KIB) == NULL);
    CHECK(vdnn_block_cache_take(400 * KIB) == c);
    CHECK(vdnn_block_cache_bytes() == 0);
    free(a);
    free(b);
    free(c);
    vdnn_block_cache_session_closed(1);
}

/* Small and oversized blocks are left to malloc; past either bound the
 * oldest kept blocks are freed to make room for the newest. */
static void test_bounds(void)
{
    vdnn_block_cache_session_opened();
    CHECK_EQ_INT(offer(MIN - 1, 1), 0);
    CHECK(vdnn_block_cache_take(MIN - 1) == NULL);
    CHECK_EQ_INT(vdnn_block_cache_put(NULL, MIB, 1), 0);
    CHECK_EQ_INT(offer(VDNN_BLOCK_CACHE_BYTES + 1, 1), 0);
    void *lying = block(MIN); /* a size no sum can hold */
    CHECK_EQ_INT(vdnn_block_cache_put(lying, SIZE_MAX, 1), 0);
    free(lying);
    CHECK(vdnn_block_cache_bytes() == 0);

    /* By blocks: one more than the bound evicts the oldest. */
    for (int i = 0; i < VDNN_BLOCK_CACHE_BLOCKS; i++)
        CHECK_EQ_INT(offer(MIN, 1), 1);
    void *newest = block(2 * MIN);
    CHECK_EQ_INT(vdnn_block_cache_put(newest, 2 * MIN, 1), 1);
    CHECK(vdnn_block_cache_bytes() == (VDNN_BLOCK_CACHE_BLOCKS + 1) * MIN);
    CHECK(vdnn_block_cache_take(2 * MIN) == newest);
    free(newest);
    vdnn_block_cache_purge();
    CHECK(vdnn_block_cache_bytes() == 0);

    /* By bytes: the fourth quarter-and-a-bit evicts the first (the size is
     * what is counted: the memory need not be touched). */
    const size_t big = VDNN_BLOCK_CACHE_BYTES / 4 + 1;
    void *q[4];
    for (int i = 0; i < 4; i++) {
        q[i] = block(big);
        CHECK_EQ_INT(vdnn_block_cache_put(q[i], big, 1), 1);
    }
    CHECK(vdnn_block_cache_bytes() == 3 * big);
    for (int i = 3; i >= 1; i--) {
        void *got = vdnn_block_cache_take(big);
        CHECK(got == q[i]);
        free(got);
    }
    CHECK(vdnn_block_cache_take(big) == NULL);
    vdnn_block_cache_session_closed(1);
}

/* A closing session takes its own blocks with it, whatever others stay
 * open; the last one takes every block (those of no session too). */
static void test_sessions(void)
{
    vdnn_block_cache_session_opened(); /* session 7 */
    vdnn_block_cache_session_opened(); /* session 8 */
    CHECK_EQ_INT(offer(MIN, 7), 1);
    CHECK_EQ_INT(offer(2 * MIN, 7), 1);
    CHECK_EQ_INT(offer(3 * MIN, 8), 1);
    CHECK_EQ_INT(offer(4 * MIN, 0), 1);
    CHECK(vdnn_block_cache_bytes() == 10 * MIN);
    vdnn_block_cache_session_closed(7);
    CHECK(vdnn_block_cache_bytes() == 7 * MIN);
    CHECK(vdnn_block_cache_take(MIN) == NULL);
    vdnn_block_cache_session_closed(8);
    CHECK(vdnn_block_cache_bytes() == 0);
    CHECK_EQ_INT(offer(MIN, 9), 0); /* none open */
}

/* Threads putting and taking at once: every block comes back to exactly one
 * taker (each writes its own mark into what it took; a block handed out
 * twice would show another thread's mark). Run under TSan in CI. */
typedef struct Worker {
    unsigned id;
    int errors;
} Worker;

static void *churn(void *arg)
{
    Worker *w = arg;
    for (int i = 0; i < 20000; i++) {
        const size_t n = MIN * (1 + (size_t)(i % 3));
        unsigned *p = vdnn_block_cache_take(n);
        if (!p)
            p = malloc(n);
        if (!p)
            continue;
        p[0] = w->id;
        p[1] = (unsigned)i;
        sched_yield();
        if (p[0] != w->id || p[1] != (unsigned)i)
            w->errors++;
        if (!vdnn_block_cache_put(p, n, w->id))
            free(p);
    }
    return NULL;
}

static void test_threads(void)
{
    enum { N = 4 };
    vdnn_block_cache_session_opened();
    pthread_t t[N];
    Worker w[N];
    for (unsigned i = 0; i < N; i++) {
        w[i] = (Worker){i + 1, 0};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, churn, &w[i]), 0);
    }
    for (unsigned i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(w[i].errors, 0);
    }
    CHECK(vdnn_block_cache_bytes() > 0);
    vdnn_block_cache_session_closed(0);
    CHECK(vdnn_block_cache_bytes() == 0);
}

/* fork() while other threads use the cache, with a host lock the threads
 * hold around their frees and the host's fork handler takes: the library's
 * handler (here called as ort_backend.c's is) takes no lock, so nothing can
 * deadlock, and the child's cache starts empty and works. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;

static void host_prepare(void)
{
    pthread_mutex_lock(&host_lock);
}

static void host_release(void)
{
    pthread_mutex_unlock(&host_lock);
}

static void library_child(void)
{
    vdnn_block_cache_fork_child();
}

static atomic_int stop_churn;

/* Runs until told to stop (a thread that finished unjoined at a fork would
 * be reported by TSan in every child as a leak). */
static void *churn_under_host_lock(void *arg)
{
    Worker *w = arg;
    while (!atomic_load(&stop_churn)) {
        pthread_mutex_lock(&host_lock);
        void *p = vdnn_block_cache_take(MIN);
        if (!p)
            p = malloc(MIN);
        if (p && !vdnn_block_cache_put(p, MIN, w->id))
            free(p);
        pthread_mutex_unlock(&host_lock);
    }
    return NULL;
}

static void test_fork(void)
{
    pthread_atfork(NULL, NULL, library_child); /* the library registers first */
    pthread_atfork(host_prepare, host_release, host_release);
    enum { N = 2 };
    vdnn_block_cache_session_opened();
    pthread_t t[N];
    Worker w[N];
    for (unsigned i = 0; i < N; i++) {
        w[i] = (Worker){i + 10, 0};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, churn_under_host_lock, &w[i]), 0);
    }
    for (int k = 0; k < 200; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a child stuck on a lock dies instead of hanging */
            int ok = vdnn_block_cache_bytes() == 0 && offer(MIN, 1) == 1 &&
                     vdnn_block_cache_bytes() == MIN;
            void *p = vdnn_block_cache_take(MIN);
            ok = ok && p != NULL;
            free(p);
            _exit(ok ? 0 : 3);
        }
        CHECK(pid > 0);
        int status = -1;
        if (pid > 0)
            waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    atomic_store(&stop_churn, 1);
    for (unsigned i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    vdnn_block_cache_session_closed(0);
    CHECK(vdnn_block_cache_bytes() == 0);
}

int main(void)
{
    test_exact_fit();
    test_bounds();
    test_sessions();
    test_threads();
    test_fork();
    return check_report();
}
