/* One array of floats to n separate outputs (n <= 5): a program writes its
 * scores side by side, where an ONNX Runtime op has one tensor per output
 * (ort_custom_ops.c). One thread per value. */
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
