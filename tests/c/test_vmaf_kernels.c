/* The VMAF kernels' contract (csrc/vmaf_kernels.h) apart from their values,
 * which tests/python/test_vmaf_kernels.py compares with libvmaf: arguments
 * refused with -EINVAL, every allocation failure and every cancellation
 * point returns cleanly with all blocks given back, outputs untouched on
 * failure, perfect scores for identical planes, and the same values from
 * several threads at once. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmaf_kernels.h"

/* An env that counts its blocks, fails the allocation numbered fail_at
 * (0: none) and reports cancellation from poll number cancel_at (0: never). */
typedef struct Counting {
    long allocs, releases, polls;
    long fail_at, cancel_at;
} Counting;

static void *counting_alloc(void *opaque, size_t size)
{
    Counting *c = opaque;
    if (c->fail_at && c->allocs + 1 == c->fail_at) {
        c->fail_at = 0; /* once */
        return NULL;
    }
    void *p = vdnn_kernel_env_malloc.alloc(NULL, size);
    if (p)
        c->allocs++;
    return p;
}

static void counting_release(void *opaque, void *block)
{
    Counting *c = opaque;
    if (block)
        c->releases++;
    vdnn_kernel_env_malloc.release(NULL, block);
}

static int counting_cancelled(void *opaque)
{
    Counting *c = opaque;
    return c->cancel_at && ++c->polls >= c->cancel_at;
}

enum { W = 97, H = 61 };

static uint16_t ref_samples[H * W], dist_samples[H * W];

static void make_planes(unsigned bpc)
{
    unsigned s = 12345;
    const unsigned peak = (1u << bpc) - 1;
    for (int i = 0; i < H * W; i++) {
        s = s * 1103515245u + 12345u;
        ref_samples[i] = (uint16_t)((s >> 8) % (peak + 1));
        int d = (int)ref_samples[i] + (int)((s >> 20) % 9) - 4;
        dist_samples[i] = (uint16_t)(d < 0 ? 0 : d > (int)peak ? (int)peak : d);
    }
}

/* Runs kernel k (0 vif, 1 adm, 2 motion); v gets up to 5 values. */
static int run(int k, const VdnnKernelEnv *env, const VdnnPlane *a, const VdnnPlane *b, double *v)
{
    switch (k) {
    case 0:
        return vdnn_vif_integer(env, a, b, 100.0, v);
    case 1:
        return vdnn_adm_integer(env, a, b, 100.0, &v[0], &v[1]);
    default:
        return vdnn_motion_integer(env, a, b, &v[0]);
    }
}

static const char *const kernel_names[3] = {"vif", "adm", "motion"};

static void test_arguments(int k)
{
    make_planes(8);
    const VdnnKernelEnv *env = &vdnn_kernel_env_malloc;
    VdnnPlane a = {ref_samples, W, W, H, 8}, b = {dist_samples, W, W, H, 8};
    double v[5] = {-7, -7, -7, -7, -7};
    CHECK_EQ_INT(run(k, NULL, &a, &b, v), -EINVAL);
    CHECK_EQ_INT(run(k, env, NULL, &b, v), -EINVAL);
    CHECK_EQ_INT(run(k, env, &a, NULL, v), -EINVAL);
    VdnnPlane bad = b;
    bad.bpc = 7;
    CHECK_EQ_INT(run(k, env, &a, &bad, v), -EINVAL);
    bad.bpc = 17;
    CHECK_EQ_INT(run(k, env, &a, &bad, v), -EINVAL);
    bad = b;
    bad.stride = W - 1;
    CHECK_EQ_INT(run(k, env, &a, &bad, v), -EINVAL);
    bad = b;
    bad.w = W - 2;
    CHECK_EQ_INT(run(k, env, &a, &bad, v), -EINVAL);
    bad = b;
    bad.data = NULL;
    CHECK_EQ_INT(run(k, env, &a, &bad, v), -EINVAL);
    /* a sample above the bit depth: in either plane, in the middle, the
     * first or the last row and column (VIF checks 8-bit rows as its ring
     * takes them) */
    const int at[] = {H / 2 * W + 3, 0, W - 1, (H - 1) * W, (H - 1) * W + W - 1};
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
            uint16_t *plane = p ? dist_samples : ref_samples;
            const uint16_t keep = plane[at[i]];
            plane[at[i]] = 256;
            CHECK_EQ_INT(run(k, env, &a, &b, v), -EINVAL);
            plane[at[i]] = keep;
        }
    VdnnPlane tiny_a = {ref_samples, W, 4, 4, 8}, tiny_b = {dist_samples, W, 4, 4, 8};
    if (k != 2) /* motion scores any size; VIF and ADM need their filters' room */
        CHECK_EQ_INT(run(k, env, &tiny_a, &tiny_b, v), -EINVAL);
    for (int i = 0; i < 5; i++)
        CHECK(v[i] == -7); /* outputs untouched on failure */
}

static void test_identical_planes(int k, unsigned bpc)
{
    make_planes(bpc);
    VdnnPlane a = {ref_samples, W, W, H, bpc};
    double v[5];
    CHECK_EQ_INT(run(k, &vdnn_kernel_env_malloc, &a, &a, v), 0);
    if (k == 0)
        for (int s = 0; s < 4; s++)
            CHECK(fabs(v[s] - 1.0) < 1e-4); /* libvmaf's fixed point: 1 within ~1e-5 */
    else if (k == 1)
        CHECK(fabs(v[0] - 1.0) < 1e-4);
    else
        CHECK(v[0] == 0.0);
}

/* Every allocation failing in turn, then every cancellation point: clean
 * returns, nothing leaked. */
static void test_failures(int k)
{
    make_planes(10);
    VdnnPlane a = {ref_samples, W, W, H, 10}, b = {dist_samples, W, W, H, 10};
    double v[5];
    Counting c = {0};
    VdnnKernelEnv env = {counting_alloc, counting_release, counting_cancelled, &c};
    CHECK_EQ_INT(run(k, &env, &a, &b, v), 0);
    CHECK_EQ_INT(c.allocs, c.releases);
    const long n_allocs = c.allocs, n_polls = c.polls;
    (void)n_polls;
    for (long f = 1; f <= n_allocs; f++) {
        c = (Counting){.fail_at = f};
        CHECK_EQ_INT(run(k, &env, &a, &b, v), -ENOMEM);
        CHECK_EQ_INT(c.allocs, c.releases);
    }
    /* count the polls of a whole run, then cancel at each (up to 64 of them) */
    c = (Counting){.cancel_at = 1L << 40};
    CHECK_EQ_INT(run(k, &env, &a, &b, v), 0);
    const long polls = c.polls;
    if (k != 2 || polls)
        CHECK(polls > 0);
    for (long p = 1; p <= polls && p <= 64; p++) {
        c = (Counting){.cancel_at = p};
        CHECK_EQ_INT(run(k, &env, &a, &b, v), -ECANCELED);
        CHECK_EQ_INT(c.allocs, c.releases);
    }
}

typedef struct Job {
    int k;
    double v[5];
    int rc;
} Job;

static void *thread_main(void *arg)
{
    Job *j = arg;
    VdnnPlane a = {ref_samples, W, W, H, 8}, b = {dist_samples, W, W, H, 8};
    for (int i = 0; i < 20 && !j->rc; i++)
        j->rc = run(j->k, &vdnn_kernel_env_malloc, &a, &b, j->v);
    return NULL;
}

static void test_threads(int k)
{
    make_planes(8);
    VdnnPlane a = {ref_samples, W, W, H, 8}, b = {dist_samples, W, W, H, 8};
    double want[5] = {0};
    CHECK_EQ_INT(run(k, &vdnn_kernel_env_malloc, &a, &b, want), 0);
    Job jobs[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (Job){.k = k};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(jobs[i].rc, 0);
        CHECK(memcmp(jobs[i].v, want, (k == 2 ? 1 : k == 0 ? 4 : 5) * sizeof(double)) == 0);
    }
}

int main(void)
{
    for (int k = 0; k < 3; k++) {
        fprintf(stderr, "kernel %s\n", kernel_names[k]);
        test_arguments(k);
        test_identical_planes(k, 8);
        test_identical_planes(k, 12);
        test_failures(k);
        test_threads(k);
    }
    return check_report();
}
