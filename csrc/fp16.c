/* IEEE binary32 <-> binary16 conversion with integer arithmetic only.
 *
 * No _Float16, no F16C and no float arithmetic: the bits are the same on
 * every platform and under every floating-point environment, and equal to
 * numpy's astype() (checked against numpy for all 2^32 fp32 inputs).
 *
 * Each direction is written twice with the same formulas: in branch-free
 * portable C, which compilers can vectorise, and with AVX2 intrinsics, chosen
 * at run time on x86 CPUs that have AVX2 (the library is built for the x86-64
 * baseline, where the compiler may not use AVX2 by itself). The AVX2 kernels
 * hand their last few elements to the portable ones. The tests check that
 * both give the same bits.
 */
#include <string.h>

#include <vmafdnn/vmafdnn.h>

#include "fp16.h"

#if defined(__GNUC__)
#define VDNN_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define VDNN_ALWAYS_INLINE inline
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VDNN_FP16_AVX2 1
#include <immintrin.h>
#endif

/*
 * fp32 -> fp16, for every finite input, in one formula. With E the fp16
 * exponent field minus one (fp32 exponent - 113) and M the fp32 significand
 * with its hidden bit (2^23 <= M < 2^24):
 *
 *     h = max(E, 0) * 2^10 + round_even(M / 2^r),   r = 13 + max(-E, 0)
 *     round_even(M / 2^r) = (M + 2^(r-1) - 1 + odd) >> r
 *
 * where odd is the lowest bit kept (bit r of M), which breaks ties to even.
 * For a normal result the rounded significand lies in [2^10, 2^11]: its hidden
 * bit adds the missing one to the exponent field, and a carry out of rounding
 * moves to the next binade, or past 65504 to Inf (0x7c00, the clamp). For a
 * subnormal result (E < 0) the significand is shifted further right; rounding
 * the largest subnormal up gives 0x400, the smallest normal, with no special
 * case.
 *
 * NaN follows numpy: sign and the top 10 payload bits are kept as they are
 * (a signalling NaN stays signalling); bit 0 is set only when those payload
 * bits are all zero, so that the result is not Inf.
 *
 * Compares are on int32_t, which SIMD units compare natively (SSE2 and AVX2
 * have no unsigned compare); every value compared is below 2^31.
 */
static VDNN_ALWAYS_INLINE uint16_t half_from_bits(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;

    int32_t e = (int32_t)(a >> 23) - 113;
    int32_t base = e > 0 ? e << 10 : 0;
    /* r = 25 already rounds every significand to zero; the clamp keeps the
     * shifts below 32. */
    uint32_t r = 13u + (uint32_t)(e < -12 ? 12 : e < 0 ? -e : 0);
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t odd = (m >> r) & 1u;
    int32_t h = base + (int32_t)((m + (1u << (r - 1)) - 1u + odd) >> r);
    h = h > 0x7c00 ? 0x7c00 : h;

    int32_t payload = (int32_t)((a >> 13) & 0x3ffu);
    int32_t nan = 0x7c00 | payload | (payload == 0);
    h = (int32_t)a > 0x7f800000 ? nan : h;
    return (uint16_t)(sign | (uint32_t)h);
}

/*
 * fp16 -> fp32 is exact. Normal values, Inf and NaN only move their fields
 * into place and rebias the exponent (an all-ones exponent stays all ones,
 * the payload is kept). A subnormal is normalised: its leading one is shifted
 * up to bit 10, where a normal's hidden bit sits, and the exponent loses one
 * per place shifted (found by a binary search of 8, 4, 2, 1 places).
 */
static VDNN_ALWAYS_INLINE uint32_t bits_from_half(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16;
    int32_t a = (int32_t)(h & 0x7fffu);

    uint32_t wide = ((uint32_t)a << 13) + (a >= 0x7c00 ? 0x70000000u : 0x38000000u);

    int32_t t = a, k = 0;
    k += t < 0x008 ? 8 : 0;
    t = t < 0x008 ? t << 8 : t;
    k += t < 0x080 ? 4 : 0;
    t = t < 0x080 ? t << 4 : t;
    k += t < 0x200 ? 2 : 0;
    t = t < 0x200 ? t << 2 : t;
    k += t < 0x400 ? 1 : 0;
    t = t < 0x400 ? t << 1 : t;
    uint32_t subnormal = ((uint32_t)t << 13) + 0x38000000u - ((uint32_t)k << 23);

    uint32_t f = a < 0x400 ? subnormal : wide;
    f = a == 0 ? 0u : f;
    return sign | f;
}

static VDNN_ALWAYS_INLINE void fp32_to_fp16_loop(const float *restrict src,
                                                 uint16_t *restrict dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &src[i], sizeof x);
        dst[i] = half_from_bits(x);
    }
}

static VDNN_ALWAYS_INLINE void fp16_to_fp32_loop(const uint16_t *restrict src,
                                                 float *restrict dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t x = bits_from_half(src[i]);
        memcpy(&dst[i], &x, sizeof x);
    }
}

void vdnn_fp32_to_fp16_portable(const float *src, uint16_t *dst, size_t n)
{
    fp32_to_fp16_loop(src, dst, n);
}

void vdnn_fp16_to_fp32_portable(const uint16_t *src, float *dst, size_t n)
{
    fp16_to_fp32_loop(src, dst, n);
}

#ifdef VDNN_FP16_AVX2
#define VDNN_AVX2 __attribute__((target("avx2")))
#define I32(v) _mm256_set1_epi32(v)

/* half_from_bits() on 8 lanes; the fp16 bits are returned in 32-bit lanes.
 * vpsrlvd gives 0 for counts of 32 or more (2^(r-1) - 1 is made by shifting
 * 2^31 - 1 right by 32 - r), so r needs no clamp here. */
VDNN_AVX2 static VDNN_ALWAYS_INLINE __m256i avx2_half_from_bits(__m256i x)
{
    __m256i a = _mm256_and_si256(x, I32(0x7fffffff));
    __m256i sign = _mm256_srli_epi32(_mm256_xor_si256(x, a), 16);

    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(a, 23), I32(113));
    __m256i base = _mm256_slli_epi32(_mm256_max_epi32(e, I32(0)), 10);
    __m256i r = _mm256_sub_epi32(I32(13), _mm256_min_epi32(e, I32(0)));
    __m256i m = _mm256_or_si256(_mm256_and_si256(a, I32(0x7fffff)), I32(0x800000));
    __m256i odd = _mm256_and_si256(_mm256_srlv_epi32(m, r), I32(1));
    __m256i half_less_one = _mm256_srlv_epi32(I32(0x7fffffff), _mm256_sub_epi32(I32(32), r));
    __m256i q = _mm256_srlv_epi32(_mm256_add_epi32(m, _mm256_add_epi32(half_less_one, odd)), r);
    __m256i h = _mm256_min_epi32(_mm256_add_epi32(base, q), I32(0x7c00));

    /* (a >> 13) & 0x7fff is 0x7c00 | payload for a NaN. */
    __m256i nan = _mm256_max_epi32(_mm256_and_si256(_mm256_srli_epi32(a, 13), I32(0x7fff)),
                                   I32(0x7c01));
    h = _mm256_blendv_epi8(h, nan, _mm256_cmpgt_epi32(a, I32(0x7f800000)));
    return _mm256_or_si256(h, sign);
}

/* bits_from_half() on 8 lanes holding fp16 bits in 32-bit lanes. */
VDNN_AVX2 static VDNN_ALWAYS_INLINE __m256i avx2_bits_from_half(__m256i hv)
{
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(hv, I32(0x8000)), 16);
    __m256i a = _mm256_and_si256(hv, I32(0x7fff));

    __m256i special = _mm256_cmpgt_epi32(a, I32(0x7bff));
    __m256i bias = _mm256_add_epi32(I32(0x38000000), _mm256_and_si256(special, I32(0x38000000)));
    __m256i wide = _mm256_add_epi32(_mm256_slli_epi32(a, 13), bias);

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
    __m256i subnormal = _mm256_sub_epi32(_mm256_add_epi32(_mm256_slli_epi32(t, 13), I32(0x38000000)),
                                         _mm256_slli_epi32(k, 23));

    __m256i f = _mm256_blendv_epi8(wide, subnormal, _mm256_cmpgt_epi32(I32(0x400), a));
    f = _mm256_andnot_si256(_mm256_cmpeq_epi32(a, _mm256_setzero_si256()), f);
    return _mm256_or_si256(f, sign);
}

VDNN_AVX2 static void fp32_to_fp16_avx2(const float *restrict src, uint16_t *restrict dst,
                                        size_t n)
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

VDNN_AVX2 static void fp16_to_fp32_avx2(const uint16_t *restrict src, float *restrict dst,
                                        size_t n)
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
