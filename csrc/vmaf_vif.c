/* libvmaf's integer VIF at four scales (vmaf_kernels.h).
 *
 * What it computes, step for step as libvmaf 3.x's integer_vif does, so that
 * every score is the same float:
 *
 *  - Scale s (0..3) works on an image pair of ws x hs: scale 0 is the input
 *    (bpc bits); scale s+1 is scale s filtered with scale s+1's filter and
 *    decimated (the samples at even rows and even columns), 16-bit.
 *  - Filters (sum 65536, symmetric): 17 taps at scale 0, 9, 5 and 3 taps at
 *    scales 1, 2, 3. Edges mirror without repeating the edge sample
 *    (reflect-101), rows and columns.
 *  - The statistic's filtering, vertical then horizontal, of x, y, x^2, y^2
 *    and xy. Vertical: mu = (sum f x + 2^(sh-1)) >> sh with sh = bpc at
 *    scale 0 and 16 above; squares (sum f x^2 + rnd) >> sq with sq =
 *    2 (bpc - 8) at scale 0 (none at 8 bits) and 16 above. Horizontal: mu =
 *    sum f mu_v (not shifted), squares (sum f sq_v + 2^15) >> 16.
 *  - Per pixel, with mu products rounded from 64 bits ((a b + 2^31) >> 32):
 *    sigma1_sq, sigma2_sq (clamped at 0), sigma12; where sigma1_sq >= 2^17
 *    the denominator gains log2(2^17 + sigma1_sq) - 17 (in 1/2048 from a
 *    table of round(log2f(i) * 2048) on the top 16 bits) and, where sigma12
 *    and sigma2_sq are > 0, the numerator gains log2(numer1 + g^2
 *    sigma1_sq) - log2(numer1), g = sigma12 / sigma1_sq (double) limited to
 *    enhn_gain_limit, numer1 = max(sigma2_sq - g sigma12, 0) + 2^17;
 *    elsewhere the numerator gains 1 - sigma2_sq / (16384 * 65025) and the
 *    denominator 1.
 *  - num and den are floats; scores[s] = num / den in float.
 *  The subsampling filter: vertical (sum f x + 2^(sh-1)) >> sh (sh as for
 *  mu), horizontal (sum f v + 2^15) >> 16.
 *
 * Smallest frame: 16 x 16. Every filter's mirror must land inside its image
 * (scale 3, w >> 3 wide, needs 2 columns for its 3 taps; scale 0 needs 9 for
 * 17 taps); below that libvmaf mirrors through its padding into stale or
 * out-of-frame memory and there is nothing exact to follow. Smaller frames
 * get -EINVAL.
 *
 * Exact integer arithmetic in 32-bit lanes: every filter sum of 16-bit
 * values fits 32 bits (the taps sum to 65536). A square's sum may need 48
 * bits; it is split at the bit its result is shifted by (v = H 2^sh + L),
 * and sum f H + ((sum f L + rnd) >> sh) is the same integer, all in 32 bits.
 *
 * Layout: one scale at a time, row by row: the vertical pass of a row into
 * five padded rows, the horizontal pass into five rows, the statistic
 * reduced at once. On even rows the next scale's row is made from the same
 * source rows (only its even columns are computed). Scales 1..3 are kept
 * whole (a quarter of the frame and less); nothing frame-sized is made at
 * scale 0.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "vmaf_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off", "vect-cost-model=dynamic")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#define ROWS_PER_TILE 16
#define MAX_HALF 8 /* half the widest filter */
#define SIGMA_NSQ 131072 /* 2.0 in 1/65536 */

static const uint16_t vif_taps[4][17] = {
    {489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640,
     935, 489},
    {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244},
    {3571, 16004, 26386, 16004, 3571},
    {10904, 43728, 10904},
};
static const int vif_width[4] = {17, 9, 5, 3};

/* A row of five padded rows: the vertical pass's output. */
typedef struct Rows5 {
    uint32_t *mu1, *mu2, *xx, *yy, *xy;
} Rows5;

/* The vertical pass's output, 16-bit: mu1, mu2 and the three squares split
 * into their high and low halves (xxH, xxL, yyH, yyL, xyH, xyL). */
typedef struct Rows8 {
    uint32_t *restrict q[8];
} Rows8;

typedef struct Accum {
    int64_t num_log, den_log, num_non_log, den_non_log;
} Accum;

/* ---- vertical pass of the statistic, one row ---------------------------- */

#define INLINE static inline __attribute__((always_inline))

/* r[k], d[k]: the FW source rows (mirrored); the filter is symmetric, so
 * rows k and FW-1-k share a tap. SPLIT 0: the squares' sums fit 32 bits
 * unshifted (8 bits at scale 0); SPLIT 1: split at sh_sq. */
INLINE void vstat_body(const uint16_t *const *r, const uint16_t *const *d, const int FW,
                       const uint16_t *taps, unsigned w, unsigned sh_mu, const int SPLIT,
                       unsigned sh_sq, Rows8 out)
{
    const int H = FW / 2;
    uint32_t *restrict o0 = out.q[0], *restrict o1 = out.q[1], *restrict o2 = out.q[2],
             *restrict o3 = out.q[3], *restrict o4 = out.q[4], *restrict o5 = out.q[5],
             *restrict o6 = out.q[6], *restrict o7 = out.q[7];
    const uint16_t *rp[17], *dp[17];
    for (int k = 0; k < FW; k++)
        rp[k] = r[k], dp[k] = d[k];
    const uint32_t rnd_mu = 1u << (sh_mu - 1);
    const uint32_t rnd_sq = SPLIT ? 1u << (sh_sq - 1) : 0;
    const uint32_t mask = SPLIT ? (1u << sh_sq) - 1 : 0;
#pragma GCC ivdep
    for (unsigned j = 0; j < w; j++) {
        const uint32_t fc = taps[H], ac = rp[H][j], bc = dp[H][j];
        uint32_t m1 = fc * ac, m2 = fc * bc;
        uint32_t xh, xl = 0, yh, yl = 0, ph, pl = 0;
        if (!SPLIT) {
            xh = fc * (ac * ac), yh = fc * (bc * bc), ph = fc * (ac * bc);
        } else {
            const uint32_t aa = ac * ac, bb = bc * bc, ab = ac * bc;
            xh = fc * (aa >> sh_sq), yh = fc * (bb >> sh_sq), ph = fc * (ab >> sh_sq);
            xl = fc * (aa & mask), yl = fc * (bb & mask), pl = fc * (ab & mask);
        }
#pragma GCC unroll 8
        for (int k = 0; k < H; k++) {
            const uint32_t f = taps[k];
            const uint32_t a0 = rp[k][j], a1 = rp[FW - 1 - k][j];
            const uint32_t b0 = dp[k][j], b1 = dp[FW - 1 - k][j];
            m1 += f * (a0 + a1);
            m2 += f * (b0 + b1);
            if (!SPLIT) {
                xh += f * (a0 * a0 + a1 * a1);
                yh += f * (b0 * b0 + b1 * b1);
                ph += f * (a0 * b0 + a1 * b1);
            } else {
                const uint32_t aa0 = a0 * a0, aa1 = a1 * a1, bb0 = b0 * b0, bb1 = b1 * b1;
                const uint32_t ab0 = a0 * b0, ab1 = a1 * b1;
                xh += f * ((aa0 >> sh_sq) + (aa1 >> sh_sq));
                xl += f * ((aa0 & mask) + (aa1 & mask));
                yh += f * ((bb0 >> sh_sq) + (bb1 >> sh_sq));
                yl += f * ((bb0 & mask) + (bb1 & mask));
                ph += f * ((ab0 >> sh_sq) + (ab1 >> sh_sq));
                pl += f * ((ab0 & mask) + (ab1 & mask));
            }
        }
        uint32_t vx = xh, vy = yh, vp = ph;
        if (SPLIT) {
            vx += (xl + rnd_sq) >> sh_sq;
            vy += (yl + rnd_sq) >> sh_sq;
            vp += (pl + rnd_sq) >> sh_sq;
        }
        o0[j] = (m1 + rnd_mu) >> sh_mu;
        o1[j] = (m2 + rnd_mu) >> sh_mu;
        o2[j] = vx >> 16, o3[j] = vx & 0xffff;
        o4[j] = vy >> 16, o5[j] = vy & 0xffff;
        o6[j] = vp >> 16, o7[j] = vp & 0xffff;
    }
}

/* Scale 0: x and y of each source row are copied into a ring of
 * source rows, laid out in column chunks of CW so that the 17 rows of a
 * window sit at compile-time offsets from one pointer: ring[chunk][slot][2]
 * [CW], NSLOT slots. Padded row v (source row vdnn_mirror(v - 8)) is slot v % 17
 * and, when that is below 16, also slot v % 17 + 17, so the window of output
 * row i (padded rows i .. i + 16) is slots i % 17 .. i % 17 + 16,
 * contiguous. The products are made as they are filtered (at 8 bits
 * whole: 255^2 fits 16 bits; above, split at sh_sq as vstat_body splits
 * them). Without GCC's vector extensions only 8-bit rows take the ring. */
#define CW 64
#define NSLOT 33
#define NQ 2
#define CHUNK ((size_t)NSLOT * NQ * CW)

/* Returns the OR of the row's samples, ref and dis: the caller's range
 * check, made while the row passes through anyway. */
VDNN_TARGET_CLONES
static uint32_t ring_row(const uint16_t *restrict r, const uint16_t *restrict d, unsigned w,
                         size_t nch, uint32_t *restrict ring, unsigned slot)
{
    uint32_t *restrict p = ring + (size_t)slot * NQ * CW;
    const size_t dup = slot < 16 ? (size_t)17 * NQ * CW : 0;
    uint32_t any = 0;
    for (size_t c = 0; c < nch; c++, p += CHUNK, r += CW, d += CW) {
        const size_t n = w - c * CW < CW ? w - c * CW : CW;
        for (size_t j = 0; j < n; j++) {
            const uint32_t x = r[j], y = d[j];
            any |= x | y;
            p[j] = x, p[CW + j] = y;
            p[dup + j] = x, p[dup + CW + j] = y;
        }
        for (size_t j = n; j < CW; j++)
            p[j] = 0, p[CW + j] = 0, p[dup + j] = 0, p[dup + CW + j] = 0;
    }
    return any;
}

/* One quantity of the window b (CW columns): the 17-tap sum, 32-bit, of
 * E(k, j) (row k of the window, column j). One quantity per loop keeps the
 * accumulators in registers. */
#define PX(k, q, j) b[((k) * NQ + (q)) * CW + (j)]
#define VSUM17(E, j)                                                                          \
    ((uint32_t)vif_taps[0][8] * E(8, j) + vif_taps[0][0] * ((uint32_t)E(0, j) + E(16, j)) +   \
     vif_taps[0][1] * ((uint32_t)E(1, j) + E(15, j)) +                                         \
     vif_taps[0][2] * ((uint32_t)E(2, j) + E(14, j)) +                                         \
     vif_taps[0][3] * ((uint32_t)E(3, j) + E(13, j)) +                                         \
     vif_taps[0][4] * ((uint32_t)E(4, j) + E(12, j)) +                                         \
     vif_taps[0][5] * ((uint32_t)E(5, j) + E(11, j)) +                                         \
     vif_taps[0][6] * ((uint32_t)E(6, j) + E(10, j)) +                                         \
     vif_taps[0][7] * ((uint32_t)E(7, j) + E(9, j)))
#define PS(E, k, j) (E(k, j) + E(16 - (k), j))
#define VSUM17S(E, j)                                                                         \
    ((uint32_t)vif_taps[0][8] * E(8, j) + vif_taps[0][0] * PS(E, 0, j) +                       \
     vif_taps[0][1] * PS(E, 1, j) + vif_taps[0][2] * PS(E, 2, j) +                             \
     vif_taps[0][3] * PS(E, 3, j) + vif_taps[0][4] * PS(E, 4, j) +                             \
     vif_taps[0][5] * PS(E, 5, j) + vif_taps[0][6] * PS(E, 6, j) +                             \
     vif_taps[0][7] * PS(E, 7, j))
#define EX(k, j) PX(k, 0, j)
#define EY(k, j) PX(k, 1, j)
#define EXX(k, j) (PX(k, 0, j) * PX(k, 0, j))
#define EYY(k, j) (PX(k, 1, j) * PX(k, 1, j))
#define EXY(k, j) (PX(k, 0, j) * PX(k, 1, j))

#if defined(__GNUC__) && (__GNUC__ >= 9 || defined(__clang__)) && !defined(VDNN_NO_VECTOR_EXT)
/* GCC's vectoriser gives each of the 17 rows its own pointer and spills
 * them; with GCC's generic vectors (any target: 8 lanes of 32 bits) the
 * window stays at constant offsets and the five sums in registers. */
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef uint32_t v8u_un __attribute__((vector_size(32), aligned(4), may_alias));
#define LD8(p) (*(const v8u_un *)(const void *)(p))

/* The window's five sums, 8 columns at a time. SPLIT 0 (8 bits): the
 * squares' sums fit 32 bits whole; SPLIT 1: split at sh_sq, as vstat_body
 * splits them. */
INLINE void vstat_17_ring(const uint32_t *restrict win, size_t nch, unsigned sh_mu,
                          const int SPLIT, unsigned sh_sq, Rows8 out)
{
    const uint32_t rm = 1u << (sh_mu - 1), rs = SPLIT ? 1u << (sh_sq - 1) : 0;
    const uint32_t ms = SPLIT ? (1u << sh_sq) - 1 : 0;
    const v8u rnd = {rm, rm, rm, rm, rm, rm, rm, rm}, rnd_sq = {rs, rs, rs, rs, rs, rs, rs, rs};
    const v8u mask = {ms, ms, ms, ms, ms, ms, ms, ms};
    const v8u lo = {0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff};
    for (size_t c = 0; c < nch; c++) {
        const uint32_t *b = win + c * CHUNK;
        for (size_t j = 0; j < CW; j += 8) {
            const uint32_t *p = b + j;
            const v8u x = LD8(p + 8 * NQ * CW), y = LD8(p + (8 * NQ + 1) * CW);
            const uint32_t f8 = vif_taps[0][8];
            const v8u aa = x * x, bb = y * y, ab = x * y;
            v8u m1 = f8 * x, m2 = f8 * y, xh, yh, ph, xl = {0}, yl = {0}, pl = {0};
            if (!SPLIT) {
                xh = f8 * aa, yh = f8 * bb, ph = f8 * ab;
            } else {
                xh = f8 * (aa >> sh_sq), yh = f8 * (bb >> sh_sq), ph = f8 * (ab >> sh_sq);
                xl = f8 * (aa & mask), yl = f8 * (bb & mask), pl = f8 * (ab & mask);
            }
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const uint32_t f = vif_taps[0][k];
                const v8u x0 = LD8(p + k * NQ * CW), y0 = LD8(p + (k * NQ + 1) * CW);
                const v8u x1 = LD8(p + (16 - k) * NQ * CW),
                          y1 = LD8(p + ((16 - k) * NQ + 1) * CW);
                const v8u aa0 = x0 * x0, aa1 = x1 * x1, bb0 = y0 * y0, bb1 = y1 * y1;
                const v8u ab0 = x0 * y0, ab1 = x1 * y1;
                m1 += f * (x0 + x1);
                m2 += f * (y0 + y1);
                if (!SPLIT) {
                    xh += f * (aa0 + aa1);
                    yh += f * (bb0 + bb1);
                    ph += f * (ab0 + ab1);
                } else {
                    xh += f * ((aa0 >> sh_sq) + (aa1 >> sh_sq));
                    xl += f * ((aa0 & mask) + (aa1 & mask));
                    yh += f * ((bb0 >> sh_sq) + (bb1 >> sh_sq));
                    yl += f * ((bb0 & mask) + (bb1 & mask));
                    ph += f * ((ab0 >> sh_sq) + (ab1 >> sh_sq));
                    pl += f * ((ab0 & mask) + (ab1 & mask));
                }
            }
            if (SPLIT) {
                xh += (xl + rnd_sq) >> sh_sq;
                yh += (yl + rnd_sq) >> sh_sq;
                ph += (pl + rnd_sq) >> sh_sq;
            }
            const size_t o = c * CW + j;
            *(v8u_un *)(void *)(out.q[0] + o) = (m1 + rnd) >> sh_mu;
            *(v8u_un *)(void *)(out.q[1] + o) = (m2 + rnd) >> sh_mu;
            *(v8u_un *)(void *)(out.q[2] + o) = xh >> 16;
            *(v8u_un *)(void *)(out.q[3] + o) = xh & lo;
            *(v8u_un *)(void *)(out.q[4] + o) = yh >> 16;
            *(v8u_un *)(void *)(out.q[5] + o) = yh & lo;
            *(v8u_un *)(void *)(out.q[6] + o) = ph >> 16;
            *(v8u_un *)(void *)(out.q[7] + o) = ph & lo;
        }
    }
}

VDNN_TARGET_CLONES
static void vstat_17_8bit(const uint32_t *restrict win, size_t nch, Rows8 out)
{
    vstat_17_ring(win, nch, 8, 0, 0, out);
}

/* Above 8 bits. */
#define VIF_RING_ANY_DEPTH 1
VDNN_TARGET_CLONES
static void vstat_17_split(const uint32_t *restrict win, size_t nch, unsigned sh_mu,
                           unsigned sh_sq, Rows8 out)
{
    vstat_17_ring(win, nch, sh_mu, 1, sh_sq, out);
}
#else
VDNN_TARGET_CLONES
static void vstat_17_8bit(const uint32_t *restrict win, size_t nch, Rows8 out)
{
    uint32_t *restrict o0 = out.q[0], *restrict o1 = out.q[1], *restrict o2 = out.q[2],
             *restrict o3 = out.q[3], *restrict o4 = out.q[4], *restrict o5 = out.q[5],
             *restrict o6 = out.q[6], *restrict o7 = out.q[7];
    for (size_t c = 0; c < nch; c++) {
        const uint32_t *restrict b = win + c * CHUNK;
        const size_t o = c * CW;
        for (size_t j = 0; j < CW; j++)
            o0[o + j] = (VSUM17S(EX, j) + 128) >> 8;
        for (size_t j = 0; j < CW; j++)
            o1[o + j] = (VSUM17S(EY, j) + 128) >> 8;
        for (size_t j = 0; j < CW; j++) {
            const uint32_t v = VSUM17(EXX, j);
            o2[o + j] = v >> 16, o3[o + j] = v & 0xffff;
        }
        for (size_t j = 0; j < CW; j++) {
            const uint32_t v = VSUM17(EYY, j);
            o4[o + j] = v >> 16, o5[o + j] = v & 0xffff;
        }
        for (size_t j = 0; j < CW; j++) {
            const uint32_t v = VSUM17(EXY, j);
            o6[o + j] = v >> 16, o7[o + j] = v & 0xffff;
        }
    }
}
#endif

#ifndef VIF_RING_ANY_DEPTH
#define VIF_RING_ANY_DEPTH 0
#endif

#define VSTAT_SPLIT(FW, S)                                                                    \
    VDNN_TARGET_CLONES                                                                        \
    static void vstat_##FW(const uint16_t *const *r, const uint16_t *const *d, unsigned w,    \
                           unsigned sh_mu, unsigned sh_sq, Rows8 out)                         \
    {                                                                                         \
        vstat_body(r, d, FW, vif_taps[S], w, sh_mu, 1, sh_sq, out);                           \
    }
VSTAT_SPLIT(17, 0)
VSTAT_SPLIT(9, 1)
VSTAT_SPLIT(5, 2)
VSTAT_SPLIT(3, 3)

static void vertical_stat(const uint16_t *const *r, const uint16_t *const *d, int s,
                          unsigned w, unsigned sh_mu, unsigned sh_sq, Rows8 out)
{
    if (s == 0)
        vstat_17(r, d, w, sh_mu, sh_sq, out);
    else if (s == 1)
        vstat_9(r, d, w, sh_mu, sh_sq, out);
    else if (s == 2)
        vstat_5(r, d, w, sh_mu, sh_sq, out);
    else
        vstat_3(r, d, w, sh_mu, sh_sq, out);
}

static void pad_row16(uint32_t *v, unsigned w, int half)
{
    for (int f = 1; f <= half; f++) {
        v[-f] = v[f];
        v[(int)w - 1 + f] = v[(int)w - 1 - f];
    }
}

static void pad_row(uint32_t *v, unsigned w, int half)
{
    for (int f = 1; f <= half; f++) {
        v[-f] = v[f];
        v[(int)w - 1 + f] = v[(int)w - 1 - f];
    }
}

/* ---- horizontal pass of the statistic, one row -------------------------- */

/* in.q: the vertical pass's rows, padded by FW / 2 on either side. One
 * quantity per loop (the accumulators stay in registers). The squares:
 * sum f H + ((sum f L + 2^15) >> 16) is (sum f v + 2^15) >> 16. */
INLINE uint32_t hsum(const uint32_t *restrict p, size_t j, const int FW, const uint16_t *taps)
{
    const int H = FW / 2;
    uint32_t a = (uint32_t)taps[H] * p[j + H];
#pragma GCC unroll 8
    for (int k = 0; k < H; k++)
        a += taps[k] * (p[j + k] + p[j + FW - 1 - k]);
    return a;
}

/* (a b + 2^31) >> 32 */
INLINE uint32_t mu_sq(uint64_t a, uint64_t b)
{
    return (uint32_t)((a * b + 0x80000000u) >> 32);
}

/* out: mu1, mu2 and the sigmas: xx, yy, xy become sigma1_sq, sigma2_sq (not
 * yet clamped) and sigma12 as int32 bit patterns. */
INLINE void hstat_body(Rows8 in, const int FW, const uint16_t *taps, unsigned w, Rows5 out)
{
    const int H = FW / 2;
    const uint32_t *restrict i0 = in.q[0] - H, *restrict i1 = in.q[1] - H,
                             *restrict i2 = in.q[2] - H, *restrict i3 = in.q[3] - H,
                             *restrict i4 = in.q[4] - H, *restrict i5 = in.q[5] - H,
                             *restrict i6 = in.q[6] - H, *restrict i7 = in.q[7] - H;
    uint32_t *restrict o1 = out.mu1, *restrict o2 = out.mu2, *restrict oxx = out.xx,
             *restrict oyy = out.yy, *restrict oxy = out.xy;
    for (size_t j = 0; j < w; j++)
        o1[j] = hsum(i0, j, FW, taps);
    for (size_t j = 0; j < w; j++)
        o2[j] = hsum(i1, j, FW, taps);
    for (size_t j = 0; j < w; j++)
        oxx[j] = hsum(i2, j, FW, taps) + ((hsum(i3, j, FW, taps) + 32768) >> 16) -
                 mu_sq(o1[j], o1[j]);
    for (size_t j = 0; j < w; j++)
        oyy[j] = hsum(i4, j, FW, taps) + ((hsum(i5, j, FW, taps) + 32768) >> 16) -
                 mu_sq(o2[j], o2[j]);
    for (size_t j = 0; j < w; j++)
        oxy[j] = hsum(i6, j, FW, taps) + ((hsum(i7, j, FW, taps) + 32768) >> 16) -
                 mu_sq(o1[j], o2[j]);
}

#define HSTAT(FW, S)                                                                          \
    VDNN_TARGET_CLONES                                                                        \
    static void hstat_##FW(Rows8 in, unsigned w, Rows5 out)                                   \
    {                                                                                         \
        hstat_body(in, FW, vif_taps[S], w, out);                                              \
    }
HSTAT(17, 0)
HSTAT(9, 1)
HSTAT(5, 2)
HSTAT(3, 3)

static void horizontal_stat(Rows8 in, int s, unsigned w, Rows5 out)
{
    if (s == 0)
        hstat_17(in, w, out);
    else if (s == 1)
        hstat_9(in, w, out);
    else if (s == 2)
        hstat_5(in, w, out);
    else
        hstat_3(in, w, out);
}

/* ---- the statistic ------------------------------------------------------ */

/* round(log2f(i) * 2048) for i in 32768..65535 (entry i - 32768), made once
 * per process (pthread_once) and read-only after. */
static uint16_t log2_table_mem[32768];
static pthread_once_t log2_table_once = PTHREAD_ONCE_INIT;

static void log2_table_init(void)
{
    for (unsigned i = 32768; i < 65536; i++)
        log2_table_mem[i - 32768] = (uint16_t)round(log2f((float)i) * 2048);
}

/* log2(v) in 1/2048 from the table, v >= 2^17 (below 2^53): the top 16 bits
 * index the table (from 32768), each further bit adds 2048. */
static inline int32_t log2_fixed(const uint16_t *log2_table, uint64_t v)
{
    const int k = 48 - __builtin_clzll(v);
    return log2_table[(v >> k) - 32768] + 2048 * k;
}

/* The pixels below sigma_nsq, vectorised: their sums, and a byte per pixel
 * (1: the log branch) for stat_row to visit only those. */
VDNN_TARGET_CLONES
static void stat_non_log(const uint32_t *restrict xx, const uint32_t *restrict yy, unsigned w,
                         uint8_t *restrict lg, int64_t *num_non_log, int64_t *den_non_log)
{
    int64_t nn = 0, nd = 0;
    for (size_t j = 0; j < w; j++) {
        const int32_t s1 = (int32_t)xx[j], s2 = (int32_t)yy[j];
        const int l = s1 >= SIGMA_NSQ;
        nn += l ? 0 : (s2 < 0 ? 0 : s2);
        nd += l ? 0 : 1;
        lg[j] = (uint8_t)l;
    }
    *num_non_log += nn;
    *den_non_log += nd;
}

static void stat_row(Rows5 m, unsigned w, const uint16_t *log2_table, double egl, uint8_t *lg,
                     Accum *acc)
{
    stat_non_log(m.xx, m.yy, w, lg, &acc->num_non_log, &acc->den_non_log);
    for (unsigned j = w; j % 8; j++)
        lg[j] = 0;
    int64_t num_log = 0, den_log = 0;
    const double eps = 65536 * 1.0e-10;
    for (unsigned j0 = 0; j0 < w; j0 += 8) {
        uint64_t bits;
        memcpy(&bits, lg + j0, 8);
        while (bits) {
            const unsigned j = j0 + (unsigned)__builtin_ctzll(bits) / 8;
            bits &= bits - 1;
            const int32_t s1 = (int32_t)m.xx[j];
            int32_t s2 = (int32_t)m.yy[j];
            const int32_t s12 = (int32_t)m.xy[j];
            if (s2 < 0)
                s2 = 0;
            den_log += log2_fixed(log2_table, (uint32_t)SIGMA_NSQ + (uint32_t)s1) - 2048 * 17;
            if (s12 > 0 && s2 > 0) {
                double g = s12 / (s1 + eps);
                int32_t sv_sq = (int32_t)(s2 - g * s12);
                if (sv_sq < 0)
                    sv_sq = 0;
                if (!(g < egl))
                    g = egl;
                const uint32_t numer1 = (uint32_t)sv_sq + SIGMA_NSQ;
                const int64_t numer1_tmp = (int64_t)(g * g * s1) + numer1;
                num_log += log2_fixed(log2_table, (uint64_t)numer1_tmp) -
                           log2_fixed(log2_table, numer1);
            }
        }
    }
    acc->num_log += num_log;
    acc->den_log += den_log;
}

/* ---- subsampling: one row of the next scale ----------------------------- */

/* Vertical pass of the next scale's filter (FW taps, the table of scale S)
 * over the FW rows r[k] (ref) and d[k] (dis), into two padded rows. */
INLINE void vsub_body(const uint16_t *const *r, const uint16_t *const *d, const int FW,
                      const uint16_t *taps, unsigned w, unsigned sh, uint32_t *restrict o1,
                      uint32_t *restrict o2)
{
    const int H = FW / 2;
    const uint16_t *rp[9], *dp[9];
    for (int k = 0; k < FW; k++)
        rp[k] = r[k], dp[k] = d[k];
    const uint32_t rnd = 1u << (sh - 1);
#pragma GCC ivdep
    for (size_t j = 0; j < w; j++) {
        uint32_t a = taps[H] * (uint32_t)rp[H][j], b = taps[H] * (uint32_t)dp[H][j];
#pragma GCC unroll 8
        for (int k = 0; k < H; k++) {
            a += taps[k] * ((uint32_t)rp[k][j] + rp[FW - 1 - k][j]);
            b += taps[k] * ((uint32_t)dp[k][j] + dp[FW - 1 - k][j]);
        }
        o1[j] = (a + rnd) >> sh;
        o2[j] = (b + rnd) >> sh;
    }
}

#define VSUB(FW, S)                                                                           \
    VDNN_TARGET_CLONES                                                                        \
    static void vsub_##FW(const uint16_t *const *r, const uint16_t *const *d, unsigned w,     \
                          unsigned sh, uint32_t *o1, uint32_t *o2)                            \
    {                                                                                         \
        vsub_body(r, d, FW, vif_taps[S], w, sh, o1, o2);                                      \
    }
VSUB(9, 1)
VSUB(5, 2)
VSUB(3, 3)

static void vertical_sub(const uint16_t *const *r, const uint16_t *const *d, int s_next,
                         unsigned w, unsigned sh, uint32_t *o1, uint32_t *o2)
{
    if (s_next == 1)
        vsub_9(r, d, w, sh, o1, o2);
    else if (s_next == 2)
        vsub_5(r, d, w, sh, o1, o2);
    else
        vsub_3(r, d, w, sh, o1, o2);
}

/* Horizontal pass at the even columns only: wn = w / 2 outputs. */
INLINE void hsub_body(const uint32_t *v, const int FW, const uint16_t *taps, unsigned wn,
                      uint16_t *restrict o)
{
    const int H = FW / 2;
    const uint32_t *restrict a = v - H;
    for (size_t m = 0; m < wn; m++) {
        uint32_t x = (uint32_t)taps[H] * a[2 * m + H];
#pragma GCC unroll 8
        for (int k = 0; k < H; k++)
            x += taps[k] * (a[2 * m + k] + a[2 * m + FW - 1 - k]);
        o[m] = (uint16_t)((x + 32768) >> 16);
    }
}

#define HSUB(FW, S)                                                                           \
    VDNN_TARGET_CLONES                                                                        \
    static void hsub_##FW(const uint32_t *v, unsigned wn, uint16_t *o)                        \
    {                                                                                         \
        hsub_body(v, FW, vif_taps[S], wn, o);                                                 \
    }
HSUB(9, 1)
HSUB(5, 2)
HSUB(3, 3)

static void horizontal_sub(const uint32_t *v1, const uint32_t *v2, int s_next, unsigned wn,
                           uint16_t *o1, uint16_t *o2)
{
    if (s_next == 1)
        hsub_9(v1, wn, o1), hsub_9(v2, wn, o2);
    else if (s_next == 2)
        hsub_5(v1, wn, o1), hsub_5(v2, wn, o2);
    else
        hsub_3(v1, wn, o1), hsub_3(v2, wn, o2);
}

/* ---- driver ------------------------------------------------------------- */

typedef struct Image {
    const uint16_t *ref, *dis;
    ptrdiff_t stride;
    unsigned w, h;
} Image;

VDNN_TARGET_CLONES
static int row_out_of_range(const uint16_t *restrict p, unsigned w, unsigned max)
{
    uint16_t acc = 0;
    for (size_t j = 0; j < w; j++)
        acc |= p[j];
    return (acc & ~max) != 0;
}

static int check_plane(const VdnnPlane *p)
{
    return p && p->data && p->bpc >= 8 && p->bpc <= 16 && p->stride >= (ptrdiff_t)p->w &&
           p->w >= 16 && p->h >= 16;
}

int vdnn_vif_integer(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                     double enhn_gain_limit, double scores[4])
{
    if (!env || !env->alloc || !env->release || !scores || !check_plane(ref) ||
        !check_plane(dist) || ref->w != dist->w || ref->h != dist->h || ref->bpc != dist->bpc ||
        !(enhn_gain_limit >= 1.0))
        return -EINVAL;
    const unsigned w = ref->w, h = ref->h, bpc = ref->bpc;
    const unsigned max = (1u << bpc) - 1;

    /* Sizes of the scales. */
    unsigned ws[4], hs[4];
    ws[0] = w, hs[0] = h;
    for (int s = 1; s < 4; s++)
        ws[s] = ws[s - 1] / 2, hs[s] = hs[s - 1] / 2;

    /* One block: 8 padded rows (the vertical pass), 5 rows of w and 2
     * padded rows for subsampling (32-bit), scales 1..3 (ref and dis) and
     * the ring of source rows (scale 0). */
    const size_t nch = ((size_t)w + CW - 1) / CW;
    const size_t row_len = ((size_t)w + 2 * MAX_HALF + 15) & ~(size_t)15;
    const size_t row16 = (nch * CW + 2 * MAX_HALF + 31) & ~(size_t)31;
    size_t img_total = 0;
    for (int s = 1; s < 4; s++)
        img_total += 2 * (((size_t)ws[s] + 31) & ~(size_t)31) * hs[s];
    const int ringed = bpc == 8 || VIF_RING_ANY_DEPTH; /* scale 0 through the ring */
    const size_t ring = ringed ? nch * CHUNK : 0;
    const size_t bytes = (8 * row_len + 8 * row16 + ring) * sizeof(uint32_t) +
                         img_total * sizeof(uint16_t) + 64;
    unsigned char *block = env->alloc(env->opaque, bytes);
    if (!block)
        return -ENOMEM;

    pthread_once(&log2_table_once, log2_table_init);
    const uint16_t *log2_table = log2_table_mem;
    uint32_t *rows = (uint32_t *)block;
    Rows5 horz;
    uint32_t **hr[5] = {&horz.mu1, &horz.mu2, &horz.xx, &horz.yy, &horz.xy};
    for (int q = 0; q < 5; q++)
        *hr[q] = rows + q * row_len;
    uint32_t *sub1 = rows + 5 * row_len + MAX_HALF, *sub2 = rows + 6 * row_len + MAX_HALF;
    uint8_t *lg = (uint8_t *)(rows + 7 * row_len); /* row_len * 4 bytes */
    uint32_t *rows32 = rows + 8 * row_len;
    Rows8 vert;
    for (int q = 0; q < 8; q++)
        vert.q[q] = rows32 + q * row16 + MAX_HALF;
    uint32_t *ring_mem = rows32 + 8 * row16;
    uint16_t *img_mem = (uint16_t *)(ring_mem + ring);

    unsigned ring_done = 0; /* padded rows in the ring */

    Image img[4];
    img[0] = (Image){ref->data, dist->data, ref->stride, w, h};
    for (int s = 1; s < 4; s++) {
        const ptrdiff_t st = ((ptrdiff_t)ws[s] + 31) & ~(ptrdiff_t)31;
        img[s] = (Image){img_mem, img_mem + st * hs[s], st, ws[s], hs[s]};
        img_mem += 2 * st * hs[s];
    }

    int rc = 0;
    double out[4];
    unsigned checked = 0;
    for (int s = 0; s < 4 && !rc; s++) {
        const Image im = img[s];
        const int fw = vif_width[s], half = fw / 2;
        const unsigned sh_mu = s == 0 ? bpc : 16;
        const unsigned sh_sq = s == 0 ? 2 * (bpc - 8) : 16;
        const int fwn = s < 3 ? vif_width[s + 1] : 0, halfn = fwn / 2;
        Accum acc = {0, 0, 0, 0};
        for (unsigned i = 0; i < im.h; i++) {
            if (i % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque)) {
                rc = -ECANCELED;
                break;
            }
            if (s == 0 && !ringed) { /* else checked as the ring takes the rows */
                const unsigned need = i + half + 1 < h ? i + half + 1 : h;
                for (; checked < need; checked++)
                    if (row_out_of_range(ref->data + checked * ref->stride, w, max) ||
                        row_out_of_range(dist->data + checked * dist->stride, w, max)) {
                        rc = -EINVAL;
                        break;
                    }
                if (rc)
                    break;
            }
            const uint16_t *r[17], *d[17];
            for (int k = 0; k < fw; k++) {
                const int row = vdnn_mirror((int)i - half + k, (int)im.h);
                r[k] = im.ref + row * im.stride;
                d[k] = im.dis + row * im.stride;
            }
            if (s == 0 && ringed) {
                /* Padded rows up to i + 16 hold every source row up to
                 * i + 8: all the rows this row's passes read, the next
                 * scale's (i + 4) included. */
                for (; ring_done <= i + 16 && !rc; ring_done++) {
                    const unsigned row = (unsigned)vdnn_mirror((int)ring_done - 8, (int)h);
                    if (ring_row(ref->data + row * ref->stride, dist->data + row * dist->stride,
                                 w, nch, ring_mem, ring_done % 17) & ~max)
                        rc = -EINVAL;
                }
                if (rc)
                    break;
                const uint32_t *window = ring_mem + (size_t)(i % 17) * NQ * CW;
#if VIF_RING_ANY_DEPTH
                if (bpc != 8)
                    vstat_17_split(window, nch, sh_mu, sh_sq, vert);
                else
#endif
                    vstat_17_8bit(window, nch, vert);
            } else {
                vertical_stat(r, d, s, im.w, sh_mu, sh_sq, vert);
            }
            for (int q = 0; q < 8; q++)
                pad_row16(vert.q[q], im.w, half);
            horizontal_stat(vert, s, im.w, horz);
            stat_row(horz, im.w, log2_table, enhn_gain_limit, lg, &acc);

            if (s < 3 && (i & 1) == 0 && i / 2 < img[s + 1].h) {
                for (int k = 0; k < fwn; k++) {
                    const int row = vdnn_mirror((int)i - halfn + k, (int)im.h);
                    r[k] = im.ref + row * im.stride;
                    d[k] = im.dis + row * im.stride;
                }
                vertical_sub(r, d, s + 1, im.w, sh_mu, sub1, sub2);
                pad_row(sub1, im.w, halfn);
                pad_row(sub2, im.w, halfn);
                const Image nx = img[s + 1];
                horizontal_sub(sub1, sub2, s + 1, nx.w,
                               (uint16_t *)nx.ref + (i / 2) * nx.stride,
                               (uint16_t *)nx.dis + (i / 2) * nx.stride);
            }
        }
        const float num = (float)(acc.num_log / 2048.0 +
                                  (acc.den_non_log - (acc.num_non_log / 16384.0) / 65025.0));
        const float den = (float)(acc.den_log / 2048.0 + acc.den_non_log);
        out[s] = num / den;
    }
    env->release(env->opaque, block);
    if (rc)
        return rc;
    for (int s = 0; s < 4; s++)
        scores[s] = out[s];
    return 0;
}
