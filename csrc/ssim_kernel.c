/* ssim_y on the CPU (fr_kernels.h says what it computes), separable, one
 * output row at a time:
 *
 *   pass 1   the planes' sample sums (vdnn_fr_scan, exact), samples
 *            above the bit depth refused: the centres cx, cy
 *   pass 2   vdnn_ssim_planes (on the samples here; on vdnn_float_ssim's
 *            decimated values too): for each group of 4 output rows, the
 *            input rows' five maps that are new into a ring of 14 rows a
 *            map; each map's vertical pass for the 4 rows at once
 *            (vertical_group), then per row the horizontal pass, each
 *            pixel's SSIM as a fixed-point integer, the row's integers
 *            summed
 *
 * The ring (14 rows of each map) and the passes' rows take ~96 w floats:
 * ~0.7 MB at 1080p, in L2; its 14 rows are read once for every 4 output
 * rows (vertical_group). Each loop runs over columns, which the compiler
 * vectorises (VDNN_TARGET_CLONES): the per-pixel arithmetic is
 * gpu/ssim_kernels.h's functions, which the GPU kernel calls in the same
 * order, never contracted into FMAs (dialect.h turns contraction off for
 * everything after it in this file, as --fmad=false does for NVRTC). */
#include <errno.h>

#include "fr_kernels.h"

/* Before the arithmetic's functions too: gcc inlines only functions of the
 * same options into these loops. no-trapping-math changes no value (only
 * whether exception flags may be raised): without it gcc neither inlines
 * truncf nor if-converts ssim_fixed's clamps in a target_clones function,
 * and the SSIM loop stays scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off", "vect-cost-model=dynamic", "no-trapping-math")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif
/* the arithmetic; the kernels (and psnr_kernels.h's), unused here, are
 * the emulator's */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/ssim_kernels.h"
#pragma GCC diagnostic pop

/* Rows between polls of env->cancelled. */
#define ROWS_PER_TILE 32

static const float window[SSIM_TAPS] = SSIM_WINDOW;

/* Pixel j's five maps into the five rows (inlined into loops whose row
 * pointers are restrict). */
static inline void put_maps(float *m0, float *m1, float *m2, float *m3, float *m4, unsigned j,
                            float xc, float yc)
{
    float m[5];
    ssim_maps(xc, yc, m);
    m0[j] = m[0];
    m1[j] = m[1];
    m2[j] = m[2];
    m3[j] = m[3];
    m4[j] = m[4];
}

/* One input row's five maps, from samples (normalised on the way: one
 * pass) or from values on [0, 1] (values[0] not NULL). */
VDNN_TARGET_CLONES
static void maps_row(const VdnnSsimPlanes *planes, unsigned y, unsigned w, float peak, float cx,
                     float cy, float *const out[5])
{
    float *restrict m0 = out[0], *restrict m1 = out[1], *restrict m2 = out[2];
    float *restrict m3 = out[3], *restrict m4 = out[4];
    if (planes->values[0]) {
        const float *restrict a = planes->values[0] + (size_t)y * w;
        const float *restrict b = planes->values[1] + (size_t)y * w;
        for (unsigned j = 0; j < w; j++)
            put_maps(m0, m1, m2, m3, m4, j, a[j] - cx, b[j] - cy);
    } else {
        const uint16_t *restrict a = planes->ref->data + (ptrdiff_t)y * planes->ref->stride;
        const uint16_t *restrict b = planes->dist->data + (ptrdiff_t)y * planes->dist->stride;
        for (unsigned j = 0; j < w; j++)
            put_maps(m0, m1, m2, m3, m4, j, ssim_sample(a[j], peak) - cx,
                     ssim_sample(b[j], peak) - cy);
    }
}

/* The horizontal pass of one map's row: out[x] = the window over in[x],
 * in[x + 1], ..., in[x + 10] (first product, then the others added in
 * order). The window is symmetric: tap 10 - k is tap k. */
VDNN_TARGET_CLONES
static void horizontal(const float *restrict in, float *restrict out, unsigned n)
{
    const float t0 = window[0], t1 = window[1], t2 = window[2], t3 = window[3];
    const float t4 = window[4], t5 = window[5];
    for (unsigned x = 0; x < n; x++) {
        const float *restrict p = in + x;
        float acc = t0 * p[0];
        acc = acc + t1 * p[1];
        acc = acc + t2 * p[2];
        acc = acc + t3 * p[3];
        acc = acc + t4 * p[4];
        acc = acc + t5 * p[5];
        acc = acc + t4 * p[6];
        acc = acc + t3 * p[7];
        acc = acc + t2 * p[8];
        acc = acc + t1 * p[9];
        acc = acc + t0 * p[10];
        out[x] = acc;
    }
}

/* Tap k of a window sum: its first product, or the sum so far plus it. */
static inline float tap(float acc, int k, float v)
{
    return k == 0 ? window[0] * v : acc + window[k] * v;
}

/* Input row k of a group into output row r's sum where it is in r's
 * window (k - r in 0..10): each sum takes its taps in order. */
#define GROUP_ROW(k)                                                                     \
    do {                                                                                 \
        const float v = p##k[j];                                                         \
        if ((k) <= 10)                                                                   \
            a0 = tap(a0, (k), v);                                                        \
        if ((k) >= 1 && (k) <= 11)                                                       \
            a1 = tap(a1, (k) - 1, v);                                                    \
        if ((k) >= 2 && (k) <= 12)                                                       \
            a2 = tap(a2, (k) - 2, v);                                                    \
        if ((k) >= 3)                                                                    \
            a3 = tap(a3, (k) - 3, v);                                                    \
    } while (0)

/* The vertical pass of one map at GROUP output rows at once (out,
 * out + out_step, ...) from the GROUP + 10 input rows rows[0..]: each input
 * row is loaded once for the GROUP sums it is in (a quarter of the L2
 * traffic of one row at a time); the same sums. */
#define GROUP 4
VDNN_TARGET_CLONES
static void vertical_group(const float *const rows[GROUP + SSIM_TAPS - 1], float *restrict out,
                           ptrdiff_t out_step, unsigned n)
{
    const float *restrict p0 = rows[0], *restrict p1 = rows[1], *restrict p2 = rows[2];
    const float *restrict p3 = rows[3], *restrict p4 = rows[4], *restrict p5 = rows[5];
    const float *restrict p6 = rows[6], *restrict p7 = rows[7], *restrict p8 = rows[8];
    const float *restrict p9 = rows[9], *restrict p10 = rows[10], *restrict p11 = rows[11];
    const float *restrict p12 = rows[12], *restrict p13 = rows[13];
    for (unsigned j = 0; j < n; j++) {
        float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        GROUP_ROW(0);
        GROUP_ROW(1);
        GROUP_ROW(2);
        GROUP_ROW(3);
        GROUP_ROW(4);
        GROUP_ROW(5);
        GROUP_ROW(6);
        GROUP_ROW(7);
        GROUP_ROW(8);
        GROUP_ROW(9);
        GROUP_ROW(10);
        GROUP_ROW(11);
        GROUP_ROW(12);
        GROUP_ROW(13);
        out[j] = a0;
        out[out_step + j] = a1;
        out[2 * out_step + j] = a2;
        out[3 * out_step + j] = a3;
    }
}

/* The sum of n integer-valued floats, |v| <= 2^32, n <= 2^15: every
 * partial sum is an integer below 2^53, exact in double in any order, so
 * the compiler may reassociate it into vector lanes (which it does only
 * when told: the options change no value here). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("associative-math", "no-signed-zeros")))
#endif
VDNN_TARGET_CLONES
static double exact_sum(const float *restrict v, unsigned n)
{
#if defined(__clang__)
#pragma clang fp reassociate(on)
#endif
    double sum = 0;
    for (unsigned x = 0; x < n; x++)
        sum += (double)v[x];
    return sum;
}

/* The row's SSIM in fixed point (ssim_fixed), summed exactly. q: ow floats
 * of scratch. */
VDNN_TARGET_CLONES
static int64_t ssim_row(const float *const f[5], unsigned ow, float cx, float cy,
                        float *restrict q)
{
    const float *restrict f0 = f[0], *restrict f1 = f[1], *restrict f2 = f[2];
    const float *restrict f3 = f[3], *restrict f4 = f[4];
    for (unsigned x = 0; x < ow; x++) {
        const float fs[5] = {f0[x], f1[x], f2[x], f3[x], f4[x]};
        q[x] = ssim_fixed(ssim_value(fs, cx, cy));
    }
    return (int64_t)exact_sum(q, ow);
}

int vdnn_ssim_planes(const VdnnKernelEnv *env, const VdnnSsimPlanes *planes, unsigned w,
                     unsigned h, float cx, float cy, double *ssim)
{
    const unsigned ow = w - 2 * SSIM_RADIUS;
    const float peak = planes->values[0] ? 1.0f : (float)((1u << planes->ref->bpc) - 1u);
    /* the ring: map m's input row i at row m * RING + i % RING (w floats
     * each); then GROUP vertical rows a map (w each), the five filtered
     * rows and q (ow each) */
    enum { RING = GROUP + SSIM_TAPS - 1 };
    const size_t ring_floats = (size_t)5 * RING * w;
    float *ring = env->alloc(env->opaque, (ring_floats + 5 * GROUP * (size_t)w +
                                           6 * (size_t)ow) * sizeof(float));
    if (!ring)
        return -ENOMEM;
    float *vrows = ring + ring_floats, *frow = vrows + 5 * GROUP * (size_t)w;
    float *q = frow + 5 * (size_t)ow;
    const float *filtered[5];
    for (int m = 0; m < 5; m++)
        filtered[m] = frow + m * (size_t)ow;

    int rc = 0;
    int64_t total = 0;
    const unsigned oh = h - 2 * SSIM_RADIUS;
    unsigned mapped = 0; /* input rows 0..mapped-1 are in the ring */
    for (unsigned y = 0; y < oh; y += GROUP) {
        if (y % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque)) {
            rc = -ECANCELED;
            break;
        }
        const unsigned rows = oh - y < GROUP ? oh - y : GROUP; /* output rows y.. */
        const unsigned last = y + rows + SSIM_TAPS - 2;       /* their last input row */
        for (; mapped <= last; mapped++) {
            float *slot[5];
            for (int m = 0; m < 5; m++)
                slot[m] = ring + ((size_t)m * RING + mapped % RING) * w;
            maps_row(planes, mapped, w, peak, cx, cy, slot);
        }
        for (int m = 0; m < 5; m++) {
            /* a last group of fewer rows: the rows past the frame read its
             * last row again, their sums unused */
            const float *in[RING];
            for (unsigned k = 0; k < RING; k++)
                in[k] = ring + ((size_t)m * RING + (y + k <= last ? y + k : last) % RING) * w;
            vertical_group(in, vrows + (size_t)m * GROUP * w, (ptrdiff_t)w, w);
        }
        for (unsigned r = 0; r < rows; r++) {
            for (int m = 0; m < 5; m++)
                horizontal(vrows + ((size_t)m * GROUP + r) * w, frow + m * (size_t)ow, ow);
            total += ssim_row(filtered, ow, cx, cy, q);
        }
    }
    env->release(env->opaque, ring);
    if (rc)
        return rc;
    *ssim = ssim_mean(total, (int)w, (int)h);
    return 0;
}

int vdnn_ssim_y(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                double *ssim)
{
    uint64_t sums[3];
    int rc = vdnn_fr_check(env, ref, dist, ssim, SSIM_TAPS);
    if (rc || (rc = vdnn_fr_scan(env, ref, dist, sums)))
        return rc;
    const int w = (int)ref->w, h = (int)ref->h, bpc = (int)ref->bpc;
    const VdnnSsimPlanes planes = {ref, dist, {NULL, NULL}};
    return vdnn_ssim_planes(env, &planes, ref->w, ref->h, ssim_centre(sums[0], w, h, bpc),
                            ssim_centre(sums[1], w, h, bpc), ssim);
}
