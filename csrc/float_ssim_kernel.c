/* float_ssim on the CPU (fr_kernels.h says what it computes): ssim_y's
 * kernel itself where the scale s is 1, else
 *
 *   pass 1   the decimation, one decimated row at a time: its s input rows
 *            (mirrored) added column by column into exact column sums, the
 *            samples' bits ORed on the way; the column sums' runs of s (the
 *            row's ends mirrored) into box sums S, their values
 *            (gpu/float_ssim_kernels.h's formula, the GPU's) into the
 *            decimated planes, S summed exactly for the centres
 *   pass 2   vdnn_ssim_planes (ssim_kernel.c) on the decimated planes
 *
 * Boxes do not overlap, so each input row is added once (the mirrored ones
 * at the top and bottom twice at most) and each column sum read once: the
 * cost per input sample is the same whatever s. At 1080p (s = 4) the SSIM
 * runs on 480 x 270. */
#include <errno.h>

#include "fr_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif
/* the decimation's arithmetic; the kernels (and ssim_kernels.h's,
 * psnr_kernels.h's), unused here, are the emulator's */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/float_ssim_kernels.h"
#pragma GCC diagnostic pop

/* Input rows between polls of env->cancelled (about: whole decimated rows). */
#define ROWS_PER_TILE 64

/* The largest scale: the box's rows are held in an array of this many. */
#define MAX_SCALE 128
_Static_assert((VDNN_FR_MAX_DIMENSION + 128) / 256 <= MAX_SCALE,
               "the largest frame's scale has a row pointer each");

/* sums[x] = the n rows' samples at x, added in order (below 2^23: n <= 128
 * samples of 16 bits); returns the bits of the samples ORed. */
VDNN_TARGET_CLONES
static unsigned column_sums(const uint16_t *const *rows, unsigned n, unsigned w,
                            uint32_t *restrict sums)
{
    unsigned bits = 0;
    const uint16_t *restrict first = rows[0];
    for (unsigned x = 0; x < w; x++) {
        sums[x] = first[x];
        bits |= first[x];
    }
    for (unsigned t = 1; t < n; t++) {
        const uint16_t *restrict r = rows[t];
        for (unsigned x = 0; x < w; x++) {
            sums[x] += r[x];
            bits |= r[x];
        }
    }
    return bits;
}

/* The box sums of a decimated row: boxes[j] = cols[j s .. j s + s - 1]
 * (cols: the column sums from column -s/2 on, mirrored). */
static inline void box_sums_of(const uint32_t *restrict cols, unsigned s, unsigned dw,
                               uint32_t *restrict boxes)
{
    for (unsigned j = 0; j < dw; j++) {
        const uint32_t *restrict c = cols + (size_t)j * s;
        uint32_t box = 0;
        for (unsigned u = 0; u < s; u++)
            box += c[u];
        boxes[j] = box;
    }
}

/* box_sums_of with the common scales (up to 8K) constant, so that the
 * compiler unrolls and vectorises each: a variable s left it a third of
 * the decimation's time at 1080p. */
VDNN_TARGET_CLONES
static void box_sums(const uint32_t *restrict cols, unsigned s, unsigned dw,
                     uint32_t *restrict boxes)
{
    switch (s) {
#define SCALE(k)                                                                         \
    case k:                                                                              \
        box_sums_of(cols, k, dw, boxes);                                                 \
        break;
        SCALE(2)
        SCALE(3)
        SCALE(4)
        SCALE(5)
        SCALE(6)
        SCALE(7)
        SCALE(8)
#undef SCALE
    default:
        box_sums_of(cols, s, dw, boxes);
        break;
    }
}

/* The boxes' values on [0, 1]; returns their exact sum (below 2^45). */
VDNN_TARGET_CLONES
static uint64_t box_values(const uint32_t *restrict boxes, unsigned dw, double unit,
                           float *restrict values)
{
    uint64_t sum = 0;
    for (unsigned j = 0; j < dw; j++) {
        values[j] = fssim_value(boxes[j], unit);
        sum += boxes[j];
    }
    return sum;
}

int vdnn_float_ssim(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                    double *ssim)
{
    int rc = vdnn_fr_check(env, ref, dist, ssim, SSIM_TAPS);
    if (rc)
        return rc;
    const unsigned w = ref->w, h = ref->h, max = (1u << ref->bpc) - 1u;
    const int s = fssim_scale((int)w, (int)h);
    if (s == 1)
        return vdnn_ssim_y(env, ref, dist, ssim);
    const unsigned us = (unsigned)s, pad = us / 2;
    const unsigned dw = (unsigned)fssim_size((int)w, s), dh = (unsigned)fssim_size((int)h, s);
    const double unit = fssim_unit(s, (int)ref->bpc);
    /* the two decimated planes, then a row of column sums (columns -s/2 to
     * w + s - 1: the last box ends before w + s/2) and a row of box sums */
    const size_t plane = (size_t)dw * dh, padded = pad + (size_t)w + us;
    float *values = env->alloc(env->opaque, 2 * plane * sizeof(float) +
                                                (padded + dw) * sizeof(uint32_t));
    if (!values)
        return -ENOMEM;
    uint32_t *cols = (uint32_t *)(values + 2 * plane), *boxes = cols + padded;

    const VdnnPlane *const in[2] = {ref, dist};
    uint64_t sums[2] = {0, 0};
    unsigned bits = 0, since_poll = ROWS_PER_TILE;
    for (unsigned i = 0; i < dh; i++) {
        if (since_poll >= ROWS_PER_TILE) {
            since_poll = 0;
            if (env->cancelled && env->cancelled(env->opaque)) {
                rc = -ECANCELED;
                break;
            }
        }
        since_poll += us;
        const int top = fssim_first((int)i, s);
        for (int p = 0; p < 2; p++) {
            const uint16_t *rows[MAX_SCALE];
            for (unsigned t = 0; t < us; t++) {
                const int y = fssim_mirror(top + (int)t, (int)h);
                rows[t] = in[p]->data + (ptrdiff_t)y * in[p]->stride;
            }
            bits |= column_sums(rows, us, w, cols + pad);
            for (unsigned k = 1; k <= pad; k++) /* column -k is column k - 1 */
                cols[pad - k] = cols[pad + k - 1];
            for (unsigned k = 0; k < us; k++) /* column w + k is column w - 1 - k */
                cols[pad + w + k] = cols[pad + w - 1 - k];
            box_sums(cols, us, dw, boxes);
            sums[p] += box_values(boxes, dw, unit, values + p * plane + (size_t)i * dw);
        }
    }
    /* the rows past the last box, which no box takes: checked all the same */
    for (unsigned y = (unsigned)fssim_first((int)dh, s); !rc && y < h; y++) {
        const uint16_t *row[2] = {ref->data + (ptrdiff_t)y * ref->stride,
                                  dist->data + (ptrdiff_t)y * dist->stride};
        bits |= column_sums(row, 2, w, cols);
    }
    if (!rc && (bits & ~max))
        rc = -EINVAL;
    if (!rc) {
        const VdnnSsimPlanes planes = {ref, dist, {values, values + plane}};
        const float cx = ssim_centre_of(sums[0], (int)dw, (int)dh, unit);
        const float cy = ssim_centre_of(sums[1], (int)dw, (int)dh, unit);
        rc = vdnn_ssim_planes(env, &planes, dw, dh, cx, cy, ssim);
    }
    env->release(env->opaque, values);
    return rc;
}
