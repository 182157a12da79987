/* vk_vif (programs.h): vif_kernels.h's kernels in order. The log2 table;
 * then each scale: its vertical pass, its horizontal pass with the
 * statistic, and (scales 0..2) the next scale's samples; the rows' sums
 * into each scale's totals; the finish. The vertical pass's five planes are
 * sized for scale 0 and reused by every scale. */
#include <errno.h>
#include <stddef.h>

#include "programs.h"
#include "vif_kernels.h"

static const VkKernelRef log2_table = VK_REF(vif_log2_table);
static const VkKernelRef vertical = VK_REF(vif_vertical);
static const VkKernelRef horizontal = VK_REF(vif_horizontal);
static const VkKernelRef subsample = VK_REF(vif_subsample);
static const VkKernelRef row_totals = VK_REF(vif_rows);
static const VkKernelRef finish = VK_REF(vif_finish);

enum { PLANES = 5, SCALED = 6, BLOCKS = PLANES + SCALED + 3 };

int vk_vif(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
           double enhn_gain_limit, float *scores)
{
    if (!b || !ref || !dist || !scores || !vk_frame_fits(w, h, bpc, 16) ||
        !(enhn_gain_limit >= 1.0) || !(enhn_gain_limit <= 100.0))
        return -EINVAL;
    int ws[4], hs[4], rows = 0;
    for (int s = 0; s < 4; s++) {
        ws[s] = s ? ws[s - 1] / 2 : w;
        hs[s] = s ? hs[s - 1] / 2 : h;
        rows += hs[s];
    }
    const size_t n = (size_t)w * h;
    /* mu1, mu2 (16-bit), xx, yy, xy (32-bit); ref and dis of scales 1..3;
     * the table, the rows' sums, the flag */
    size_t bytes[BLOCKS];
    for (int q = 0; q < PLANES; q++)
        bytes[q] = n * (q < 2 ? sizeof(uint16_t) : sizeof(uint32_t));
    for (int s = 1; s < 4; s++)
        bytes[PLANES + 2 * (s - 1)] = bytes[PLANES + 2 * (s - 1) + 1] =
            (size_t)ws[s] * hs[s] * sizeof(uint16_t);
    bytes[PLANES + SCALED] = 32768 * sizeof(uint16_t);
    bytes[PLANES + SCALED + 1] = ((size_t)rows + 4) * 4 * sizeof(int64_t); /* + totals */
    bytes[PLANES + SCALED + 2] = sizeof(uint32_t);
    void *block[BLOCKS] = {NULL};
    int rc = 0;
    for (int q = 0; q < BLOCKS && !rc; q++)
        rc = b->alloc(b->self, bytes[q], &block[q]);
    if (rc)
        goto done;

    uint16_t *mu1 = block[0], *mu2 = block[1];
    uint32_t *xx = block[2], *yy = block[3], *xy = block[4];
    const uint16_t *src_ref = ref, *src_dis = dist;
    uint16_t *table = block[PLANES + SCALED];
    int64_t *sums = block[PLANES + SCALED + 1];
    uint32_t *flags = block[PLANES + SCALED + 2];

    void *table_args[] = {&table};
    if ((rc = b->launch(b->self, &log2_table, 32768, 1, 1, table_args)))
        goto done;
    int64_t *row_sums = sums;
    for (int s = 0; s < 4; s++) {
        int sw = ws[s], sh = hs[s], scale = s;
        void *vertical_args[] = {&src_ref, &src_dis, &sw, &sh, &scale, &bpc,
                                 &mu1,     &mu2,     &xx, &yy, &xy,    &flags};
        void *horizontal_args[] = {&mu1, &mu2, &xx,    &yy, &xy,
                                   &sw,  &sh,  &scale, &table, &enhn_gain_limit,
                                   &row_sums};
        if ((rc = b->launch(b->self, &vertical, (unsigned)sw, (unsigned)sh, 1, vertical_args)) ||
            (rc = b->launch(b->self, &horizontal, (unsigned)(sw + VIF_STRIP - 1) / VIF_STRIP,
                            (unsigned)sh, 1, horizontal_args)))
            goto done;
        row_sums += (size_t)sh * 4;
        if (s == 3)
            break;
        uint16_t *next_ref = block[PLANES + 2 * s], *next_dis = block[PLANES + 2 * s + 1];
        void *subsample_args[] = {&src_ref, &src_dis, &sw, &sh, &scale, &bpc, &next_ref,
                                  &next_dis};
        if ((rc = b->launch(b->self, &subsample, (unsigned)ws[s + 1], (unsigned)hs[s + 1], 1,
                            subsample_args)))
            goto done;
        src_ref = next_ref;
        src_dis = next_dis;
    }
    int64_t *totals = sums + (size_t)rows * 4;
    void *rows_args[] = {&sums, &h, &rows, &totals};
    void *finish_args[] = {&totals, &flags, &scores};
    if (!(rc = b->launch(b->self, &row_totals, (unsigned)rows, 1, 1, rows_args)))
        rc = b->launch(b->self, &finish, 1, 1, 1, finish_args);
done:
    for (int q = BLOCKS - 1; q >= 0; q--)
        b->release(b->self, block[q]);
    return rc;
}
