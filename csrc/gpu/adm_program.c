/* vk_adm (programs.h): adm_kernels.h's kernels in order, per level
 * vertical, horizontal, decouple, cm, then the rows' totals and the
 * finish. The level constants (geometry, shifts, CSF factors, noise terms)
 * are the CPU kernel's own (vdnn_adm_level), handed to the kernels by
 * value. */
#include <errno.h>
#include <math.h>
#include <stddef.h>

#include "adm_kernels.h"
#include "programs.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define ADM_MIN_SIZE 33

static const VkKernelRef vertical0 = VK_REF(adm_vertical0);
static const VkKernelRef vertical = VK_REF(adm_vertical);
static const VkKernelRef horizontal0 = VK_REF(adm_horizontal0);
static const VkKernelRef horizontal = VK_REF(adm_horizontal);
static const VkKernelRef decouple = VK_REF(adm_decouple);
static const VkKernelRef cm = VK_REF(adm_cm);
static const VkKernelRef row_totals = VK_REF(adm_rows);
static const VkKernelRef finish = VK_REF(adm_finish);

int vk_adm(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
           double enhn_gain_limit, float *out)
{
    if (!b || !ref || !dist || !out || !vk_frame_fits(w, h, bpc, ADM_MIN_SIZE) ||
        !(enhn_gain_limit >= 1.0) || !(enhn_gain_limit <= 100.0))
        return -EINVAL;
    AdmLevels lv;
    vdnn_adm_level(&lv.l[0], 0, w, h);
    for (int s = 1; s < 4; s++)
        vdnn_adm_level(&lv.l[s], s, lv.l[s - 1].w, lv.l[s - 1].h);
    size_t nrows = 0;
    for (int s = 0; s < 4; s++)
        nrows += (size_t)6 * lv.l[s].h;
    const double cos_sq = (double)(float)(cos(1.0 * M_PI / 180.0) * cos(1.0 * M_PI / 180.0));

    /* Level 0 is the largest of each: the levels below reuse them. */
    const size_t vplane = (size_t)lv.l[0].h * w, bplane = (size_t)lv.l[0].h * lv.l[0].w;
    void *vert = NULL, *bands = NULL, *dec = NULL, *rows = NULL, *flags = NULL;
    int rc;
    if ((rc = b->alloc(b->self, 4 * vplane * sizeof(int32_t), &vert)) ||
        (rc = b->alloc(b->self, 8 * bplane * sizeof(int32_t), &bands)) ||
        (rc = b->alloc(b->self, 7 * bplane * sizeof(int32_t), &dec)) ||
        (rc = b->alloc(b->self, (nrows + 24) * sizeof(uint64_t), &rows)) || /* + totals */
        (rc = b->alloc(b->self, sizeof(uint32_t), &flags)))
        goto done;
    int32_t *vp = vert, *bp = bands, *dp = dec;
    uint64_t *rp = rows;
    uint32_t *fp = flags;
    for (int s = 0; s < 4; s++) {
        AdmLevel *L = &lv.l[s];
        const unsigned lw = (unsigned)L->w, lh = (unsigned)L->h;
        if (s == 0) {
            void *vargs[] = {&ref, &dist, &vp, &L->win, &L->hin, &L->h, &bpc, &fp};
            void *hargs[] = {&vp, &bp, &L->win, &L->w, &L->h};
            if ((rc = b->launch(b->self, &vertical0, (unsigned)w, lh, 2, vargs)) ||
                (rc = b->launch(b->self, &horizontal0, lw, lh, 2, hargs)))
                goto done;
        } else {
            void *vargs[] = {&bp, &vp, L};
            void *hargs[] = {&vp, &bp, L};
            if ((rc = b->launch(b->self, &vertical, (unsigned)L->win, lh, 2, vargs)) ||
                (rc = b->launch(b->self, &horizontal, lw, lh, 2, hargs)))
                goto done;
        }
        void *dargs[] = {&bp, &dp, L, &enhn_gain_limit, (void *)&cos_sq};
        void *cargs[] = {&bp, &dp, L, &rp};
        if ((rc = b->launch(b->self, &decouple, (unsigned)(L->chi - L->clo),
                            (unsigned)(L->rhi - L->rlo), 1, dargs)) ||
            (rc = b->launch(b->self, &cm,
                            (unsigned)((L->right - L->left + ADM_CM_STRIP - 1) / ADM_CM_STRIP),
                            (unsigned)(L->bottom - L->top), 1, cargs)))
            goto done;
        rp += (size_t)6 * L->h;
    }
    rp = rows;
    uint64_t *totals = rp + nrows;
    void *rargs[] = {&rp, &lv, &totals};
    void *fargs[] = {&totals, &fp, &lv, &out};
    if (!(rc = b->launch(b->self, &row_totals, (unsigned)(lv.l[0].bottom - lv.l[0].top), 1, 4,
                         rargs)))
        rc = b->launch(b->self, &finish, 1, 1, 1, fargs);
done:
    b->release(b->self, flags);
    b->release(b->self, rows);
    b->release(b->self, dec);
    b->release(b->self, bands);
    b->release(b->self, vert);
    return rc;
}
