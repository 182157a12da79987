/* Internal: a backend's programs (programs.h) held to the CPU kernels
 * (vmaf_kernels.h, fr_kernels.h, nr_kernels.h) on one synthetic frame, before their scores
 * are trusted.
 *
 * The emulator runs the kernels' C; a GPU runs what its driver and NVRTC
 * made of the same source, which no test of this project's machines sees.
 * cuda_kernels.c therefore checks each device once, when it is opened: a
 * compiler, driver or launch-geometry fault then keeps the kernels off the
 * device (the library's ops stay on ORT's CPU EP) instead of mis-scoring
 * every frame. */
#ifndef VDNN_GPU_SELF_CHECK_H
#define VDNN_GPU_SELF_CHECK_H

#include "backend.h"

/* Scores one synthetic w x h frame of bpc bits (a textured picture, a
 * noisy distorted copy, a shifted previous frame, saturated blocks) with
 * vk_vif, vk_adm, vk_motion (gain limit enhn_gain_limit), vk_ssim, vk_psnr,
 * vk_sharpness and vk_float_ssim on b and with the CPU kernels
 * (vmaf_kernels.h, fr_kernels.h, nr_kernels.h), and compares the fourteen
 * scores as floats, bit for bit (psnr_y within one float step: its log10 is
 * the GPU's own). float_ssim decimates only frames of 384 lines and columns
 * or more (below, it is ssim_y again): a device's checks want one such.
 * w, h >= 33 and <= 8192, bpc 8..16, enhn_gain_limit 1..100.
 * 0 when all fourteen are the same; -EIO when one differs (the message names
 * it, the frame and both values); -EINVAL for arguments out of range;
 * -ENOMEM; what the backend's alloc, launch or copies fail with. */
int vk_self_check(const VkBackend *b, int w, int h, int bpc, double enhn_gain_limit);

#endif
