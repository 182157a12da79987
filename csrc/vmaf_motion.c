/* libvmaf's integer motion score for one frame (vmaf_kernels.h).
 *
 * What it computes, as libvmaf 3.x's integer_motion does (the value it logs
 * as VMAF_integer_feature_motion_sad_score):
 *   D = prev - cur (luma, signed)
 *   V = D blurred vertically with the 5-tap filter {3571, 16004, 26386,
 *       16004, 3571} (sum 65536), rounded and shifted right by bpc:
 *       (sum + 2^(bpc-1)) >> bpc (arithmetic shift, so it floors)
 *   H = V blurred horizontally with the same filter, (sum + 2^15) >> 16
 *   sad = sum over rows of (sum over the row of |H|, in 32 bits)
 *   score = min(sad / 256 / (w * h), 10000)
 * Edges mirror without repeating the edge sample (reflect-101: -1 -> 1,
 * n -> n - 2). The first frame of a clip passes itself as prev and gets 0.
 *
 * Smallest frame: 3 x 3 (the mirror of a 5-tap filter reaches 2 samples
 * past each edge, which must land inside the frame; libvmaf reads outside
 * its buffers below that). Smaller frames get -EINVAL.
 *
 * Fixed-point exactness in 32-bit lanes: the vertical sum of differences is
 * at most 65536 * (2^bpc - 1) in magnitude, which fits int32 up to 15 bits
 * (16-bit input takes a 64-bit path). |V| < 2^16, so the horizontal sum may
 * need 33 bits; it is split as V = 256 * Vh + Vl (0 <= Vl < 256), and
 * floor((256 A + B + 2^15) / 2^16) = floor((A + floor((B + 2^15) / 256)) / 256)
 * with A = sum f Vh, B = sum f Vl both within int32.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmaf_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#define ROWS_PER_TILE 32

static const int32_t motion_filter[5] = {3571, 16004, 26386, 16004, 3571};

/* 1 when any sample of the row is above max. */
static int row_out_of_range(const uint16_t *restrict p, unsigned w, unsigned max)
{
    unsigned acc = 0;
    for (unsigned j = 0; j < w; j++)
        acc |= p[j];
    return (acc & ~max) != 0;
}

/* Vertical pass of the difference for one output row, bpc <= 15: int32. */
VDNN_TARGET_CLONES_AVX512
static void vertical_row_32(const uint16_t *restrict const p[5], const uint16_t *restrict const c[5],
                            int32_t *restrict out, unsigned w, unsigned bpc)
{
    const int32_t round = 1 << (bpc - 1);
    const uint16_t *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2];
    const uint16_t *restrict p3 = p[3], *restrict p4 = p[4];
    const uint16_t *restrict c0 = c[0], *restrict c1 = c[1], *restrict c2 = c[2];
    const uint16_t *restrict c3 = c[3], *restrict c4 = c[4];
    for (unsigned j = 0; j < w; j++) {
        int32_t acc = 3571 * (((int32_t)p0[j] - c0[j]) + ((int32_t)p4[j] - c4[j])) +
                      16004 * (((int32_t)p1[j] - c1[j]) + ((int32_t)p3[j] - c3[j])) +
                      26386 * ((int32_t)p2[j] - c2[j]);
        out[j] = (acc + round) >> bpc;
    }
}

/* The same for 16-bit samples, whose sums need 64 bits. */
static void vertical_row_64(const uint16_t *const p[5], const uint16_t *const c[5],
                            int32_t *restrict out, unsigned w, unsigned bpc)
{
    const int64_t round = (int64_t)1 << (bpc - 1);
    for (unsigned j = 0; j < w; j++) {
        int64_t acc = 0;
        for (int k = 0; k < 5; k++)
            acc += (int64_t)motion_filter[k] * ((int32_t)p[k][j] - (int32_t)c[k][j]);
        out[j] = (int32_t)((acc + round) >> bpc);
    }
}

/* Horizontal pass and |.| summed over the row (32-bit wrap, as libvmaf).
 * v points at column 0 of a row mirrored two samples past both ends. */
VDNN_TARGET_CLONES_AVX512
static uint32_t horizontal_sad_row(const int32_t *restrict v, unsigned w)
{
    uint32_t sad = 0;
    const int32_t *restrict v0 = v - 2;
    for (size_t j = 0; j < w; j++) {
        const int32_t a0 = v0[j], a1 = v0[j + 1], a2 = v0[j + 2], a3 = v0[j + 3], a4 = v0[j + 4];
        /* high and low parts: a = 256 * (a >> 8) + (a & 255) */
        const int32_t hi = 3571 * ((a0 >> 8) + (a4 >> 8)) + 16004 * ((a1 >> 8) + (a3 >> 8)) +
                           26386 * (a2 >> 8);
        const int32_t lo = 3571 * ((a0 & 255) + (a4 & 255)) +
                           16004 * ((a1 & 255) + (a3 & 255)) + 26386 * (a2 & 255);
        const int32_t val = (hi + ((lo + 32768) >> 8)) >> 8;
        sad += (uint32_t)(val < 0 ? -val : val);
    }
    return sad;
}

static int check_plane(const VdnnPlane *p)
{
    return p && p->data && p->bpc >= 8 && p->bpc <= 16 && p->stride >= (ptrdiff_t)p->w &&
           p->w >= 3 && p->h >= 3;
}

int vdnn_motion_integer(const VdnnKernelEnv *env, const VdnnPlane *prev, const VdnnPlane *cur,
                        double *sad)
{
    if (!env || !env->alloc || !env->release || !sad || !check_plane(prev) ||
        !check_plane(cur) || prev->w != cur->w || prev->h != cur->h || prev->bpc != cur->bpc)
        return -EINVAL;
    const unsigned w = cur->w, h = cur->h, bpc = cur->bpc;
    const unsigned max = (1u << bpc) - 1;

    int32_t *row = env->alloc(env->opaque, ((size_t)w + 4) * sizeof(int32_t));
    if (!row)
        return -ENOMEM;
    int32_t *v = row + 2;

    int rc = 0;
    uint64_t total = 0;
    unsigned checked = 0; /* source rows 0..checked-1 are known in range */
    for (unsigned i = 0; i < h; i++) {
        if (i % ROWS_PER_TILE == 0 && env->cancelled && env->cancelled(env->opaque)) {
            rc = -ECANCELED;
            break;
        }
        const unsigned need = i + 3 < h ? i + 3 : h;
        for (; checked < need; checked++)
            if (row_out_of_range(prev->data + checked * prev->stride, w, max) ||
                row_out_of_range(cur->data + checked * cur->stride, w, max)) {
                rc = -EINVAL;
                goto done;
            }
        const uint16_t *p[5], *c[5];
        for (int k = 0; k < 5; k++) {
            const int r = vdnn_mirror((int)i - 2 + k, (int)h);
            p[k] = prev->data + r * prev->stride;
            c[k] = cur->data + r * cur->stride;
        }
        if (bpc <= 15)
            vertical_row_32(p, c, v, w, bpc);
        else
            vertical_row_64(p, c, v, w, bpc);
        v[-1] = v[1];
        v[-2] = v[2];
        v[w] = v[w - 2];
        v[w + 1] = v[w - 3];
        total += horizontal_sad_row(v, w);
    }
done:
    env->release(env->opaque, row);
    if (rc)
        return rc;
    const double score = (double)total / 256. / ((double)w * h);
    *sad = score < 10000.0 ? score : 10000.0;
    return 0;
}
