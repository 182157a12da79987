/* vdnn_adm_integer: libvmaf's integer ADM (integer_adm.c), fused and row-streamed.
 *
 * What it computes, per frame (the arithmetic of libvmaf's fixed-point ADM,
 * step for step, so that the scores are bit-identical to the ones libvmaf
 * logs as integer_adm2 and integer_adm_scale0..3):
 *
 *  1. Four levels of a db2 wavelet transform (4-tap filters in Q15, with
 *     libvmaf's mirrored borders: index -1 -> 1, index n -> n-1 ...). Level 0
 *     reads the 8..16-bit samples (vertical pass: minus the DC offset, shift
 *     by bpc; horizontal pass: shift by 16; 16-bit intermediates); levels 1..3
 *     read the int32 LL band of the level above (64-bit accumulations, the
 *     per-level shifts 0/16/16 vertical and 15/16/15 horizontal).
 *  2. Decoupling of the distorted detail bands (h, v, d) into a restored part
 *     r = clip(t/o, 0, 1) * o (division by libvmaf's 2^30/x reciprocal
 *     table; level 1..3 normalise the divisor to 15 bits first) and an
 *     additive part a = t - r; where the (h, v) vectors of reference and
 *     distorted are within 1 degree, r is replaced by min/max(r * egl, t)
 *     (adm_enhn_gain_limit, 100 for vmaf_v0.6.1, 1 for vmaf_v0.6.1neg).
 *  3. The CSF weighting of a (the Watson dwt quantisation steps for the
 *     default viewing distance 3 x 1080: libvmaf's fixed constants at level
 *     0, 2^32-scaled factors at levels 1..3) and its 1/30-scaled magnitude.
 *  4. Contrast masking: the threshold of a pixel is the sum over the three
 *     orientations of the 3x3 neighbourhood of those magnitudes (its centre
 *     taken at 1/15 of the CSF value); the numerator sums max(|r*csf| - thr,
 *     0)^3, the denominator sums |o*csf|^3 (reference bands), both with
 *     libvmaf's rounding shifts and int64 row accumulations, over the frame
 *     minus a 10% border (borders mirrored at the frame's edges as libvmaf
 *     does: top/left mirror, bottom/right repeat).
 *  5. Per level and orientation the cube root of each sum plus the cube root
 *     of the noise term area/32 (float, as libvmaf), summed in float; adm2 =
 *     (sum of the levels' numerators) / (sum of their denominators), in
 *     double, with libvmaf's near-zero guard (1.0 when the denominator is
 *     ~0); scales[s] = num[s] / den[s].
 *
 * The default display parameters of vmaf_v0.6.1 are built in
 * (adm_norm_view_dist 3, adm_ref_display_height 1080, CSF mode Watson97,
 * noise weight 1/32); the AIM/adm3 extras of newer libvmaf are not computed.
 *
 * How: each level is computed in one pass over its output rows. A row of
 * the transform (reference and distorted) is decoupled and CSF-weighted at
 * once into a ring of three rows; the masking of a row runs as soon as the
 * row below it exists. Only the LL band of a level (the next level's input)
 * is kept whole. Intermediates are int32 (level 0's are the 16-bit values
 * of libvmaf, widened), so the loops are plain C that the compiler
 * vectorises; the hot row functions are built for AVX2 and baseline.
 * libvmaf's 64-bit sums and products are taken in 32-bit lanes wherever
 * that is exact for every input (split_sum, sq29/sq30, csf_s, mag_c), its
 * 2^30/m table by a float quotient with an exact fix (recip_q: no gathers),
 * and the decoupling for integer gain limits (vmaf_v0.6.1 and its neg
 * variant) in closed form (restore0_i, restore_s_i); a non-integer limit
 * takes the generic paths (decouple_csf0, decouple_csf_s).
 *
 * Known difference: libvmaf's AVX2 16-bit transform (bpc > 8) reads two
 * samples past the row for the last column of level 0 when (w + 1) / 2 is
 * 1 mod 16 (stale buffer contents, not reproducible); this kernel uses the
 * mirrored samples of libvmaf's C code there. That column lies in the
 * excluded border; it reaches the scores only through the LL band.
 *
 * Limits: w, h >= 33. libvmaf's border mirroring needs each level's input to
 * have at least 5 rows and columns (with fewer, its index tables read out of
 * the picture), and the fourth level's input is ceil(w / 8).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/adm_level.h"
#include "vmaf_kernels.h"

/* The row loops are written for the vectoriser; GCC's -O2 cost model
 * ("very cheap") skips most of them and its trapping-math default keeps
 * it from if-converting the selects on doubles. Neither changes a result:
 * no reassociation, no contraction, only selects and vector widths. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-loop-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define ADM_MIN_SIZE 33u
#define ADM_BORDER 0.1
#define NOISE_WEIGHT 0.03125

/* db2 filters in Q15 (libvmaf's dwt2_db2_coeffs_lo / _hi) and the sum of the
 * low-pass taps (the DC offset removed at level 0). */
static const int32_t LO0 = 15826, LO1 = 27411, LO2 = 7345, LO3 = -4240;
static const int32_t HI0 = -4240, HI1 = -7345, HI2 = 27411, HI3 = -15826;
static const int32_t LO_SUM = 46342;

/* Watson's model for Y (a, k, f0, g[theta]) and the 7/9 basis amplitudes. */
static const float W_A = 0.495f, W_K = 0.466f, W_F0 = 0.401f;
static const float W_G[4] = {1.501f, 1.0f, 0.534f, 1.0f};
static const float W_AMP[4][4] = {{0.62171f, 0.67234f, 0.72709f, 0.67234f},
                                  {0.34537f, 0.41317f, 0.49428f, 0.41317f},
                                  {0.18004f, 0.22727f, 0.28688f, 0.22727f},
                                  {0.091401f, 0.11792f, 0.15214f, 0.11792f}};

/* libvmaf's dwt_quant_step for the default display (3 x 1080). k * temp^2
 * in float, as the reference build computes it (in double the factors of
 * levels 1..3 move by an ulp and the scores by ~1e-7). */
static float quant_step(int lambda, int theta)
{
    const float r = (float)(3.0 * 1080 * M_PI / 180.0);
    const float temp = (float)log10(pow(2.0, lambda + 1) * W_F0 * W_G[theta] / r);
    return (float)(2.0 * W_A * pow(10.0, W_K * temp * temp) / W_AMP[lambda][theta]);
}

/* ------------------------------------------------------------------------ */
/* Per-level constants (gpu/adm_level.h: the GPU kernels take the same). */

static inline unsigned ceil_log2_u(double x)
{
    return (unsigned)ceil(log2(x));
}

void vdnn_adm_level(AdmLevel *L, int lev, int win, int hin)
{
    *L = (AdmLevel){0};
    L->lev = lev;
    L->win = win, L->hin = hin;
    L->w = (win + 1) / 2, L->h = (hin + 1) / 2;
    L->left = (int)(L->w * ADM_BORDER - 0.5);
    L->top = (int)(L->h * ADM_BORDER - 0.5);
    L->right = L->w - L->left;
    L->bottom = L->h - L->top;
    L->rlo = L->top > 0 ? L->top - 1 : 0;
    L->rhi = L->bottom + 1 < L->h ? L->bottom + 1 : L->h;
    L->clo = L->left > 0 ? L->left - 1 : 0;
    L->chi = L->right + 1 < L->w ? L->right + 1 : L->w;
    const int w = L->w, h = L->h;

    float rfl[3];
    const float f1 = 1.0f / quant_step(lev, 1), f2 = 1.0f / quant_step(lev, 2);
    rfl[0] = f1, rfl[1] = f1, rfl[2] = f2;
    for (int c = 0; c < 3; c++) {
        L->rf[c] = (uint32_t)(rfl[c] * pow(2, 32));
        L->pow3[c] = pow(rfl[c], 3);
    }
    L->vadd = lev == 1 ? 0 : 32768, L->hadd = lev == 2 ? 32768 : 16384;
    L->vsh = lev == 1 ? 0 : 16, L->hsh = lev == 2 ? 16 : 15;

    const int area_w = L->right - L->left, area_h = L->bottom - L->top;
    static const int SQ_SH[3] = {31, 30, 31};
    static const unsigned CONV[3] = {32, 27, 23};
    unsigned dsh_cub = 0, dsh_acc = 0;
    if (lev == 0) {
        int den_acc_sh = (int)ceil(log2((double)(area_h * area_w)) - 20);
        den_acc_sh = den_acc_sh > 0 ? den_acc_sh : 0;
        L->d_sh_acc = den_acc_sh;
        L->d_add_acc = den_acc_sh > 0 ? (uint64_t)1 << (den_acc_sh - 1) : 0;
        L->shc = pow(2, 18 - den_acc_sh);
    } else {
        dsh_cub = ceil_log2_u(area_w);
        L->d_sh_cub = (int)dsh_cub;
        L->d_add_cub = (uint64_t)(uint32_t)pow(2, (double)dsh_cub - 1);
        dsh_acc = ceil_log2_u(area_h);
        L->d_sh_acc = (int)dsh_acc;
        L->d_add_acc = (uint64_t)(uint32_t)pow(2, (double)dsh_acc - 1);
        L->sq_sh = SQ_SH[lev - 1];
        L->sq_add = (uint64_t)1 << SQ_SH[lev - 1];
        L->shc = pow(2, (double)(unsigned)(CONV[lev - 1] - dsh_acc - dsh_cub));
    }
    unsigned n_sh_hv = 0, n_sh_d = 0, n_sh_cub = 0;
    const unsigned n_sh_acc = ceil_log2_u(h);
    L->n_sh_acc = (int)n_sh_acc;
    L->n_add_acc = (int64_t)(uint32_t)pow(2, (double)n_sh_acc - 1);
    if (lev == 0) {
        n_sh_hv = (unsigned)ceil(log2(w) - 4);
        L->n_add_hv = (uint32_t)pow(2, (double)n_sh_hv - 1);
        n_sh_d = (unsigned)ceil(log2(w) - 3);
        L->n_add_d = (uint32_t)pow(2, (double)n_sh_d - 1);
        L->n_sh_hv = (int)n_sh_hv, L->n_sh_d = (int)n_sh_d;
        L->p_hv = pow(2, (double)(unsigned)(52u - n_sh_hv - n_sh_acc));
        L->p_d = pow(2, (double)(unsigned)(57u - n_sh_d - n_sh_acc));
    } else {
        n_sh_cub = ceil_log2_u(w);
        L->n_sh_cub = (int)n_sh_cub;
        L->n_add_cub = (uint32_t)pow(2, (double)n_sh_cub - 1);
        static const unsigned FS[3] = {45, 39, 36};
        L->fs = (float)pow(2, (double)(unsigned)(FS[lev - 1] - n_sh_cub - n_sh_acc));
    }
    L->noise = powf((float)(area_h * area_w * NOISE_WEIGHT), 1.0f / 3.0f);
}

/* libvmaf's mirrored source indices of the 4 taps of output i (n inputs). */
static void tap_indices(int i, int n, int idx[4])
{
    const int half = (n + 1) / 2;
    if (i == 0 && half - 2 > 0) {
        idx[0] = 1, idx[1] = 0, idx[2] = 1, idx[3] = 2;
        return;
    }
    for (int k = 0; k < 4; k++) {
        int v = 2 * i - 1 + k;
        if (i >= half - 2 && v >= n)
            v = 2 * n - v - 1;
        idx[k] = v;
    }
}

/* ------------------------------------------------------------------------ */
/* Row functions. */

/* Level 0 vertical pass: 4 sample rows -> low / high rows (16-bit values). */
VDNN_TARGET_CLONES_AVX512
static void vpass0(const uint16_t *restrict s0, const uint16_t *restrict s1,
                   const uint16_t *restrict s2, const uint16_t *restrict s3, int n, int bpc,
                   int32_t *restrict lo, int32_t *restrict hi, uint16_t *restrict bits)
{
    const int32_t add = 1 << (bpc - 1);
    const int32_t off = LO_SUM * add;
    uint16_t m = *bits;
    for (int j = 0; j < n; j++) {
        const int32_t a = s0[j], b = s1[j], c = s2[j], d = s3[j];
        m |= (uint16_t)(s0[j] | s1[j] | s2[j] | s3[j]);
        /* In uint32: the 16-bit case wraps in int32 in libvmaf, the result
         * (after the offset) fits. */
        const uint32_t l = (uint32_t)(LO0 * a) + (uint32_t)(LO1 * b) + (uint32_t)(LO2 * c) +
                           (uint32_t)(LO3 * d) - (uint32_t)off + (uint32_t)add;
        const int32_t hh = HI0 * a + HI1 * b + HI2 * c + HI3 * d + add;
        lo[j] = (int16_t)((int32_t)l >> bpc);
        hi[j] = (int16_t)(hh >> bpc);
    }
    *bits = m;
}

/* Level 0 horizontal pass of one low or high row: -> two bands. */
VDNN_TARGET_CLONES_AVX512
static void hpass0(const int32_t *restrict t, int n, int nout, const int *restrict ix0,
                   const int *restrict ix3, int32_t *restrict blo, int32_t *restrict bhi)
{
    /* Edges through the index tables; the inside is 2j-1 .. 2j+2. */
    for (int j = 0; j < nout; j++) {
        if (j == 1 && nout > 3) {
            const int end = nout - 2;
            for (int k = 1; k < end; k++) {
                const int32_t a = t[2 * k - 1], b = t[2 * k], c = t[2 * k + 1], d = t[2 * k + 2];
                blo[k] = (LO0 * a + LO1 * b + LO2 * c + LO3 * d + 32768) >> 16;
                bhi[k] = (HI0 * a + HI1 * b + HI2 * c + HI3 * d + 32768) >> 16;
            }
            j = end - 1;
            continue;
        }
        const int i0 = ix0[j], i3 = ix3[j];
        const int i1 = j == 0 ? 0 : 2 * j, i2 = j == 0 ? 1 : 2 * j + 1;
        (void)n;
        const int32_t a = t[i0], b = t[i1 < n ? i1 : 2 * n - i1 - 1],
                      c = t[i2 < n ? i2 : 2 * n - i2 - 1], d = t[i3];
        blo[j] = (LO0 * a + LO1 * b + LO2 * c + LO3 * d + 32768) >> 16;
        bhi[j] = (HI0 * a + HI1 * b + HI2 * c + HI3 * d + 32768) >> 16;
    }
}

/* Levels 1..3 passes: libvmaf's (int32)((sum_k c_k x_k + add) >> sh) with
 * 64-bit sums, in uint32 lanes. With x = 2^sh xh + xl (0 <= xl < 2^sh):
 * the result is sum c xh (mod 2^32, all the int32 cast keeps) plus
 * floor((sum c xl + add) / 2^sh), the latter taken in uint32 after adding
 * OFF 2^sh (OFF = the sum of the negative taps' magnitudes: 4240 low-pass,
 * 27411 high-pass), which keeps it in [0, 2^32) for sh <= 16, add <= 2^15. */
static inline int32_t split_sum(int32_t c0, int32_t c1, int32_t c2, int32_t c3, int32_t ah,
                                int32_t bh, int32_t ch, int32_t dh, int32_t al, int32_t bl,
                                int32_t cl, int32_t dl, uint32_t addoff, int sh, uint32_t off)
{
    const uint32_t A = (uint32_t)c0 * (uint32_t)ah + (uint32_t)c1 * (uint32_t)bh +
                       (uint32_t)c2 * (uint32_t)ch + (uint32_t)c3 * (uint32_t)dh;
    const uint32_t B = (uint32_t)(c0 * al) + (uint32_t)(c1 * bl) + (uint32_t)(c2 * cl) +
                       (uint32_t)(c3 * dl) + addoff;
    return (int32_t)(A + (B >> sh) - off);
}

VDNN_TARGET_CLONES_AVX512
static void vpass_s(const int32_t *restrict s0, const int32_t *restrict s1,
                    const int32_t *restrict s2, const int32_t *restrict s3, int n, int64_t add,
                    int sh, int32_t *restrict lo, int32_t *restrict hi)
{
    const uint32_t mask = (1u << sh) - 1;
    const uint32_t aol = (uint32_t)add + (4240u << sh), aoh = (uint32_t)add + (27411u << sh);
    if (sh == 0) { /* level 1: the plain sums, mod 2^32 */
        for (int j = 0; j < n; j++) {
            const uint32_t a = (uint32_t)s0[j], b = (uint32_t)s1[j], c = (uint32_t)s2[j],
                           d = (uint32_t)s3[j];
            lo[j] = (int32_t)((uint32_t)LO0 * a + (uint32_t)LO1 * b + (uint32_t)LO2 * c +
                              (uint32_t)LO3 * d + (uint32_t)add);
            hi[j] = (int32_t)((uint32_t)HI0 * a + (uint32_t)HI1 * b + (uint32_t)HI2 * c +
                              (uint32_t)HI3 * d + (uint32_t)add);
        }
        return;
    }
    for (int j = 0; j < n; j++) {
        const int32_t a = s0[j], b = s1[j], c = s2[j], d = s3[j];
        const int32_t ah = a >> sh, bh = b >> sh, ch = c >> sh, dh = d >> sh;
        const int32_t al = (int32_t)((uint32_t)a & mask), bl = (int32_t)((uint32_t)b & mask),
                      cl = (int32_t)((uint32_t)c & mask), dl = (int32_t)((uint32_t)d & mask);
        lo[j] = split_sum(LO0, LO1, LO2, LO3, ah, bh, ch, dh, al, bl, cl, dl, aol, sh, 4240u);
        hi[j] = split_sum(HI0, HI1, HI2, HI3, ah, bh, ch, dh, al, bl, cl, dl, aoh, sh, 27411u);
    }
}

static inline void hsplit(const int32_t *restrict t, int i0, int i1, int i2, int i3, int sh,
                          uint32_t mask, uint32_t aol, uint32_t aoh, int32_t *restrict lo,
                          int32_t *restrict hi)
{
    const int32_t a = t[i0], b = t[i1], c = t[i2], d = t[i3];
    const int32_t ah = a >> sh, bh = b >> sh, ch = c >> sh, dh = d >> sh;
    const int32_t al = (int32_t)((uint32_t)a & mask), bl = (int32_t)((uint32_t)b & mask),
                  cl = (int32_t)((uint32_t)c & mask), dl = (int32_t)((uint32_t)d & mask);
    *lo = split_sum(LO0, LO1, LO2, LO3, ah, bh, ch, dh, al, bl, cl, dl, aol, sh, 4240u);
    *hi = split_sum(HI0, HI1, HI2, HI3, ah, bh, ch, dh, al, bl, cl, dl, aoh, sh, 27411u);
}

VDNN_TARGET_CLONES_AVX512
static void hpass_s(const int32_t *restrict t, int n, int nout, const int *restrict ix0,
                    const int *restrict ix3, int64_t add, int sh, int32_t *restrict blo,
                    int32_t *restrict bhi)
{
    const uint32_t mask = (1u << sh) - 1;
    const uint32_t aol = (uint32_t)add + (4240u << sh), aoh = (uint32_t)add + (27411u << sh);
    for (int j = 0; j < nout; j++) {
        if (j == 1 && nout > 3) {
            const int end = nout - 2;
            for (int k = 1; k < end; k++)
                hsplit(t, 2 * k - 1, 2 * k, 2 * k + 1, 2 * k + 2, sh, mask, aol, aoh, &blo[k],
                       &bhi[k]);
            j = end - 1;
            continue;
        }
        const int i1 = j == 0 ? 0 : 2 * j, i2 = j == 0 ? 1 : 2 * j + 1;
        hsplit(t, ix0[j], i1 < n ? i1 : 2 * n - i1 - 1, i2 < n ? i2 : 2 * n - i2 - 1, ix3[j], sh,
               mask, aol, aoh, &blo[j], &bhi[j]);
    }
}

/* Angle test of libvmaf (float conversions, double arithmetic). */
static inline int angle_ok(double dp, double om, double tm, double cos_sq)
{
    const double d = dp / 4096.0;
    return d >= 0.0 && d * d >= cos_sq * (om / 4096.0) * (tm / 4096.0);
}

/* Level 0 restored value of one coefficient: k = clip(t / o) in Q15 by
 * libvmaf's reciprocal table (2^30 / o truncated, exact in double, as is
 * the rounded product >> 15), r = k * o in Q15, then the gain limit. */
static inline int32_t restore0(int32_t o, int32_t t, int flag, double egl)
{
    const double q = trunc(1073741824.0 / (double)(o == 0 ? 1 : o));
    double x = floor((q * t + 16384.0) * (1.0 / 32768.0));
    x = o == 0 ? 32768.0 : x;
    x = x < 0.0 ? 0.0 : (x > 32768.0 ? 32768.0 : x);
    const int32_t k = (int32_t)x;
    const int32_t rs = (k * o + 16384) >> 15;
    const double g = rs * egl, tt = t;
    const double lim = o > 0 ? (g < tt ? g : tt) : (g > tt ? g : tt);
    return (flag & (k > 0) & (o != 0)) ? (int32_t)lim : rs;
}

/* libvmaf's div_lookup entry 2^30 / m (m = 1 .. 2^15, truncated) without a
 * table (the vectoriser would emulate the gathers): a float quotient within
 * 64 of it, one float correction step to within 1, one exact integer fix.
 * Checked against the integer division for every m (the steps are single
 * roundings, no contraction candidates). */
static inline int32_t recip_q(int32_t m)
{
    const float y = 1073741824.0f / (float)m;
    const int32_t q0 = (int32_t)y;
    const int32_t r0 = 1073741824 - q0 * m;
    const int32_t q1 = q0 + (int32_t)((float)r0 * (y * 0x1p-30f));
    const int32_t r1 = 1073741824 - q1 * m;
    return q1 - (r1 < 0) + (r1 >= m);
}

static inline int32_t restore0_i(int32_t oc, int32_t tc, int32_t flag, int32_t gi)
{
    const int32_t m = oc < 0 ? -oc : oc, a = tc < 0 ? -tc : tc;
    const int32_t q = recip_q(m == 0 ? 1 : m);
    const uint32_t kin = ((uint32_t)q * (uint32_t)a + 16384u) >> 15;
    const int32_t same = ((oc > 0) & (tc > 0)) | ((oc < 0) & (tc < 0));
    const int32_t k = same ? (a > m ? 32768 : (int32_t)kin) : 0;
    const int32_t rs = (k * oc + 16384) >> 15;
    const int32_t g = rs * gi;
    const int32_t lim = oc > 0 ? (g < tc ? g : tc) : (g > tc ? g : tc);
    return (flag & (k > 0)) ? lim : rs;
}

/* Level 0 decoupling + CSF of one row over [c0, c1), integer gain limit
 * `gi` (egl == gi): restore0 in int32 lanes. With m = |o|, a = |t|,
 * q = floor(2^30 / m): k = 0 when t and o differ in sign or either is 0
 * (q t <= 0; o = 0 gives r = 0 in libvmaf too); k = 2^15 when a > m
 * (q (m + 1) >= 2^30 - m + 1 + q > 2^30); else q a <= 2^30 and
 * k = (q a + 2^14) >> 15 in uint32. The gain limit: trunc(min(r gi, t)) =
 * min(r gi, t) for integers. */
VDNN_TARGET_CLONES_AVX512
static void decouple_csf0_i(const int32_t *restrict oh, const int32_t *restrict ov,
                            const int32_t *restrict od, const int32_t *restrict th,
                            const int32_t *restrict tv, const int32_t *restrict td, int c0,
                            int c1, int32_t gi, double cos_sq,
                            int32_t *restrict rh,
                            int32_t *restrict rv, int32_t *restrict rd, int32_t *restrict ah,
                            int32_t *restrict av, int32_t *restrict ad, int32_t *restrict fs)
{
    /* libvmaf's /4096 on each side dropped: scaling by powers of two moves
     * no rounding here (dp^2 and cos_sq om are exact, one rounding after),
     * and the sign of dp is that of the int. */
    for (int j = c0; j < c1; j++) {
        const int32_t o0 = oh[j], o1 = ov[j], t0 = th[j], t1 = tv[j];
        const int32_t dpi = o0 * t0 + o1 * t1;
        const double dp = (float)dpi;
        const double om = (float)(o0 * o0 + o1 * o1);
        const double tm = (float)(t0 * t0 + t1 * t1);
        rh[j] = (dpi >= 0) & (dp * dp >= cos_sq * om * tm);
    }
    for (int j = c0; j < c1; j++) {
        const int32_t t[3] = {th[j], tv[j], td[j]};
        const int32_t flag = rh[j];
        int32_t r[3];
        r[0] = restore0_i(oh[j], t[0], flag, gi);
        r[1] = restore0_i(ov[j], t[1], flag, gi);
        r[2] = restore0_i(od[j], t[2], flag, gi);
        rh[j] = r[0], rv[j] = r[1], rd[j] = r[2];
        const int32_t a0 = (int16_t)(t[0] - r[0]), a1 = (int16_t)(t[1] - r[1]),
                      a2 = (int16_t)(t[2] - r[2]);
        const int32_t ch = (int16_t)((36453 * a0 + 16384) >> 15);
        const int32_t cv = (int16_t)((36453 * a1 + 16384) >> 15);
        const int32_t cd = (int16_t)((49417 * a2 + 65535) >> 17);
        ah[j] = ch, av[j] = cv, ad[j] = cd;
        /* The three magnitudes as their sum: all the masking uses. */
        fs[j] = (int32_t)((uint32_t)(int16_t)((4369 * (ch < 0 ? -ch : ch) + 2048) >> 12) +
                          (uint32_t)(int16_t)((4369 * (cv < 0 ? -cv : cv) + 2048) >> 12) +
                          (uint32_t)(int16_t)((4369 * (cd < 0 ? -cd : cd) + 2048) >> 12));
    }
}

/* Level 0 decoupling + CSF of one row over [c0, c1): 16-bit semantics. */
VDNN_TARGET_CLONES_AVX512
static void decouple_csf0(const int32_t *restrict oh, const int32_t *restrict ov,
                          const int32_t *restrict od, const int32_t *restrict th,
                          const int32_t *restrict tv, const int32_t *restrict td, int c0, int c1,
                          double egl, double cos_sq, int32_t *restrict rh, int32_t *restrict rv,
                          int32_t *restrict rd, int32_t *restrict ah, int32_t *restrict av,
                          int32_t *restrict ad, int32_t *restrict fh, int32_t *restrict fv,
                          int32_t *restrict fd)
{
    /* The angle test first (its int -> float -> double steps keep the
     * vectoriser away), the flags parked in rh. */
    for (int j = c0; j < c1; j++) {
        const int32_t o0 = oh[j], o1 = ov[j], t0 = th[j], t1 = tv[j];
        /* |values| < 2^15: the dot products fit in int32 here. */
        const double dp = (float)(o0 * t0 + o1 * t1) / 4096.0;
        const double om = (float)(o0 * o0 + o1 * o1) / 4096.0;
        const double tm = (float)(t0 * t0 + t1 * t1) / 4096.0;
        rh[j] = (dp >= 0.0) & (dp * dp >= cos_sq * om * tm);
    }
    for (int j = c0; j < c1; j++) {
        const int32_t o0 = oh[j], o1 = ov[j], o2 = od[j], t0 = th[j], t1 = tv[j], t2 = td[j];
        const int flag = rh[j];
        const int32_t r0 = restore0(o0, t0, flag, egl);
        const int32_t r1 = restore0(o1, t1, flag, egl);
        const int32_t r2 = restore0(o2, t2, flag, egl);
        rh[j] = r0, rv[j] = r1, rd[j] = r2;
        const int32_t a0 = (int16_t)(t0 - r0), a1 = (int16_t)(t1 - r1), a2 = (int16_t)(t2 - r2);
        const int32_t ch = (int16_t)((36453 * a0 + 16384) >> 15);
        const int32_t cv = (int16_t)((36453 * a1 + 16384) >> 15);
        const int32_t cd = (int16_t)((49417 * a2 + 65535) >> 17);
        ah[j] = ch, av[j] = cv, ad[j] = cd;
        fh[j] = (int16_t)((4369 * (ch < 0 ? -ch : ch) + 2048) >> 12);
        fv[j] = (int16_t)((4369 * (cv < 0 ? -cv : cv) + 2048) >> 12);
        fd[j] = (int16_t)((4369 * (cd < 0 ? -cd : cd) + 2048) >> 12);
    }
}

static inline uint16_t best15(uint32_t v, int *shift)
{
    int k = 17 - __builtin_clz(v);
    *shift = k;
    return (uint16_t)((v + (1u << (k - 1))) >> k);
}

/* angle_ok without the /4096 scalings: powers of two move no rounding here
 * (d^2 and cos_sq om are exact in double, one rounding after; no overflow
 * or underflow from floats of integers). */
static inline int angle_ok_u(double dp, double om, double tm, double cos_sq)
{
    return dp >= 0.0 && dp * dp >= cos_sq * om * tm;
}

/* Levels 1..3 angle flags: libvmaf converts int64 sums to float. With all
 * |values| < 2^26 the products (< 2^52) and sums (< 2^53) are exact in
 * double, and double -> float rounds as int64 -> float does: a loop the
 * vectoriser takes. Otherwise the int64 loop. */
VDNN_TARGET_CLONES_AVX512
static void angle_flags_s(const int32_t *restrict oh, const int32_t *restrict ov,
                          const int32_t *restrict th, const int32_t *restrict tv, int c0, int c1,
                          double cos_sq, int32_t *restrict flag)
{
    uint32_t big = 0;
    for (int j = c0; j < c1; j++)
        big |= ((uint32_t)oh[j] + (1u << 26)) | ((uint32_t)ov[j] + (1u << 26)) |
               ((uint32_t)th[j] + (1u << 26)) | ((uint32_t)tv[j] + (1u << 26));
    if (big < (1u << 27)) {
        for (int j = c0; j < c1; j++) {
            const double o0 = oh[j], o1 = ov[j], t0 = th[j], t1 = tv[j];
            const float dp = (float)(o0 * t0 + o1 * t1), om = (float)(o0 * o0 + o1 * o1),
                        tm = (float)(t0 * t0 + t1 * t1);
            flag[j] = angle_ok_u(dp, om, tm, cos_sq);
        }
        return;
    }
    for (int j = c0; j < c1; j++) {
        const int64_t o0 = oh[j], o1 = ov[j], t0 = th[j], t1 = tv[j];
        const int64_t dp = o0 * t0 + o1 * t1, om = o0 * o0 + o1 * o1, tm = t0 * t0 + t1 * t1;
        flag[j] = angle_ok_u((float)dp, (float)om, (float)tm, cos_sq);
    }
}

/* Levels 1..3 restored value, integer gain limit gi, in lanes the vectoriser
 * takes: m = |o| normalised to mm <= 2^15 by sh (libvmaf's get_best15:
 * sh = floor(log2 m) - 14 from the exponent of the exact float of m >> 8),
 * q = 2^30 / mm; k is 0 unless t and o have one sign (then (q t) sgn(o) <= 0
 * and the rounding term is < 2^(15+sh), or libvmaf's int32 -2^31 for
 * sh = 17), else ((q a + add) >> (15 + sh)) clipped, with a negative sum
 * (only with that -2^31) giving 0. r = (k o + 2^14) >> 15 by magnitude. */
static inline int32_t restore_s_i(int32_t oc, int32_t tc, int32_t flag, int32_t gi)
{
    const uint32_t m = oc < 0 ? 0u - (uint32_t)oc : (uint32_t)oc;
    const uint32_t a = tc < 0 ? 0u - (uint32_t)tc : (uint32_t)tc;
    union {
        float f;
        uint32_t u;
    } e;
    e.f = (float)(int32_t)(m >> 8);
    const int32_t lg = (int32_t)(e.u >> 23) - 127 + 8; /* floor(log2 m) for m >= 2^15 */
    const uint32_t sh = m >= 32768 ? (uint32_t)(lg - 14) : 0u;
    const uint32_t mm = (m + ((1u << sh) >> 1)) >> sh;
    const uint64_t qa = (uint64_t)(uint32_t)recip_q(mm == 0 ? 1 : (int32_t)mm) * a;
    const int64_t v = (int64_t)qa + (int64_t)(int32_t)(1u << (14 + sh));
    const uint64_t x = (uint64_t)v >> (15 + sh);
    const int32_t same = ((oc > 0) & (tc > 0)) | ((oc < 0) & (tc < 0));
    const uint32_t k = (same & (v >= 0)) ? (x > 32768 ? 32768u : (uint32_t)x) : 0u;
    /* (k m + 2^14 or 2^14 - 1) >> 15 with m = 2^15 mh + ml: k mh <= 2^31. */
    const uint32_t rm = k * (m >> 15) + ((k * (m & 32767u) + (oc < 0 ? 16383u : 16384u)) >> 15);
    const int32_t rs = (int32_t)(oc < 0 ? 0u - rm : rm);
    /* min(r gi, t) (o > 0) or max (o < 0) in int64 (32-bit forms of it keep
     * GCC 12 -O2 from vectorising the loop). */
    const int64_t g = (int64_t)rs * gi;
    const int64_t lim = oc > 0 ? (g < tc ? g : tc) : (g > tc ? g : tc);
    return (flag & (k > 0)) ? (int32_t)lim : rs;
}

/* (int32)((rf a + 2^27) >> 28) (0 <= rf < 2^31) through the unsigned
 * product: rf (a mod 2^32) exceeds rf a by rf 2^32 when a < 0, i.e. by
 * rf 2^4 after the shift. */
static inline int32_t csf_s(int32_t rf, int32_t a)
{
    const uint32_t u = (uint32_t)(((uint64_t)(uint32_t)rf * (uint32_t)a + (1u << 27)) >> 28);
    return (int32_t)(u - (a < 0 ? (uint32_t)rf << 4 : 0u));
}

/* (int32)((143165577 m - 2^31) >> 32) (m = |cv|, INT32_MIN for INT32_MIN)
 * through the unsigned product, as csf_s. */
static inline int32_t mag_c(uint32_t c, int32_t m)
{
    const uint32_t u = (uint32_t)(((uint64_t)c * (uint32_t)m + 0xFFFFFFFF80000000ull) >> 32);
    return (int32_t)(u - (m < 0 ? c : 0u));
}

static inline int32_t mag_s(int32_t m)
{
    return mag_c(143165577u, m);
}

/* Levels 1..3 decoupling + CSF of one row over [c0, c1), integer gain limit
 * (flags from angle_flags_s in rh). The CSF products keep bits 28..59 and
 * 32..63 of int64 values: logical shifts give the same int32. */
VDNN_TARGET_CLONES_AVX512
static void decouple_csf_s_i(const int32_t *restrict oh, const int32_t *restrict ov,
                             const int32_t *restrict od, const int32_t *restrict th,
                             const int32_t *restrict tv, const int32_t *restrict td, int c0,
                             int c1, int32_t gi, int32_t rf0, int32_t rf1, int32_t rf2,
                             int32_t *restrict rh,
                             int32_t *restrict rv, int32_t *restrict rd, int32_t *restrict ah,
                             int32_t *restrict av, int32_t *restrict ad, int32_t *restrict fs)
{
    for (int j = c0; j < c1; j++) {
        const int32_t t0 = th[j], t1 = tv[j], t2 = td[j];
        const int32_t flag = rh[j];
        const int32_t r0 = restore_s_i(oh[j], t0, flag, gi);
        const int32_t r1 = restore_s_i(ov[j], t1, flag, gi);
        const int32_t r2 = restore_s_i(od[j], t2, flag, gi);
        rh[j] = r0, rv[j] = r1, rd[j] = r2;
    }
    /* A loop of its own: GCC 12 -O2 does not vectorise the two together. */
    for (int j = c0; j < c1; j++) {
        const int32_t t0 = th[j], t1 = tv[j], t2 = td[j];
        const int32_t r0 = rh[j], r1 = rv[j], r2 = rd[j];
        const int32_t a0 = (int32_t)((uint32_t)t0 - (uint32_t)r0);
        const int32_t a1 = (int32_t)((uint32_t)t1 - (uint32_t)r1);
        const int32_t a2 = (int32_t)((uint32_t)t2 - (uint32_t)r2);
        const int32_t c0v = csf_s(rf0, a0);
        const int32_t c1v = csf_s(rf1, a1);
        const int32_t c2v = csf_s(rf2, a2);
        ah[j] = c0v, av[j] = c1v, ad[j] = c2v;
        const int32_t m0 = (int32_t)(c0v < 0 ? 0u - (uint32_t)c0v : (uint32_t)c0v);
        const int32_t m1 = (int32_t)(c1v < 0 ? 0u - (uint32_t)c1v : (uint32_t)c1v);
        const int32_t m2 = (int32_t)(c2v < 0 ? 0u - (uint32_t)c2v : (uint32_t)c2v);
        fs[j] = (int32_t)((uint32_t)mag_s(m0) + (uint32_t)mag_s(m1) + (uint32_t)mag_s(m2));
    }
}

/* Levels 1..3 decoupling + CSF of one row over [c0, c1). */
static void decouple_csf_s(const int32_t *restrict oh, const int32_t *restrict ov,
                           const int32_t *restrict od, const int32_t *restrict th,
                           const int32_t *restrict tv, const int32_t *restrict td, int c0,
                           int c1, double egl, double cos_sq, const uint32_t rf[3], const int32_t *restrict recip,
                           int32_t *restrict rh, int32_t *restrict rv, int32_t *restrict rd,
                           int32_t *restrict ah, int32_t *restrict av, int32_t *restrict ad,
                           int32_t *restrict fh, int32_t *restrict fv, int32_t *restrict fd)
{
    int32_t *rr[3] = {rh, rv, rd}, *aa[3] = {ah, av, ad}, *ff[3] = {fh, fv, fd};
    for (int j = c0; j < c1; j++) {
        const int32_t o[3] = {oh[j], ov[j], od[j]};
        const int32_t t[3] = {th[j], tv[j], td[j]};
        const int64_t dp = (int64_t)o[0] * t[0] + (int64_t)o[1] * t[1];
        const int64_t om = (int64_t)o[0] * o[0] + (int64_t)o[1] * o[1];
        const int64_t tm = (int64_t)t[0] * t[0] + (int64_t)t[1] * t[1];
        const int flag = angle_ok((float)dp, (float)om, (float)tm, cos_sq);
        for (int c = 0; c < 3; c++) {
            int64_t k;
            if (o[c] == 0) {
                k = 32768;
            } else {
                const uint32_t ab = (uint32_t)abs(o[c]);
                int sh = 0;
                const uint16_t m = ab < 32768 ? (uint16_t)ab : best15(ab, &sh);
                const int64_t q = recip[m];
                const int64_t x =
                    ((q * t[c]) * (o[c] < 0 ? -1 : 1) + (int64_t)(int32_t)(1u << (14 + sh))) >> (15 + sh);
                k = x < 0 ? 0 : (x > 32768 ? 32768 : x);
            }
            int32_t rs = (int32_t)((k * o[c] + 16384) >> 15);
            if (flag && k > 0 && o[c] > 0) {
                const double g = rs * egl;
                rs = (int32_t)(g < t[c] ? g : t[c]);
            } else if (flag && k > 0 && o[c] < 0) {
                const double g = rs * egl;
                rs = (int32_t)(g > t[c] ? g : t[c]);
            }
            const int32_t a = t[c] - rs;
            rr[c][j] = rs;
            const int32_t cv = (int32_t)(((int64_t)rf[c] * a + (1 << 27)) >> 28);
            aa[c][j] = cv;
            ff[c][j] = (int32_t)(((int64_t)143165577 * abs(cv) + (int64_t)INT32_MIN) >> 32);
        }
    }
}

/* Denominator sums of one row: level 0 (exact cubes). */
VDNN_TARGET_CLONES_AVX512
static void den_row0(const int32_t *restrict h, const int32_t *restrict v,
                     const int32_t *restrict d, int c0, int c1, uint64_t out[3])
{
    uint64_t sh = 0, sv = 0, sd = 0;
    for (int j = c0; j < c1; j++) {
        const uint64_t a = (uint16_t)abs(h[j]), b = (uint16_t)abs(v[j]), c = (uint16_t)abs(d[j]);
        sh += a * a * a, sv += b * b * b, sd += c * c * c;
    }
    out[0] = sh, out[1] = sv, out[2] = sd;
}

VDNN_TARGET_CLONES_AVX512
static void den_row_s(const int32_t *restrict h, const int32_t *restrict v,
                      const int32_t *restrict d, int c0, int c1, uint64_t add_sq, int sh_sq,
                      uint64_t add_cub, int sh_cub, uint64_t out[3])
{
    uint64_t s0 = 0, s1 = 0, s2 = 0;
    for (int j = c0; j < c1; j++) {
        const uint64_t a = (uint32_t)abs(h[j]), b = (uint32_t)abs(v[j]), c = (uint32_t)abs(d[j]);
        s0 += ((((a * a) + add_sq) >> sh_sq) * a + add_cub) >> sh_cub;
        s1 += ((((b * b) + add_sq) >> sh_sq) * b + add_cub) >> sh_cub;
        s2 += ((((c * c) + add_sq) >> sh_sq) * c + add_cub) >> sh_cub;
    }
    out[0] = s0, out[1] = s1, out[2] = s2;
}

/* Sum over the 3 rows of the orientations' summed magnitudes, column by
 * column, into t[1..w]; t[0] and t[w+1] get libvmaf's edge columns (1 and
 * w-1). uint32: libvmaf's int32 sums wrap alike. */
VDNN_TARGET_CLONES_AVX512
static void col_sums(const int32_t *restrict u, const int32_t *restrict m,
                     const int32_t *restrict d, int c0, int c1, int32_t *restrict t)
{
    for (int j = c0; j < c1; j++)
        t[j + 1] = (int32_t)((uint32_t)u[j] + (uint32_t)m[j] + (uint32_t)d[j]);
}

VDNN_TARGET_CLONES_AVX512
static void sum3(const int32_t *restrict a, const int32_t *restrict b,
                 const int32_t *restrict c, int c0, int c1, int32_t *restrict s)
{
    for (int j = c0; j < c1; j++)
        s[j] = (int32_t)((uint32_t)a[j] + (uint32_t)b[j] + (uint32_t)c[j]);
}

/* (int32)((x^2 + 2^28) >> 29) and (int32)((x^2 + 2^29) >> 30) for
 * 0 <= x < 2^31 in uint32 lanes: with x = 2^15 u + v (v < 2^15),
 * x^2 = 2^30 u^2 + 2^16 u v + v^2 and the shifts nest. */
static inline int32_t sq29(int32_t x)
{
    const uint32_t u = (uint32_t)x >> 15, v = (uint32_t)x & 32767u;
    return (int32_t)(2u * u * u + ((u * v + ((v * v + (1u << 28)) >> 16)) >> 13));
}

static inline int32_t sq30(int32_t x)
{
    const uint32_t u = (uint32_t)x >> 15, v = (uint32_t)x & 32767u;
    return (int32_t)(u * u + ((u * v + ((v * v + (1u << 29)) >> 16)) >> 14));
}

/* Level 0 masking of one row over [c0, c1): the threshold from the column
 * sums t (3 columns) minus the centre magnitudes plus the centre's 1/15. */
/* ((int64_t)q * x + add) >> sh, q and x >= 0, as libvmaf's builds evaluate
 * it: wrapping past 2^63 (only extreme planes get there; the kernel fuzzer
 * found one) instead of signed overflow, which is undefined behaviour in C.
 * The conversion back to int64_t and the shift of a negative value are
 * implementation-defined (modulo, arithmetic) in every compiler built for. */
static inline uint64_t cube_term(int32_t q, int32_t x, int64_t add, int sh)
{
    return (uint64_t)((int64_t)((uint64_t)(uint32_t)q * (uint32_t)x + (uint64_t)add) >> sh);
}

VDNN_TARGET_CLONES_AVX512
static void cm_row0(const int32_t *restrict t, const int32_t *restrict fs,
                    const int32_t *restrict ah, const int32_t *restrict av,
                    const int32_t *restrict ad, const int32_t *restrict rh,
                    const int32_t *restrict rv, const int32_t *restrict rd, int c0, int c1,
                    int sh_hv, int64_t add_hv, int sh_d, int64_t add_d, int64_t out[3])
{
    uint64_t s0 = 0, s1 = 0, s2 = 0; /* int64 sums, wrapping as libvmaf's do */
    for (int j = c0; j < c1; j++) {
        const uint32_t cen = (uint32_t)(int16_t)((8738 * abs(ah[j]) + 2048) >> 12) +
                             (uint32_t)(int16_t)((8738 * abs(av[j]) + 2048) >> 12) +
                             (uint32_t)(int16_t)((8738 * abs(ad[j]) + 2048) >> 12);
        const uint32_t thr = (uint32_t)t[j] + (uint32_t)t[j + 1] + (uint32_t)t[j + 2] -
                             (uint32_t)fs[j] + cen;
        int32_t xh = abs(rh[j] * 36453) - (int32_t)(thr << 10);
        int32_t xv = abs(rv[j] * 36453) - (int32_t)(thr << 10);
        int32_t xd = abs(rd[j] * 49417) - (int32_t)(thr << 12);
        xh = xh < 0 ? 0 : xh;
        xv = xv < 0 ? 0 : xv;
        xd = xd < 0 ? 0 : xd;
        const int32_t qh = sq29(xh), qv = sq29(xv), qd = sq30(xd);
        s0 += cube_term(qh, xh, add_hv, sh_hv);
        s1 += cube_term(qv, xv, add_hv, sh_hv);
        s2 += cube_term(qd, xd, add_d, sh_d);
    }
    out[0] = (int64_t)s0, out[1] = (int64_t)s1, out[2] = (int64_t)s2;
}

VDNN_TARGET_CLONES_AVX512
static void cm_row_s(const int32_t *restrict t, const int32_t *restrict fs,
                     const int32_t *restrict ah, const int32_t *restrict av,
                     const int32_t *restrict ad, const int32_t *restrict rh,
                     const int32_t *restrict rv, const int32_t *restrict rd, int c0, int c1,
                     uint32_t rf0, uint32_t rf1, uint32_t rf2, int sh_cub, int64_t add_cub,
                     int64_t out[3])
{
    uint64_t s0 = 0, s1 = 0, s2 = 0; /* int64 sums, wrapping as libvmaf's do */
    for (int j = c0; j < c1; j++) {
        const uint32_t cen =
            (uint32_t)mag_c(286331153u, abs(ah[j])) + (uint32_t)mag_c(286331153u, abs(av[j])) +
            (uint32_t)mag_c(286331153u, abs(ad[j]));
        const int32_t thr = (int32_t)((uint32_t)t[j] + (uint32_t)t[j + 1] + (uint32_t)t[j + 2] -
                                      (uint32_t)fs[j] + cen);
        int32_t xh = abs(csf_s((int32_t)rf0, rh[j])) - thr;
        int32_t xv = abs(csf_s((int32_t)rf1, rv[j])) - thr;
        int32_t xd = abs(csf_s((int32_t)rf2, rd[j])) - thr;
        xh = xh < 0 ? 0 : xh;
        xv = xv < 0 ? 0 : xv;
        xd = xd < 0 ? 0 : xd;
        const int32_t qh = sq30(xh), qv = sq30(xv), qd = sq30(xd);
        s0 += cube_term(qh, xh, add_cub, sh_cub);
        s1 += cube_term(qv, xv, add_cub, sh_cub);
        s2 += cube_term(qd, xd, add_cub, sh_cub);
    }
    out[0] = (int64_t)s0, out[1] = (int64_t)s1, out[2] = (int64_t)s2;
}

/* ------------------------------------------------------------------------ */

/* Row buffers of one level's pass. */
typedef struct Work {
    int32_t *tmp[4];          /* ref lo, ref hi, dis lo, dis hi (input width) */
    int32_t *band[8];         /* ref a v h d, dis a v h d of the current row */
    int32_t *ring[3][10];     /* r h v d, csf h v d, mag h v d (generic paths), mag sum */
    int32_t *colsum;          /* w + 2 */
    int *ix0, *ix3;           /* first / last tap index per output column */
    int32_t *recip;           /* 2^30 / m, m = 1 .. 32768 (libvmaf's div_lookup) */
} Work;

typedef struct LevelOut {
    float num, den;
} LevelOut;

/* One level. in_ref/in_dis: level 0 planes (u16) or int32 LL of the level
 * above (stride L->win). ll_ref/ll_dis: this level's LL out (or NULL). */
static int run_level(const VdnnKernelEnv *env, int lev, const AdmLevel *L, const VdnnPlane *pref,
                     const VdnnPlane *pdis, const int32_t *in_ref, const int32_t *in_dis,
                     int32_t *ll_ref, int32_t *ll_dis, Work *wk, double egl, LevelOut *out)
{
    const int w = L->w, h = L->h, win = L->win, hin = L->hin;
    const double cos_sq = (double)(float)(cos(1.0 * M_PI / 180.0) * cos(1.0 * M_PI / 180.0));

    /* Horizontal tap indices. */
    for (int j = 0; j < w; j++) {
        int idx[4];
        tap_indices(j, win, idx);
        wk->ix0[j] = idx[0];
        wk->ix3[j] = idx[3];
    }

    /* Level constants (vdnn_adm_level). */
    const uint32_t *rf = L->rf;
    const int64_t vadd = L->vadd, hadd = L->hadd;
    const int vsh = L->vsh, hsh = L->hsh;

    uint64_t den_acc[3] = {0, 0, 0};
    int64_t num_acc[3] = {0, 0, 0};
    /* Masking rows and columns: all when the border is empty. */
    const int mr0 = L->top, mr1 = L->bottom, mc0 = L->left, mc1 = L->right;
    const int need_hi = ll_ref ? h : L->rhi;

    /* Level 0 reads every sample (rows 0 .. hin - 1 through the taps, all
     * columns): the OR of them all is the range check. */
    uint16_t sample_bits = 0;
    for (int i = 0; i < need_hi; i++) {
        if ((i & 31) == 0 && env->cancelled && env->cancelled(env->opaque))
            return -ECANCELED;
        int iy[4];
        tap_indices(i, hin, iy);
        /* Transform row i of both pictures; the LL band straight into the
         * next level's input. */
        for (int p = 0; p < 2; p++) {
            int32_t *lo = wk->tmp[2 * p], *hi = wk->tmp[2 * p + 1];
            int32_t *ll = p ? ll_dis : ll_ref;
            int32_t *bll = ll ? ll + (ptrdiff_t)i * w : wk->band[4 * p];
            if (lev == 0) {
                const VdnnPlane *pl = p ? pdis : pref;
                const uint16_t *s = pl->data;
                vpass0(s + iy[0] * pl->stride, s + iy[1] * pl->stride, s + iy[2] * pl->stride,
                       s + iy[3] * pl->stride, win, (int)pl->bpc, lo, hi, &sample_bits);
                hpass0(lo, win, w, wk->ix0, wk->ix3, bll, wk->band[4 * p + 1]);
                hpass0(hi, win, w, wk->ix0, wk->ix3, wk->band[4 * p + 2], wk->band[4 * p + 3]);
            } else {
                const int32_t *s = p ? in_dis : in_ref;
                const ptrdiff_t st = win;
                vpass_s(s + iy[0] * st, s + iy[1] * st, s + iy[2] * st, s + iy[3] * st, win, vadd,
                        vsh, lo, hi);
                hpass_s(lo, win, w, wk->ix0, wk->ix3, hadd, hsh, bll, wk->band[4 * p + 1]);
                hpass_s(hi, win, w, wk->ix0, wk->ix3, hadd, hsh, wk->band[4 * p + 2],
                        wk->band[4 * p + 3]);
            }
        }
        if (i < L->rlo || i >= L->rhi)
            continue;
        int32_t *const *rg = wk->ring[i % 3];
        const int32_t *oh = wk->band[2], *ov = wk->band[1], *od = wk->band[3];
        const int32_t *th = wk->band[6], *tv = wk->band[5], *td = wk->band[7];
        if (lev == 0 && egl == floor(egl))
            decouple_csf0_i(oh, ov, od, th, tv, td, L->clo, L->chi, (int32_t)egl, cos_sq, rg[0],
                            rg[1], rg[2], rg[3], rg[4], rg[5], rg[9]);
        else if (lev == 0)
            decouple_csf0(oh, ov, od, th, tv, td, L->clo, L->chi, egl, cos_sq, rg[0], rg[1],
                          rg[2], rg[3], rg[4], rg[5], rg[6], rg[7], rg[8]);
        else if (egl == floor(egl)) {
            angle_flags_s(oh, ov, th, tv, L->clo, L->chi, cos_sq, rg[0]);
            decouple_csf_s_i(oh, ov, od, th, tv, td, L->clo, L->chi, (int32_t)egl,
                             (int32_t)rf[0], (int32_t)rf[1], (int32_t)rf[2], rg[0],
                             rg[1], rg[2], rg[3], rg[4], rg[5], rg[9]);
        } else
            decouple_csf_s(oh, ov, od, th, tv, td, L->clo, L->chi, egl, cos_sq, rf, wk->recip, rg[0], rg[1],
                           rg[2], rg[3], rg[4], rg[5], rg[6], rg[7], rg[8]);
        if (egl != floor(egl)) /* the generic paths write the three magnitudes */
            sum3(rg[6], rg[7], rg[8], L->clo, L->chi, rg[9]);
        if (i >= L->top && i < L->bottom) {
            uint64_t s[3];
            if (lev == 0)
                den_row0(oh, ov, od, L->left, L->right, s);
            else
                den_row_s(oh, ov, od, L->left, L->right, L->sq_add, L->sq_sh, L->d_add_cub,
                          L->d_sh_cub, s);
            for (int c = 0; c < 3; c++)
                den_acc[c] += (s[c] + L->d_add_acc) >> L->d_sh_acc;
        }
        /* Masking of row k = i - 1 (and of the last row). */
        for (int k = i - 1; k <= i; k++) {
            if (k < 0 || k < mr0 || k >= mr1 || (k == i && i != h - 1))
                continue;
            const int up = k == 0 ? 1 : k - 1, dn = k == h - 1 ? h - 1 : k + 1;
            int32_t *const *ru = wk->ring[up % 3], *const *rm = wk->ring[k % 3],
                           *const *rd = wk->ring[dn % 3];
            int32_t *t = wk->colsum;
            const int c0 = mc0 > 0 ? mc0 - 1 : 0, c1 = mc1 + 1 < w ? mc1 + 1 : w;
            col_sums(ru[9], rm[9], rd[9], c0, c1, t);
            /* Edge columns: -1 -> 1, w -> w - 1; t is shifted by one. */
            if (mc0 == 0)
                t[0] = t[2];
            if (mc1 == w)
                t[w + 1] = t[w];
            int64_t s[3];
            /* t[j] .. t[j+2] are columns j-1 .. j+1. */
            if (lev == 0)
                cm_row0(t, rm[9], rm[3], rm[4], rm[5], rm[0], rm[1], rm[2], mc0,
                        mc1, L->n_sh_hv, L->n_add_hv, L->n_sh_d, L->n_add_d, s);
            else
                cm_row_s(t, rm[9], rm[3], rm[4], rm[5], rm[0], rm[1], rm[2], mc0,
                         mc1, rf[0], rf[1], rf[2], L->n_sh_cub, L->n_add_cub, s);
            for (int c = 0; c < 3; c++)
                num_acc[c] += (s[c] + L->n_add_acc) >> L->n_sh_acc;
        }
    }

    if (lev == 0 && sample_bits >> pref->bpc)
        return -EINVAL; /* a sample above 2^bpc - 1 */

    /* Scores of the level, in libvmaf's float/double steps. */
    float nsc[3], dsc[3];
    if (lev == 0) {
        /* libvmaf's AVX2 code (what it runs here) converts h's sum to float
         * before the division, v's and d's not. */
        nsc[0] = powf((float)((float)num_acc[0] / L->p_hv), 1.0f / 3.0f) + L->noise;
        nsc[1] = powf((float)(num_acc[1] / L->p_hv), 1.0f / 3.0f) + L->noise;
        nsc[2] = powf((float)(num_acc[2] / L->p_d), 1.0f / 3.0f) + L->noise;
    } else {
        for (int c = 0; c < 3; c++)
            nsc[c] = powf((float)num_acc[c] / L->fs, 1.0f / 3.0f) + L->noise;
    }
    for (int c = 0; c < 3; c++) {
        const double csf = (double)(den_acc[c] / L->shc) * L->pow3[c];
        dsc[c] = powf((float)csf, 1.0f / 3.0f) + L->noise;
    }
    out->num = nsc[0] + nsc[1] + nsc[2];
    out->den = dsc[0] + dsc[1] + dsc[2];
    return 0;
}

static int check_plane(const VdnnPlane *p)
{
    if (!p->data || p->bpc < 8 || p->bpc > 16 || p->stride < (ptrdiff_t)p->w ||
        p->w < ADM_MIN_SIZE || p->h < ADM_MIN_SIZE || p->w > (1u << 16) || p->h > (1u << 16))
        return -EINVAL;
    return 0; /* the samples' range: checked by level 0's pass (run_level) */
}

VDNN_TARGET_CLONES_AVX512
static void fill_recip(int32_t *restrict r)
{
    /* 2^30 / m truncated: exact through double (the quotient is never within
     * 2^-23 of an integer it does not equal). */
    r[0] = 0;
    for (int m = 1; m <= 32768; m++)
        r[m] = (int32_t)(1073741824.0 / m);
}

static size_t al64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

int vdnn_adm_integer(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                     double enhn_gain_limit, double *adm2, double scales[4])
{
    if (!env || !env->alloc || !env->release || !ref || !dist || !adm2)
        return -EINVAL;
    if (ref->w != dist->w || ref->h != dist->h || ref->bpc != dist->bpc)
        return -EINVAL;
    if (!(enhn_gain_limit >= 1.0) || !(enhn_gain_limit <= 100.0))
        return -EINVAL;
    int rc = check_plane(ref);
    if (!rc)
        rc = check_plane(dist);
    if (rc)
        return rc;

    const int W = (int)ref->w, H = (int)ref->h;
    AdmLevel lv[4];
    vdnn_adm_level(&lv[0], 0, W, H);
    for (int s = 1; s < 4; s++)
        vdnn_adm_level(&lv[s], s, lv[s - 1].w, lv[s - 1].h);

    const int W2 = lv[0].w;
    const size_t ll0 = al64((size_t)lv[0].w * lv[0].h * 4), ll1 = al64((size_t)lv[1].w * lv[1].h * 4);
    const size_t rowin = al64((size_t)W * 4), row2 = al64((size_t)(W2 + 2) * 4);
    const size_t idx = al64((size_t)W2 * sizeof(int));
    const size_t rec = al64(32769 * sizeof(int32_t));
    const size_t total = 2 * ll0 + 2 * ll1 + 4 * rowin + (8 + 30 + 1) * row2 + 2 * idx + rec;
    char *mem = env->alloc(env->opaque, total);
    if (!mem)
        return -ENOMEM;
    char *p = mem;
    int32_t *llA[2], *llB[2];
    llA[0] = (int32_t *)p, p += ll0;
    llA[1] = (int32_t *)p, p += ll0;
    llB[0] = (int32_t *)p, p += ll1;
    llB[1] = (int32_t *)p, p += ll1;
    Work wk;
    for (int k = 0; k < 4; k++)
        wk.tmp[k] = (int32_t *)p, p += rowin;
    for (int k = 0; k < 8; k++)
        wk.band[k] = (int32_t *)p, p += row2;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 10; k++)
            wk.ring[r][k] = (int32_t *)p, p += row2;
    wk.colsum = (int32_t *)p, p += row2;
    wk.ix0 = (int *)p, p += idx;
    wk.ix3 = (int *)p, p += idx;
    wk.recip = (int32_t *)p;
    if (enhn_gain_limit != floor(enhn_gain_limit))
        fill_recip(wk.recip); /* only the generic paths read the table */

    LevelOut lo[4];
    for (int s = 0; s < 4 && !rc; s++) {
        const int32_t *inr = s == 0 ? NULL : (s & 1 ? llA[0] : llB[0]);
        const int32_t *ind = s == 0 ? NULL : (s & 1 ? llA[1] : llB[1]);
        int32_t *outr = s == 3 ? NULL : (s & 1 ? llB[0] : llA[0]);
        int32_t *outd = s == 3 ? NULL : (s & 1 ? llB[1] : llA[1]);
        rc = run_level(env, s, &lv[s], ref, dist, inr, ind, outr, outd, &wk, enhn_gain_limit,
                       &lo[s]);
    }
    env->release(env->opaque, mem);
    if (rc)
        return rc;

    double num = 0, den = 0;
    for (int s = 0; s < 4; s++)
        num += lo[s].num, den += lo[s].den;
    const double limit = 1e-10 * (W * H) / (1920.0 * 1080.0);
    num = num < limit ? 0 : num;
    den = den < limit ? 0 : den;
    *adm2 = den == 0.0 ? 1.0 : num / den;
    if (scales)
        for (int s = 0; s < 4; s++)
            scales[s] = (double)lo[s].num / lo[s].den;
    return 0;
}
