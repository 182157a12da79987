/* vk_adm (programs.h): adm_kernels.h's kernels in order, per level
 * vertical, horizontal, decouple, cm, then the rows' totals and the
 * finish. The level constants
 * (geometry, shifts, CSF factors, noise terms) are vmaf_adm.c's run_level's,
 * computed here with the same libm calls and handed to the kernels by
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
#define ADM_BORDER 0.1
#define NOISE_WEIGHT 0.03125

static const VkKernelRef vertical0 = VK_REF(adm_vertical0);
static const VkKernelRef vertical = VK_REF(adm_vertical);
static const VkKernelRef horizontal0 = VK_REF(adm_horizontal0);
static const VkKernelRef horizontal = VK_REF(adm_horizontal);
static const VkKernelRef decouple = VK_REF(adm_decouple);
static const VkKernelRef cm = VK_REF(adm_cm);
static const VkKernelRef row_totals = VK_REF(adm_rows);
static const VkKernelRef finish = VK_REF(adm_finish);

/* Watson's model for Y and the 7/9 basis amplitudes (vmaf_adm.c). */
static const float W_A = 0.495f, W_K = 0.466f, W_F0 = 0.401f;
static const float W_G[4] = {1.501f, 1.0f, 0.534f, 1.0f};
static const float W_AMP[4][4] = {{0.62171f, 0.67234f, 0.72709f, 0.67234f},
                                  {0.34537f, 0.41317f, 0.49428f, 0.41317f},
                                  {0.18004f, 0.22727f, 0.28688f, 0.22727f},
                                  {0.091401f, 0.11792f, 0.15214f, 0.11792f}};

static float quant_step(int lambda, int theta)
{
    const float r = (float)(3.0 * 1080 * M_PI / 180.0);
    const float temp = (float)log10(pow(2.0, lambda + 1) * W_F0 * W_G[theta] / r);
    return (float)(2.0 * W_A * pow(10.0, W_K * temp * temp) / W_AMP[lambda][theta]);
}

static unsigned ceil_log2_u(double x)
{
    return (unsigned)ceil(log2(x));
}

/* vmaf_adm.c's level_geometry and run_level's constants. */
static void level_constants(AdmLevel *L, int lev, int win, int hin)
{
    *L = (AdmLevel){0};
    L->lev = lev;
    L->win = win, L->hin = hin;
    L->w = (win + 1) / 2, L->h = (hin + 1) / 2;
    L->left = (int)(L->w * ADM_BORDER - 0.5);
    L->top = (int)(L->h * ADM_BORDER - 0.5);
    L->right = L->w - L->left;
    L->bottom = L->h - L->top;
    L->rlo = L->top > 0 ? L->top - 1 : 0;
    L->rhi = L->bottom + 1 < L->h ? L->bottom + 1 : L->h;
    L->clo = L->left > 0 ? L->left - 1 : 0;
    L->chi = L->right + 1 < L->w ? L->right + 1 : L->w;
    const int w = L->w, h = L->h;

    float rfl[3];
    const float f1 = 1.0f / quant_step(lev, 1), f2 = 1.0f / quant_step(lev, 2);
    rfl[0] = f1, rfl[1] = f1, rfl[2] = f2;
    for (int c = 0; c < 3; c++) {
        L->rf[c] = (uint32_t)(rfl[c] * pow(2, 32));
        L->pow3[c] = pow(rfl[c], 3);
    }
    L->vadd = lev == 1 ? 0 : 32768, L->hadd = lev == 2 ? 32768 : 16384;
    L->vsh = lev == 1 ? 0 : 16, L->hsh = lev == 2 ? 16 : 15;

    const int area_w = L->right - L->left, area_h = L->bottom - L->top;
    static const int SQ_SH[3] = {31, 30, 31};
    static const unsigned CONV[3] = {32, 27, 23};
    unsigned dsh_cub = 0, dsh_acc = 0;
    if (lev == 0) {
        int den_acc_sh = (int)ceil(log2((double)(area_h * area_w)) - 20);
        den_acc_sh = den_acc_sh > 0 ? den_acc_sh : 0;
        L->d_sh_acc = den_acc_sh;
        L->d_add_acc = den_acc_sh > 0 ? (uint64_t)1 << (den_acc_sh - 1) : 0;
        L->shc = pow(2, 18 - den_acc_sh);
    } else {
        dsh_cub = ceil_log2_u(area_w);
        L->d_sh_cub = (int)dsh_cub;
        L->d_add_cub = (uint64_t)(uint32_t)pow(2, (double)dsh_cub - 1);
        dsh_acc = ceil_log2_u(area_h);
        L->d_sh_acc = (int)dsh_acc;
        L->d_add_acc = (uint64_t)(uint32_t)pow(2, (double)dsh_acc - 1);
        L->sq_sh = SQ_SH[lev - 1];
        L->sq_add = (uint64_t)1 << SQ_SH[lev - 1];
        L->shc = pow(2, (double)(unsigned)(CONV[lev - 1] - dsh_acc - dsh_cub));
    }
    unsigned n_sh_hv = 0, n_sh_d = 0, n_sh_cub = 0;
    const unsigned n_sh_acc = ceil_log2_u(h);
    L->n_sh_acc = (int)n_sh_acc;
    L->n_add_acc = (int64_t)(uint32_t)pow(2, (double)n_sh_acc - 1);
    if (lev == 0) {
        n_sh_hv = (unsigned)ceil(log2(w) - 4);
        L->n_add_hv = (uint32_t)pow(2, (double)n_sh_hv - 1);
        n_sh_d = (unsigned)ceil(log2(w) - 3);
        L->n_add_d = (uint32_t)pow(2, (double)n_sh_d - 1);
        L->n_sh_hv = (int)n_sh_hv, L->n_sh_d = (int)n_sh_d;
        L->p_hv = pow(2, (double)(unsigned)(52u - n_sh_hv - n_sh_acc));
        L->p_d = pow(2, (double)(unsigned)(57u - n_sh_d - n_sh_acc));
    } else {
        n_sh_cub = ceil_log2_u(w);
        L->n_sh_cub = (int)n_sh_cub;
        L->n_add_cub = (uint32_t)pow(2, (double)n_sh_cub - 1);
        static const unsigned FS[3] = {45, 39, 36};
        L->fs = (float)pow(2, (double)(unsigned)(FS[lev - 1] - n_sh_cub - n_sh_acc));
    }
    L->noise = powf((float)(area_h * area_w * NOISE_WEIGHT), 1.0f / 3.0f);
}

int vk_adm(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
           double enhn_gain_limit, float *out)
{
    if (!b || !ref || !dist || !out || bpc < 8 || bpc > 16 || w < ADM_MIN_SIZE ||
        h < ADM_MIN_SIZE || w > VK_MAX_DIMENSION || h > VK_MAX_DIMENSION ||
        !(enhn_gain_limit >= 1.0) || !(enhn_gain_limit <= 100.0))
        return -EINVAL;
    AdmLevels lv;
    level_constants(&lv.l[0], 0, w, h);
    for (int s = 1; s < 4; s++)
        level_constants(&lv.l[s], s, lv.l[s - 1].w, lv.l[s - 1].h);
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
