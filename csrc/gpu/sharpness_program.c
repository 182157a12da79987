/* vk_sharpness (programs.h): sharpness_kernels.h's kernels in order: the
 * valid rows' Laplacian sums and the range flag, the finish (the rows into
 * the totals in order, one thread). */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
#include "sharpness_kernels.h"

static const VkKernelRef scan = VK_REF(sharp_scan);
static const VkKernelRef finish = VK_REF(sharp_finish);

int vk_sharpness(const VkBackend *b, const uint16_t *dist, int w, int h, int bpc, float *score)
{
    if (!b || !dist || !score || !vk_frame_fits(w, h, bpc, 3))
        return -EINVAL;
    /* one block: the valid rows' 2 (h - 2) sums (sharp_scan), the flag */
    void *block = NULL;
    int rc = b->alloc(b->self, ((size_t)2 * (h - 2) + 1) * sizeof(uint64_t), &block);
    if (rc)
        return rc;
    uint64_t *row_sums = block;
    uint32_t *flag = (uint32_t *)(row_sums + 2 * (size_t)(h - 2));
    void *scan_args[] = {&dist, &w, &h, &bpc, &row_sums, &flag};
    void *finish_args[] = {&row_sums, &w, &h, &bpc, &flag, &score};
    if (!(rc = b->launch(b->self, &scan, (unsigned)((w + SHARP_STRIP - 1) / SHARP_STRIP),
                         (unsigned)h, 1, scan_args)))
        rc = b->launch(b->self, &finish, 1, 1, 1, finish_args);
    b->release(b->self, block);
    return rc;
}
