/* ssim_y (fr_kernels.h's vdnn_ssim_y says what it computes) as GPU kernels
 * (dialect.h), with psnr_kernels.h's fr_scan and fr_totals:
 *
 *   fr_scan      the rows' sums of ref and dist samples (and a flag where
 *                a sample is above 2^bpc - 1)
 *   fr_totals    the rows' sums into the frames' totals: cx, cy
 *   ssim_map     a row's threads take its output pixels in turn (thread t:
 *                t, t + n, ...); for each, straight from the samples, the
 *                vertical sums of the five maps at its 11 columns, then
 *                their horizontal sums, the SSIM, its fixed-point value
 *                summed privately (int64), one atomic add per thread into
 *                the row's slot (two's complement: uint64 addition); the
 *                pixels' arithmetic is ssim_strip, which float_ssim's map
 *                (float_ssim_kernels.h) runs on its decimated planes
 *   fr_totals    the rows' sums into the frame's total
 *   ssim_finish  one thread: the mean, NaN where a sample was out of range
 *
 * ssim_map recomputes each vertical sum for the 11 output pixels that use
 * it (~1.3 kflop a pixel, ~3 Gflop a 1080p frame: a fraction of a
 * millisecond on a current GPU) instead of writing the five vertically
 * filtered maps (40 MB at 1080p, read back once): no scratch beyond a few
 * slots a row. The sums are the same floats either way: each is computed in
 * the same order as the CPU kernel's separable passes.
 *
 * The VK_FN functions are the one definition of the arithmetic: the CPU
 * kernel (ssim_kernel.c) calls them too. */
#ifndef VDNN_GPU_SSIM_KERNELS_H
#define VDNN_GPU_SSIM_KERNELS_H

#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

#ifndef VDNN_GPU_PSNR_KERNELS_H
#include "psnr_kernels.h"
#endif

#ifndef __CUDACC_RTC__
#include <math.h>
#endif

/* The window: 2 SSIM_RADIUS + 1 taps. */
#define SSIM_RADIUS 5
#define SSIM_TAPS 11

/* gen_builtin_models.py's gaussian_window(): exp(-x^2 / (2 1.5^2)) for
 * x = -5..5 divided by their sum, in double, each rounded to float (these
 * literals are those floats to 9 digits: each reads back as itself). */
#define SSIM_WINDOW                                                                      \
    {0.00102838012f, 0.00759875821f, 0.0360007733f, 0.109360687f, 0.213005543f,         \
     0.266011715f,   0.213005543f,   0.109360687f,  0.0360007733f, 0.00759875821f,      \
     0.00102838012f}

/* 2^30: the fixed-point unit of the mean (ssim_fixed). */
#define SSIM_ONE 1073741824.0

/* A sample's value on [0, 1]: s / peak correctly rounded (IEEE division,
 * as CUDA's default --prec-div=true divides), the value the library's
 * normalisation gives. */
VK_FN float ssim_sample(uint32_t s, float peak)
{
    return (float)s / peak;
}

/* A plane's centre from the exact sum of its w x h integers, each `unit`
 * times its value on [0, 1] (float_ssim's box sums: s^2 peak): its mean on
 * [0, 1]. */
VK_FN float ssim_centre_of(uint64_t sum, int w, int h, double unit)
{
    return (float)((double)sum / ((double)w * h) / unit);
}

/* A plane's centre from its exact sample sum. */
VK_FN float ssim_centre(uint64_t sum, int w, int h, int bpc)
{
    return ssim_centre_of(sum, w, h, (double)((1u << bpc) - 1u));
}

/* The five maps of one sample pair, centred: xc, yc, xc^2, yc^2, (xc - yc)^2. */
VK_FN void ssim_maps(float xc, float yc, float m[5])
{
    const float e = xc - yc;
    m[0] = xc;
    m[1] = yc;
    m[2] = xc * xc;
    m[3] = yc * yc;
    m[4] = e * e;
}

/* SSIM from the five filtered maps f (fx, fy, fxx, fyy, fee) and the
 * centres: ssim_y_map's arithmetic (gen_builtin_models.py), op for op. */
VK_FN float ssim_value(const float f[5], float cx, float cy)
{
    const float c1 = 0.0001f, c2 = 0.0009f; /* (float)(0.01^2), (float)(0.03^2) */
    const float mu_x = f[0] + cx, mu_y = f[1] + cy;
    const float var_x = f[2] - f[0] * f[0], var_y = f[3] - f[1] * f[1];
    const float de = f[0] - f[1];
    const float var_e = f[4] - de * de;
    const float mu_xy = mu_x * mu_y;
    const float a1 = (mu_xy + mu_xy) + c1;
    const float b1 = (mu_x * mu_x + mu_y * mu_y) + c1;
    const float b2 = (var_x + var_y) + c2;
    const float a2 = b2 - var_e;
    return (a1 * a2) / (b1 * b2);
}

/* ssim - 1 in units of 2^-30, truncated toward zero: an integer (as a
 * float: the scaling by 2^30 is exact, so this is
 * (int64_t)((double)(ssim - 1) * 2^30)). Samples within bpc bits give
 * |ssim - 1| < 2.01; clamped to +-4 (and NaN to -4), which only samples out
 * of range reach (the score is NaN then), so the sums cannot overflow:
 * 2^30 pixels x 2^32. */
VK_FN float ssim_fixed(float ssim)
{
    float q = (ssim - 1.0f) * 1073741824.0f;
    q = q >= -4294967296.0f ? q : -4294967296.0f;
    q = q <= 4294967296.0f ? q : 4294967296.0f;
    return truncf(q);
}

/* The mean SSIM from the fixed-point total over the (w - 10) x (h - 10)
 * output pixels. */
VK_FN double ssim_mean(int64_t total, int w, int h)
{
    return 1.0 + (double)total / SSIM_ONE / ((double)(w - 2 * SSIM_RADIUS) * (h - 2 * SSIM_RADIUS));
}

/* Output pixels a thread of ssim_map takes (about; every n-th of the row):
 * few, since each costs ~1.3 kflop, so that a 1080p frame has ~250k threads. */
#define SSIM_STRIP 8

/* Output row y's fixed-point SSIM summed over its pixels x0, x0 + n, ...
 * of a w-wide plane pair, each straight from the planes: the vertical sums
 * of the five maps at its 11 columns, then their horizontal sums. The
 * planes are samples a, b (ssim_sample's values) or, where fa is not NULL,
 * values on [0, 1] fa, fb (float_ssim's decimated planes): one body for
 * both maps, the test on fa a constant where each kernel inlines it. */
VK_FN int64_t ssim_strip(const uint16_t *VK_RESTRICT a, const uint16_t *VK_RESTRICT b,
                         const float *VK_RESTRICT fa, const float *VK_RESTRICT fb, int w, int y,
                         int x0, int n, float peak, float cx, float cy)
{
    const float taps[SSIM_TAPS] = SSIM_WINDOW;
    int64_t sum = 0;
    for (int x = x0; x < w - 2 * SSIM_RADIUS; x += n) {
        float f[5], v[5], m[5];
        for (int c = 0; c < SSIM_TAPS; c++) {
            for (int k = 0; k < SSIM_TAPS; k++) {
                const int64_t at = (int64_t)(y + k) * w + x + c;
                const float xv = fa ? fa[at] : ssim_sample(a[at], peak);
                const float yv = fa ? fb[at] : ssim_sample(b[at], peak);
                ssim_maps(xv - cx, yv - cy, m);
                for (int i = 0; i < 5; i++)
                    v[i] = k ? v[i] + taps[k] * m[i] : taps[k] * m[i];
            }
            for (int i = 0; i < 5; i++)
                f[i] = c ? f[i] + taps[c] * v[i] : taps[c] * v[i];
        }
        sum += (int64_t)ssim_fixed(ssim_value(f, cx, cy));
    }
    return sum;
}

/* sums: the totals of ref and dist samples (fr_totals); row_sums: h - 10
 * zeroed slots, the output rows' fixed-point sums (int64 as uint64). */
VK_KERNEL ssim_map(VK_IDX const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dist,
                   int w, int h, int bpc, const uint64_t *VK_RESTRICT sums,
                   uint64_t *VK_RESTRICT row_sums)
{
    const int ow = w - 2 * SSIM_RADIUS, oh = h - 2 * SSIM_RADIUS;
    const int n = (ow + SSIM_STRIP - 1) / SSIM_STRIP, y = VK_Y;
    if (VK_X >= n || y >= oh)
        return;
    const float peak = (float)((1u << bpc) - 1u);
    const float cx = ssim_centre(sums[0], w, h, bpc), cy = ssim_centre(sums[1], w, h, bpc);
    const int64_t sum = ssim_strip(ref, dist, (const float *)0, (const float *)0, w, y, VK_X, n,
                                   peak, cx, cy);
    VK_ATOMIC_ADD_U64(row_sums + y, (uint64_t)sum);
}
VK_THUNK(ssim_map, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, const uint64_t *), VK_ARG(6, uint64_t *))

VK_KERNEL ssim_finish(VK_IDX const uint64_t *VK_RESTRICT total, int w, int h,
                      const uint32_t *VK_RESTRICT flags, float *VK_RESTRICT score)
{
    if (VK_X != 0 || VK_Y != 0)
        return;
    *score = *flags ? VK_NAN : (float)ssim_mean((int64_t)*total, w, h);
}
VK_THUNK(ssim_finish, VK_ARG(0, const uint64_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, const uint32_t *), VK_ARG(4, float *))

#endif
