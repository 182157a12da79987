/* libvmaf's integer ADM (csrc/vmaf_adm.c says what it computes) as GPU
 * kernels (dialect.h). Per level (0..3; z = 0 reference, 1 distorted):
 *
 *   adm_vertical0     level 0, one thread per output row i and column x:
 *                     the vertical db2 pass of the samples (low and high
 *                     rows, 16-bit values), a flag where a sample is above
 *                     2^bpc - 1
 *   adm_vertical      levels 1..3, the same pass of the LL band above
 *                     (64-bit sums, the level's add and shift, int32)
 *   adm_horizontal0   level 0, one thread per band coefficient: the
 *   adm_horizontal    horizontal pass of the low and high rows into the four
 *                     bands (LL, v, h, d)
 *   adm_decouple      one thread per coefficient the masking reads: the angle
 *                     test, the restored values r (h, v, d), the CSF-weighted
 *                     additive values a, the sum of the three magnitudes
 *   adm_cm            one thread per ADM_CM_STRIP coefficients of a row
 *                     inside the border: the 3x3 masking threshold, the
 *                     numerator's three cube terms and the denominator's
 *                     three (reference bands), added to their row's uint64
 *                     sums (integer atomics: wrapping sums, the same in any
 *                     order)
 *   adm_rows          one thread per row of each level: its sums rounded and
 *                     shifted as libvmaf accumulates a row, into the level's
 *                     six totals (wrapping again)
 *   adm_finish        one thread: the levels' float scores from the totals
 *                     (glibc's powf(x, 1/3) as adm_cbrtf), adm2 and the
 *                     scales; NaN where a sample was out of range
 *
 * The arithmetic is libvmaf's, written as vmaf_adm.c's generic paths
 * (decouple_csf0, decouple_csf_s, cm_row0, cm_row_s) in int64 where it
 * widens; vmaf_adm.c's closed forms for integer gain limits (restore0_i,
 * restore_s_i, split_sum, sq29 ...) compute the same integers. Everything
 * that takes libm (the level constants, the noise terms, cos^2 1 degree)
 * comes from the host in AdmLevel; the only transcendental a kernel
 * evaluates is adm_cbrtf. */
#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

#ifndef VDNN_GPU_ADM_LEVEL_H
#include "adm_level.h"
#endif

#ifdef __CUDACC_RTC__
#define ADM_AS_DOUBLE(u) __longlong_as_double((long long)(u))
#define ADM_AS_U64(d) ((uint64_t)__double_as_longlong(d))
#define ADM_AS_FLOAT(u) __uint_as_float((unsigned int)(u))
#define ADM_AS_U32(f) ((uint32_t)__float_as_uint(f))
#else
VK_FN double adm_as_double(uint64_t u)
{
    union {
        uint64_t u;
        double d;
    } v;
    v.u = u;
    return v.d;
}
VK_FN uint64_t adm_as_u64(double d)
{
    union {
        uint64_t u;
        double d;
    } v;
    v.d = d;
    return v.u;
}
VK_FN float adm_as_float(uint32_t u)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.u = u;
    return v.f;
}
VK_FN uint32_t adm_as_u32(float f)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.f = f;
    return v.u;
}
#define ADM_AS_DOUBLE(u) adm_as_double(u)
#define ADM_AS_U64(d) adm_as_u64(d)
#define ADM_AS_FLOAT(u) adm_as_float(u)
#define ADM_AS_U32(f) adm_as_u32(f)
#endif

/* db2 filters in Q15 (libvmaf's dwt2_db2_coeffs_lo / _hi). */
#define ADM_LO0 15826
#define ADM_LO1 27411
#define ADM_LO2 7345
#define ADM_LO3 (-4240)
#define ADM_HI0 (-4240)
#define ADM_HI1 (-7345)
#define ADM_HI2 27411
#define ADM_HI3 (-15826)

/* libvmaf's mirrored source index of tap k (0..3) of output i (n inputs):
 * vmaf_adm.c's tap_indices. */
VK_FN int adm_tap(int i, int n, int k)
{
    const int half = (n + 1) / 2;
    if (i == 0 && half - 2 > 0)
        return k == 0 ? 1 : k - 1; /* 1, 0, 1, 2 */
    int v = 2 * i - 1 + k;
    if (i >= half - 2 && v >= n)
        v = 2 * n - v - 1;
    return v;
}

/* |v| modulo 2^32 (INT32_MIN stays INT32_MIN, as libvmaf's abs gives). */
VK_FN int32_t adm_wabs(int32_t v)
{
    return (int32_t)(v < 0 ? 0u - (uint32_t)v : (uint32_t)v);
}

/* glibc's powf(x, 1.0f / 3.0f) (sysdeps/ieee754/flt-32/e_powf.c, the
 * ARM optimized-routines algorithm: log2 by a 16-entry table and a degree-5
 * polynomial, exp2 by a 32-entry table and a degree-3 polynomial, all in
 * double, one rounding to float), for the exponent 1/3f only. Its doubles
 * are IEEE operations without contraction, so NVRTC and the host compute
 * the same float; that float equals glibc 2.36's powf for every one of the
 * 2^32 inputs (checked on the host, both with and without FMA contraction
 * of these steps). */
VK_FN float adm_cbrtf(float x)
{
    const uint64_t invc[16] = {
        0x3ff661ec79f8f3beull, 0x3ff571ed4aaf883dull, 0x3ff49539f0f010b0ull,
        0x3ff3c995b0b80385ull, 0x3ff30d190c8864a5ull, 0x3ff25e227b0b8ea0ull,
        0x3ff1bb4a4a1a343full, 0x3ff12358f08ae5baull, 0x3ff0953f419900a7ull,
        0x3ff0000000000000ull, 0x3fee608cfd9a47acull, 0x3feca4b31f026aa0ull,
        0x3feb2036576afce6ull, 0x3fe9c2d163a1aa2dull, 0x3fe886e6037841edull,
        0x3fe767dcf5534862ull};
    const uint64_t logc[16] = {
        0xbfdefec65b963019ull, 0xbfdb0b6832d4fca4ull, 0xbfd7418b0a1fb77bull,
        0xbfd39de91a6dcf7bull, 0xbfd01d9bf3f2b631ull, 0xbfc97c1d1b3b7af0ull,
        0xbfc2f9e393af3c9full, 0xbfb960cbbf788d5cull, 0xbfaa6f9db6475fceull,
        0x0000000000000000ull, 0x3fb338ca9f24f53dull, 0x3fc476a9543891baull,
        0x3fce840b4ac4e4d2ull, 0x3fd40645f0c6651cull, 0x3fd88e9c2c1b9ff8ull,
        0x3fdce0a44eb17bccull};
    /* 2^(i/32) with i << 47 taken off its bits */
    const uint64_t exp2t[32] = {
        0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full,
        0x3fef9301d0125b51ull, 0x3fef72b83c7d517bull, 0x3fef54873168b9aaull,
        0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull, 0x3fef06fe0a31b715ull,
        0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
        0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull,
        0x3feea47eb03a5585ull, 0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull,
        0x3feea11473eb0187ull, 0x3feea589994cce13ull, 0x3feeace5422aa0dbull,
        0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
        0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull,
        0x3fef3720dcef9069ull, 0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full,
        0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull};
    const double a0 = ADM_AS_DOUBLE(0x3fd27616c9496e0bull), a1 = ADM_AS_DOUBLE(0xbfd71969a075c67aull),
                 a2 = ADM_AS_DOUBLE(0x3fdec70a6ca7baddull), a3 = ADM_AS_DOUBLE(0xbfe7154748bef6c8ull),
                 a4 = ADM_AS_DOUBLE(0x3ff71547652ab82bull);
    const double c0 = ADM_AS_DOUBLE(0x3fac6af84b912394ull), c1 = ADM_AS_DOUBLE(0x3fcebfce50fac4f3ull),
                 c2 = ADM_AS_DOUBLE(0x3fe62e42ff0c52d6ull);
    const double shift = ADM_AS_DOUBLE(0x42e8000000000000ull); /* 0x1.8p52 / 32 */
    const float y = ADM_AS_FLOAT(0x3eaaaaabu);                   /* 1.0f / 3.0f */
    uint32_t ix = ADM_AS_U32(x);
    if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) {
        /* zero, subnormal, infinite, NaN or negative */
        if (2u * ix - 1u >= 2u * 0x7f800000u - 1u)
            return x * x; /* +-0 -> 0, +-inf -> inf, NaN -> NaN */
        if (ix & 0x80000000u)
            return VK_NAN; /* x < 0, y not an integer */
        ix = ADM_AS_U32(x * ADM_AS_FLOAT(0x4b000000u)); /* * 2^23 */
        ix &= 0x7fffffffu;
        ix -= 23u << 23;
    }
    /* log2 x = log2(z / c) + log2 c + k, z in [0x3f330000, 2 x that) */
    const uint32_t tmp = ix - 0x3f330000u;
    const int i = (int)((tmp >> 19) % 16u);
    const uint32_t top = tmp & 0xff800000u;
    const uint32_t iz = ix - top;
    const int k = (int32_t)top >> 23;
    const double z = (double)ADM_AS_FLOAT(iz);
    double r = z * ADM_AS_DOUBLE(invc[i]) - 1;
    const double y0 = ADM_AS_DOUBLE(logc[i]) + (double)k;
    double r2 = r * r;
    double p1 = a0 * r + a1;
    const double p2 = a2 * r + a3;
    const double r4 = r2 * r2;
    double q = a4 * r + y0;
    q = p2 * r2 + q;
    p1 = p1 * r4 + q;
    const double xd = (double)y * p1;
    /* exp2 xd = 2^(n/32) 2^r, |r| <= 1/64 */
    double kd = xd + shift;
    const uint64_t ki = ADM_AS_U64(kd);
    kd -= shift;
    r = xd - kd;
    const uint64_t t = exp2t[ki % 32u] + (ki << 47);
    const double s = ADM_AS_DOUBLE(t);
    const double e = c0 * r + c1;
    r2 = r * r;
    double v = c2 * r + 1;
    v = e * r2 + v;
    v = v * s;
    return (float)v;
}

/* ------------------------------------------------------------------------ */
/* The transform. vert: [picture][low, high][h][win] int32; bands:
 * [picture][LL, v, h, d][h][w] int32. */

VK_KERNEL adm_vertical0(VK_IDX const uint16_t *VK_RESTRICT ref, const uint16_t *VK_RESTRICT dist,
                        int32_t *VK_RESTRICT vert, int win, int hin, int h, int bpc,
                        uint32_t *VK_RESTRICT flags)
{
    const int x = VK_X, i = VK_Y, p = VK_Z;
    if (x >= win || i >= h)
        return;
    const uint16_t *s = p ? dist : ref;
    const int32_t a = s[(int64_t)adm_tap(i, hin, 0) * win + x];
    const int32_t b = s[(int64_t)adm_tap(i, hin, 1) * win + x];
    const int32_t c = s[(int64_t)adm_tap(i, hin, 2) * win + x];
    const int32_t d = s[(int64_t)adm_tap(i, hin, 3) * win + x];
    if ((uint32_t)(a | b | c | d) >> bpc)
        VK_ATOMIC_OR_U32(flags, 1u);
    const int32_t add = 1 << (bpc - 1);
    const int32_t off = 46342 * add; /* the low-pass taps' sum: the DC offset */
    /* in uint32: the 16-bit case wraps in int32 in libvmaf */
    const uint32_t l = (uint32_t)(ADM_LO0 * a) + (uint32_t)(ADM_LO1 * b) +
                       (uint32_t)(ADM_LO2 * c) + (uint32_t)(ADM_LO3 * d) - (uint32_t)off +
                       (uint32_t)add;
    const int32_t hh = ADM_HI0 * a + ADM_HI1 * b + ADM_HI2 * c + ADM_HI3 * d + add;
    const int64_t plane = (int64_t)h * win, at = (int64_t)i * win + x;
    vert[(2 * p) * plane + at] = (int16_t)((int32_t)l >> bpc);
    vert[(2 * p + 1) * plane + at] = (int16_t)(hh >> bpc);
}
VK_THUNK(adm_vertical0, VK_ARG(0, const uint16_t *), VK_ARG(1, const uint16_t *),
         VK_ARG(2, int32_t *), VK_ARG(3, int), VK_ARG(4, int), VK_ARG(5, int), VK_ARG(6, int),
         VK_ARG(7, uint32_t *))

/* in: the level above's bands (its LL planes, pictures 4 planes apart). */
VK_KERNEL adm_vertical(VK_IDX const int32_t *VK_RESTRICT in, int32_t *VK_RESTRICT vert,
                       AdmLevel L)
{
    const int x = VK_X, i = VK_Y, p = VK_Z;
    if (x >= L.win || i >= L.h)
        return;
    const int32_t *s = in + (int64_t)4 * p * L.hin * L.win;
    const int64_t a = s[(int64_t)adm_tap(i, L.hin, 0) * L.win + x];
    const int64_t b = s[(int64_t)adm_tap(i, L.hin, 1) * L.win + x];
    const int64_t c = s[(int64_t)adm_tap(i, L.hin, 2) * L.win + x];
    const int64_t d = s[(int64_t)adm_tap(i, L.hin, 3) * L.win + x];
    const int64_t lo = ADM_LO0 * a + ADM_LO1 * b + ADM_LO2 * c + ADM_LO3 * d + L.vadd;
    const int64_t hi = ADM_HI0 * a + ADM_HI1 * b + ADM_HI2 * c + ADM_HI3 * d + L.vadd;
    const int64_t plane = (int64_t)L.h * L.win, at = (int64_t)i * L.win + x;
    vert[(2 * p) * plane + at] = (int32_t)(lo >> L.vsh);
    vert[(2 * p + 1) * plane + at] = (int32_t)(hi >> L.vsh);
}
VK_THUNK(adm_vertical, VK_ARG(0, const int32_t *), VK_ARG(1, int32_t *), VK_ARG(2, AdmLevel))

VK_KERNEL adm_horizontal0(VK_IDX const int32_t *VK_RESTRICT vert, int32_t *VK_RESTRICT bands,
                          int win, int w, int h)
{
    const int j = VK_X, i = VK_Y, p = VK_Z;
    if (j >= w || i >= h)
        return;
    const int i0 = adm_tap(j, win, 0), i1 = adm_tap(j, win, 1), i2 = adm_tap(j, win, 2),
              i3 = adm_tap(j, win, 3);
    const int64_t vplane = (int64_t)h * win, bplane = (int64_t)h * w, at = (int64_t)i * w + j;
    for (int half = 0; half < 2; half++) { /* the low row, then the high row */
        const int32_t *t = vert + (2 * p + half) * vplane + (int64_t)i * win;
        const int32_t a = t[i0], b = t[i1], c = t[i2], d = t[i3];
        bands[(4 * p + 2 * half) * bplane + at] =
            (ADM_LO0 * a + ADM_LO1 * b + ADM_LO2 * c + ADM_LO3 * d + 32768) >> 16;
        bands[(4 * p + 2 * half + 1) * bplane + at] =
            (ADM_HI0 * a + ADM_HI1 * b + ADM_HI2 * c + ADM_HI3 * d + 32768) >> 16;
    }
}
VK_THUNK(adm_horizontal0, VK_ARG(0, const int32_t *), VK_ARG(1, int32_t *), VK_ARG(2, int),
         VK_ARG(3, int), VK_ARG(4, int))

VK_KERNEL adm_horizontal(VK_IDX const int32_t *VK_RESTRICT vert, int32_t *VK_RESTRICT bands,
                         AdmLevel L)
{
    const int j = VK_X, i = VK_Y, p = VK_Z;
    if (j >= L.w || i >= L.h)
        return;
    const int i0 = adm_tap(j, L.win, 0), i1 = adm_tap(j, L.win, 1), i2 = adm_tap(j, L.win, 2),
              i3 = adm_tap(j, L.win, 3);
    const int64_t vplane = (int64_t)L.h * L.win, bplane = (int64_t)L.h * L.w;
    const int64_t at = (int64_t)i * L.w + j;
    for (int half = 0; half < 2; half++) {
        const int32_t *t = vert + (2 * p + half) * vplane + (int64_t)i * L.win;
        const int64_t a = t[i0], b = t[i1], c = t[i2], d = t[i3];
        const int64_t lo = ADM_LO0 * a + ADM_LO1 * b + ADM_LO2 * c + ADM_LO3 * d + L.hadd;
        const int64_t hi = ADM_HI0 * a + ADM_HI1 * b + ADM_HI2 * c + ADM_HI3 * d + L.hadd;
        bands[(4 * p + 2 * half) * bplane + at] = (int32_t)(lo >> L.hsh);
        bands[(4 * p + 2 * half + 1) * bplane + at] = (int32_t)(hi >> L.hsh);
    }
}
VK_THUNK(adm_horizontal, VK_ARG(0, const int32_t *), VK_ARG(1, int32_t *), VK_ARG(2, AdmLevel))

/* ------------------------------------------------------------------------ */
/* Decoupling and CSF. dec: [r h, r v, r d, a h, a v, a d, magnitude sum][h][w]. */

/* libvmaf's angle test: float conversions, double arithmetic. */
VK_FN int adm_angle_ok(double dp, double om, double tm, double cos_sq)
{
    const double d = dp / 4096.0;
    return d >= 0.0 && d * d >= cos_sq * (om / 4096.0) * (tm / 4096.0);
}

/* The gain limit: min(r egl, t) (o > 0) or max (o < 0), truncated. */
VK_FN int32_t adm_limit(int32_t rs, int32_t o, int32_t t, double egl)
{
    const double g = rs * egl, tt = t;
    const double lim = o > 0 ? (g < tt ? g : tt) : (g > tt ? g : tt);
    return (int32_t)lim;
}

/* Level 0 restored value: k = clip(t / o) in Q15 through libvmaf's signed
 * 2^30 / o (truncated), r = k o in Q15, then the gain limit. */
VK_FN int32_t adm_restore0(int32_t o, int32_t t, int flag, double egl)
{
    const int64_t q = o == 0 ? 0 : (int64_t)1073741824 / o;
    int64_t x = (q * t + 16384) >> 15;
    x = o == 0 ? 32768 : x;
    x = x < 0 ? 0 : (x > 32768 ? 32768 : x);
    const int32_t k = (int32_t)x;
    const int32_t rs = (k * o + 16384) >> 15;
    return (flag && k > 0 && o != 0) ? adm_limit(rs, o, t, egl) : rs;
}

/* Levels 1..3: |o| normalised to 15 bits first (libvmaf's get_best15). */
VK_FN int32_t adm_restore_s(int32_t o, int32_t t, int flag, double egl)
{
    int64_t k = 32768;
    if (o != 0) {
        const uint32_t ab = o < 0 ? 0u - (uint32_t)o : (uint32_t)o;
        int sh = 0;
        uint32_t m = ab;
        if (ab >= 32768u) {
            int bits = 0;
            for (uint32_t v = ab; v; v >>= 1)
                bits++;
            sh = bits - 15; /* 17 - clz */
            m = (ab + (1u << (sh - 1))) >> sh;
        }
        const int64_t q = (int64_t)(1073741824u / m);
        const int64_t x =
            ((q * t) * (o < 0 ? -1 : 1) + (int64_t)(int32_t)(1u << (14 + sh))) >> (15 + sh);
        k = x < 0 ? 0 : (x > 32768 ? 32768 : x);
    }
    const int32_t rs = (int32_t)((k * o + 16384) >> 15);
    return (flag && k > 0 && o != 0) ? adm_limit(rs, o, t, egl) : rs;
}

/* (int32)((c m - 2^31) >> 32): libvmaf's 1/30 and 1/15 magnitudes. */
VK_FN int32_t adm_mag(int64_t c, int32_t m)
{
    return (int32_t)((c * m + (int64_t)(-2147483647 - 1)) >> 32);
}

/* (int32)((rf a + 2^27) >> 28): levels 1..3's CSF. */
VK_FN int32_t adm_csf(uint32_t rf, int32_t a)
{
    return (int32_t)(((int64_t)rf * a + (1 << 27)) >> 28);
}

VK_KERNEL adm_decouple(VK_IDX const int32_t *VK_RESTRICT bands, int32_t *VK_RESTRICT dec,
                       AdmLevel L, double egl, double cos_sq)
{
    const int x = VK_X + L.clo, y = VK_Y + L.rlo;
    if (x >= L.chi || y >= L.rhi)
        return;
    const int64_t plane = (int64_t)L.h * L.w, at = (int64_t)y * L.w + x;
    /* h, v, d: bands 2, 1, 3 of each picture */
    const int32_t o[3] = {bands[2 * plane + at], bands[plane + at], bands[3 * plane + at]};
    const int32_t t[3] = {bands[6 * plane + at], bands[5 * plane + at], bands[7 * plane + at]};
    /* products modulo 2^64 as libvmaf's int64 */
    const int64_t dp = (int64_t)((uint64_t)((int64_t)o[0] * t[0]) + (uint64_t)((int64_t)o[1] * t[1]));
    const int64_t om = (int64_t)((uint64_t)((int64_t)o[0] * o[0]) + (uint64_t)((int64_t)o[1] * o[1]));
    const int64_t tm = (int64_t)((uint64_t)((int64_t)t[0] * t[0]) + (uint64_t)((int64_t)t[1] * t[1]));
    const int flag = adm_angle_ok((float)dp, (float)om, (float)tm, cos_sq);
    uint32_t fs = 0;
    for (int c = 0; c < 3; c++) {
        int32_t r, a;
        if (L.lev == 0) {
            r = adm_restore0(o[c], t[c], flag, egl);
            const int32_t d = (int16_t)(t[c] - r);
            a = c == 2 ? (int16_t)((49417 * d + 65535) >> 17) : (int16_t)((36453 * d + 16384) >> 15);
            fs += (uint32_t)(int16_t)((4369 * (a < 0 ? -a : a) + 2048) >> 12);
        } else {
            r = adm_restore_s(o[c], t[c], flag, egl);
            a = adm_csf(L.rf[c], (int32_t)((uint32_t)t[c] - (uint32_t)r));
            fs += (uint32_t)adm_mag(143165577, adm_wabs(a));
        }
        dec[c * plane + at] = r;
        dec[(3 + c) * plane + at] = a;
    }
    dec[6 * plane + at] = (int32_t)fs;
}
VK_THUNK(adm_decouple, VK_ARG(0, const int32_t *), VK_ARG(1, int32_t *), VK_ARG(2, AdmLevel),
         VK_ARG(3, double), VK_ARG(4, double))

/* ------------------------------------------------------------------------ */
/* Masking and the sums. rows: [numerator h, v, d][h] then [denominator
 * h, v, d][h], uint64 each. */

/* ((int64)q x + add) >> sh with q and x taken unsigned, wrapping past 2^63
 * as libvmaf's builds do (vmaf_adm.c's cube_term). */
VK_FN uint64_t adm_cube(int32_t q, int32_t x, int64_t add, int sh)
{
    return (uint64_t)((int64_t)((uint64_t)(uint32_t)q * (uint32_t)x + (uint64_t)add) >> sh);
}

/* Columns a thread of adm_cm sums (about; every n-th of the row) before it
 * adds to its row's slots: a row's threads would otherwise all add to the
 * same six addresses, one atomic per sample each (integer sums: the same in
 * any grouping). */
#define ADM_CM_STRIP 32

VK_KERNEL adm_cm(VK_IDX const int32_t *VK_RESTRICT bands, const int32_t *VK_RESTRICT dec,
                 AdmLevel L, uint64_t *VK_RESTRICT rows)
{
    /* the row's threads take columns in turn (thread t: left + t, + n, ...)
     * so that a warp reads adjacent columns at each step */
    const int n = (L.right - L.left + ADM_CM_STRIP - 1) / ADM_CM_STRIP, y = VK_Y + L.top;
    if (VK_X >= n || y >= L.bottom)
        return;
    const int w = L.w, h = L.h;
    const int64_t plane = (int64_t)h * w;
    uint64_t sums[6] = {0, 0, 0, 0, 0, 0};
    for (int x = L.left + VK_X; x < L.right; x += n) {
        const int64_t at = (int64_t)y * w + x;
        /* the neighbourhood: mirrored at the top and left, repeated at the
         * bottom and right */
        const int ys[3] = {y == 0 ? 1 : y - 1, y, y == h - 1 ? h - 1 : y + 1};
        const int xs[3] = {x == 0 ? 1 : x - 1, x, x == w - 1 ? w - 1 : x + 1};
        const int32_t *fsum = dec + 6 * plane;
        uint32_t thr = 0;
        for (int u = 0; u < 3; u++)
            for (int v = 0; v < 3; v++)
                thr += (uint32_t)fsum[(int64_t)ys[u] * w + xs[v]];
        thr -= (uint32_t)fsum[at];
        for (int c = 0; c < 3; c++) {
            const int32_t a = dec[(3 + c) * plane + at];
            thr += L.lev == 0 ? (uint32_t)(int16_t)((8738 * (a < 0 ? -a : a) + 2048) >> 12)
                              : (uint32_t)adm_mag(286331153, adm_wabs(a));
        }
        /* h, v, d: reference bands 2, 1, 3 */
        const int band[3] = {2, 1, 3};
        for (int c = 0; c < 3; c++) {
            const int32_t r = dec[c * plane + at];
            const int32_t o = bands[band[c] * plane + at];
            uint64_t num, den;
            if (L.lev == 0) {
                const uint32_t m =
                    (uint32_t)adm_wabs((int32_t)((uint32_t)r * (c == 2 ? 49417u : 36453u)));
                int32_t xv = (int32_t)(m - (thr << (c == 2 ? 12 : 10)));
                xv = xv < 0 ? 0 : xv;
                const int32_t q = (int32_t)(((uint64_t)xv * (uint64_t)xv +
                                             (c == 2 ? (1ull << 29) : (1ull << 28))) >>
                                            (c == 2 ? 30 : 29));
                num = c == 2 ? adm_cube(q, xv, L.n_add_d, L.n_sh_d)
                             : adm_cube(q, xv, L.n_add_hv, L.n_sh_hv);
                const uint64_t oa = (uint16_t)adm_wabs(o);
                den = oa * oa * oa;
            } else {
                const uint32_t m = (uint32_t)adm_wabs(adm_csf(L.rf[c], r));
                int32_t xv = (int32_t)(m - thr);
                xv = xv < 0 ? 0 : xv;
                const int32_t q = (int32_t)(((uint64_t)xv * (uint64_t)xv + (1ull << 29)) >> 30);
                num = adm_cube(q, xv, L.n_add_cub, L.n_sh_cub);
                const uint64_t oa = (uint32_t)adm_wabs(o);
                den = ((((oa * oa) + L.sq_add) >> L.sq_sh) * oa + L.d_add_cub) >> L.d_sh_cub;
            }
            sums[c] += num;
            sums[3 + c] += den;
        }
    }
    for (int c = 0; c < 6; c++)
        VK_ATOMIC_ADD_U64(rows + (int64_t)c * h + y, sums[c]);
}
VK_THUNK(adm_cm, VK_ARG(0, const int32_t *), VK_ARG(1, const int32_t *), VK_ARG(2, AdmLevel),
         VK_ARG(3, uint64_t *))

/* ------------------------------------------------------------------------ */

/* One thread per row of a level (z: the level): the row's six sums, each
 * rounded and shifted as libvmaf accumulates a row, added into the level's
 * totals[6 z .. 6 z + 5] (wrapping uint64 adds, as libvmaf's: the same in
 * any order), so that the finish reads 24 values, not every row's. rows:
 * the four levels' row sums, one after the other (6 h each). */
VK_KERNEL adm_rows(VK_IDX const uint64_t *VK_RESTRICT rows, AdmLevels levels,
                   uint64_t *VK_RESTRICT totals)
{
    const int s = VK_Z;
    if (s >= 4 || VK_Y != 0)
        return;
    const AdmLevel *L = &levels.l[s];
    const int y = L->top + VK_X;
    if (y >= L->bottom)
        return;
    const uint64_t *rs = rows;
    for (int t = 0; t < s; t++)
        rs += (int64_t)6 * levels.l[t].h;
    for (int c = 0; c < 3; c++) {
        VK_ATOMIC_ADD_U64(totals + 6 * s + c,
                          (uint64_t)((int64_t)(rs[(int64_t)c * L->h + y] +
                                               (uint64_t)L->n_add_acc) >>
                                     L->n_sh_acc));
        VK_ATOMIC_ADD_U64(totals + 6 * s + 3 + c,
                          (rs[(int64_t)(3 + c) * L->h + y] + L->d_add_acc) >> L->d_sh_acc);
    }
}
VK_THUNK(adm_rows, VK_ARG(0, const uint64_t *), VK_ARG(1, AdmLevels), VK_ARG(2, uint64_t *))

VK_KERNEL adm_finish(VK_IDX const uint64_t *VK_RESTRICT totals,
                     const uint32_t *VK_RESTRICT flags, AdmLevels levels, float *VK_RESTRICT out)
{
    if (VK_X != 0 || VK_Y != 0 || VK_Z != 0)
        return;
    float lnum[4], lden[4];
    for (int s = 0; s < 4; s++) {
        const AdmLevel *L = &levels.l[s];
        const uint64_t *num_acc = totals + 6 * s, *den_acc = totals + 6 * s + 3;
        float nsc[3], dsc[3];
        if (s == 0) {
            /* libvmaf's AVX2 code: h's sum to float before the division,
             * v's and d's not (vmaf_adm.c) */
            nsc[0] = adm_cbrtf((float)((float)(int64_t)num_acc[0] / L->p_hv)) + L->noise;
            nsc[1] = adm_cbrtf((float)((int64_t)num_acc[1] / L->p_hv)) + L->noise;
            nsc[2] = adm_cbrtf((float)((int64_t)num_acc[2] / L->p_d)) + L->noise;
        } else {
            for (int c = 0; c < 3; c++)
                nsc[c] = adm_cbrtf((float)(int64_t)num_acc[c] / L->fs) + L->noise;
        }
        for (int c = 0; c < 3; c++) {
            const double csf = (double)(den_acc[c] / L->shc) * L->pow3[c];
            dsc[c] = adm_cbrtf((float)csf) + L->noise;
        }
        lnum[s] = nsc[0] + nsc[1] + nsc[2];
        lden[s] = dsc[0] + dsc[1] + dsc[2];
    }
    double num = 0, den = 0;
    for (int s = 0; s < 4; s++)
        num += lnum[s], den += lden[s];
    const int W = levels.l[0].win, H = levels.l[0].hin;
    const double limit = 1e-10 * (W * H) / (1920.0 * 1080.0);
    num = num < limit ? 0 : num;
    den = den < limit ? 0 : den;
    const double adm2 = den == 0.0 ? 1.0 : num / den;
    const int bad = *flags != 0;
    out[0] = bad ? VK_NAN : (float)adm2;
    for (int s = 0; s < 4; s++)
        out[1 + s] = bad ? VK_NAN : (float)((double)lnum[s] / lden[s]);
}
VK_THUNK(adm_finish, VK_ARG(0, const uint64_t *), VK_ARG(1, const uint32_t *),
         VK_ARG(2, AdmLevels), VK_ARG(3, float *))
