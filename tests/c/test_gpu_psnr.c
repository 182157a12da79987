/* The PSNR program (csrc/gpu/psnr_program.c) on the emulator against the
 * CPU kernel vdnn_psnr_y (fr_kernels.h): the same float on every plane
 * pair of gpu_planes.h, both orders; the CPU kernel against a plain double
 * reference; 200 dB for equal planes; the smallest sizes. And for both
 * full-reference metrics (PSNR and SSIM, test_gpu_ssim.c tests the rest of
 * SSIM): strides, NaN where a sample is out of range, arguments refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fr_kernels.h"
#include "gpu/programs.h"
#include "gpu_planes.h"

static int same_as_cpu(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                       const char *what)
{
    return gpu_same_as_cpu("psnr", vdnn_psnr_y, vk_psnr, ref, dist, w, h, bpc, what);
}

/* The obvious PSNR: peak^2 over the mean squared error, in long double. */
static double reference_psnr(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc)
{
    long double sse = 0;
    for (size_t i = 0; i < (size_t)w * h; i++)
        sse += ((long double)ref[i] - dist[i]) * ((long double)ref[i] - dist[i]);
    const long double peak = (long double)((1u << bpc) - 1u);
    return (double)(10.0L * log10l(peak * peak / (sse / ((long double)w * h))));
}

static int near_reference(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc)
{
    const VdnnPlane r = gpu_plane(ref, w, h, bpc), d = gpu_plane(dist, w, h, bpc);
    double got = -1;
    const double want = reference_psnr(ref, dist, w, h, bpc);
    if (vdnn_psnr_y(&vdnn_kernel_env_malloc, &r, &d, &got) || !(fabs(got - want) <= 1e-9 * want)) {
        fprintf(stderr, "psnr %dx%d %d-bit: kernel %.17g, reference %.17g\n", w, h, bpc, got,
                want);
        return 0;
    }
    return 1;
}

/* Both full-reference kernels and programs (their common contract). */
typedef struct Metric {
    const char *name;
    int (*cpu)(const VdnnKernelEnv *, const VdnnPlane *, const VdnnPlane *, double *);
    int (*gpu)(const VkBackend *, const uint16_t *, const uint16_t *, int, int, int, float *);
    int min_side;
} Metric;

static const Metric metrics[2] = {{"psnr", vdnn_psnr_y, vk_psnr, 1},
                                  {"ssim", vdnn_ssim_y, vk_ssim, 11}};

/* Rows `stride` apart score as packed ones; a sample above 2^bpc - 1 is
 * refused by the CPU kernel and NaN from the program (also every sample far
 * out of range: the map's values huge, its sums still defined); arguments
 * refused. a, b: 64 x 36 samples of room each. */
static int common_contract(const Metric *m, uint16_t *a, uint16_t *b)
{
    const int failed = check_failed;
    const VdnnKernelEnv *env = &vdnn_kernel_env_malloc;
    gpu_pair(GPU_SCENE, 64, 36, 10, 8, a, b);
    uint16_t *wide = calloc((size_t)80 * 36 * 2, sizeof(uint16_t));
    if (!wide)
        return 0;
    for (int y = 0; y < 36; y++) {
        memcpy(wide + y * 80, a + y * 64, 64 * sizeof(uint16_t));
        memcpy(wide + (36 + y) * 80, b + y * 64, 64 * sizeof(uint16_t));
    }
    const VdnnPlane pa = {a, 64, 64, 36, 10}, pb = {b, 64, 64, 36, 10};
    const VdnnPlane wa = {wide, 80, 64, 36, 10}, wb = {wide + 36 * 80, 80, 64, 36, 10};
    double packed = 0, strided = 1, cpu = 0;
    CHECK_EQ_INT(m->cpu(env, &pa, &pb, &packed), 0);
    CHECK_EQ_INT(m->cpu(env, &wa, &wb, &strided), 0);
    CHECK(packed == strided);
    free(wide);

    b[64 * 20 + 7] = 1024;
    CHECK_EQ_INT(m->cpu(env, &pa, &pb, &cpu), -EINVAL);
    float got = 0;
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, 36, 10, &got), 0);
    CHECK(isnan(got));
    for (int i = 0; i < 64 * 36; i++)
        a[i] = (uint16_t)(i % 7 ? 65535 : 0), b[i] = (uint16_t)(i % 5 ? 0 : 65535);
    for (int bpc = 8; bpc <= 15; bpc++) {
        got = 0;
        CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, 36, bpc, &got), 0);
        CHECK(isnan(got));
    }

    const int lo = m->min_side - 1, big = VDNN_FR_MAX_DIMENSION + 1;
    const VdnnPlane bad7 = {a, 64, 64, 36, 7}, bad17 = {a, 64, 64, 36, 17};
    const VdnnPlane narrow = {a, 64, (unsigned)lo, 36, 10}, low = {a, 64, 64, (unsigned)lo, 10};
    const VdnnPlane other = {b, 64, 63, 36, 10}, null_data = {NULL, 64, 64, 36, 10};
    const VdnnPlane too_tall = {a, 64, 64, (unsigned)big, 10}, tight = {a, 63, 64, 36, 10};
    CHECK_EQ_INT(m->cpu(env, &bad7, &bad7, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &bad17, &bad17, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &narrow, &narrow, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &low, &low, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &pa, &other, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &too_tall, &too_tall, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &tight, &tight, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &null_data, &pb, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &pa, NULL, &cpu), -EINVAL);
    CHECK_EQ_INT(m->cpu(env, &pa, &pb, NULL), -EINVAL);
    CHECK_EQ_INT(m->cpu(NULL, &pa, &pb, &cpu), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, lo, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, lo, 10, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, 36, 7, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, 36, 17, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, NULL, b, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, NULL, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, 36, 10, NULL), -EINVAL);
    CHECK_EQ_INT(m->gpu(NULL, a, b, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, big, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(m->gpu(&vk_emulator, a, b, 64, big, 10, &got), -EINVAL);
    if (check_failed != failed)
        fprintf(stderr, "(%s's contract)\n", m->name);
    return check_failed == failed;
}

int main(void)
{
    uint16_t *a = gpu_plane_alloc(), *b = gpu_plane_alloc();
    if (!a || !b)
        return 1;
    int cases = 0;
    for (GpuCase c = GPU_CASE_START; gpu_next_pair(&c, a, b);) {
        CHECK(same_as_cpu(a, b, c.w, c.h, c.bpc, c.kind_name));
        CHECK(same_as_cpu(b, a, c.w, c.h, c.bpc, c.kind_name));
        if (c.kind != GPU_SAME)
            CHECK(near_reference(a, b, c.w, c.h, c.bpc));
        cases++;
    }

    /* equal planes: the MSE floor, 200 dB */
    gpu_pair(GPU_SAME, 97, 61, 12, 5, a, b);
    const VdnnPlane sa = {a, 97, 97, 61, 12}, sb = {b, 97, 97, 61, 12};
    double db = 0;
    CHECK_EQ_INT(vdnn_psnr_y(&vdnn_kernel_env_malloc, &sa, &sb, &db), 0);
    CHECK(fabs(db - 200.0) < 1e-12);
    float got = 0;
    CHECK_EQ_INT(vk_psnr(&vk_emulator, a, b, 97, 61, 12, &got), 0);
    CHECK(got == 200.0f);

    /* the smallest sizes */
    gpu_pair(GPU_NOISE, 1, 1, 8, 6, a, b);
    a[0] = 0, b[0] = 255;
    CHECK(same_as_cpu(a, b, 1, 1, 8, "1x1"));
    CHECK(near_reference(a, b, 1, 1, 8));
    gpu_pair(GPU_NOISE, 3, 2, 16, 7, a, b);
    CHECK(same_as_cpu(a, b, 3, 2, 16, "3x2"));
    CHECK(near_reference(a, b, 3, 2, 16));

    for (int m = 0; m < 2; m++)
        CHECK(common_contract(&metrics[m], a, b));

    printf("%d plane pairs, both orders\n", cases);
    free(a);
    free(b);
    return check_report();
}
