/* Internal: fused CPU kernels for the built-in no-reference metrics, with
 * the conventions of vmaf_kernels.h (its VdnnKernelEnv and VdnnPlane,
 * re-entrant, env->cancelled polled between row bands, the same return
 * codes) and of fr_kernels.h (-EINVAL also for w or h above
 * VDNN_FR_MAX_DIMENSION). The GPU program vk_sharpness (gpu/programs.h)
 * computes the same number from the same formulas (gpu/sharpness_kernels.h:
 * both sides call them), bit for bit on the emulator
 * (tests/c/test_gpu_sharpness.c).
 */
#ifndef VMAFDNN_NR_KERNELS_H
#define VMAFDNN_NR_KERNELS_H

#include "fr_kernels.h"
#include "vmaf_kernels.h"

/* sharpness_nr: the variance of the 3x3 Laplacian [[0,1,0],[1,-4,1],
 * [0,1,0]] of the luma plane normalised to [0, 1] (x = s / peak,
 * peak = 2^bpc - 1), over the valid region ((w - 2) x (h - 2) pixels, one
 * cropped at every border), as tools/gen_builtin_models.py's
 * build_sharpness_nr computes it: one pass, var = E[L^2] - E[L]^2
 * (population). Here:
 *   li = up + down + left + right - 4 c of the samples (exact, int32)
 *   per row r: S1[r] = sum li (int64), S2[r] = sum li^2 (uint64), exact
 *   t1 = sum S1[r], t2 = sum S2[r] as doubles, rows in order (a uint64
 *        total of 32766 rows of 16-bit extremes could pass 2^64)
 *   n = (w - 2)(h - 2), mean = t1 / n,
 *   var = (t2 / n - mean mean) / (peak peak) in double.
 * The graph takes its Laplacian in double of the float-rounded x = s / peak
 * and sums it over row strips in its own order, so this kernel (exact
 * integers, one rounding per row) agrees with it to ~1e-7 relative (the
 * float rounding of x; within 2e-7 on 1080p frames of 8 to 16 bits), not
 * bit for bit.
 *
 * w, h >= 3 and <= VDNN_FR_MAX_DIMENSION; -EINVAL for a sample above
 * 2^bpc - 1 (anywhere in the plane, corners too), -ECANCELED. A flat plane
 * gives exactly 0. */
int vdnn_sharpness_nr(const VdnnKernelEnv *env, const VdnnPlane *dist, double *var);

#endif
