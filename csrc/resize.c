/* Luma normalisation and separable resizing for tiny-model inputs; see
 * resize.h for the sampling convention. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "resize.h"

void vdnn_plane_normalise(const void *data, ptrdiff_t stride, unsigned w, unsigned h,
                          unsigned bpc, float *dst)
{
    /* sample * (1 / max) in double, then rounded to float, equals the
     * correctly rounded float sample / max (so max gives exactly 1.0f): the
     * double error (~2^-53) is far below the distance (>= 2^-41 relative)
     * from any such quotient to a float rounding boundary. A multiply,
     * unlike a division, vectorises. */
    const double scale = 1.0 / (double)((1u << bpc) - 1u);
    for (unsigned y = 0; y < h; y++) {
        const unsigned char *row = (const unsigned char *)data + (ptrdiff_t)y * stride;
        float *out = dst + (size_t)y * w;
        if (bpc == 8)
            for (unsigned x = 0; x < w; x++)
                out[x] = (float)(row[x] * scale);
        else
            for (unsigned x = 0; x < w; x++)
                out[x] = (float)(((const uint16_t *)(const void *)row)[x] * scale);
    }
}

void vdnn_plane_samples(const void *data, ptrdiff_t stride, unsigned w, unsigned h,
                        unsigned bpc, uint16_t *dst)
{
    for (unsigned y = 0; y < h; y++) {
        const unsigned char *row = (const unsigned char *)data + (ptrdiff_t)y * stride;
        uint16_t *out = dst + (size_t)y * w;
        if (bpc == 8)
            for (unsigned x = 0; x < w; x++)
                out[x] = row[x];
        else
            memcpy(out, row, (size_t)w * sizeof(uint16_t));
    }
}

void vdnn_plane_samples8(const void *data, ptrdiff_t stride, unsigned w, unsigned h,
                         uint8_t *dst)
{
    for (unsigned y = 0; y < h; y++)
        memcpy(dst + (size_t)y * w, (const unsigned char *)data + (ptrdiff_t)y * stride, w);
}

void vdnn_samples_narrow(const uint16_t *src, size_t n, uint8_t *dst)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)src[i];
}

void vdnn_fp32_to_samples(const float *src, size_t n, unsigned bpc, uint16_t *dst)
{
    const float max = (float)((1u << bpc) - 1u);
    for (size_t i = 0; i < n; i++) {
        const float v = src[i];
        const float c = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; /* NaN: 0 */
        dst[i] = (uint16_t)(c * max + 0.5f);
    }
}

void vdnn_samples_rescale(const uint16_t *src, size_t n, unsigned from, unsigned to,
                          uint16_t *dst)
{
    const double scale = 1.0 / (double)((1u << from) - 1u); /* as vdnn_plane_normalise */
    for (size_t i = 0; i < n; i++) {
        const float v = (float)(src[i] * scale);
        vdnn_fp32_to_samples(&v, 1, to, &dst[i]);
    }
}

/* Keys' cubic convolution kernel with a = -0.5. */
static double keys_cubic(double t)
{
    const double a = -0.5;
    t = fabs(t);
    if (t <= 1.0)
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    if (t < 2.0)
        return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
    return 0.0;
}

static unsigned clamp_index(long i, unsigned n)
{
    return i < 0 ? 0u : i >= (long)n ? n - 1u : (unsigned)i;
}

/* Fills the taps of one axis: for each of the `dst` outputs, `taps` source
 * indexes (clamped to the edge) and their weights. */
static void fill_axis(VmafDnnResize mode, unsigned taps, unsigned src, unsigned dst,
                      unsigned *index, float *weight)
{
    const double scale = (double)src / dst;
    for (unsigned x = 0; x < dst; x++) {
        unsigned *ix = index + (size_t)x * taps;
        float *wx = weight + (size_t)x * taps;
        if (mode == VMAF_DNN_RESIZE_NEAREST) {
            ix[0] = clamp_index((long)floor((x + 0.5) * scale), src);
            wx[0] = 1.0f;
            continue;
        }
        const double sx = (x + 0.5) * scale - 0.5;
        const double base = floor(sx), t = sx - base;
        if (mode == VMAF_DNN_RESIZE_BILINEAR) {
            ix[0] = clamp_index((long)base, src);
            ix[1] = clamp_index((long)base + 1, src);
            wx[0] = (float)(1.0 - t);
            wx[1] = (float)t;
            continue;
        }
        for (unsigned k = 0; k < 4; k++) {
            ix[k] = clamp_index((long)base - 1 + (long)k, src);
            wx[k] = (float)keys_cubic(t - ((double)k - 1.0));
        }
    }
}

/* Rows first unless the columns first hold strictly fewer floats: equal
 * aspect ratios (the usual resizes) keep the rows-first order and its
 * rounding. */
static int columns_first(unsigned sw, unsigned sh, unsigned dw, unsigned dh)
{
    return (uint64_t)dh * sw < (uint64_t)sh * dw;
}

size_t vdnn_resize_scratch(unsigned sw, unsigned sh, unsigned dw, unsigned dh)
{
    return columns_first(sw, sh, dw, dh) ? (size_t)dh * sw : (size_t)sh * dw;
}

int vdnn_resizer_prepare(VdnnResizer *r, VmafDnnResize mode, unsigned sw, unsigned sh,
                         unsigned dw, unsigned dh)
{
    unsigned taps = mode == VMAF_DNN_RESIZE_NEAREST    ? 1
                    : mode == VMAF_DNN_RESIZE_BILINEAR ? 2
                    : mode == VMAF_DNN_RESIZE_BICUBIC  ? 4
                                                       : 0;
    if (!taps)
        return vdnn_fail(-EINVAL, "resize: mode %d is not a filter", (int)mode);
    if (!sw || !sh || !dw || !dh || sw > VMAF_DNN_MAX_DIMENSION || sh > VMAF_DNN_MAX_DIMENSION ||
        dw > VMAF_DNN_MAX_DIMENSION || dh > VMAF_DNN_MAX_DIMENSION)
        return vdnn_fail(-EINVAL, "resize: %ux%u -> %ux%u is outside 1..%d", sw, sh, dw, dh,
                         VMAF_DNN_MAX_DIMENSION);
    if (r->rows && r->mode == mode && r->sw == sw && r->sh == sh && r->dw == dw && r->dh == dh)
        return 0;

    vdnn_resizer_release(r);
    r->x_index = malloc((size_t)dw * taps * sizeof(*r->x_index));
    r->x_weight = malloc((size_t)dw * taps * sizeof(*r->x_weight));
    r->y_index = malloc((size_t)dh * taps * sizeof(*r->y_index));
    r->y_weight = malloc((size_t)dh * taps * sizeof(*r->y_weight));
    r->rows = malloc(vdnn_resize_scratch(sw, sh, dw, dh) * sizeof(*r->rows));
    if (!r->x_index || !r->x_weight || !r->y_index || !r->y_weight || !r->rows) {
        vdnn_resizer_release(r);
        return vdnn_fail(-ENOMEM, "out of memory resizing %ux%u to %ux%u", sw, sh, dw, dh);
    }
    r->mode = mode;
    r->columns_first = columns_first(sw, sh, dw, dh);
    r->taps = taps;
    r->sw = sw;
    r->sh = sh;
    r->dw = dw;
    r->dh = dh;
    fill_axis(mode, taps, sw, dw, r->x_index, r->x_weight);
    fill_axis(mode, taps, sh, dh, r->y_index, r->y_weight);
    return 0;
}

/* One pass over rows: in (n_rows rows of in_w) -> out (n_rows rows of
 * out_w), each output sample from `taps` samples of its row. */
static void row_pass(const float *in, unsigned n_rows, unsigned in_w, unsigned out_w,
                     unsigned taps, const unsigned *index, const float *weight, float *out)
{
    for (unsigned y = 0; y < n_rows; y++) {
        const float *src = in + (size_t)y * in_w;
        float *dst = out + (size_t)y * out_w;
        for (unsigned x = 0; x < out_w; x++) {
            float acc = 0.0f;
            for (unsigned k = 0; k < taps; k++)
                acc += weight[(size_t)x * taps + k] * src[index[(size_t)x * taps + k]];
            dst[x] = acc;
        }
    }
}

/* One pass over columns: in (rows of width w) -> out (n_out rows of w), each
 * output row a weighted sum of `taps` input rows. */
static void column_pass(const float *in, unsigned w, unsigned n_out, unsigned taps,
                        const unsigned *index, const float *weight, float *out)
{
    for (unsigned y = 0; y < n_out; y++) {
        float *dst = out + (size_t)y * w;
        memset(dst, 0, w * sizeof(*dst));
        for (unsigned k = 0; k < taps; k++) {
            const float *row = in + (size_t)index[(size_t)y * taps + k] * w;
            const float wk = weight[(size_t)y * taps + k];
            for (unsigned x = 0; x < w; x++)
                dst[x] += wk * row[x];
        }
    }
}

void vdnn_resizer_run(VdnnResizer *r, const float *src, float *dst)
{
    if (r->columns_first) {
        column_pass(src, r->sw, r->dh, r->taps, r->y_index, r->y_weight, r->rows);
        row_pass(r->rows, r->dh, r->sw, r->dw, r->taps, r->x_index, r->x_weight, dst);
        return;
    }
    row_pass(src, r->sh, r->sw, r->dw, r->taps, r->x_index, r->x_weight, r->rows);
    column_pass(r->rows, r->dw, r->dh, r->taps, r->y_index, r->y_weight, dst);
}

void vdnn_resizer_release(VdnnResizer *r)
{
    if (!r)
        return;
    free(r->x_index);
    free(r->x_weight);
    free(r->y_index);
    free(r->y_weight);
    free(r->rows);
    memset(r, 0, sizeof(*r));
}
