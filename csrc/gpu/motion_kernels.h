/* libvmaf's integer motion (vmaf_motion.c says what it computes) as GPU
 * kernels (dialect.h): one thread per sample.
 *
 *   motion_vertical    V = the vertical 5-tap pass of prev - cur, int32
 *                      (the sum in 64 bits: the CPU kernel's 32-bit path
 *                      gives the same integers where it is used), and a
 *                      flag where a sample is above 2^bpc - 1
 *   motion_horizontal  the horizontal pass of V, as the CPU kernel splits
 *                      it, |.| added to its row's uint32 sum (wrapping, as
 *                      libvmaf's per-row sum does; sums modulo 2^32, a
 *                      strip's then the row's by an atomic add, are the
 *                      same in any order)
 *   motion_rows        one thread per row: its sum into the frame's uint64
 *                      total (an atomic add)
 *   motion_finish      one thread: the score from the total, NaN where a
 *                      sample was out of range */
#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

VK_KERNEL motion_vertical(VK_IDX const uint16_t *VK_RESTRICT prev,
                          const uint16_t *VK_RESTRICT cur, int32_t *VK_RESTRICT v, int w, int h,
                          int bpc, uint32_t *VK_RESTRICT flags)
{
    const int x = VK_X, y = VK_Y;
    if (x >= w || y >= h)
        return;
    const int64_t taps[5] = {3571, 16004, 26386, 16004, 3571};
    const uint32_t max = (1u << bpc) - 1u;
    if (prev[(int64_t)y * w + x] > max || cur[(int64_t)y * w + x] > max)
        VK_ATOMIC_OR_U32(flags, 1u);
    int64_t acc = 0;
    for (int k = 0; k < 5; k++) {
        const int64_t at = (int64_t)vk_mirror(y - 2 + k, h) * w + x;
        acc += taps[k] * ((int64_t)prev[at] - (int64_t)cur[at]);
    }
    /* |V| <= 65535 for samples within bpc bits; a sample above them (the
     * score is NaN then) could make V up to 2^24, and the horizontal pass's
     * int32 sums overflow (undefined behaviour): clamped, a no-op otherwise */
    int64_t val = (acc + ((int64_t)1 << (bpc - 1))) >> bpc;
    val = val > 65535 ? 65535 : val < -65535 ? -65535 : val;
    v[(int64_t)y * w + x] = (int32_t)val;
}
VK_THUNK(motion_vertical, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *),
         VK_ARG(2, int32_t *), VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, int),
         VK_ARG(6, uint32_t *))

/* Columns a thread of motion_horizontal sums (about; every n-th of the row)
 * before it adds to its row's slot (a row's threads would otherwise all add
 * to one address). */
#define MOTION_STRIP 32

VK_KERNEL motion_horizontal(VK_IDX const int32_t *VK_RESTRICT v, int w, int h,
                            uint32_t *VK_RESTRICT row_sums)
{
    /* the row's threads take columns in turn (thread t: t, t + n, t + 2n, ...)
     * so that a warp reads adjacent columns at each step */
    const int n = (w + MOTION_STRIP - 1) / MOTION_STRIP, y = VK_Y;
    if (VK_X >= n || y >= h)
        return;
    const int32_t *row = v + (int64_t)y * w;
    uint32_t sum = 0;
    for (int x = VK_X; x < w; x += n) {
        const int32_t a0 = row[vk_mirror(x - 2, w)], a1 = row[vk_mirror(x - 1, w)], a2 = row[x];
        const int32_t a3 = row[vk_mirror(x + 1, w)], a4 = row[vk_mirror(x + 2, w)];
        /* high and low parts, a = 256 (a >> 8) + (a & 255), as vmaf_motion.c */
        const int32_t hi = 3571 * ((a0 >> 8) + (a4 >> 8)) + 16004 * ((a1 >> 8) + (a3 >> 8)) +
                           26386 * (a2 >> 8);
        const int32_t lo = 3571 * ((a0 & 255) + (a4 & 255)) +
                           16004 * ((a1 & 255) + (a3 & 255)) + 26386 * (a2 & 255);
        const int32_t val = (hi + ((lo + 32768) >> 8)) >> 8;
        sum += (uint32_t)(val < 0 ? -val : val);
    }
    VK_ATOMIC_ADD_U32(row_sums + y, sum);
}
VK_THUNK(motion_horizontal, VK_ARG(0, const int32_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, uint32_t *))

/* One thread per row: the row's (wrapped) uint32 sum into the frame's
 * uint64 total, as the CPU kernel adds them (the same in any order). */
VK_KERNEL motion_rows(VK_IDX const uint32_t *VK_RESTRICT row_sums, int h,
                      uint64_t *VK_RESTRICT total)
{
    const int y = VK_X;
    if (y >= h || VK_Y != 0)
        return;
    VK_ATOMIC_ADD_U64(total, (uint64_t)row_sums[y]);
}
VK_THUNK(motion_rows, VK_ARG(0, const uint32_t *), VK_ARG(1, int), VK_ARG(2, uint64_t *))

VK_KERNEL motion_finish(VK_IDX const uint64_t *VK_RESTRICT total, int w, int h,
                        const uint32_t *VK_RESTRICT flags, float *VK_RESTRICT score)
{
    if (VK_X != 0 || VK_Y != 0)
        return;
    const double s = (double)*total / 256. / ((double)w * h);
    *score = *flags ? VK_NAN : (float)(s < 10000.0 ? s : 10000.0);
}
VK_THUNK(motion_finish, VK_ARG(0, const uint64_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, const uint32_t *), VK_ARG(4, float *))
