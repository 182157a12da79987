/* libvmaf's integer VIF (vmaf_vif.c says what it computes) as GPU kernels
 * (dialect.h). Scale s works on a ws x hs pair (scale 0: the input, bpc
 * bits; scale s + 1: scale s filtered with scale s + 1's filter and
 * decimated, 16-bit).
 *
 *   vif_log2_table    32768 threads: the table of round(log2f(i) * 2048),
 *                     i = 32768..65535, that vmaf_vif.c makes with libm,
 *                     here from double +, -, *, / only (the same doubles on
 *                     both compilers; tests/c/test_gpu_vif.c holds every
 *                     entry to the host's log2f)
 *   vif_vertical      one thread per sample of scale s: the vertical pass
 *                     of x, y, x^2, y^2, xy (mu1, mu2 16-bit, the squares
 *                     32-bit, shifted and rounded as the CPU kernel's) into
 *                     five planes; at scale 0 a flag where a sample is above
 *                     2^bpc - 1
 *   vif_horizontal    one thread per VIF_STRIP samples of a row of scale s
 *                     (every n-th column, so a warp reads adjacent ones):
 *                     the horizontal pass of the five planes, the sigmas
 *                     and the statistic, summed, then added to its row's
 *                     four int64 sums (num_log, den_log, num_non_log,
 *                     den_non_log: integers, so 64-bit atomic adds give the
 *                     CPU kernel's sums in any order)
 *   vif_subsample     one thread per sample of scale s + 1: the next
 *                     scale's filter, vertical then horizontal (only the
 *                     columns the even output columns need), as the CPU
 *                     kernel rounds it
 *   vif_rows          one thread per row of every scale: its sums into its
 *                     scale's four totals (64-bit atomic adds again)
 *   vif_finish        one thread: the four scores from the totals as the CPU
 *                     kernel makes them (float num / den), NaN where a
 *                     sample was out of range
 *
 * The squares' vertical sum may need 48 bits: it is made in 64 bits and
 * shifted, the integer the CPU kernel makes from its 32-bit halves; so is
 * the horizontal sum of the squares' planes. */
#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

/* vmaf_vif.c's filters: 17, 9, 5, 3 taps (scale 0..3), symmetric, sum
 * 65536, one after the other. A table at file scope (NVRTC puts it in
 * global memory; where the scale and the tap are constants the compiler
 * reads the value at compile time), made once rather than in every call. */
static const uint16_t vif_taps[17 + 9 + 5 + 3] = {
    489,  935,   1640,  2640,  3896,  5274,  6547,  7455,  7784,  7455, 6547, 5274,
    3896, 2640,  1640,  935,   489,   1244,  3663,  7925,  12590, 14692, 12590, 7925,
    3663, 1244,  3571,  16004, 26386, 16004, 3571,  10904, 43728, 10904};

VK_FN uint32_t vif_tap(int s, int k)
{
    return vif_taps[(s == 0 ? 0 : s == 1 ? 17 : s == 2 ? 26 : 31) + k];
}

VK_FN int vif_width(int s)
{
    return s == 0 ? 17 : s == 1 ? 9 : s == 2 ? 5 : 3;
}

/* round(log2f((float)i) * 2048), i in 32768..65535. log2(i) = 15 + y, y =
 * log2(i / 32768) = 2 atanh(t) / ln 2, t = (i - 32768) / (i + 32768) <= 1/3,
 * the series to t^41 (its error far below 2^-52 y). The float of 15 + y
 * (float spacing 2^-20 in [15, 16)) is 15 + q 2^-20, q = y 2^20 rounded to
 * the nearest integer; times 2048, rounded half away from zero:
 * 30720 + round(q / 512). Every y 2^20 lies at least 1.7e-5 from a rounding
 * boundary, far beyond the double's error. */
VK_FN uint16_t vif_log2_entry(int i)
{
    const double t = (double)(i - 32768) / (double)(i + 32768);
    const double t2 = t * t;
    double s = 0;
    for (int k = 20; k >= 0; k--)
        s = s * t2 + 1.0 / (double)(2 * k + 1);
    const double y = 2.0 * t * s * 1.4426950408889634; /* 1 / ln 2 */
    const int64_t q = (int64_t)(y * 1048576.0 + 0.5);
    return (uint16_t)(30720 + ((q + 256) >> 9));
}

VK_KERNEL vif_log2_table(VK_IDX uint16_t *VK_RESTRICT table)
{
    const int x = VK_X;
    if (x >= 32768)
        return;
    table[x] = vif_log2_entry(32768 + x);
}
VK_THUNK(vif_log2_table, VK_ARG(0, uint16_t *))

/* Bits needed for v (0 for 0). */
VK_FN int vif_bit_length(uint64_t v)
{
    int n = 0;
    for (int b = 32; b > 0; b >>= 1)
        if (v >> b) {
            v >>= b;
            n += b;
        }
    return n + (int)v;
}

/* vmaf_vif.c's log2_fixed: log2(v) in 1/2048, v >= 2^17: the top 16 bits
 * index the table, each further bit adds 2048. */
VK_FN int32_t vif_log2_fixed(const uint16_t *VK_RESTRICT table, uint64_t v)
{
    const int k = vif_bit_length(v) - 16;
    return (int32_t)table[(v >> k) - 32768] + 2048 * k;
}

/* Vertical pass at (x, y) of scale s (w x h, samples ref / dis, rows w
 * apart): mu1, mu2 = (sum f a + 2^(sh_mu - 1)) >> sh_mu; the squares
 * (sum f a b + rnd) >> sh_sq (no rounding at sh_sq 0). sh_mu is bpc at
 * scale 0 and 16 above; sh_sq 2 (bpc - 8) at scale 0 and 16 above. The
 * kernel (scale 0 only) sets the flag where ref or dis at (x, y) is above
 * 2^bpc - 1. */
VK_FN void vif_vertical_at(const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dis,
                           int x, int y, int w, int h, const int s, int bpc,
                           uint16_t *VK_RESTRICT mu1, uint16_t *VK_RESTRICT mu2,
                           uint32_t *VK_RESTRICT xx, uint32_t *VK_RESTRICT yy,
                           uint32_t *VK_RESTRICT xy)
{
    const int64_t at = (int64_t)y * w + x;
    const int fw = vif_width(s), half = fw / 2;
    const int sh_mu = s == 0 ? bpc : 16;
    const int sh_sq = s == 0 ? 2 * (bpc - 8) : 16;
    uint32_t m1 = 0, m2 = 0;
    uint64_t sxx = 0, syy = 0, sxy = 0;
    for (int k = 0; k < fw; k++) {
        const int64_t p = (int64_t)vk_mirror(y - half + k, h) * w + x;
        const uint32_t f = vif_tap(s, k), a = ref[p], b = dis[p];
        m1 += f * a;
        m2 += f * b;
        sxx += (uint64_t)f * (a * a);
        syy += (uint64_t)f * (b * b);
        sxy += (uint64_t)f * (a * b);
    }
    const uint64_t rnd_sq = sh_sq ? (uint64_t)1 << (sh_sq - 1) : 0;
    mu1[at] = (uint16_t)((m1 + (1u << (sh_mu - 1))) >> sh_mu);
    mu2[at] = (uint16_t)((m2 + (1u << (sh_mu - 1))) >> sh_mu);
    xx[at] = (uint32_t)((sxx + rnd_sq) >> sh_sq);
    yy[at] = (uint32_t)((syy + rnd_sq) >> sh_sq);
    xy[at] = (uint32_t)((sxy + rnd_sq) >> sh_sq);
}

VK_KERNEL vif_vertical(VK_IDX const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dis,
                       int w, int h, int s, int bpc, uint16_t *VK_RESTRICT mu1,
                       uint16_t *VK_RESTRICT mu2, uint32_t *VK_RESTRICT xx,
                       uint32_t *VK_RESTRICT yy, uint32_t *VK_RESTRICT xy,
                       uint32_t *VK_RESTRICT flags)
{
    const int x = VK_X, y = VK_Y;
    if (x >= w || y >= h)
        return;
    /* the scale written out at each call: the taps become constants */
    if (s == 0) {
        const int64_t at = (int64_t)y * w + x;
        const uint32_t max = (1u << bpc) - 1u;
        if (ref[at] > max || dis[at] > max)
            VK_ATOMIC_OR_U32(flags, 1u);
        vif_vertical_at(ref, dis, x, y, w, h, 0, bpc, mu1, mu2, xx, yy, xy);
    } else if (s == 1) {
        vif_vertical_at(ref, dis, x, y, w, h, 1, bpc, mu1, mu2, xx, yy, xy);
    } else if (s == 2) {
        vif_vertical_at(ref, dis, x, y, w, h, 2, bpc, mu1, mu2, xx, yy, xy);
    } else {
        vif_vertical_at(ref, dis, x, y, w, h, 3, bpc, mu1, mu2, xx, yy, xy);
    }
}
VK_THUNK(vif_vertical, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, int), VK_ARG(6, uint16_t *),
         VK_ARG(7, uint16_t *), VK_ARG(8, uint32_t *), VK_ARG(9, uint32_t *),
         VK_ARG(10, uint32_t *), VK_ARG(11, uint32_t *))

/* (a b + 2^31) >> 32 */
VK_FN uint32_t vif_mu_sq(uint64_t a, uint64_t b)
{
    return (uint32_t)((a * b + 0x80000000u) >> 32);
}

/* The horizontal pass's five sums at (x, y) of scale s: mu1, mu2 (not
 * shifted) and the squares' sums (64 bits). */
typedef struct VifSums {
    uint32_t m1, m2;
    uint64_t xx, yy, xy;
} VifSums;

VK_FN VifSums vif_horizontal_at(const uint16_t *VK_RESTRICT mu1, const uint16_t *VK_RESTRICT mu2,
                                const uint32_t *VK_RESTRICT xx, const uint32_t *VK_RESTRICT yy,
                                const uint32_t *VK_RESTRICT xy, int x, int y, int w, const int s)
{
    const int fw = vif_width(s), half = fw / 2;
    const int64_t row = (int64_t)y * w;
    VifSums r;
    r.m1 = 0, r.m2 = 0, r.xx = 0, r.yy = 0, r.xy = 0;
    for (int k = 0; k < fw; k++) {
        const int64_t p = row + vk_mirror(x - half + k, w);
        const uint32_t f = vif_tap(s, k);
        r.m1 += f * mu1[p];
        r.m2 += f * mu2[p];
        r.xx += (uint64_t)f * xx[p];
        r.yy += (uint64_t)f * yy[p];
        r.xy += (uint64_t)f * xy[p];
    }
    return r;
}

/* The statistic of one sample from the horizontal pass's sums, added to
 * acc[0..3]: num_log, den_log, num_non_log, den_non_log. */
VK_FN void vif_statistic(VifSums r, const uint16_t *VK_RESTRICT log2_table, double egl,
                         int64_t *acc)
{
    /* uint32 differences read as int32, as vmaf_vif.c's hstat_body */
    const int32_t s1 = (int32_t)((uint32_t)((r.xx + 32768) >> 16) - vif_mu_sq(r.m1, r.m1));
    int32_t s2 = (int32_t)((uint32_t)((r.yy + 32768) >> 16) - vif_mu_sq(r.m2, r.m2));
    const int32_t s12 = (int32_t)((uint32_t)((r.xy + 32768) >> 16) - vif_mu_sq(r.m1, r.m2));
    if (s1 < 131072) { /* sigma_nsq, 2.0 in 1/65536 */
        acc[2] += s2 > 0 ? s2 : 0;
        acc[3] += 1;
        return;
    }
    if (s2 < 0)
        s2 = 0;
    acc[1] += vif_log2_fixed(log2_table, 131072u + (uint32_t)s1) - 2048 * 17;
    if (s12 > 0 && s2 > 0) {
        const double eps = 65536 * 1.0e-10;
        double g = s12 / (s1 + eps);
        /* (int32_t) of a negative difference would be clamped to 0: taken
         * as 0 before the conversion (it is below 2^31 - 1: g s12 > 0) */
        const double d = s2 - g * s12;
        const int32_t sv_sq = d < 0 ? 0 : (int32_t)d;
        if (!(g < egl))
            g = egl;
        const uint32_t numer1 = (uint32_t)sv_sq + 131072u;
        const int64_t numer1_tmp = (int64_t)(g * g * s1) + numer1;
        acc[0] += vif_log2_fixed(log2_table, (uint64_t)numer1_tmp) -
                  vif_log2_fixed(log2_table, numer1);
    }
}

/* Columns a thread of vif_horizontal takes before it adds to its row's
 * slots (a row's threads would otherwise all add to the same four). */
#define VIF_STRIP 32

/* The horizontal pass and the statistic at every n-th column of row y of
 * scale s from column x (n: the row's threads, w / VIF_STRIP rounded up); sums: four int64 a row (num_log, den_log, num_non_log,
 * den_non_log), integers: the same in any order. */
VK_KERNEL vif_horizontal(VK_IDX const uint16_t *VK_RESTRICT mu1, const uint16_t *VK_RESTRICT mu2,
                         const uint32_t *VK_RESTRICT xx, const uint32_t *VK_RESTRICT yy,
                         const uint32_t *VK_RESTRICT xy, int w, int h, int s,
                         const uint16_t *VK_RESTRICT log2_table, double egl,
                         int64_t *VK_RESTRICT sums)
{
    /* the row's threads take columns in turn (thread t: t, t + n, t + 2n, ...)
     * so that a warp reads adjacent columns at each step */
    const int n = (w + VIF_STRIP - 1) / VIF_STRIP, y = VK_Y;
    if (VK_X >= n || y >= h)
        return;
    int64_t acc[4] = {0, 0, 0, 0};
    for (int x = VK_X; x < w; x += n) {
        const VifSums r = s == 0   ? vif_horizontal_at(mu1, mu2, xx, yy, xy, x, y, w, 0)
                          : s == 1 ? vif_horizontal_at(mu1, mu2, xx, yy, xy, x, y, w, 1)
                          : s == 2 ? vif_horizontal_at(mu1, mu2, xx, yy, xy, x, y, w, 2)
                                   : vif_horizontal_at(mu1, mu2, xx, yy, xy, x, y, w, 3);
        vif_statistic(r, log2_table, egl, acc);
    }
    int64_t *out = sums + 4 * (int64_t)y;
    for (int q = 0; q < 4; q++)
        if (acc[q])
            VK_ATOMIC_ADD_U64(out + q, (uint64_t)acc[q]);
}
VK_THUNK(vif_horizontal, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *),
         VK_ARG(2, const uint32_t *), VK_ARG(3, const uint32_t *), VK_ARG(4, const uint32_t *),
         VK_ARG(5, int), VK_ARG(6, int), VK_ARG(7, int), VK_ARG(8, const uint16_t *),
         VK_ARG(9, double), VK_ARG(10, int64_t *))

/* Sample (x, y) of scale s + 1 (w / 2 x h / 2) from scale s (w x h), the
 * filter of scale sn = s + 1: the vertical pass at row 2 y, (sum f a +
 * 2^(sh - 1)) >> sh (sh: bpc at scale 0, 16 above), at the columns the
 * horizontal pass at column 2 x reads; then (sum f v + 2^15) >> 16. */
VK_FN void vif_subsample_at(const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dis,
                            int x, int y, int w, int h, const int sn, int sh,
                            uint16_t *VK_RESTRICT ref_next, uint16_t *VK_RESTRICT dis_next)
{
    const int fw = vif_width(sn), half = fw / 2;
    const uint32_t rnd = 1u << (sh - 1);
    uint32_t hr = 0, hd = 0;
    for (int k = 0; k < fw; k++) {
        const int col = vk_mirror(2 * x - half + k, w);
        uint32_t vr = 0, vd = 0;
        for (int l = 0; l < fw; l++) {
            const int64_t p = (int64_t)vk_mirror(2 * y - half + l, h) * w + col;
            const uint32_t f = vif_tap(sn, l);
            vr += f * ref[p];
            vd += f * dis[p];
        }
        const uint32_t f = vif_tap(sn, k);
        hr += f * ((vr + rnd) >> sh);
        hd += f * ((vd + rnd) >> sh);
    }
    const int64_t at = (int64_t)y * (w / 2) + x;
    ref_next[at] = (uint16_t)((hr + 32768) >> 16);
    dis_next[at] = (uint16_t)((hd + 32768) >> 16);
}

VK_KERNEL vif_subsample(VK_IDX const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dis,
                        int w, int h, int s, int bpc, uint16_t *VK_RESTRICT ref_next,
                        uint16_t *VK_RESTRICT dis_next)
{
    const int x = VK_X, y = VK_Y;
    if (x >= w / 2 || y >= h / 2)
        return;
    if (s == 0)
        vif_subsample_at(ref, dis, x, y, w, h, 1, bpc, ref_next, dis_next);
    else if (s == 1)
        vif_subsample_at(ref, dis, x, y, w, h, 2, 16, ref_next, dis_next);
    else
        vif_subsample_at(ref, dis, x, y, w, h, 3, 16, ref_next, dis_next);
}
VK_THUNK(vif_subsample, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, int), VK_ARG(6, uint16_t *),
         VK_ARG(7, uint16_t *))

/* sums: the four scales' row sums one after the other (h, h / 2, h / 4,
 * h / 8 rows of four). */
/* One thread per row of every scale (rows: h, h / 2, h / 4, h / 8 of them,
 * in that order): its four sums into its scale's totals[4 s .. 4 s + 3]
 * (int64: the same in any order), so that the finish reads 16 values, not
 * every row's. */
VK_KERNEL vif_rows(VK_IDX const int64_t *VK_RESTRICT sums, int h, int rows,
                   int64_t *VK_RESTRICT totals)
{
    const int r = VK_X;
    if (r >= rows || VK_Y != 0)
        return;
    int s = 0, first = 0;
    for (int hs = h; s < 4 && r >= first + hs; hs /= 2, s++)
        first += hs;
    if (s == 4)
        return;
    for (int q = 0; q < 4; q++)
        VK_ATOMIC_ADD_U64(totals + 4 * s + q, (uint64_t)sums[4 * (int64_t)r + q]);
}
VK_THUNK(vif_rows, VK_ARG(0, const int64_t *), VK_ARG(1, int), VK_ARG(2, int),
         VK_ARG(3, int64_t *))

VK_KERNEL vif_finish(VK_IDX const int64_t *VK_RESTRICT totals,
                     const uint32_t *VK_RESTRICT flags, float *VK_RESTRICT scores)
{
    if (VK_X != 0 || VK_Y != 0)
        return;
    for (int s = 0; s < 4; s++) {
        const int64_t num_log = totals[4 * s], den_log = totals[4 * s + 1];
        const int64_t num_non_log = totals[4 * s + 2], den_non_log = totals[4 * s + 3];
        const float num =
            (float)(num_log / 2048.0 + (den_non_log - (num_non_log / 16384.0) / 65025.0));
        const float den = (float)(den_log / 2048.0 + den_non_log);
        scores[s] = *flags ? VK_NAN : num / den;
    }
}
VK_THUNK(vif_finish, VK_ARG(0, const int64_t *), VK_ARG(1, const uint32_t *), VK_ARG(2, float *))
