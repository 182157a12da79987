/* vk_scatter (programs.h). */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
#include "scatter_kernels.h"

static const VkKernelRef scatter = VK_REF(scatter_floats);

int vk_scatter(const VkBackend *b, const float *src, float *const *dst, int n)
{
    if (!b || !src || !dst || n < 1 || n > 5)
        return -EINVAL;
    float *d[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int i = 0; i < n; i++)
        if (!(d[i] = dst[i]))
            return -EINVAL;
    void *args[] = {&src, &n, &d[0], &d[1], &d[2], &d[3], &d[4]};
    return b->launch(b->self, &scatter, (unsigned)n, 1, 1, args);
}
