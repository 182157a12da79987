/* vk_float_ssim (programs.h): vk_ssim itself where the scale is 1; else
 * float_ssim_kernels.h's decimation into the decimated planes and their
 * rows' box sums, those into the planes' totals (fr_totals), the map on the
 * decimated planes into the output rows' sums, those into the frame's total
 * (fr_totals), ssim_kernels.h's finish. */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
/* with ssim_kernels.h and psnr_kernels.h, whose ssim_map and psnr_finish
 * this program does not launch */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "float_ssim_kernels.h"
#pragma GCC diagnostic pop

static const VkKernelRef decimate = VK_REF(fssim_decimate);
static const VkKernelRef totals = VK_REF(fr_totals);
static const VkKernelRef map = VK_REF(fssim_map);
static const VkKernelRef finish = VK_REF(ssim_finish);

int vk_float_ssim(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
                  int bpc, float *score)
{
    /* a scale of 1, or arguments vk_ssim refuses (this program's too): its
     * answer */
    int s = vk_frame_fits(w, h, bpc, SSIM_TAPS) ? fssim_scale(w, h) : 1;
    if (s == 1 || !b || !ref || !dist || !score)
        return vk_ssim(b, ref, dist, w, h, bpc, score);
    int dw = fssim_size(w, s), dh = fssim_size(h, s), oh = dh - 2 * SSIM_RADIUS, slots = 2 * dh;
    const int ow = dw - 2 * SSIM_RADIUS;
    /* one block: the decimated rows' 2 dh sums, the output rows' oh sums,
     * the totals (ref, dist, the map's), the flag (a uint64's room), then
     * the two decimated planes */
    const size_t words = (size_t)slots + (size_t)oh + 4, plane = (size_t)dw * (size_t)dh;
    void *block = NULL;
    int rc = b->alloc(b->self, words * sizeof(uint64_t) + 2 * plane * sizeof(float), &block);
    if (rc)
        return rc;
    uint64_t *row_sums = block, *map_rows = row_sums + slots;
    uint64_t *sums = map_rows + oh, *total = sums + 2;
    uint32_t *flag = (uint32_t *)(total + 1);
    float *fref = (float *)(row_sums + words), *fdist = fref + plane;
    void *decimate_args[] = {&ref, &dist, &w, &h, &bpc, &fref, &fdist, &row_sums, &flag};
    void *sums_args[] = {&row_sums, &slots, &dh, &sums};
    void *map_args[] = {&fref, &fdist, &dw, &dh, &s, &bpc, &sums, &map_rows};
    void *total_args[] = {&map_rows, &oh, &oh, &total};
    void *finish_args[] = {&total, &dw, &dh, &flag, &score};
    if (!(rc = b->launch(b->self, &decimate, (unsigned)((dw + FSSIM_STRIP - 1) / FSSIM_STRIP),
                         (unsigned)dh, 1, decimate_args)) &&
        !(rc = b->launch(b->self, &totals, (unsigned)slots, 1, 1, sums_args)) &&
        !(rc = b->launch(b->self, &map, (unsigned)((ow + SSIM_STRIP - 1) / SSIM_STRIP),
                         (unsigned)oh, 1, map_args)) &&
        !(rc = b->launch(b->self, &totals, (unsigned)oh, 1, 1, total_args)))
        rc = b->launch(b->self, &finish, 1, 1, 1, finish_args);
    b->release(b->self, block);
    return rc;
}
