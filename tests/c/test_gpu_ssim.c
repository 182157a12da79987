/* The SSIM program (csrc/gpu/ssim_program.c) on the emulator against the
 * CPU kernel vdnn_ssim_y (fr_kernels.h): the same float on every plane
 * pair of gpu_planes.h, both orders (1080p: the scene and extreme pairs at
 * 10 bits, one order; fewer unoptimised: THOROUGH); the CPU kernel
 * against a plain double reference (an 11x11 window per pixel, no
 * centring, no float); exactly 1 for equal planes; the smallest sizes;
 * the window's taps and the sample normalisation, every sample of every
 * depth, against their definitions. (Strides, samples out of range and
 * refused arguments: test_gpu_psnr.c, for both metrics.) */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return gpu_same_as_cpu("ssim", vdnn_ssim_y, vk_ssim, ref, dist, w, h, bpc, what);
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
    const VdnnPlane r = gpu_plane(ref, w, h, bpc), d = gpu_plane(dist, w, h, bpc);
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

/* Unoptimised or under the sanitizers (-O0: the emulated map takes ~10 us
 * a pixel), fewer pairs: of 322x178 and up one order only, of 480x270 one
 * kind a depth, of 1080p the scene. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define THOROUGH 0
#else
#define THOROUGH 1
#endif

int main(void)
{
    CHECK(definitions_hold());

    uint16_t *a = gpu_plane_alloc(), *b = gpu_plane_alloc();
    if (!a || !b)
        return 1;
    int cases = 0, referenced = 0;
    for (GpuCase c = GPU_CASE_START; gpu_next_case(&c);) {
        const int w = c.w, h = c.h, bpc = c.bpc;
        const int full_hd = w * h >= 1920 * 1080, large = w * h >= 50000;
        const int hd_pair = bpc == 10 && (c.kind == GPU_SCENE ||
                                          (THOROUGH && c.kind == GPU_EXTREME));
        if (full_hd && !hd_pair)
            continue;
        if (!THOROUGH && w * h >= 100000 && !full_hd && c.kind != c.depth % GPU_KINDS)
            continue;
        gpu_case_pair(&c, a, b);
        CHECK(same_as_cpu(a, b, w, h, bpc, c.kind_name));
        if (!full_hd && (THOROUGH || !large))
            CHECK(same_as_cpu(b, a, w, h, bpc, c.kind_name));
        cases++;
        if (c.kind == GPU_SCENE && w * h <= 322 * 178) {
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

    /* the CPU kernel on a 1080p noise pair, which the emulator is spared
     * (its speed: bench/bench_kernels_forms.py) */
    const VdnnPlane fa = {a, 1920, 1920, 1080, 10}, fb = {b, 1920, 1920, 1080, 10};
    gpu_pair(GPU_NOISE, 1920, 1080, 10, 9, a, b);
    double noise = 0;
    CHECK_EQ_INT(vdnn_ssim_y(&vdnn_kernel_env_malloc, &fa, &fb, &noise), 0);
    printf("%d plane pairs (%d against the double reference)\n", cases, referenced);
    free(a);
    free(b);
    return check_report();
}
