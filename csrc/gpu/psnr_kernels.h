/* psnr_y (fr_kernels.h's vdnn_psnr_y says what it computes) as GPU kernels
 * (dialect.h), and the two kernels it shares with ssim_y (ssim_kernels.h):
 *
 *   fr_scan      a row's threads take its columns in turn (thread t: t,
 *                t + n, t + 2n, ...): the row's sums of ref, of dist and of
 *                (ref - dist)^2, each thread's privately, then one uint64
 *                atomic add per sum into the row's slots; a flag where a
 *                sample is above 2^bpc - 1
 *   fr_totals    one thread per slot: the slot into its total (an atomic
 *                add; integer sums are the same in any order, so exact)
 *   psnr_finish  one thread: the dB from the total, NaN where a sample was
 *                out of range
 *
 * psnr_db is the CPU kernel's formula too (psnr_kernel.c calls it). Its
 * log10 is glibc's on the host (the emulator) and CUDA's libdevice on a
 * GPU: they may differ in the last ulp of the double, which changes the
 * float score only where the double lies that close to a float rounding
 * boundary (rarely; never on the emulator, where the test holds them equal). */
#ifndef VDNN_GPU_PSNR_KERNELS_H
#define VDNN_GPU_PSNR_KERNELS_H

#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

#ifndef __CUDACC_RTC__
#include <math.h>
#endif

/* The mean squared error's floor: identical planes score 200 dB. */
#define PSNR_MSE_FLOOR 1e-20

/* 10 log10(1 / max(mse, 1e-20)), mse = sse / (w h) / peak^2. */
VK_FN double psnr_db(uint64_t sse, int w, int h, int bpc)
{
    const double peak = (double)((1u << bpc) - 1u);
    const double mse = (double)sse / ((double)w * h) / (peak * peak);
    return 10.0 * log10(1.0 / (mse > PSNR_MSE_FLOOR ? mse : PSNR_MSE_FLOOR));
}

/* Columns a thread of fr_scan sums (about; every n-th of the row). */
#define FR_STRIP 32

/* row_sums: 3 h slots, zeroed: [y] ref, [h + y] dist, [2 h + y] the
 * squared differences of row y. */
VK_KERNEL fr_scan(VK_IDX const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dist,
                  int w, int h, int bpc, uint64_t *VK_RESTRICT row_sums,
                  uint32_t *VK_RESTRICT flags)
{
    const int n = (w + FR_STRIP - 1) / FR_STRIP, y = VK_Y;
    if (VK_X >= n || y >= h)
        return;
    const uint32_t max = (1u << bpc) - 1u;
    const uint16_t *r = ref + (int64_t)y * w, *d = dist + (int64_t)y * w;
    uint64_t sum_r = 0, sum_d = 0, sse = 0;
    uint32_t above = 0;
    for (int x = VK_X; x < w; x += n) {
        const uint32_t a = r[x], b = d[x];
        const uint64_t e = a > b ? a - b : b - a;
        sum_r += a;
        sum_d += b;
        sse += e * e;
        above |= (uint32_t)(a > max) | (uint32_t)(b > max);
    }
    VK_ATOMIC_ADD_U64(row_sums + y, sum_r);
    VK_ATOMIC_ADD_U64(row_sums + h + y, sum_d);
    VK_ATOMIC_ADD_U64(row_sums + 2 * (int64_t)h + y, sse);
    if (above)
        VK_ATOMIC_OR_U32(flags, 1u);
}
VK_THUNK(fr_scan, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, uint64_t *), VK_ARG(6, uint32_t *))

/* One thread per slot i < n: slots[i] into totals[i / per] (n / per totals:
 * several runs of `per` rows at once). */
VK_KERNEL fr_totals(VK_IDX const uint64_t *VK_RESTRICT slots, int n, int per,
                    uint64_t *VK_RESTRICT totals)
{
    const int i = VK_X;
    if (i >= n || VK_Y != 0)
        return;
    VK_ATOMIC_ADD_U64(totals + i / per, slots[i]);
}
VK_THUNK(fr_totals, VK_ARG(0, const uint64_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, uint64_t *))

VK_KERNEL psnr_finish(VK_IDX const uint64_t *VK_RESTRICT sse, int w, int h, int bpc,
                      const uint32_t *VK_RESTRICT flags, float *VK_RESTRICT score)
{
    if (VK_X != 0 || VK_Y != 0)
        return;
    *score = *flags ? VK_NAN : (float)psnr_db(*sse, w, h, bpc);
}
VK_THUNK(psnr_finish, VK_ARG(0, const uint64_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, const uint32_t *), VK_ARG(5, float *))

#endif
