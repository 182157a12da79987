/* The ops' glue on the GPU (ort_custom_ops.c): data moved, not computed.
 *   scatter_floats  one array of floats to n separate outputs (n <= 5): a
 *                   program writes its scores side by side, where an ONNX
 *                   Runtime op has one tensor per output. One thread per
 *                   value.
 *   widen_samples   a w x h plane of 8-bit samples as the programs' uint16
 *                   (an op fed UINT8 pictures, which cross to the device at
 *                   half the bytes). One thread per sample. */
#ifndef VDNN_GPU_DIALECT_H
#include "dialect.h"
#endif

VK_KERNEL scatter_floats(VK_IDX const float *VK_RESTRICT src, int n, float *d0, float *d1,
                         float *d2, float *d3, float *d4)
{
    const int i = VK_X;
    if (i >= n || VK_Y != 0)
        return;
    float *const dst[5] = {d0, d1, d2, d3, d4};
    *dst[i] = src[i];
}
VK_THUNK(scatter_floats, VK_ARG(0, const float *), VK_ARG(1, int), VK_ARG(2, float *),
         VK_ARG(3, float *), VK_ARG(4, float *), VK_ARG(5, float *), VK_ARG(6, float *))

VK_KERNEL widen_samples(VK_IDX const uint8_t *VK_RESTRICT src, uint16_t *VK_RESTRICT dst, int w,
                        int h)
{
    const int x = VK_X, y = VK_Y;
    if (x >= w || y >= h)
        return;
    const int64_t i = (int64_t)y * w + x;
    dst[i] = (uint16_t)src[i];
}
VK_THUNK(widen_samples, VK_ARG(0, const uint8_t *), VK_ARG(1, uint16_t *), VK_ARG(2, int),
         VK_ARG(3, int))
