/* IEEE binary32 <-> binary16 conversion with integer arithmetic only.
 *
 * No _Float16, no F16C and no float arithmetic: the bits are the same on
 * every platform and under every floating-point environment, and equal to
 * numpy's astype() (checked against numpy for all 2^32 fp32 inputs).
 *
 * Speed comes from the compiler, not from intrinsics: each element is
 * converted by branch-free code whose selects the vectoriser can turn into
 * masks, and whose shifts are all by constants (SSE2 has no per-lane shift).
 * The same loop is compiled twice, for the baseline target and for AVX2, and
 * the AVX2 copy is picked at run time. Both copies come from one source, so
 * they cannot disagree; the tests check it anyway.
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
#endif

/* Compares are done on int32_t so they map to SSE2's signed pcmpgtd; every
 * value compared is below 2^31. */

/* Rounds away the low `k` bits of t (k = 8, 4, 2, 1) but keeps whether any
 * of them was set in bit 0 ("shift right and jam"), so a later rounding step
 * still sees an inexact value as inexact. */
#define SHIFT_JAM(t, k) (((t) >> (k)) | ((((t) & ((1u << (k)) - 1u)) + ((1u << (k)) - 1u)) >> (k)))

static VDNN_ALWAYS_INLINE uint16_t half_from_bits(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;

    /* Normal results: rebias the exponent (127 -> 15) and round to nearest
     * even at bit 13. A carry out of the mantissa bumps the exponent, which is
     * what rounding up to the next binade (or to Inf) needs. Results past the
     * largest finite value, and Inf itself, are clamped to Inf below. */
    int32_t normal = (int32_t)((a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13);
    if (normal > 0x7c00)
        normal = 0x7c00;

    /* Subnormal results (|x| < 2^-14): the fp16 value is m * 2^-24 where m is
     * the fp32 significand shifted right by 14 + sh. sh is applied in four
     * constant-shift steps; 14 + 11 already flushes every input to zero. */
    int32_t sh = 112 - (int32_t)(a >> 23);
    if (sh > 11)
        sh = 11;
    uint32_t t = (a & 0x7fffffu) | 0x800000u;
    t = (sh & 8) ? SHIFT_JAM(t, 8) : t;
    t = (sh & 4) ? SHIFT_JAM(t, 4) : t;
    t = (sh & 2) ? SHIFT_JAM(t, 2) : t;
    t = (sh & 1) ? SHIFT_JAM(t, 1) : t;
    int32_t subnormal = (int32_t)((t + 0x1fffu + ((t >> 14) & 1u)) >> 14);

    /* NaN: numpy keeps the sign and the top 10 payload bits as they are (a
     * signalling NaN stays signalling) and only sets bit 0 when those bits
     * are all zero, so the result is not Inf. */
    int32_t payload = (int32_t)((a >> 13) & 0x3ffu);
    int32_t nan = 0x7c00 | payload | (payload == 0);

    int32_t h = (int32_t)a < 0x38800000 ? subnormal : normal;
    h = (int32_t)a > 0x7f800000 ? nan : h;
    return (uint16_t)(sign | (uint32_t)h);
}

static VDNN_ALWAYS_INLINE uint32_t bits_from_half(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16;
    int32_t a = (int32_t)(h & 0x7fffu);

    /* Normal, Inf and NaN: move the fields into place and rebias the exponent
     * (15 -> 127); an all-ones exponent must stay all ones, payload kept. */
    uint32_t wide = ((uint32_t)a << 13) + (a >= 0x7c00 ? 0x70000000u : 0x38000000u);

    /* Subnormal: shift the leading one up to bit 10, where a normal's hidden
     * bit sits, and take one off the exponent per place shifted. */
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
__attribute__((target("avx2"))) static void fp32_to_fp16_avx2(const float *src, uint16_t *dst,
                                                              size_t n)
{
    fp32_to_fp16_loop(src, dst, n);
}

__attribute__((target("avx2"))) static void fp16_to_fp32_avx2(const uint16_t *src, float *dst,
                                                              size_t n)
{
    fp16_to_fp32_loop(src, dst, n);
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
