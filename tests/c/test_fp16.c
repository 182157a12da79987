/* Tests of the integer-only fp16 converters (csrc/fp16.c).
 *
 * The expected bits of the edge cases were taken from numpy 2.4
 * (np.float32(x).astype(np.float16) and back); comparing with numpy for all
 * 2^32 inputs is left to the Python tests. Here the public (dispatched)
 * kernels are checked against the portable ones, and both against a
 * reference written with double arithmetic.
 *
 * The kernels are compared on every 29th fp32 pattern (about 1 s); set
 * VMAFDNN_FP16_EXHAUSTIVE=1 to compare all 2^32 (about 25 s; the full test
 * tier does). On x86 CPUs with F16C, every pattern swept that is not a NaN
 * is also checked against the processor's own conversion (vcvtps2ph,
 * round to nearest even): an independent reference as fast as the kernels,
 * where the double-arithmetic one is applied to every 61st pattern only.
 * (NaNs differ by design: F16C quiets signalling NaNs, numpy and the
 * kernels keep them; the NaN rule is checked on every NaN swept.)
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vmafdnn/vmafdnn.h>

#include "check.h"
#include "fp16.h"

static float float_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* One value through one kernel. The value is converted as 17 copies, so
 * that the dispatched kernel runs both its SIMD body and its scalar tail;
 * copies that disagree count as a failure. */
static uint16_t to_half(uint32_t x, int portable)
{
    enum { COPIES = 17 };
    float in[COPIES];
    uint16_t out[COPIES];
    for (int i = 0; i < COPIES; i++)
        in[i] = float_from_bits(x);
    if (portable)
        vdnn_fp32_to_fp16_portable(in, out, COPIES);
    else
        vmaf_dnn_fp32_to_fp16(in, out, COPIES);
    int same = 1;
    for (int i = 1; i < COPIES; i++)
        same &= out[i] == out[0];
    if (!same)
        CHECK(same);
    return out[0];
}

static uint32_t to_float(uint16_t h, int portable)
{
    enum { COPIES = 9 };
    uint16_t in[COPIES];
    float out[COPIES];
    for (int i = 0; i < COPIES; i++)
        in[i] = h;
    if (portable)
        vdnn_fp16_to_fp32_portable(in, out, COPIES);
    else
        vmaf_dnn_fp16_to_fp32(in, out, COPIES);
    int same = 1;
    for (int i = 1; i < COPIES; i++)
        same &= bits_from_float(out[i]) == bits_from_float(out[0]);
    if (!same)
        CHECK(same);
    return bits_from_float(out[0]);
}

/* The value of a non-NaN fp16, computed with double arithmetic. */
static double half_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    double mag = exp == 0 ? ldexp(h & 0x3ff, -24)
               : exp == 31 ? INFINITY
                           : ldexp(0x400 | (h & 0x3ff), exp - 25);
    return (h & 0x8000) ? -mag : mag;
}

static void test_fp32_to_fp16_edges(void)
{
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x00000000, 0x0000}, /* +0 */
        {0x80000000, 0x8000}, /* -0 */
        {0x00000001, 0x0000}, /* smallest fp32 subnormal */
        {0x807fffff, 0x8000}, /* largest fp32 subnormal, negative */
        {0x33000000, 0x0000}, /* 2^-25: tie between 0 and 2^-24, to even */
        {0x33000001, 0x0001}, /* just above it */
        {0xb3000000, 0x8000}, /* -2^-25 keeps its sign */
        {0x33800000, 0x0001}, /* 2^-24, smallest fp16 subnormal */
        {0x33c00000, 0x0002}, /* 1.5 * 2^-24: tie, up to even */
        {0x34200000, 0x0002}, /* 2.5 * 2^-24: tie, down to even */
        {0x387fc000, 0x03ff}, /* largest fp16 subnormal */
        {0x387fdfff, 0x03ff}, /* just below the subnormal/normal tie */
        {0x387fe000, 0x0400}, /* tie, rounds up into the normals */
        {0x38800000, 0x0400}, /* 2^-14, smallest normal */
        {0x3f800000, 0x3c00}, /* 1 */
        {0x3f801000, 0x3c00}, /* 1 + 2^-11: tie, down to even */
        {0x3f801001, 0x3c01}, /* just above it */
        {0x3f803000, 0x3c02}, /* 1 + 3 * 2^-11: tie, up to even */
        {0x477fe000, 0x7bff}, /* 65504, largest finite */
        {0x477fefff, 0x7bff}, /* 65519.996 */
        {0x477ff000, 0x7c00}, /* 65520: tie between 65504 and 2^16, to Inf */
        {0xc77ff000, 0xfc00}, /* -65520 */
        {0x7f7fffff, 0x7c00}, /* FLT_MAX */
        {0x7f800000, 0x7c00}, /* +Inf */
        {0xff800000, 0xfc00}, /* -Inf */
        {0x7fc00000, 0x7e00}, /* the default quiet NaN */
        {0xffc00000, 0xfe00}, /* negative quiet NaN */
        {0x7f800001, 0x7c01}, /* payload below the kept bits: bit 0 set */
        {0x7f801fff, 0x7c01},
        {0x7f802000, 0x7c01}, /* lowest kept payload bit */
        {0x7fa00000, 0x7d00}, /* signalling NaN stays signalling */
        {0x7fbfe000, 0x7dff},
        {0xffffffff, 0xffff},
        {0x7fffe000, 0x7fff},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int portable = 0; portable < 2; portable++) {
            uint16_t got = to_half(cases[i].in, portable);
            if (got != cases[i].out)
                fprintf(stderr, "fp32 0x%08" PRIx32 " (%s): got 0x%04x, want 0x%04x\n",
                        cases[i].in, portable ? "portable" : "dispatched", got, cases[i].out);
            CHECK_EQ_INT(got, cases[i].out);
        }
    }
}

static void test_fp16_to_fp32_edges(void)
{
    static const struct {
        uint16_t in;
        uint32_t out;
    } cases[] = {
        {0x0000, 0x00000000}, {0x8000, 0x80000000}, {0x0001, 0x33800000},
        {0x8001, 0xb3800000}, {0x0155, 0x37aa8000}, {0x03ff, 0x387fc000},
        {0x0400, 0x38800000}, {0x3c00, 0x3f800000}, {0x7bff, 0x477fe000},
        {0x7c00, 0x7f800000}, {0xfc00, 0xff800000}, {0x7c01, 0x7f802000},
        {0x7d00, 0x7fa00000}, {0x7e00, 0x7fc00000}, {0xfe01, 0xffc02000},
        {0x7fff, 0x7fffe000}, {0xffff, 0xffffe000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(to_float(cases[i].in, 0), cases[i].out);
        CHECK_EQ_INT(to_float(cases[i].in, 1), cases[i].out);
    }
}

/* Every fp16 converts to its exact value (NaN: to the payload moved up) and
 * back to itself, in both kernels, when converted as one array. */
static void test_all_halves(void)
{
    enum { N = 65536 };
    static uint16_t in[N], back[N];
    static float wide[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = (uint16_t)i;

    for (int portable = 0; portable < 2; portable++) {
        if (portable) {
            vdnn_fp16_to_fp32_portable(in, wide, N);
            vdnn_fp32_to_fp16_portable(wide, back, N);
        } else {
            vmaf_dnn_fp16_to_fp32(in, wide, N);
            vmaf_dnn_fp32_to_fp16(wide, back, N);
        }
        long wrong_value = 0, wrong_trip = 0;
        for (uint32_t i = 0; i < N; i++) {
            uint32_t bits = bits_from_float(wide[i]);
            int is_nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
            uint32_t want_nan = ((i & 0x8000u) << 16) | 0x7f800000u | ((i & 0x3ffu) << 13);
            int exact = (double)wide[i] == half_value((uint16_t)i) &&
                        !!signbit(wide[i]) == !!(i & 0x8000);
            if (is_nan ? bits != want_nan : !exact)
                wrong_value++;
            if (back[i] != in[i])
                wrong_trip++;
        }
        CHECK_EQ_INT(wrong_value, 0);
        CHECK_EQ_INT(wrong_trip, 0);
    }
}

/* h is the correctly rounded fp16 of the non-NaN x: no fp16 is nearer, ties
 * go to the even one, overflow gives Inf exactly when IEEE says so (x at or
 * beyond 65520, the midpoint between 65504 and 2^16). */
static int is_rounded_correctly(uint32_t x, uint16_t h)
{
    double v = (double)float_from_bits(x);
    if ((h & 0x8000) != ((x >> 16) & 0x8000))
        return 0;
    if ((h & 0x7fff) == 0x7c00)
        return fabs(v) >= 65520.0;
    if ((h & 0x7fff) > 0x7c00)
        return 0;
    double err = fabs(v - half_value(h));
    uint16_t mag = h & 0x7fff;
    double up = mag == 0x7bff ? 65536.0 : half_value((uint16_t)(mag + 1));
    double below = mag == 0 ? -half_value(1) : half_value((uint16_t)(mag - 1));
    double err_up = fabs(fabs(v) - up), err_below = fabs(fabs(v) - below);
    if (err > err_up || err > err_below)
        return 0;
    if (err == err_up || err == err_below)
        return (mag & 1) == 0;
    return 1;
}

struct sweep_counts {
    long disagree;   /* dispatched and portable kernels differ */
    long misrounded; /* not the correctly rounded fp16 */
    long bad_nan;    /* a NaN not converted by numpy's rule */
    long hardware;   /* not what the processor's F16C conversion gives */
};

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_F16C_REFERENCE 1

static int have_f16c(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}

/* n a multiple of 8. */
__attribute__((target("avx,f16c"))) static void f16c_to_half(const float *in, uint16_t *out,
                                                             size_t n)
{
    for (size_t i = 0; i < n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
}
#else
#define HAVE_F16C_REFERENCE 0
static int have_f16c(void)
{
    return 0;
}
#endif

/* Converts the 65536 fp32 patterns first, first + step, ... through both
 * kernels. The (slow) rounding reference looks at every `sample`-th one. */
static void sweep_block(uint32_t first, uint32_t step, uint32_t sample, struct sweep_counts *c)
{
    enum { N = 65536 };
    static float in[N];
    static uint16_t fast[N], portable[N], hardware[N];
    static int f16c = -1;
    if (f16c < 0)
        f16c = have_f16c();
    for (uint32_t i = 0; i < N; i++)
        in[i] = float_from_bits(first + i * step);
    vmaf_dnn_fp32_to_fp16(in, fast, N);
    vdnn_fp32_to_fp16_portable(in, portable, N);
#if HAVE_F16C_REFERENCE
    if (f16c)
        f16c_to_half(in, hardware, N);
#endif
    for (uint32_t i = 0; i < N; i++) {
        uint32_t x = first + i * step;
        if (f16c && (x & 0x7fffffffu) <= 0x7f800000u && portable[i] != hardware[i]) {
            if (!c->hardware)
                fprintf(stderr, "fp32 0x%08" PRIx32 ": portable 0x%04x, F16C 0x%04x\n", x,
                        portable[i], hardware[i]);
            c->hardware++;
        }
        if (fast[i] != portable[i]) {
            if (!c->disagree)
                fprintf(stderr, "fp32 0x%08" PRIx32 ": dispatched 0x%04x, portable 0x%04x\n", x,
                        fast[i], portable[i]);
            c->disagree++;
        }
        if ((x & 0x7fffffffu) > 0x7f800000u) {
            uint32_t top = (x >> 13) & 0x3ffu;
            uint16_t want = (uint16_t)(((x >> 16) & 0x8000u) | 0x7c00u | top | (top == 0));
            c->bad_nan += fast[i] != want;
        } else if (i % sample == 0 && !is_rounded_correctly(x, fast[i])) {
            if (!c->misrounded)
                fprintf(stderr, "fp32 0x%08" PRIx32 " -> 0x%04x is not correctly rounded\n", x,
                        fast[i]);
            c->misrounded++;
        }
    }
}

static void test_sweep(void)
{
    /* Blocks where the result changes kind, swept and checked densely: zero
     * and the fp32 subnormals, the fp16 subnormal range and its boundary, the
     * overflow threshold, Inf and NaNs with small payloads, both signs. */
    static const uint32_t dense[] = {0x00000000, 0x33000000, 0x33800000, 0x387f0000,
                                     0x38800000, 0x477f0000, 0x7f800000, 0x7fbf0000};
    struct sweep_counts c = {0, 0, 0, 0};
    printf("fp16 sweep: F16C reference %s\n", have_f16c() ? "on" : "not on this processor");
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++) {
        sweep_block(dense[i], 1u, 1u, &c);
        sweep_block(dense[i] | 0x80000000u, 1u, 1u, &c);
    }
    const char *all = getenv("VMAFDNN_FP16_EXHAUSTIVE");
    uint32_t step = all && *all && strcmp(all, "0") != 0 ? 1 : 29;
    for (uint64_t first = 0; first < (UINT64_C(1) << 32); first += UINT64_C(65536) * step)
        sweep_block((uint32_t)first, step, 61u, &c);
    CHECK_EQ_INT(c.disagree, 0);
    CHECK_EQ_INT(c.misrounded, 0);
    CHECK_EQ_INT(c.bad_nan, 0);
    CHECK_EQ_INT(c.hardware, 0);
}

/* Pseudo-random inputs concentrated where rounding is interesting. */
static void test_random(void)
{
    enum { N = 1 << 20 };
    float *in = malloc(N * sizeof *in);
    uint16_t *fast = malloc(N * sizeof *fast), *portable = malloc(N * sizeof *portable);
    CHECK(in && fast && portable);
    if (!in || !fast || !portable)
        goto done;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < N; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        uint32_t x = (uint32_t)(s >> 32);
        /* Half the values get an exponent around the fp16 range. */
        if (s & 1)
            x = (x & 0x807fffffu) | ((uint32_t)(100 + (s >> 8) % 50) << 23);
        in[i] = float_from_bits(x);
    }
    vmaf_dnn_fp32_to_fp16(in, fast, N);
    vdnn_fp32_to_fp16_portable(in, portable, N);
    CHECK(memcmp(fast, portable, N * sizeof *fast) == 0);
    long misrounded = 0;
    for (size_t i = 0; i < N; i++) {
        uint32_t x = bits_from_float(in[i]);
        if ((x & 0x7fffffffu) <= 0x7f800000u)
            misrounded += !is_rounded_correctly(x, fast[i]);
    }
    CHECK_EQ_INT(misrounded, 0);
done:
    free(in);
    free(fast);
    free(portable);
}

/* Lengths around the SIMD widths, from unaligned addresses: each element as
 * if converted alone, and nothing written past n. */
static void test_lengths(void)
{
    static const size_t lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 33, 100};
    enum { MAX = 128, CANARY = 0x5a5a };
    float in[MAX + 1], wide[MAX + 2];
    uint16_t halves[MAX + 2], narrow[MAX + 2];
    for (size_t i = 0; i <= MAX; i++)
        in[i] = float_from_bits(0x33000000u + (uint32_t)i * 0x0137f00bu);
    for (size_t i = 0; i <= MAX; i++)
        halves[i] = (uint16_t)(i * 0x2f3u);

    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
        size_t n = lengths[l];
        long wrong = 0;
        for (size_t i = 0; i < MAX + 2; i++)
            narrow[i] = CANARY;
        vmaf_dnn_fp32_to_fp16(in + 1, narrow + 1, n);
        wrong += narrow[0] != CANARY || narrow[n + 1] != CANARY;
        for (size_t i = 0; i < n; i++)
            wrong += narrow[i + 1] != to_half(bits_from_float(in[i + 1]), 1);

        memset(wide, 0x5a, sizeof wide);
        vmaf_dnn_fp16_to_fp32(halves + 1, wide + 1, n);
        wrong += bits_from_float(wide[0]) != 0x5a5a5a5au || bits_from_float(wide[n + 1]) != 0x5a5a5a5au;
        for (size_t i = 0; i < n; i++)
            wrong += bits_from_float(wide[i + 1]) != to_float(halves[i + 1], 1);
        if (wrong)
            fprintf(stderr, "n = %zu: %ld wrong\n", n, wrong);
        CHECK_EQ_INT(wrong, 0);
    }
}

int main(void)
{
    printf("fp16 kernel: %s\n", vdnn_fp16_kernel());
    test_fp32_to_fp16_edges();
    test_fp16_to_fp32_edges();
    test_all_halves();
    test_lengths();
    test_random();
    test_sweep();
    return check_report();
}
