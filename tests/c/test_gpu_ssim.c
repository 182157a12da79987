/* The SSIM program (csrc/gpu/ssim_program.c) on the emulator against the
 * CPU kernel vdnn_ssim_y (fr_kernels.h): the same float on every plane
 * pair of gpu_planes.h, both orders (the 1080p pairs: scene and extreme at
 * 10 bits, the emulator's time under the sanitizers); the CPU kernel
 * against a plain double reference (an 11x11 window per pixel, no
 * centring, no float); exactly 1 for equal planes; NaN where a sample is
 * out of range; the smallest sizes; arguments refused; the window's taps
 * and the sample normalisation, every sample of every depth, against their
 * definitions. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fr_kernels.h"
#include "gpu/programs.h"
/* the arithmetic's functions and the window (the kernels' thunks unused) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/ssim_kernels.h"
#pragma GCC diagnostic pop
#include "gpu_planes.h"

static int same_as_cpu(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                       const char *what)
{
    const VdnnPlane r = {ref, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    const VdnnPlane d = {dist, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    double want = -1;
    float got = -1;
    const int rc_cpu = vdnn_ssim_y(&vdnn_kernel_env_malloc, &r, &d, &want);
    const int rc_gpu = vk_ssim(&vk_emulator, ref, dist, w, h, bpc, &got);
    const float cpu = (float)want;
    if (rc_cpu || rc_gpu || memcmp(&got, &cpu, sizeof cpu) != 0) {
        fprintf(stderr, "ssim %s %dx%d %d-bit: cpu %.9g (rc %d), gpu %.9g (rc %d)\n", what, w,
                h, bpc, want, rc_cpu, (double)got, rc_gpu);
        return 0;
    }
    return 1;
}

/* gen_builtin_models.py's gaussian_window(), in double. */
static void gaussian_window(double taps[11])
{
    double sum = 0;
    for (int k = 0; k < 11; k++)
        sum += taps[k] = exp(-0.5 / (1.5 * 1.5) * (k - 5) * (k - 5));
    for (int k = 0; k < 11; k++)
        taps[k] /= sum;
}

/* The obvious mean SSIM: each output pixel's 11x11 window, its weighted
 * means, variances and covariance of the samples on [0, 1], in double. */
static double reference_ssim(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc)
{
    double g[11];
    gaussian_window(g);
    const double peak = (double)((1u << bpc) - 1u), c1 = 0.01 * 0.01, c2 = 0.03 * 0.03;
    double total = 0;
    for (int y = 0; y + 11 <= h; y++)
        for (int x = 0; x + 11 <= w; x++) {
            double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
            for (int i = 0; i < 11; i++)
                for (int j = 0; j < 11; j++) {
                    const size_t at = (size_t)(y + i) * w + x + j;
                    const double wt = g[i] * g[j], a = ref[at] / peak, b = dist[at] / peak;
                    mx += wt * a;
                    my += wt * b;
                    sxx += wt * a * a;
                    syy += wt * b * b;
                    sxy += wt * a * b;
                }
            const double vx = sxx - mx * mx, vy = syy - my * my, cov = sxy - mx * my;
            total += (2 * mx * my + c1) * (2 * cov + c2) /
                     ((mx * mx + my * my + c1) * (vx + vy + c2));
        }
    return total / ((double)(w - 10) * (h - 10));
}

static int near_reference(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                          double tolerance)
{
    const VdnnPlane r = {ref, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    const VdnnPlane d = {dist, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    double got = -1;
    const double want = reference_ssim(ref, dist, w, h, bpc);
    if (vdnn_ssim_y(&vdnn_kernel_env_malloc, &r, &d, &got) || !(fabs(got - want) <= tolerance)) {
        fprintf(stderr, "ssim %dx%d %d-bit: kernel %.12g, reference %.12g (%.3g apart)\n", w, h,
                bpc, got, want, fabs(got - want));
        return 0;
    }
    return 1;
}

/* The window's float taps are (float) of the double window; ssim_sample is
 * the library's normalisation (resize.c: (float)(s * (1 / peak))) and the
 * correctly rounded s / peak, for every sample of every depth. */
static int definitions_hold(void)
{
    double g[11];
    gaussian_window(g);
    const float taps[11] = SSIM_WINDOW;
    int bad = 0;
    for (int k = 0; k < 11; k++)
        bad += taps[k] != (float)g[k];
    for (unsigned bpc = 8; bpc <= 16; bpc++) {
        const unsigned peak = (1u << bpc) - 1u;
        const double scale = 1.0 / (double)peak;
        for (unsigned s = 0; s <= peak; s++) {
            const float got = ssim_sample(s, (float)peak);
            bad += got != (float)((double)s / peak) || got != (float)(s * scale);
        }
    }
    return bad == 0;
}

static double ms_per_frame(const VdnnPlane *a, const VdnnPlane *b, int runs)
{
    struct timespec t0, t1;
    double out = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < runs; i++)
        CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, a, b, &out), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) /
           runs;
}

int main(void)
{
    CHECK(definitions_hold());

    const size_t most = 1920 * 1080;
    uint16_t *a = malloc(most * sizeof(uint16_t)), *b = malloc(most * sizeof(uint16_t));
    if (!a || !b)
        return 1;
    int cases = 0, referenced = 0;
    for (int s = 0; s < GPU_N_SIZES; s++)
        for (int d = 0; d < GPU_N_DEPTHS; d++)
            for (int kind = 0; kind < GPU_KINDS; kind++) {
                const int w = gpu_sizes[s][0], h = gpu_sizes[s][1], bpc = gpu_depths[d];
                const int full_hd = w * h >= 1920 * 1080;
                if (full_hd && (bpc != 10 || (kind != GPU_SCENE && kind != GPU_EXTREME)))
                    continue;
                gpu_pair(kind, w, h, bpc, (uint64_t)(s * 31 + d * 7 + kind), a, b);
                CHECK(same_as_cpu(a, b, w, h, bpc, gpu_kind_names[kind]));
                if (!full_hd)
                    CHECK(same_as_cpu(b, a, w, h, bpc, gpu_kind_names[kind]));
                cases++;
                if (kind == GPU_SCENE && w * h <= 480 * 270) {
                    CHECK(near_reference(a, b, w, h, bpc, 2e-6));
                    referenced++;
                }
            }

    /* equal planes: exactly 1 */
    gpu_pair(GPU_SAME, 97, 61, 12, 5, a, b);
    const VdnnPlane sa = {a, 97, 97, 61, 12}, sb = {b, 97, 97, 61, 12};
    double one = 0;
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &sa, &sb, &one), 0);
    CHECK(one == 1.0);
    float got = 0;
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 97, 61, 12, &got), 0);
    CHECK(got == 1.0f);

    /* the smallest sizes: one output pixel, and odd ones */
    gpu_pair(GPU_SCENE, 11, 11, 8, 6, a, b);
    CHECK(same_as_cpu(a, b, 11, 11, 8, "11x11"));
    CHECK(near_reference(a, b, 11, 11, 8, 2e-6));
    gpu_pair(GPU_NOISE, 12, 13, 16, 7, a, b);
    CHECK(same_as_cpu(a, b, 12, 13, 16, "12x13"));
    CHECK(near_reference(a, b, 12, 13, 16, 2e-6));

    /* rows `stride` apart: the same as packed */
    gpu_pair(GPU_SCENE, 64, 36, 10, 8, a, b);
    uint16_t *wide = calloc((size_t)80 * 36 * 2, sizeof(uint16_t));
    if (!wide)
        return 1;
    for (int y = 0; y < 36; y++) {
        memcpy(wide + y * 80, a + y * 64, 64 * sizeof(uint16_t));
        memcpy(wide + (36 + y) * 80, b + y * 64, 64 * sizeof(uint16_t));
    }
    const VdnnPlane pa = {a, 64, 64, 36, 10}, pb = {b, 64, 64, 36, 10};
    const VdnnPlane wa = {wide, 80, 64, 36, 10}, wb = {wide + 36 * 80, 80, 64, 36, 10};
    double packed = 0, strided = 1;
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &pa, &pb, &packed), 0);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &wa, &wb, &strided), 0);
    CHECK(packed == strided);
    free(wide);

    /* a sample above 2^bpc - 1: the CPU kernel refuses, the program gives
     * NaN; every sample far out of range (the map's values huge, its SSIM
     * wild: ssim_fixed's clamp keeps the sums defined) */
    b[64 * 20 + 7] = 1024;
    double cpu = 0;
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &pa, &pb, &cpu), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 64, 36, 10, &got), 0);
    CHECK(isnan(got));
    for (int i = 0; i < 64 * 36; i++)
        a[i] = (uint16_t)(i % 7 ? 65535 : 0), b[i] = (uint16_t)(i % 5 ? 0 : 65535);
    got = 0;
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 64, 36, 8, &got), 0);
    CHECK(isnan(got));

    /* arguments */
    const VdnnPlane bad7 = {a, 64, 64, 36, 7}, bad17 = {a, 64, 64, 36, 17};
    const VdnnPlane narrow = {a, 64, 10, 11, 10}, short_ = {a, 64, 11, 10, 10};
    const VdnnPlane other = {b, 64, 63, 36, 10}, null_data = {NULL, 64, 64, 36, 10};
    const VdnnPlane too_tall = {a, 64, 64, VDNN_FR_MAX_DIMENSION + 1, 10};
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &bad7, &bad7, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &bad17, &bad17, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &narrow, &narrow, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &short_, &short_, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &pa, &other, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &too_tall, &too_tall, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &null_data, &pb, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &pa, NULL, &cpu), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &pa, &pb, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_ssim_y(NULL, &pa, &pb, &cpu), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 10, 11, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 11, 10, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 64, 36, 7, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 64, 36, 17, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, NULL, b, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, NULL, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 64, 36, 10, NULL), -EINVAL);
    CHECK_EQ_INT(vk_ssim(NULL, a, b, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, VK_MAX_DIMENSION + 1, 11, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_ssim(&vk_emulator, a, b, 11, VK_MAX_DIMENSION + 1, 10, &got), -EINVAL);

    /* the CPU kernel's time on 1080p pairs (not asserted) */
    const VdnnPlane fa = {a, 1920, 1920, 1080, 10}, fb = {b, 1920, 1920, 1080, 10};
    gpu_pair(GPU_SCENE, 1920, 1080, 10, 9, a, b);
    const double scene_ms = ms_per_frame(&fa, &fb, 5);
    gpu_pair(GPU_NOISE, 1920, 1080, 10, 9, a, b);
    const double noise_ms = ms_per_frame(&fa, &fb, 5);
    printf("%d plane pairs (%d against the double reference); CPU kernel %.2f ms (scene), "
           "%.2f ms (noise) per 1080p frame\n",
           cases, referenced, scene_ms, noise_ms);
    free(a);
    free(b);
    return check_report();
}
