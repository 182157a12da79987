/* The cache of large freed blocks (csrc/block_cache.h): which blocks it
 * keeps and hands out, its bounds, purge, threads, and fork(). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "block_cache.h"
#include "check.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static void *block(size_t n)
{
    void *p = malloc(n);
    CHECK(p != NULL);
    memset(p, 0x5a, n < 64 ? n : 64);
    return p;
}

/* Closest fit within 1/8 over; nothing smaller; the size it gives back. */
static void test_fit(void)
{
    void *a = block(200 * KIB), *b = block(220 * KIB), *c = block(400 * KIB);
    CHECK_EQ_INT(vdnn_block_cache_put(a, 200 * KIB), 1);
    CHECK_EQ_INT(vdnn_block_cache_put(b, 220 * KIB), 1);
    CHECK_EQ_INT(vdnn_block_cache_put(c, 400 * KIB), 1);
    CHECK(vdnn_block_cache_bytes() == 820 * KIB);
    size_t cap = 0;
    CHECK(vdnn_block_cache_take(300 * KIB, &cap) == NULL); /* 400 is over 1/8 more */
    CHECK(vdnn_block_cache_take(401 * KIB, &cap) == NULL); /* none big enough */
    CHECK(vdnn_block_cache_take(196 * KIB, &cap) == a && cap == 200 * KIB); /* closest */
    CHECK(vdnn_block_cache_take(196 * KIB, &cap) == b && cap == 220 * KIB);
    CHECK(vdnn_block_cache_take(196 * KIB, &cap) == NULL);
    CHECK(vdnn_block_cache_take(400 * KIB, &cap) == c && cap == 400 * KIB);
    CHECK(vdnn_block_cache_bytes() == 0);
    free(a);
    free(b);
    free(c);
}

/* Small and oversized blocks are left to malloc; past either bound the
 * oldest kept blocks are freed to make room for the newest; purge frees
 * everything. */
static void test_bounds(void)
{
    void *small = block(VDNN_BLOCK_CACHE_MIN_BYTES - 1);
    CHECK_EQ_INT(vdnn_block_cache_put(small, VDNN_BLOCK_CACHE_MIN_BYTES - 1), 0);
    free(small);
    size_t cap = 0;
    CHECK(vdnn_block_cache_take(VDNN_BLOCK_CACHE_MIN_BYTES - 1, &cap) == NULL);
    CHECK_EQ_INT(vdnn_block_cache_put(NULL, MIB), 0);
    void *huge = block(VDNN_BLOCK_CACHE_BYTES + 1);
    CHECK_EQ_INT(vdnn_block_cache_put(huge, VDNN_BLOCK_CACHE_BYTES + 1), 0);
    free(huge);
    void *lying = block(VDNN_BLOCK_CACHE_MIN_BYTES); /* a capacity no sum can hold */
    CHECK_EQ_INT(vdnn_block_cache_put(lying, SIZE_MAX), 0);
    free(lying);
    CHECK(vdnn_block_cache_bytes() == 0);

    /* By blocks: one more than the bound evicts the oldest. */
    const size_t min = VDNN_BLOCK_CACHE_MIN_BYTES;
    for (int i = 0; i < VDNN_BLOCK_CACHE_BLOCKS; i++)
        CHECK_EQ_INT(vdnn_block_cache_put(block(min), min), 1);
    void *newest = block(2 * min);
    CHECK_EQ_INT(vdnn_block_cache_put(newest, 2 * min), 1);
    CHECK(vdnn_block_cache_bytes() == (VDNN_BLOCK_CACHE_BLOCKS + 1) * min);
    CHECK(vdnn_block_cache_take(2 * min, &cap) == newest && cap == 2 * min);
    free(newest);
    vdnn_block_cache_purge();
    CHECK(vdnn_block_cache_bytes() == 0);

    /* By bytes: the fourth quarter-and-a-bit evicts the first; exact fits
     * come newest first (the capacity is what is counted: the memory need
     * not be touched). */
    const size_t big = VDNN_BLOCK_CACHE_BYTES / 4 + 1;
    void *q[4];
    for (int i = 0; i < 4; i++) {
        q[i] = block(big);
        CHECK_EQ_INT(vdnn_block_cache_put(q[i], big), 1);
    }
    CHECK(vdnn_block_cache_bytes() == 3 * big);
    for (int i = 3; i >= 1; i--) {
        void *got = vdnn_block_cache_take(big, &cap);
        CHECK(got == q[i]);
        free(got);
    }
    CHECK(vdnn_block_cache_take(big, &cap) == NULL);
    CHECK(vdnn_block_cache_bytes() == 0);
    vdnn_block_cache_purge();
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
        const size_t n = VDNN_BLOCK_CACHE_MIN_BYTES * (1 + (size_t)(i % 3));
        size_t cap = 0;
        unsigned *p = vdnn_block_cache_take(n, &cap);
        if (!p) {
            p = malloc(n);
            cap = n;
        }
        if (!p)
            continue;
        p[0] = w->id;
        p[1] = (unsigned)i;
        sched_yield();
        if (p[0] != w->id || p[1] != (unsigned)i)
            w->errors++;
        if (!vdnn_block_cache_put(p, cap))
            free(p);
    }
    return NULL;
}

static void test_threads(void)
{
    enum { N = 4 };
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
    CHECK(vdnn_block_cache_bytes() <= VDNN_BLOCK_CACHE_BYTES);
    vdnn_block_cache_purge();
    CHECK(vdnn_block_cache_bytes() == 0);
}

/* fork() while other threads use the cache: the child's cache works (its
 * lock was not copied held). */
static void test_fork(void)
{
    enum { N = 2 };
    pthread_t t[N];
    Worker w[N];
    for (unsigned i = 0; i < N; i++) {
        w[i] = (Worker){i + 10, 0};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, churn, &w[i]), 0);
    }
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a child stuck on the lock dies instead of hanging */
            void *p = block(VDNN_BLOCK_CACHE_MIN_BYTES);
            if (!vdnn_block_cache_put(p, VDNN_BLOCK_CACHE_MIN_BYTES))
                free(p);
            size_t cap;
            free(vdnn_block_cache_take(VDNN_BLOCK_CACHE_MIN_BYTES, &cap));
            vdnn_block_cache_purge();
            _exit(0);
        }
        CHECK(pid > 0);
        int status = -1;
        if (pid > 0)
            waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (unsigned i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(w[i].errors, 0);
    }
    vdnn_block_cache_purge();
}

int main(void)
{
    test_fit();
    test_bounds();
    test_threads();
    test_fork();
    return check_report();
}
