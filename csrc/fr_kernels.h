/* Internal: fused CPU kernels for the built-in full-reference metrics
 * ssim_y, float_ssim and psnr_y (tools/gen_builtin_models.py's
 * build_ssim_y, build_float_ssim and build_psnr_y compute them as ONNX
 * graphs), with the conventions of vmaf_kernels.h: its VdnnKernelEnv and
 * VdnnPlane, re-entrant, buffers from env (row bands: a 1080p frame's
 * working set is ~0.5 MB), env->cancelled polled between bands, the same
 * return codes (-EINVAL also for w or h above VDNN_FR_MAX_DIMENSION). The
 * GPU programs vk_ssim, vk_float_ssim and vk_psnr (gpu/programs.h) compute
 * the same numbers from the same formulas (gpu/ssim_kernels.h,
 * gpu/float_ssim_kernels.h, gpu/psnr_kernels.h: both sides call them), bit
 * for bit on the emulator (tests/c/test_gpu_ssim.c, test_gpu_float_ssim.c,
 * test_gpu_psnr.c).
 *
 * Samples are normalised as the library normalises them (resize.c's
 * vdnn_plane_normalise): x = s / (2^bpc - 1) correctly rounded to float.
 */
#ifndef VMAFDNN_FR_KERNELS_H
#define VMAFDNN_FR_KERNELS_H

#include "vmaf_kernels.h"

/* The largest side either kernel takes: gpu/programs.h's VK_MAX_DIMENSION
 * (2^30 samples at most, which the fixed-point sums below rely on). */
#define VDNN_FR_MAX_DIMENSION 32768

/* Mean SSIM of the luma plane (Wang et al. 2004), as build_ssim_y's graph
 * computes it: an 11x11 Gaussian window (sigma 1.5, normalised to sum 1,
 * taps computed in double and rounded to float), C1 = 0.01^2 and
 * C2 = 0.03^2 as floats, the 'valid' region ((w - 10) x (h - 10) output
 * pixels, no padding). In float, the graph's ssim_y_map (nary_sum=False):
 *   x = s / peak, y likewise (peak = 2^bpc - 1)
 *   cx = (float)(sum of ref samples / (w h) / peak) (the sum exact, in
 *        double from there), cy likewise: each frame centred on its mean,
 *        so that the squares are small where SSIM needs the digits
 *   xc = x - cx, yc = y - cy, e = xc - yc; the maps xc, yc, xc^2, yc^2, e^2
 *   each map filtered vertically, then horizontally: acc = tap[0] m[0],
 *        then acc = acc + tap[k] m[k] for k = 1..10 (fx, fy, fxx, fyy, fee)
 *   mu_x = fx + cx, mu_y = fy + cy, var_x = fxx - fx^2, var_y = fyy - fy^2,
 *   var_e = fee - (fx - fy)^2, a1 = 2 mu_x mu_y + C1 (as mu_xy + mu_xy),
 *   b1 = mu_x^2 + mu_y^2 + C1, b2 = var_x + var_y + C2, a2 = b2 - var_e
 *   (2 cov + C2), ssim = (a1 a2) / (b1 b2)
 * Every float operation is written once (ssim_kernels.h) in that order,
 * never contracted into an FMA, so the GPU's map is this one's bit for bit.
 *
 * The mean: each pixel's ssim - 1 in fixed point, truncated to a multiple
 * of 2^-30, summed exactly as integers, then 1 + sum / 2^30 / pixels in
 * double. An integer sum is the same in any order (the GPU's threads and
 * atomics, the CPU's vector lanes), so both sides give the same double; the
 * truncation moves the mean by less than 2^-30 (< 1e-9), far below the
 * float map's own error. The float filtering mirrors the ONNX graph, which
 * agrees with scikit-image's structural_similarity (gaussian_weights,
 * sigma 1.5, data_range 1) within ~5e-7 on real frames; the graph's own
 * float convolutions sum in their own order, so this kernel equals it to
 * a few float ulps, not bit for bit.
 *
 * w, h >= 11 (one output pixel) and <= VDNN_FR_MAX_DIMENSION. *ssim is in
 * [-1, 1] but for float rounding (|ssim - 1| < 2.01 always). */
int vdnn_ssim_y(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                double *ssim);

/* libvmaf's float_ssim with its default (automatic) downscaling, as
 * build_float_ssim's graph computes it: both planes decimated by the scale
 *   s = max(1, round(min(w, h) / 256)), halves rounded up
 * then vdnn_ssim_y's SSIM (the same window, float arithmetic, centring and
 * fixed-point mean) on the decimated planes. s is 1 below 384 lines (or
 * columns): the score is then vdnn_ssim_y's, bit for bit (it is called).
 *
 * The decimation (iqa's _iqa_decimate, as libvmaf runs it): on an axis of
 * n samples, n / s + n % 2 outputs (iqa's count, quirk kept: an odd n gets
 * one more than n / s, and an even n not a multiple of s loses its last
 * samples); output i is the box of the s taps i s - s / 2 .. i s - s / 2 +
 * s - 1, mirrored at the borders with the edge repeated (KBND_SYMMETRIC:
 * -1 -> 0, -2 -> 1, n -> n - 1), the two axes separable. Each decimated
 * sample is kept as its exact integer box sum S (at most s^2 (2^16 - 1)
 * < 2^30: s <= 128 at VDNN_FR_MAX_DIMENSION); its value on [0, 1] is
 * S / (s^2 peak) in double rounded once to float (s^2 peak need not be a
 * float), and each plane's centre is its exact sum of S / (dw dh) /
 * (s^2 peak) (dw x dh: the decimated size). The graph sums normalised
 * floats in double instead (the same values but for the last bits), so the
 * two agree to a float step or two of the score, not bit for bit
 * (measured: within 2.4e-8 on scenes from 385x391 to 3840x2160, 8 to 16
 * bits).
 *
 * The decimated planes are held whole (2 dw dh floats: ~1 MB for a 16:9
 * frame of any size, since s grows with it; at most about half the input
 * planes' bytes, for very elongated frames). Every sample is checked
 * against the depth, those no box takes too (-EINVAL for one above it).
 * w, h >= 11 and <= VDNN_FR_MAX_DIMENSION; *ssim as vdnn_ssim_y's. */
int vdnn_float_ssim(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                    double *ssim);

/* The two planes an SSIM runs on (vdnn_ssim_planes): samples ref and dist
 * (normalised as vdnn_ssim_y normalises them), or, where values[0] is not
 * NULL, values on [0, 1], values[0] ref's and values[1] dist's (w x h
 * floats each, rows packed: vdnn_float_ssim's decimated planes; ref and
 * dist unused). */
typedef struct VdnnSsimPlanes {
    const VdnnPlane *ref, *dist;
    const float *values[2];
} VdnnSsimPlanes;

/* vdnn_ssim_y's SSIM (its window, float arithmetic and fixed-point mean)
 * of two w x h planes centred on cx and cy (their means on [0, 1], as
 * floats): the one implementation behind vdnn_ssim_y and vdnn_float_ssim,
 * as ssim_strip is the GPU's (gpu/ssim_kernels.h). Nothing checked: w, h
 * 11..VDNN_FR_MAX_DIMENSION, samples within their depth. 0, -ENOMEM or
 * -ECANCELED (*ssim untouched then). */
int vdnn_ssim_planes(const VdnnKernelEnv *env, const VdnnSsimPlanes *planes, unsigned w,
                     unsigned h, float cx, float cy, double *ssim);

/* PSNR of the luma plane in dB, as build_psnr_y's graph computes it:
 *   sse = sum (r - d)^2 over all samples (exact, uint64)
 *   mse = sse / (w h) / peak^2 (double; peak = 2^bpc - 1)
 *   psnr = 10 log10(1 / max(mse, 1e-20)): 200 dB for identical planes.
 * w, h >= 1 and <= VDNN_FR_MAX_DIMENSION. */
int vdnn_psnr_y(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                double *psnr);

/* The kernels' arguments: 0 when env, the planes (the same w, h and bpc)
 * and out are usable and w, h are min_side..VDNN_FR_MAX_DIMENSION, else
 * -EINVAL. */
int vdnn_fr_check(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                  const double *out, unsigned min_side);

/* ssim_y's and psnr_y's first pass (psnr_kernel.c), as the GPU's fr_scan sums it:
 * sums[0] the sum of ref's samples, sums[1] dist's, sums[2] the sum of
 * (ref - dist)^2, exact; -EINVAL for a sample above 2^bpc - 1, -ECANCELED.
 * The planes as vdnn_fr_check accepts them. */
int vdnn_fr_scan(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                 uint64_t sums[3]);

#endif
