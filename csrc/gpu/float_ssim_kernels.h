/* float_ssim (fr_kernels.h's vdnn_float_ssim says what it computes) as GPU
 * kernels (dialect.h), with ssim_kernels.h's and psnr_kernels.h's:
 *
 *   fssim_decimate  a decimated row's threads take its samples in turn
 *                   (thread t: t, t + n, ...); for each, the box sums S of
 *                   ref and dist (s x s mirrored taps, exact), their values
 *                   into the decimated planes, S summed privately, then one
 *                   atomic add per plane into the row's slots; a flag where
 *                   a sample is above 2^bpc - 1
 *   fr_totals       the rows' sums into the planes' totals: cx, cy
 *   fssim_map       ssim_map on the decimated planes (ssim_strip, the same
 *                   arithmetic), into the output rows' sums
 *   fr_totals       the rows' sums into the frame's total
 *   ssim_finish     one thread: the mean, NaN where a sample was out of range
 *
 * A box sum is an integer, the same whichever order its taps are added in:
 * the CPU kernel sums columns first, these threads a box at a time.
 *
 * The VK_FN functions are the one definition of the decimation: the CPU
 * kernel (float_ssim_kernel.c) calls them too. */
#ifndef VDNN_GPU_FLOAT_SSIM_KERNELS_H
#define VDNN_GPU_FLOAT_SSIM_KERNELS_H

#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

#ifndef VDNN_GPU_SSIM_KERNELS_H
#include "ssim_kernels.h"
#endif

/* libvmaf's automatic scale, max(1, round(min(w, h) / 256)) with halves
 * rounded up: iqa's floor(x + 0.5), which is this integer division (x is
 * exact in double). */
VK_FN int fssim_scale(int w, int h)
{
    const int least = w < h ? w : h, s = (least + 128) / 256;
    return s > 1 ? s : 1;
}

/* Decimated samples on an axis of n: iqa's n / s + n % 2. */
VK_FN int fssim_size(int n, int s)
{
    return n / s + n % 2;
}

/* Decimated sample i's first tap (iqa's centring of an even box). */
VK_FN int fssim_first(int i, int s)
{
    return i * s - s / 2;
}

/* A tap's position on an axis of n, mirrored with the edge repeated
 * (KBND_SYMMETRIC: -1 -> 0, n -> n - 1): for taps within n of the axis. */
VK_FN int fssim_mirror(int p, int n)
{
    return p < 0 ? -1 - p : p >= n ? 2 * n - 1 - p : p;
}

/* What a box sum S is of its value on [0, 1]: s^2 peak (exact in double). */
VK_FN double fssim_unit(int s, int bpc)
{
    return (double)s * (double)s * (double)((1u << bpc) - 1u);
}

/* A box sum's value on [0, 1]: S / unit in double, rounded once to float. */
VK_FN float fssim_value(uint32_t sum, double unit)
{
    return (float)((double)sum / unit);
}

/* Decimated samples a thread of fssim_decimate takes (about; every n-th of
 * the row): a few, so that a row's atomics are few too. */
#define FSSIM_STRIP 4

/* fref, fdist: the dw x dh decimated planes (dw, dh: fssim_size of w, h);
 * row_sums: 2 dh zeroed slots, [i] ref's box sums of decimated row i,
 * [dh + i] dist's. Each thread checks the samples of its boxes against the
 * depth, and the last row's and column's threads those past the last box
 * too (which no box takes when n / s + n % 2 boxes stop short of n). */
VK_KERNEL fssim_decimate(VK_IDX const uint16_t *VK_RESTRICT ref,
                         const uint16_t *VK_RESTRICT dist, int w, int h, int bpc,
                         float *VK_RESTRICT fref, float *VK_RESTRICT fdist,
                         uint64_t *VK_RESTRICT row_sums, uint32_t *VK_RESTRICT flags)
{
    const int s = fssim_scale(w, h), dw = fssim_size(w, s), dh = fssim_size(h, s);
    const int n = (dw + FSSIM_STRIP - 1) / FSSIM_STRIP, i = VK_Y;
    if (VK_X >= n || i >= dh)
        return;
    const uint32_t max = (1u << bpc) - 1u;
    const double unit = fssim_unit(s, bpc);
    const int top = fssim_first(i, s);
    uint64_t sum_r = 0, sum_d = 0;
    uint32_t bits = 0;
    for (int j = VK_X; j < dw; j += n) {
        const int left = fssim_first(j, s);
        uint32_t box_r = 0, box_d = 0;
        for (int t = 0; t < s; t++) {
            const int64_t row = (int64_t)fssim_mirror(top + t, h) * w;
            for (int u = 0; u < s; u++) {
                const int64_t at = row + fssim_mirror(left + u, w);
                box_r += ref[at];
                box_d += dist[at];
                bits |= (uint32_t)ref[at] | (uint32_t)dist[at];
            }
        }
        if (i == dh - 1 || j == dw - 1) {
            /* the rectangle from the box's first sample in the frame to
             * the frame's end on the last row's or column's axis: every
             * sample past the last box (a few rows or columns, if any) */
            const int y0 = top < 0 ? 0 : top, x0 = left < 0 ? 0 : left;
            const int y1 = i == dh - 1 ? h : (top + s < h ? top + s : h);
            const int x1 = j == dw - 1 ? w : (left + s < w ? left + s : w);
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++)
                    bits |= (uint32_t)ref[(int64_t)y * w + x] | (uint32_t)dist[(int64_t)y * w + x];
        }
        fref[(int64_t)i * dw + j] = fssim_value(box_r, unit);
        fdist[(int64_t)i * dw + j] = fssim_value(box_d, unit);
        sum_r += box_r;
        sum_d += box_d;
    }
    VK_ATOMIC_ADD_U64(row_sums + i, sum_r);
    VK_ATOMIC_ADD_U64(row_sums + dh + i, sum_d);
    if (bits & ~max)
        VK_ATOMIC_OR_U32(flags, 1u);
}
VK_THUNK(fssim_decimate, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *),
         VK_ARG(2, int), VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, float *), VK_ARG(6, float *),
         VK_ARG(7, uint64_t *), VK_ARG(8, uint32_t *))

/* ssim_map on the dw x dh decimated planes of scale s: sums, the planes'
 * totals of box sums (fr_totals); row_sums: dh - 10 zeroed slots. */
VK_KERNEL fssim_map(VK_IDX const float *VK_RESTRICT fref, const float *VK_RESTRICT fdist,
                    int dw, int dh, int s, int bpc, const uint64_t *VK_RESTRICT sums,
                    uint64_t *VK_RESTRICT row_sums)
{
    const int ow = dw - 2 * SSIM_RADIUS, oh = dh - 2 * SSIM_RADIUS;
    const int n = (ow + SSIM_STRIP - 1) / SSIM_STRIP, y = VK_Y;
    if (VK_X >= n || y >= oh)
        return;
    const double unit = fssim_unit(s, bpc);
    const float cx = ssim_centre_of(sums[0], dw, dh, unit);
    const float cy = ssim_centre_of(sums[1], dw, dh, unit);
    const int64_t sum = ssim_strip((const uint16_t *)0, (const uint16_t *)0, fref, fdist, dw, y,
                                   VK_X, n, 1.0f, cx, cy);
    VK_ATOMIC_ADD_U64(row_sums + y, (uint64_t)sum);
}
VK_THUNK(fssim_map, VK_ARG(0, const float *), VK_ARG(1, const float *), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, int), VK_ARG(6, const uint64_t *),
         VK_ARG(7, uint64_t *))

#endif
