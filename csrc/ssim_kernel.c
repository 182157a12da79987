/* ssim_y on the CPU (fr_kernels.h says what it computes), separable, one
 * output row at a time:
 *
 *   pass 1   every row's sample sums (vdnn_fr_scan_row, exact), samples
 *            above the bit depth refused: the centres cx, cy
 *   pass 2   input row i's five maps into a ring of 11 rows a map; from
 *            row 10 on, output row i - 10: each map's vertical pass over
 *            its ring, the horizontal pass, the SSIM of each pixel as a
 *            fixed-point integer, the row's integers summed
 *
 * The ring (110 map rows, each twice) and the passes' rows take ~120 w
 * floats: ~0.9 MB at 1080p, of which ~0.45 MB (the 11 rows of the
 * window) is read for each output row, from L2. Each loop runs over columns, which the compiler
 * vectorises (VDNN_TARGET_CLONES): the per-pixel arithmetic is
 * gpu/ssim_kernels.h's functions, which the GPU kernel calls in the same
 * order, never contracted into FMAs (dialect.h turns contraction off for
 * everything after it in this file, as --fmad=false does for NVRTC). */
#include <errno.h>
#include <string.h>

#include "fr_kernels.h"

/* before the arithmetic's functions too: gcc inlines only functions of the
 * same options into these loops */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off", "vect-cost-model=dynamic")
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

/* One input row's five maps. */
VDNN_TARGET_CLONES
static void maps_row(const uint16_t *restrict r, const uint16_t *restrict d, unsigned w,
                     float peak, float cx, float cy, float *restrict m0, float *restrict m1,
                     float *restrict m2, float *restrict m3, float *restrict m4)
{
    for (unsigned j = 0; j < w; j++) {
        float m[5];
        ssim_maps(ssim_sample(r[j], peak) - cx, ssim_sample(d[j], peak) - cy, m);
        m0[j] = m[0];
        m1[j] = m[1];
        m2[j] = m[2];
        m3[j] = m[3];
        m4[j] = m[4];
    }
}

/* out[j] = the window over in[j], in[j + step], ..., in[j + 10 step]
 * (first product, then the others added in order): the vertical pass (in
 * a map's rows, step the row distance) and the horizontal (in a row, step
 * 1). The window is symmetric: tap 10 - k is tap k. */
VDNN_TARGET_CLONES
static void window_pass(const float *restrict in, ptrdiff_t step, float *restrict out, unsigned n)
{
    const float t0 = window[0], t1 = window[1], t2 = window[2], t3 = window[3];
    const float t4 = window[4], t5 = window[5];
    for (unsigned j = 0; j < n; j++) {
        const float *restrict p = in + j;
        float acc = t0 * p[0];
        acc = acc + t1 * p[step];
        acc = acc + t2 * p[2 * step];
        acc = acc + t3 * p[3 * step];
        acc = acc + t4 * p[4 * step];
        acc = acc + t5 * p[5 * step];
        acc = acc + t4 * p[6 * step];
        acc = acc + t3 * p[7 * step];
        acc = acc + t2 * p[8 * step];
        acc = acc + t1 * p[9 * step];
        acc = acc + t0 * p[10 * step];
        out[j] = acc;
    }
}

/* The row's SSIM in fixed point (ssim_fixed), summed: exact in double
 * (integers, |sum| <= 2^15 x 2^32 < 2^53, so the lanes' order is
 * immaterial). q: ow floats of scratch. */
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
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    unsigned x = 0;
    for (; x + 8 <= ow; x += 8)
        for (int l = 0; l < 8; l++)
            lane[l] += (double)q[x + l];
    for (; x < ow; x++)
        lane[0] += (double)q[x];
    double sum = 0;
    for (int l = 0; l < 8; l++)
        sum += lane[l];
    return (int64_t)sum;
}

int vdnn_ssim_y(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                double *ssim)
{
    int rc = vdnn_fr_check(env, ref, dist, ssim, SSIM_TAPS);
    if (rc)
        return rc;
    const unsigned w = ref->w, h = ref->h, bpc = ref->bpc, max = (1u << bpc) - 1u;
    const unsigned ow = w - 2 * SSIM_RADIUS;
    uint64_t sum_r = 0, sum_d = 0;
    for (unsigned y = 0; y < h; y++) {
        if (y % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque))
            return -ECANCELED;
        uint64_t sums[3];
        if (vdnn_fr_scan_row(ref->data + (ptrdiff_t)y * ref->stride,
                             dist->data + (ptrdiff_t)y * dist->stride, w, sums) & ~max)
            return -EINVAL;
        sum_r += sums[0];
        sum_d += sums[1];
    }
    const float cx = ssim_centre(sum_r, (int)w, (int)h, (int)bpc);
    const float cy = ssim_centre(sum_d, (int)w, (int)h, (int)bpc);
    const float peak = (float)max;

    /* the ring: map m's input row i at rows (m * 22 + i % 11) and 11
     * below it (w floats each), so that any 11 consecutive rows lie at one
     * row distance apart; then the five vertical rows (w), the five
     * filtered rows and q (ow each) */
    const size_t ring_floats = (size_t)5 * 2 * SSIM_TAPS * w;
    float *ring = env->alloc(env->opaque, (ring_floats + 5 * (size_t)w + 6 * (size_t)ow) *
                                              sizeof(float));
    if (!ring)
        return -ENOMEM;
    float *vrow = ring + ring_floats, *frow = vrow + 5 * (size_t)w, *q = frow + 5 * (size_t)ow;
    const float *filtered[5];
    for (int m = 0; m < 5; m++)
        filtered[m] = frow + m * (size_t)ow;

    int64_t total = 0;
    for (unsigned i = 0; i < h; i++) {
        if (i % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque)) {
            rc = -ECANCELED;
            break;
        }
        float *slot[5];
        for (int m = 0; m < 5; m++)
            slot[m] = ring + ((size_t)m * 2 * SSIM_TAPS + i % SSIM_TAPS) * w;
        maps_row(ref->data + (ptrdiff_t)i * ref->stride, dist->data + (ptrdiff_t)i * dist->stride,
                 w, peak, cx, cy, slot[0], slot[1], slot[2], slot[3], slot[4]);
        for (int m = 0; m < 5; m++)
            memcpy(slot[m] + (size_t)SSIM_TAPS * w, slot[m], (size_t)w * sizeof(float));
        if (i < SSIM_TAPS - 1)
            continue;
        const unsigned y = i - (SSIM_TAPS - 1); /* the output row */
        for (int m = 0; m < 5; m++) {
            const float *top = ring + ((size_t)m * 2 * SSIM_TAPS + y % SSIM_TAPS) * w;
            window_pass(top, (ptrdiff_t)w, vrow + m * (size_t)w, w);
            window_pass(vrow + m * (size_t)w, 1, frow + m * (size_t)ow, ow);
        }
        total += ssim_row(filtered, ow, cx, cy, q);
    }
    env->release(env->opaque, ring);
    if (rc)
        return rc;
    *ssim = ssim_mean(total, (int)w, (int)h);
    return 0;
}
