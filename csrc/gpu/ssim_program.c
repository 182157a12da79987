/* vk_ssim (programs.h): the rows' sample sums (psnr_kernels.h's fr_scan)
 * into the two planes' totals (fr_totals), ssim_kernels.h's map into the
 * output rows' sums, those into the frame's total (fr_totals), the finish. */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
/* with psnr_kernels.h, whose psnr_finish this program does not launch */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "ssim_kernels.h"
#pragma GCC diagnostic pop

static const VkKernelRef scan = VK_REF(fr_scan);
static const VkKernelRef totals = VK_REF(fr_totals);
static const VkKernelRef map = VK_REF(ssim_map);
static const VkKernelRef finish = VK_REF(ssim_finish);

int vk_ssim(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
            int bpc, float *score)
{
    if (!b || !ref || !dist || !score || !vk_frame_fits(w, h, bpc, SSIM_TAPS))
        return -EINVAL;
    int oh = h - 2 * SSIM_RADIUS, planes = 2 * h;
    const int ow = w - 2 * SSIM_RADIUS;
    /* one block: the rows' 3 h sums (fr_scan), the output rows' oh sums,
     * the totals (ref, dist, the map's), the flag */
    void *block = NULL;
    int rc = b->alloc(b->self, ((size_t)3 * h + oh + 4) * sizeof(uint64_t), &block);
    if (rc)
        return rc;
    uint64_t *row_sums = block, *map_rows = row_sums + 3 * (size_t)h;
    uint64_t *sums = map_rows + oh, *total = sums + 2;
    uint32_t *flag = (uint32_t *)(total + 1);
    void *scan_args[] = {&ref, &dist, &w, &h, &bpc, &row_sums, &flag};
    void *sums_args[] = {&row_sums, &planes, &h, &sums};
    void *map_args[] = {&ref, &dist, &w, &h, &bpc, &sums, &map_rows};
    void *total_args[] = {&map_rows, &oh, &oh, &total};
    void *finish_args[] = {&total, &w, &h, &flag, &score};
    if (!(rc = b->launch(b->self, &scan, (unsigned)((w + FR_STRIP - 1) / FR_STRIP), (unsigned)h,
                         1, scan_args)) &&
        !(rc = b->launch(b->self, &totals, (unsigned)planes, 1, 1, sums_args)) &&
        !(rc = b->launch(b->self, &map, (unsigned)((ow + SSIM_STRIP - 1) / SSIM_STRIP),
                         (unsigned)oh, 1, map_args)) &&
        !(rc = b->launch(b->self, &totals, (unsigned)oh, 1, 1, total_args)))
        rc = b->launch(b->self, &finish, 1, 1, 1, finish_args);
    b->release(b->self, block);
    return rc;
}
