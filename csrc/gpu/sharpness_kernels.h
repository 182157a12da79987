/* sharpness_nr (nr_kernels.h's vdnn_sharpness_nr says what it computes) as
 * GPU kernels (dialect.h):
 *
 *   sharp_scan    a row's threads take its columns in turn (thread t: t,
 *                 t + n, t + 2n, ...): a flag where a sample is above
 *                 2^bpc - 1 (every row, every column), and in the valid
 *                 region the integer Laplacian's sum and sum of squares,
 *                 each thread's privately, then one 64-bit atomic add per
 *                 sum into the row's slots (integer sums: the same in any
 *                 order)
 *   sharp_finish  one thread: the rows' sums into the frame's totals in
 *                 double, rows in order (as the CPU kernel adds them: no
 *                 atomics, a uint64 total could overflow), the variance;
 *                 NaN where a sample was out of range
 *
 * sharp_laplacian and sharp_variance are the CPU kernel's arithmetic too
 * (sharpness_kernel.c calls them). */
#ifndef VDNN_GPU_SHARPNESS_KERNELS_H
#define VDNN_GPU_SHARPNESS_KERNELS_H

#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

/* The Laplacian at column x of the middle row: exact (|li| <= 4 * 65535). */
VK_FN int32_t sharp_laplacian(const uint16_t *VK_RESTRICT up, const uint16_t *VK_RESTRICT mid,
                              const uint16_t *VK_RESTRICT down, int x)
{
    return (int32_t)up[x] + (int32_t)down[x] + (int32_t)mid[x - 1] + (int32_t)mid[x + 1] -
           4 * (int32_t)mid[x];
}

/* li^2, exact (below 2^37). */
VK_FN uint64_t sharp_square(int32_t li)
{
    return (uint64_t)((int64_t)li * li);
}

/* The variance of L(s / peak) from the frame's totals t1 = sum li and
 * t2 = sum li^2 (doubles) over the (w - 2)(h - 2) valid pixels. */
VK_FN double sharp_variance(double t1, double t2, int w, int h, int bpc)
{
    const double peak = (double)((1u << bpc) - 1u);
    const double n = (double)(w - 2) * (double)(h - 2);
    const double mean = t1 / n;
    return (t2 / n - mean * mean) / (peak * peak);
}

/* Columns a thread of sharp_scan takes (about; every n-th of the row). */
#define SHARP_STRIP 32

/* One thread per (strip, row) of the w x h plane; row_sums: 2 (h - 2)
 * slots, zeroed: [y - 1] the Laplacian's sum over valid row y (as a uint64,
 * two's complement), [h - 2 + y - 1] its sum of squares. */
VK_KERNEL sharp_scan(VK_IDX const uint16_t *VK_RESTRICT plane, int w, int h, int bpc,
                     uint64_t *VK_RESTRICT row_sums, uint32_t *VK_RESTRICT flags)
{
    const int n = (w + SHARP_STRIP - 1) / SHARP_STRIP, y = VK_Y;
    if (VK_X >= n || y >= h)
        return;
    const uint32_t max = (1u << bpc) - 1u;
    const uint16_t *mid = plane + (int64_t)y * w;
    const int valid = y >= 1 && y <= h - 2;
    int64_t s1 = 0;
    uint64_t s2 = 0;
    uint32_t above = 0;
    for (int x = VK_X; x < w; x += n) {
        above |= (uint32_t)(mid[x] > max);
        if (valid && x >= 1 && x <= w - 2) {
            const int32_t li = sharp_laplacian(mid - w, mid, mid + w, x);
            s1 += li;
            s2 += sharp_square(li);
        }
    }
    if (valid) {
        VK_ATOMIC_ADD_U64(row_sums + (y - 1), (uint64_t)s1);
        VK_ATOMIC_ADD_U64(row_sums + (h - 2) + (y - 1), s2);
    }
    if (above)
        VK_ATOMIC_OR_U32(flags, 1u);
}
VK_THUNK(sharp_scan, VK_ARG(0, const uint16_t *), VK_ARG(1, int), VK_ARG(2, int), VK_ARG(3, int),
         VK_ARG(4, uint64_t *), VK_ARG(5, uint32_t *))

VK_KERNEL sharp_finish(VK_IDX const uint64_t *VK_RESTRICT row_sums, int w, int h, int bpc,
                       const uint32_t *VK_RESTRICT flags, float *VK_RESTRICT score)
{
    if (VK_X != 0 || VK_Y != 0)
        return;
    const int rows = h - 2;
    double t1 = 0, t2 = 0;
    for (int r = 0; r < rows; r++) {
        t1 += (double)(int64_t)row_sums[r];
        t2 += (double)row_sums[rows + r];
    }
    *score = *flags ? VK_NAN : (float)sharp_variance(t1, t2, w, h, bpc);
}
VK_THUNK(sharp_finish, VK_ARG(0, const uint64_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, const uint32_t *), VK_ARG(5, float *))

#endif
