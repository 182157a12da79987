/* vk_psnr (programs.h): psnr_kernels.h's kernels in order: the rows' sums,
 * the squared differences' rows into the total, the finish. */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
#include "psnr_kernels.h"

static const VkKernelRef scan = VK_REF(fr_scan);
static const VkKernelRef totals = VK_REF(fr_totals);
static const VkKernelRef finish = VK_REF(psnr_finish);

int vk_psnr(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
            int bpc, float *score)
{
    if (!b || !ref || !dist || !score || !vk_frame_fits(w, h, bpc, 1))
        return -EINVAL;
    /* one block: the rows' 3 h sums (fr_scan), the total, the flag */
    void *block = NULL;
    int rc = b->alloc(b->self, ((size_t)3 * h + 2) * sizeof(uint64_t), &block);
    if (rc)
        return rc;
    uint64_t *row_sums = block, *sse_rows = row_sums + 2 * (size_t)h;
    uint64_t *sse = row_sums + 3 * (size_t)h;
    uint32_t *flag = (uint32_t *)(sse + 1);
    void *scan_args[] = {&ref, &dist, &w, &h, &bpc, &row_sums, &flag};
    void *totals_args[] = {&sse_rows, &h, &h, &sse};
    void *finish_args[] = {&sse, &w, &h, &bpc, &flag, &score};
    if (!(rc = b->launch(b->self, &scan, (unsigned)((w + FR_STRIP - 1) / FR_STRIP), (unsigned)h,
                         1, scan_args)) &&
        !(rc = b->launch(b->self, &totals, (unsigned)h, 1, 1, totals_args)))
        rc = b->launch(b->self, &finish, 1, 1, 1, finish_args);
    b->release(b->self, block);
    return rc;
}
