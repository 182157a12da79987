/* vk_scatter and vk_widen (programs.h). */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
#include "scatter_kernels.h"

static const VkKernelRef scatter = VK_REF(scatter_floats);
static const VkKernelRef widen = VK_REF(widen_samples);

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

int vk_widen(const VkBackend *b, const uint8_t *src, uint16_t *dst, int w, int h)
{
    if (!b || !src || !dst || w < 1 || h < 1 || w > VK_MAX_DIMENSION || h > VK_MAX_DIMENSION)
        return -EINVAL;
    void *args[] = {&src, &dst, &w, &h};
    return b->launch(b->self, &widen, (unsigned)w, (unsigned)h, 1, args);
}
