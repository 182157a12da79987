/* IEEE binary32 <-> binary16 conversion with integer arithmetic only.
 *
 * No _Float16, no F16C and no float arithmetic: the bits are the same on
 * every platform and under every floating-point environment, and equal to
 * numpy's astype() (checked against numpy for all 2^32 fp32 inputs).
 *
 * Each direction is written twice with the same formulas:
 *   - portable C. Nearly all values convert with constant shifts and
 *     branch-free selects, which compilers vectorise even for the SSE2
 *     baseline; only values that are (or become) fp16 subnormals need a shift
 *     that differs per element, so a block of input is converted with the
 *     common formula and the rare subnormals in it are then redone one by one.
 *   - AVX2 intrinsics, chosen at run time on x86 CPUs that have AVX2 (the
 *     library is built for the x86-64 baseline, so the compiler cannot use
 *     AVX2 by itself). AVX2 has per-lane shifts, so the work is split per
 *     vector of 8 instead: the common formula always runs, the subnormal and
 *     NaN ones only when the vector holds such a lane, and a blend keeps the
 *     right result per lane. The portable code converts the last few
 *     elements.
 * The tests check that both give the same bits.
 *
 * Compares are on int32_t, which SIMD units compare natively (SSE2 and AVX2
 * have no unsigned compare); every value compared is below 2^31.
 */
#include <string.h>

#include <vmafdnn/vmafdnn.h>

#include "fp16.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VDNN_FP16_AVX2 1
#include <immintrin.h>
#endif

/*
 * fp32 -> fp16. Let a be |x|'s bits, E its exponent field and M its
 * significand with the hidden bit (2^23 <= M < 2^24).
 *
 * Normal results (|x| >= 2^-14): rebias the exponent (127 -> 15) and round
 * to nearest even at bit 13:
 *     h = (a - (112 << 23) + 2^12 - 1 + odd) >> 13,   odd = bit 13 of a
 * A carry out of the mantissa moves to the next binade, and from 65520 on
 * (the midpoint between 65504 and 2^16) to 0x7c00 and beyond, clamped to
 * 0x7c00 = Inf; Inf itself lands there too.
 *
 * Subnormal results (|x| < 2^-14): h = round_even(M / 2^r), r = 126 - E, with
 * round_even(v / 2^r) = (v + 2^(r-1) - 1 + odd) >> r, odd = bit r of v.
 * Rounding the largest subnormal up gives 0x400, the smallest normal, with no
 * special case. |x| <= 2^-25 gives 0 (below it r >= 25, at it a tie goes to
 * the even 0), so only 2^-25 < |x| < 2^-14 needs the per-element shift.
 *
 * NaN follows numpy: sign and the top 10 payload bits are kept as they are
 * (a signalling NaN stays signalling); bit 0 is set only when those payload
 * bits are all zero, so that the result is not Inf.
 */
enum {
    F32_TINY = 0x33000000,      /* 2^-25: at or below, the result is +-0 */
    F32_MIN_NORMAL = 0x38800000, /* 2^-14: from here on, normal results */
    F32_INF = 0x7f800000,
    F16_INF = 0x7c00,
};

/* Exact for every input except 2^-25 < |x| < 2^-14, which it gives as +-0. */
static inline uint16_t half_from_bits_common(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;

    int32_t h = (int32_t)((a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13);
    h = h > F16_INF ? F16_INF : h;
    h = (int32_t)a < F32_MIN_NORMAL ? 0 : h;

    int32_t payload = (int32_t)((a >> 13) & 0x3ffu);
    int32_t nan = F16_INF | payload | (payload == 0);
    h = (int32_t)a > F32_INF ? nan : h;
    return (uint16_t)(sign | (uint32_t)h);
}

static inline int gives_subnormal(uint32_t x)
{
    return (x & 0x7fffffffu) - (F32_TINY + 1u) < (uint32_t)(F32_MIN_NORMAL - (F32_TINY + 1));
}

/* For inputs where gives_subnormal(); then 14 <= r <= 24. */
static inline uint16_t half_from_bits_subnormal(uint32_t x)
{
    uint32_t r = 126u - ((x >> 23) & 0xffu);
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    uint32_t h = (m + (1u << (r - 1)) - 1u + ((m >> r) & 1u)) >> r;
    return (uint16_t)(((x >> 16) & 0x8000u) | h);
}

/*
 * fp16 -> fp32 is exact. Normal values, Inf and NaN only move their fields
 * into place and rebias the exponent (an all-ones exponent stays all ones,
 * the payload is kept). A subnormal is normalised: its leading one is shifted
 * up to bit 10, where a normal's hidden bit sits, and the exponent loses one
 * per place shifted.
 */

/* Exact for every input except the subnormals, which it gives as +-0. */
static inline uint32_t bits_from_half_common(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16;
    int32_t a = (int32_t)(h & 0x7fffu);
    uint32_t f = ((uint32_t)a << 13) + (a >= F16_INF ? 0x70000000u : 0x38000000u);
    return sign | (a < 0x400 ? 0u : f);
}

static inline int is_subnormal_half(uint32_t h)
{
    return (h & 0x7fffu) - 1u < 0x3ffu;
}

/* For inputs where is_subnormal_half(). The leading one is found by a binary
 * search of 8, 4, 2 and 1 places. */
static inline uint32_t bits_from_half_subnormal(uint32_t h)
{
    int32_t t = (int32_t)(h & 0x3ffu), k = 0;
    k += t < 0x008 ? 8 : 0;
    t = t < 0x008 ? t << 8 : t;
    k += t < 0x080 ? 4 : 0;
    t = t < 0x080 ? t << 4 : t;
    k += t < 0x200 ? 2 : 0;
    t = t < 0x200 ? t << 2 : t;
    k += t < 0x400 ? 1 : 0;
    t = t < 0x400 ? t << 1 : t;
    return ((h & 0x8000u) << 16) | (((uint32_t)t << 13) + 0x38000000u - ((uint32_t)k << 23));
}

/* The portable code works in blocks this long: small enough that a block
 * with a subnormal is cheap to go over again, long enough to vectorise. */
enum { BLOCK = 64 };

static inline void fp32_to_fp16_block(const float *restrict in, uint16_t *restrict out,
                                      size_t len)
{
    int any_subnormal = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t x;
        memcpy(&x, &in[i], sizeof x);
        out[i] = half_from_bits_common(x);
        any_subnormal |= gives_subnormal(x);
    }
    if (!any_subnormal)
        return;
    for (size_t i = 0; i < len; i++) {
        uint32_t x;
        memcpy(&x, &in[i], sizeof x);
        if (gives_subnormal(x))
            out[i] = half_from_bits_subnormal(x);
    }
}

static inline void fp16_to_fp32_block(const uint16_t *restrict in, float *restrict out,
                                      size_t len)
{
    int any_subnormal = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t f = bits_from_half_common(in[i]);
        memcpy(&out[i], &f, sizeof f);
        any_subnormal |= is_subnormal_half(in[i]);
    }
    if (!any_subnormal)
        return;
    for (size_t i = 0; i < len; i++) {
        uint32_t f;
        memcpy(&f, &out[i], sizeof f);
        f = is_subnormal_half(in[i]) ? bits_from_half_subnormal(in[i]) : f;
        memcpy(&out[i], &f, sizeof f);
    }
}

void vdnn_fp32_to_fp16_portable(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i += BLOCK)
        fp32_to_fp16_block(src + i, dst + i, n - i < BLOCK ? n - i : BLOCK);
}

void vdnn_fp16_to_fp32_portable(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i += BLOCK)
        fp16_to_fp32_block(src + i, dst + i, n - i < BLOCK ? n - i : BLOCK);
}

#ifdef VDNN_FP16_AVX2
#define VDNN_AVX2 __attribute__((target("avx2")))
#define I32(v) _mm256_set1_epi32(v)

/* The fp32 -> fp16 formulas on 8 lanes; the fp16 bits are returned in 32-bit
 * lanes. Like the portable code, the common formula runs on every vector and
 * the subnormal and NaN formulas only on vectors that hold such a lane.
 * vpsrlvd gives 0 for counts of 32 or more (2^(r-1) - 1 is made by shifting
 * 2^31 - 1 right by 32 - r), so r needs no clamp: tiny inputs come out as 0
 * from the subnormal formula. */
VDNN_AVX2 static inline __m256i avx2_half_from_bits(__m256i x)
{
    __m256i a = _mm256_and_si256(x, I32(0x7fffffff));
    __m256i sign = _mm256_srli_epi32(_mm256_xor_si256(x, a), 16);
    __m256i a13 = _mm256_srli_epi32(a, 13);
    __m256i below_normal = _mm256_cmpgt_epi32(I32(F32_MIN_NORMAL), a);
    __m256i above_tiny = _mm256_cmpgt_epi32(a, I32(F32_TINY));
    __m256i is_nan = _mm256_cmpgt_epi32(a, I32(F32_INF));

    __m256i h = _mm256_add_epi32(_mm256_sub_epi32(a, I32(0x38000000 - 0x0fff)),
                                 _mm256_and_si256(a13, I32(1)));
    h = _mm256_min_epi32(_mm256_srli_epi32(h, 13), I32(F16_INF));
    h = _mm256_andnot_si256(below_normal, h);

    if (!_mm256_testz_si256(below_normal, above_tiny)) {
        __m256i r = _mm256_sub_epi32(I32(126), _mm256_srli_epi32(a, 23));
        __m256i m = _mm256_or_si256(_mm256_and_si256(a, I32(0x7fffff)), I32(0x800000));
        __m256i odd = _mm256_and_si256(_mm256_srlv_epi32(m, r), I32(1));
        __m256i half_less_one = _mm256_srlv_epi32(I32(0x7fffffff), _mm256_sub_epi32(I32(32), r));
        __m256i subnormal =
            _mm256_srlv_epi32(_mm256_add_epi32(m, _mm256_add_epi32(half_less_one, odd)), r);
        h = _mm256_blendv_epi8(h, subnormal, below_normal);
    }
    if (!_mm256_testz_si256(is_nan, is_nan)) {
        /* a13 & 0x7fff is 0x7c00 | payload for a NaN. */
        __m256i nan = _mm256_max_epi32(_mm256_and_si256(a13, I32(0x7fff)), I32(F16_INF | 1));
        h = _mm256_blendv_epi8(h, nan, is_nan);
    }
    return _mm256_or_si256(h, sign);
}

/* The fp16 -> fp32 formulas on 8 lanes holding fp16 bits in 32-bit lanes;
 * the subnormal one only on vectors that hold a subnormal. Its leading one is
 * found by a binary search of 8, 4, 2 and 1 places. */
VDNN_AVX2 static inline __m256i avx2_bits_from_half(__m256i hv)
{
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(hv, I32(0x8000)), 16);
    __m256i a = _mm256_and_si256(hv, I32(0x7fff));
    __m256i below_normal = _mm256_cmpgt_epi32(I32(0x400), a);

    __m256i special = _mm256_cmpgt_epi32(a, I32(F16_INF - 1));
    __m256i bias = _mm256_add_epi32(I32(0x38000000), _mm256_and_si256(special, I32(0x38000000)));
    __m256i f = _mm256_add_epi32(_mm256_slli_epi32(a, 13), bias);
    f = _mm256_andnot_si256(below_normal, f);

    /* Any lane below the normals that is not zero? */
    if (!_mm256_testz_si256(below_normal, a)) {
        __m256i t = a, k = _mm256_setzero_si256(), step;
        step = _mm256_and_si256(_mm256_cmpgt_epi32(I32(0x008), t), I32(8));
        t = _mm256_sllv_epi32(t, step);
        k = _mm256_add_epi32(k, step);
        step = _mm256_and_si256(_mm256_cmpgt_epi32(I32(0x080), t), I32(4));
        t = _mm256_sllv_epi32(t, step);
        k = _mm256_add_epi32(k, step);
        step = _mm256_and_si256(_mm256_cmpgt_epi32(I32(0x200), t), I32(2));
        t = _mm256_sllv_epi32(t, step);
        k = _mm256_add_epi32(k, step);
        step = _mm256_and_si256(_mm256_cmpgt_epi32(I32(0x400), t), I32(1));
        t = _mm256_sllv_epi32(t, step);
        k = _mm256_add_epi32(k, step);
        __m256i subnormal = _mm256_sub_epi32(
            _mm256_add_epi32(_mm256_slli_epi32(t, 13), I32(0x38000000)), _mm256_slli_epi32(k, 23));
        __m256i is_subnormal = _mm256_andnot_si256(_mm256_cmpeq_epi32(a, _mm256_setzero_si256()),
                                                   below_normal);
        f = _mm256_blendv_epi8(f, subnormal, is_subnormal);
    }
    return _mm256_or_si256(f, sign);
}

VDNN_AVX2 static void fp32_to_fp16_avx2(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i lo = avx2_half_from_bits(_mm256_castps_si256(_mm256_loadu_ps(src + i)));
        __m256i hi = avx2_half_from_bits(_mm256_castps_si256(_mm256_loadu_ps(src + i + 8)));
        /* packus works within 128-bit halves; the permute restores order.
         * No lane saturates: every value is at most 0xffff. */
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
        _mm256_storeu_si256((__m256i *)(dst + i), packed);
    }
    vdnn_fp32_to_fp16_portable(src + i, dst + i, n - i);
}

VDNN_AVX2 static void fp16_to_fp32_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i hv = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(avx2_bits_from_half(hv)));
    }
    vdnn_fp16_to_fp32_portable(src + i, dst + i, n - i);
}

static int cpu_has_avx2(void)
{
    /* Cheap after the first call; needed in case we run before libgcc's
     * constructor (e.g. from another library's constructor). */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}
#endif

const char *vdnn_fp16_kernel(void)
{
#ifdef VDNN_FP16_AVX2
    if (cpu_has_avx2())
        return "avx2";
#endif
    return "portable";
}

VMAF_DNN_API void vmaf_dnn_fp32_to_fp16(const float *src, uint16_t *dst, size_t n)
{
#ifdef VDNN_FP16_AVX2
    if (cpu_has_avx2()) {
        fp32_to_fp16_avx2(src, dst, n);
        return;
    }
#endif
    vdnn_fp32_to_fp16_portable(src, dst, n);
}

VMAF_DNN_API void vmaf_dnn_fp16_to_fp32(const uint16_t *src, float *dst, size_t n)
{
#ifdef VDNN_FP16_AVX2
    if (cpu_has_avx2()) {
        fp16_to_fp32_avx2(src, dst, n);
        return;
    }
#endif
    vdnn_fp16_to_fp32_portable(src, dst, n);
}
