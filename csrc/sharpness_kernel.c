/* sharpness_nr on the CPU (nr_kernels.h): one pass over the rows, each
 * valid row's Laplacian summed exactly (gpu/sharpness_kernels.h's
 * sharp_laplacian and sharp_square, the GPU's arithmetic), the rows' sums
 * added in order in double, sharp_variance of the totals. The samples'
 * range is checked in the same pass (every row as one of a Laplacian row's
 * three). */
#include <errno.h>

#include "nr_kernels.h"
#include "vectorize.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif
/* the arithmetic; the kernels, unused here, are the emulator's */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/sharpness_kernels.h"
#pragma GCC diagnostic pop

/* Rows between polls of env->cancelled. */
#define ROWS_PER_TILE 64

/* The Laplacian's sum and sum of squares over the valid columns of the row
 * `mid`, exact; returns the bits of the three rows' samples ORed (the
 * loads the Laplacian makes, and the corners it does not read). (The column
 * index is an int, as sharp_laplacian takes it: with an unsigned one gcc
 * sees no affine access and leaves the loop scalar. sharp_square's 64-bit
 * product of sign-extended 32-bit values vectorises as pmuldq.) */
VDNN_TARGET_CLONES
static unsigned laplacian_row(const uint16_t *restrict up, const uint16_t *restrict mid,
                              const uint16_t *restrict down, unsigned w, int64_t *sum,
                              uint64_t *squares)
{
    int64_t s1 = 0;
    uint64_t s2 = 0;
    unsigned bits = (unsigned)(up[0] | up[w - 1] | mid[0] | mid[w - 1] | down[0] | down[w - 1]);
    for (int x = 1; x < (int)w - 1; x++) {
        const int32_t li = sharp_laplacian(up, mid, down, x);
        s1 += li;
        s2 += sharp_square(li);
        bits |= (unsigned)(up[x] | mid[x] | down[x]);
    }
    *sum = s1;
    *squares = s2;
    return bits;
}

int vdnn_sharpness_nr(const VdnnKernelEnv *env, const VdnnPlane *dist, double *var)
{
    int rc = vdnn_fr_check(env, dist, dist, var, 3);
    if (rc)
        return rc;
    const unsigned max = (1u << dist->bpc) - 1u, w = dist->w;
    const ptrdiff_t stride = dist->stride;
    const uint16_t *p = dist->data;
    double t1 = 0, t2 = 0;
    for (unsigned y = 1; y + 1 < dist->h; y++) {
        if (y % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque))
            return -ECANCELED;
        const uint16_t *mid = p + (ptrdiff_t)y * stride;
        int64_t s1;
        uint64_t s2;
        if (laplacian_row(mid - stride, mid, mid + stride, w, &s1, &s2) & ~max)
            return -EINVAL;
        t1 += (double)s1;
        t2 += (double)s2;
    }
    *var = sharp_variance(t1, t2, (int)w, (int)dist->h, (int)dist->bpc);
    return 0;
}
