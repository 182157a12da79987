/* Internal: the fp16 converters behind vmaf_dnn_fp32_to_fp16() and
 * vmaf_dnn_fp16_to_fp32().
 *
 * The public functions pick a kernel at run time (AVX2 on x86 CPUs that have
 * it). The portable kernels are exported here so tests can check that every
 * kernel gives the same bits. All pointers are caller-owned and only used
 * during the call; `src` and `dst` must not overlap.
 */
#ifndef VMAFDNN_FP16_H
#define VMAFDNN_FP16_H

#include <stddef.h>
#include <stdint.h>

/* The plain C kernels, built for the compiler's baseline target. */
void vdnn_fp32_to_fp16_portable(const float *src, uint16_t *dst, size_t n);
void vdnn_fp16_to_fp32_portable(const uint16_t *src, float *dst, size_t n);

/* The kernel the public functions use on this CPU: "avx2" or "portable".
 * Static storage. */
const char *vdnn_fp16_kernel(void);

#endif
