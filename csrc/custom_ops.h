/* Internal: the names of the library's own ONNX operators (ORT custom ops,
 * implemented in ort_custom_ops.c over the kernels of vmaf_kernels.h,
 * fr_kernels.h and nr_kernels.h).
 *
 * The ONNX scanner admits exactly these operators of exactly this domain
 * (onnx_scan.c); ort_custom_ops.c registers them on every session. A model
 * that uses them declares the domain in its opset_import, version 1.
 *
 *   Samples(x: float, bpc: float[1]) -> uint16, x's shape
 *       x * (2^bpc - 1) rounded: the integer samples of a plane the library
 *       fed normalised to [0, 1]. Fails on a value outside [0, 1] or NaN.
 *   VifInteger(ref: uint16, dist: uint16, bpc: float[1]) -> 4 x float[1]
 *       libvmaf's integer VIF, scales 0..3; attribute enhn_gain_limit
 *       (float, default 100).
 *   AdmInteger(ref: uint16, dist: uint16, bpc: float[1]) -> 5 x float[1]
 *       adm2, then adm_scale0..3; attribute enhn_gain_limit (default 100).
 *   MotionInteger(prev: uint16, cur: uint16, bpc: float[1]) -> float[1]
 *       libvmaf's integer motion SAD of a frame from the previous one.
 *   Ssim(ref: uint16, dist: uint16, bpc: float[1]) -> float[1]
 *       mean SSIM, the built-in ssim_y's (fr_kernels.h vdnn_ssim_y).
 *   FloatSsim(ref: uint16, dist: uint16, bpc: float[1]) -> float[1]
 *       libvmaf's float_ssim at its automatic scale: both planes decimated
 *       as libvmaf decimates them, then Ssim's SSIM; the built-in
 *       float_ssim's (fr_kernels.h vdnn_float_ssim).
 *   Psnr(ref: uint16, dist: uint16, bpc: float[1]) -> float[1]
 *       PSNR in dB, the built-in psnr_y's (fr_kernels.h vdnn_psnr_y): MSE
 *       floored at 1e-20, no cap (the library caps as the sidecar says).
 *   LaplacianVariance(plane: uint16, bpc: float[1]) -> float[1]
 *       the variance of the plane's 3x3 Laplacian, the built-in
 *       sharpness_nr's (nr_kernels.h vdnn_sharpness_nr).
 * Planes are [..., H, W] with every leading dim 1; the planes of an op have
 * one shape and one element type: uint16 above, or uint8 (an 8-bit
 * clip's samples, which the library feeds so where the planes only reach
 * these ops: onnx_scan.h vdnn_onnx_narrow_samples; widened in the op).
 */
#ifndef VMAFDNN_CUSTOM_OPS_H
#define VMAFDNN_CUSTOM_OPS_H

#define VDNN_CUSTOM_OP_DOMAIN "org.vmafdnn"

/* X(name, planes) for each operator of the domain: planes, its inputs that
 * are planes of samples (then bpc follows), 0 for Samples (whose input is
 * a normalised plane, not samples). */
#define VDNN_CUSTOM_OPS(X)                                                                 \
    X(Samples, 0) X(VifInteger, 2) X(AdmInteger, 2) X(MotionInteger, 2) X(Ssim, 2)         \
    X(FloatSsim, 2) X(Psnr, 2) X(LaplacianVariance, 1)

#endif
