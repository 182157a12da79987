/* Internal: VMAF's features as GPU programs: the kernels of csrc/gpu/
 * *_kernels.h launched in order on a backend (backend.h), one frame pair a
 * call. What each computes is its CPU kernel's (vmaf_kernels.h), to the bit
 * on the emulator (tests/c/test_gpu_kernels.c).
 *
 * Planes are w x h samples of bpc bits (8..16), rows packed (stride w), in
 * the backend's memory; so are the outputs, written by the last kernel (the
 * host reads them when the backend's stream is done). A sample above
 * 2^bpc - 1 cannot be refused before the kernels have run: the outputs are
 * then NaN (the CPU kernels fail with -EINVAL). Through the library no such
 * sample reaches them: a context refuses it when it reads the frame.
 *
 * Return codes: 0; -EINVAL for a NULL pointer, a bpc outside 8..16 or w, h
 * below the CPU kernel's minimum (vmaf_kernels.h) or above
 * VK_MAX_DIMENSION; what the backend's alloc or launch returns. Nothing
 * allocated is left behind on failure. */
#ifndef VDNN_GPU_PROGRAMS_H
#define VDNN_GPU_PROGRAMS_H

#include <stdint.h>

#include "backend.h"

/* The largest side a program takes (int arithmetic on sample indices stays
 * far from overflow; VMAF_DNN_MAX_DIMENSION is smaller). */
#define VK_MAX_DIMENSION 32768

/* Whether a w x h frame of bpc bits is one the programs take: bpc 8..16,
 * each side min_side (the program's minimum) to VK_MAX_DIMENSION. */
static inline int vk_frame_fits(int w, int h, int bpc, int min_side)
{
    return bpc >= 8 && bpc <= 16 && w >= min_side && h >= min_side && w <= VK_MAX_DIMENSION &&
           h <= VK_MAX_DIMENSION;
}

/* vdnn_motion_integer: *score (float, the backend's) of cur against prev. */
int vk_motion(const VkBackend *b, const uint16_t *prev, const uint16_t *cur, int w, int h,
              int bpc, float *score);

/* vdnn_vif_integer: scores[0..3] (floats, the backend's), scales 0..3;
 * enhn_gain_limit 1..100. */
int vk_vif(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
           double enhn_gain_limit, float *scores);

/* vdnn_adm_integer: out[0] adm2, out[1..4] the scales' scores (floats, the
 * backend's); enhn_gain_limit 1..100. */
int vk_adm(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
           double enhn_gain_limit, float *out);

/* dst[i] = src[i] for i < n (1..5): the backend's floats to n separate
 * places (an ORT op's output tensors). */
int vk_scatter(const VkBackend *b, const float *src, float *const *dst, int n);

/* dst[i] = src[i] for the w x h samples of an 8-bit plane (the backend's
 * memory both): the plane as the programs take it. 1 launch. */
int vk_widen(const VkBackend *b, const uint8_t *src, uint16_t *dst, int w, int h);

/* vdnn_ssim_y (fr_kernels.h): *score (float, the backend's), the mean
 * SSIM; w, h >= 11. 5 launches. */
int vk_ssim(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
            int bpc, float *score);

/* vdnn_float_ssim (fr_kernels.h): *score (float, the backend's), the mean
 * SSIM of the decimated planes; w, h >= 11. vk_ssim's 5 launches where the
 * scale is 1 (below 384 lines or columns: its score), else 5 of its own. */
int vk_float_ssim(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
                  int bpc, float *score);

/* vdnn_psnr_y (fr_kernels.h): *score (float, the backend's), dB; w, h >= 1.
 * 3 launches. */
int vk_psnr(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
            int bpc, float *score);

/* vdnn_sharpness_nr (nr_kernels.h): *score (float, the backend's), the
 * variance of the plane's Laplacian (no reference: one plane); w, h >= 3.
 * 2 launches. */
int vk_sharpness(const VkBackend *b, const uint16_t *dist, int w, int h, int bpc, float *score);

#endif
