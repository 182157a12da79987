/* psnr_y on the CPU (fr_kernels.h): one pass over the rows, the squared
 * differences summed exactly, psnr_db (gpu/psnr_kernels.h, the GPU's
 * formula) of the total. */
#include <errno.h>

#include "fr_kernels.h"
/* psnr_db; the kernels, unused here, are the emulator's */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/psnr_kernels.h"
#pragma GCC diagnostic pop

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Rows between polls of env->cancelled. */
#define ROWS_PER_TILE 64

/* A row's sums in 32 bits where they fit (w <= 2^15 samples of 16 bits:
 * below 2^31; a squared difference below 2^32, summed in 64); returns the
 * bits of its samples ORed. */
VDNN_TARGET_CLONES
static unsigned scan_row(const uint16_t *restrict ref, const uint16_t *restrict dist,
                         unsigned w, uint64_t out[3])
{
    uint32_t sum_r = 0, sum_d = 0;
    uint64_t sse = 0;
    unsigned bits = 0;
    for (unsigned j = 0; j < w; j++) {
        const uint32_t e = (uint32_t)((int32_t)ref[j] - (int32_t)dist[j]);
        sum_r += ref[j];
        sum_d += dist[j];
        sse += (uint64_t)(e * e);
        bits |= (unsigned)(ref[j] | dist[j]);
    }
    out[0] = sum_r;
    out[1] = sum_d;
    out[2] = sse;
    return bits;
}

int vdnn_fr_check(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                  const double *out, unsigned min_side)
{
    if (!env || !env->alloc || !env->release || !out || !ref || !dist || !ref->data ||
        !dist->data || ref->bpc < 8 || ref->bpc > 16 || ref->bpc != dist->bpc ||
        ref->w != dist->w || ref->h != dist->h || ref->w < min_side || ref->h < min_side ||
        ref->w > VDNN_FR_MAX_DIMENSION || ref->h > VDNN_FR_MAX_DIMENSION ||
        ref->stride < (ptrdiff_t)ref->w || dist->stride < (ptrdiff_t)dist->w)
        return -EINVAL;
    return 0;
}

int vdnn_fr_scan(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                 uint64_t sums[3])
{
    const unsigned max = (1u << ref->bpc) - 1u;
    sums[0] = sums[1] = sums[2] = 0;
    for (unsigned y = 0; y < ref->h; y++) {
        if (y % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque))
            return -ECANCELED;
        uint64_t row[3];
        if (scan_row(ref->data + (ptrdiff_t)y * ref->stride,
                     dist->data + (ptrdiff_t)y * dist->stride, ref->w, row) & ~max)
            return -EINVAL;
        for (int i = 0; i < 3; i++)
            sums[i] += row[i];
    }
    return 0;
}

int vdnn_psnr_y(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                double *psnr)
{
    uint64_t sums[3];
    int rc = vdnn_fr_check(env, ref, dist, psnr, 1);
    if (rc || (rc = vdnn_fr_scan(env, ref, dist, sums)))
        return rc;
    *psnr = psnr_db(sums[2], (int)ref->w, (int)ref->h, (int)ref->bpc);
    return 0;
}
