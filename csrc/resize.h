/* Internal: turning a picture's luma plane into what a tiny model reads,
 * samples normalised to fp32, resized to the model's input size.
 *
 * Resampling convention (public: see VmafDnnResize in vmafdnn/context.h):
 * output sample x sits at source position sx = (x + 0.5) * sw / dw - 0.5
 * (half-pixel centres, as OpenCV's cv::resize and PyTorch with
 * align_corners=False); taps outside the plane read the nearest edge sample;
 * the filter keeps its width when shrinking (no area averaging).
 *   NEAREST   source sample floor((x + 0.5) * sw / dw) (OpenCV's
 *             INTER_NEAREST_EXACT, PIL's NEAREST)
 *   BILINEAR  taps floor(sx) and floor(sx) + 1 (OpenCV's INTER_LINEAR)
 *   BICUBIC   taps floor(sx) - 1 .. floor(sx) + 2 with Keys' cubic
 *             convolution, a = -0.5 (OpenCV's INTER_CUBIC uses -0.75);
 *             reproduces linear and quadratic ramps away from the edges
 * The filters are separable: rows first, then columns. Output is fp32 and is
 * neither rounded nor clamped.
 */
#ifndef VMAFDNN_RESIZE_H
#define VMAFDNN_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "vmafdnn/context.h"

/* Converts a w x h plane of `bpc`-bit samples (uint8_t for bpc 8, uint16_t
 * for 9..16; `stride` in bytes) into dst[0, w*h) as sample / (2^bpc - 1),
 * correctly rounded, so the largest sample is exactly 1.0f. The caller has
 * checked the arguments (vmaf_dnn_read_pictures does); samples above
 * 2^bpc - 1 give values above 1. Never fails. */
void vdnn_plane_normalise(const void *data, ptrdiff_t stride, unsigned w, unsigned h,
                          unsigned bpc, float *dst);

/* Copies a w x h plane of `bpc`-bit samples (as vdnn_plane_normalise reads
 * them) into dst[0, w*h) as uint16_t, unchanged: what a model whose picture
 * inputs are UINT16 is fed. Never fails. */
void vdnn_plane_samples(const void *data, ptrdiff_t stride, unsigned w, unsigned h,
                        unsigned bpc, uint16_t *dst);

/* vdnn_plane_samples for a plane of 8-bit samples (one byte each), kept
 * as bytes: what a samples model's session that narrows (UINT8 pictures)
 * is fed. Never fails. */
void vdnn_plane_samples8(const void *data, ptrdiff_t stride, unsigned w, unsigned h,
                         uint8_t *dst);

/* n samples of at most 8 bits held as uint16_t, as bytes (a past picture
 * of an 8-bit clip, for a session that narrows). Never fails. */
void vdnn_samples_narrow(const uint16_t *src, size_t n, uint8_t *dst);

/* Turns n normalised fp32 values (a resized plane) back into `bpc`-bit
 * samples: v * (2^bpc - 1) rounded half up, after clamping v to [0, 1] (a
 * cubic filter overshoots at edges; NaN gives 0), as a scaler hands libvmaf
 * whole samples. Never fails. */
void vdnn_fp32_to_samples(const float *src, size_t n, unsigned bpc, uint16_t *dst);

/* n samples of `from` bits as samples of `to` bits: each normalised as
 * vdnn_plane_normalise does and turned back as vdnn_fp32_to_samples does, so
 * a picture kept as samples reads at a new depth as its normalised plane
 * would. Never fails. */
void vdnn_samples_rescale(const uint16_t *src, size_t n, unsigned from, unsigned to,
                          uint16_t *dst);

/* Resizes one size to another with one filter. Zero-initialise it
 * (VdnnResizer r = {0}) before the first vdnn_resizer_prepare(); it owns its
 * tables and scratch until vdnn_resizer_release(). */
typedef struct VdnnResizer {
    VmafDnnResize mode;
    unsigned sw, sh, dw, dh;
    unsigned taps;         /* per output sample: 1, 2 or 4 */
    unsigned *x_index;     /* dw * taps source columns, clamped; owned */
    float *x_weight;       /* dw * taps; owned */
    unsigned *y_index;     /* dh * taps source rows, clamped; owned */
    float *y_weight;       /* dh * taps; owned */
    int columns_first;     /* the column pass first (see vdnn_resize_scratch) */
    float *rows;           /* vdnn_resize_scratch() floats: the plane after the
                              first pass; owned */
} VdnnResizer;

/* The floats a resize of sw x sh to dw x dh holds between its two passes:
 * sh * dw when the rows are filtered first, dh * sw when the columns are;
 * the resizer takes the smaller (a 1 x 16384 column to a 16384 x 1 row
 * needed 16384 x 16384 floats, 1 GiB, the other way round 1). */
size_t vdnn_resize_scratch(unsigned sw, unsigned sh, unsigned dw, unsigned dh);

/* Sets the resizer up for sw x sh -> dw x dh with `mode` (NEAREST, BILINEAR
 * or BICUBIC); a no-op when it already is. Sizes are 1..VMAF_DNN_MAX_DIMENSION.
 * Returns 0, -EINVAL (another mode or a size out of range: a programming
 * error), -ENOMEM (the resizer is then released). */
int vdnn_resizer_prepare(VdnnResizer *r, VmafDnnResize mode, unsigned sw, unsigned sh,
                         unsigned dw, unsigned dh);

/* Resizes src (sw * sh samples, rows contiguous) into dst (dw * dh samples)
 * with a prepared resizer. src and dst must not overlap. Never fails. */
void vdnn_resizer_run(VdnnResizer *r, const float *src, float *dst);

/* Frees the resizer's memory and zeroes it; it can be prepared again.
 * NULL-safe. */
void vdnn_resizer_release(VdnnResizer *r);

#endif
