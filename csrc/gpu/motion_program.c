/* vk_motion (programs.h): motion_kernels.h's four kernels in order. */
#include <errno.h>
#include <stddef.h>

#include "motion_kernels.h"
#include "programs.h"

static const VkKernelRef vertical = VK_REF(motion_vertical);
static const VkKernelRef horizontal = VK_REF(motion_horizontal);
static const VkKernelRef row_totals = VK_REF(motion_rows);
static const VkKernelRef finish = VK_REF(motion_finish);

int vk_motion(const VkBackend *b, const uint16_t *prev, const uint16_t *cur, int w, int h,
              int bpc, float *score)
{
    if (!b || !prev || !cur || !score || !vk_frame_fits(w, h, bpc, 3))
        return -EINVAL;
    void *v = NULL, *sums = NULL, *flags = NULL, *sum = NULL;
    int rc;
    if ((rc = b->alloc(b->self, (size_t)w * h * sizeof(int32_t), &v)) ||
        (rc = b->alloc(b->self, (size_t)h * sizeof(uint32_t), &sums)) ||
        (rc = b->alloc(b->self, sizeof(uint32_t), &flags)) ||
        (rc = b->alloc(b->self, sizeof(uint64_t), &sum)))
        goto done;
    int32_t *vs = v;
    uint32_t *row_sums = sums, *flag = flags;
    uint64_t *total = sum;
    void *vertical_args[] = {&prev, &cur, &vs, &w, &h, &bpc, &flag};
    void *horizontal_args[] = {&vs, &w, &h, &row_sums};
    void *rows_args[] = {&row_sums, &h, &total};
    void *finish_args[] = {&total, &w, &h, &flag, &score};
    if ((rc = b->launch(b->self, &vertical, (unsigned)w, (unsigned)h, 1, vertical_args)) ||
        (rc = b->launch(b->self, &horizontal, (unsigned)((w + MOTION_STRIP - 1) / MOTION_STRIP),
                        (unsigned)h, 1, horizontal_args)))
        goto done;
    if (!(rc = b->launch(b->self, &row_totals, (unsigned)h, 1, 1, rows_args)))
        rc = b->launch(b->self, &finish, 1, 1, 1, finish_args);
done:
    b->release(b->self, sum);
    b->release(b->self, flags);
    b->release(b->self, sums);
    b->release(b->self, v);
    return rc;
}
