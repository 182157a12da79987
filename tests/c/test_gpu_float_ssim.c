/* float_ssim: the CPU kernel vdnn_float_ssim (fr_kernels.h) and the GPU
 * program vk_float_ssim (csrc/gpu/float_ssim_program.c) on the emulator,
 * the same float on frames of every scale up to 9 (sizes on both sides of
 * the scale's steps: min side 383/384, 639/640; odd sides, whose count
 * gets iqa's extra sample; sides whose last samples no box takes; 1080p,
 * 4K), depths 8 to 16, noise, scenes (a shifted copy), saturated blocks,
 * flat planes, equal planes; the CPU kernel against a plain double
 * reference (libvmaf's decimation, then SSIM, in double); ssim_y's own
 * score, bit for bit, where the scale is 1; the scale and sizes against
 * their definitions. The contract: strides, every sample checked against
 * the depth (those no box takes too), every allocation failure and
 * cancellation point clean, the program's launches and its memory given
 * back whatever fails, arguments refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fr_kernels.h"
#include "gpu/programs.h"
/* the scale and sizes (the kernels' thunks unused) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/float_ssim_kernels.h"
#pragma GCC diagnostic pop
#include "gpu_planes.h"

/* gpu_planes.h's kinds and one more: two flat planes a step apart */
enum { FLAT = GPU_KINDS, KINDS };

static void make_pair(int kind, int w, int h, int bpc, uint64_t seed, uint16_t *a, uint16_t *b)
{
    if (kind != FLAT) {
        gpu_pair(kind, w, h, bpc, seed, a, b);
        return;
    }
    const uint16_t level = (uint16_t)((1u << bpc) / 3);
    for (size_t i = 0; i < (size_t)w * h; i++)
        a[i] = level, b[i] = (uint16_t)(level + 1);
}

static const char *kind_name(int kind)
{
    return kind == FLAT ? "flat" : gpu_kind_names[kind];
}

/* libvmaf's scale, as its formula reads: max(1, round(min / 256.0)),
 * halves up. */
static int reference_scale(int w, int h)
{
    const int s = (int)floor((w < h ? w : h) / 256.0 + 0.5);
    return s > 1 ? s : 1;
}

/* Position p of an axis of n, reflected (edge repeated) until it is in. */
static int symmetric(int p, int n)
{
    while (p < 0 || p >= n)
        p = p < 0 ? -1 - p : 2 * n - 1 - p;
    return p;
}

/* The plane on [0, 1] in double, decimated as iqa's _iqa_decimate does for
 * a scale above 1 (each output the mean of its s x s box, taps from
 * i s - s/2, mirrored), as it is for a scale of 1. *dw x *dh. */
static double *reference_plane(const uint16_t *p, int w, int h, int bpc, int s, int *dw, int *dh)
{
    const double peak = (double)((1u << bpc) - 1u);
    *dw = s == 1 ? w : w / s + (w & 1);
    *dh = s == 1 ? h : h / s + (h & 1);
    double *out = malloc((size_t)*dw * (size_t)*dh * sizeof(double));
    if (!out)
        return NULL;
    for (int i = 0; i < *dh; i++)
        for (int j = 0; j < *dw; j++) {
            double sum = 0;
            for (int t = 0; t < s; t++)
                for (int u = 0; u < s; u++) {
                    const int y = symmetric(i * s - s / 2 + t, h);
                    const int x = symmetric(j * s - s / 2 + u, w);
                    sum += p[(size_t)y * w + x] / peak;
                }
            out[(size_t)i * *dw + j] = sum / (s * s);
        }
    return out;
}

/* Mean SSIM of two w x h planes in double: the five moments' maps through
 * the separable 11-tap Gaussian (sigma 1.5), vertical then horizontal,
 * the valid region, no centring. */
static double reference_ssim_of(const double *x, const double *y, int w, int h)
{
    double g[11], gsum = 0;
    for (int k = 0; k < 11; k++)
        gsum += g[k] = exp(-(k - 5) * (k - 5) / (2 * 1.5 * 1.5));
    for (int k = 0; k < 11; k++)
        g[k] /= gsum;
    const int oh = h - 10, ow = w - 10;
    double *v = calloc((size_t)5 * w, sizeof(double));
    if (!v)
        return NAN;
    double total = 0;
    for (int r = 0; r < oh; r++) {
        memset(v, 0, (size_t)5 * w * sizeof(double));
        for (int k = 0; k < 11; k++)
            for (int c = 0; c < w; c++) {
                const double a = x[(size_t)(r + k) * w + c], b = y[(size_t)(r + k) * w + c];
                v[c] += g[k] * a;
                v[w + c] += g[k] * b;
                v[2 * w + c] += g[k] * a * a;
                v[3 * w + c] += g[k] * b * b;
                v[4 * w + c] += g[k] * a * b;
            }
        for (int c = 0; c < ow; c++) {
            double m[5] = {0, 0, 0, 0, 0};
            for (int k = 0; k < 11; k++)
                for (int i = 0; i < 5; i++)
                    m[i] += g[k] * v[i * w + c + k];
            const double vx = m[2] - m[0] * m[0], vy = m[3] - m[1] * m[1];
            const double cov = m[4] - m[0] * m[1], c1 = 1e-4, c2 = 9e-4;
            total += (2 * m[0] * m[1] + c1) * (2 * cov + c2) /
                     ((m[0] * m[0] + m[1] * m[1] + c1) * (vx + vy + c2));
        }
    }
    free(v);
    return total / ((double)ow * oh);
}

static double reference_float_ssim(const uint16_t *a, const uint16_t *b, int w, int h, int bpc)
{
    const int s = reference_scale(w, h);
    int dw, dh;
    double *x = reference_plane(a, w, h, bpc, s, &dw, &dh);
    double *y = reference_plane(b, w, h, bpc, s, &dw, &dh);
    const double v = x && y ? reference_ssim_of(x, y, dw, dh) : NAN;
    free(x);
    free(y);
    return v;
}

/* The CPU kernel within 1e-6 of the reference; equal planes exactly 1. */
static int near_reference(const uint16_t *a, const uint16_t *b, int w, int h, int bpc, int kind,
                          double *worst)
{
    const VdnnPlane pa = gpu_plane(a, w, h, bpc), pb = gpu_plane(b, w, h, bpc);
    double got = -1;
    const double want = reference_float_ssim(a, b, w, h, bpc);
    const int rc = vdnn_float_ssim(&vdnn_kernel_env_malloc, &pa, &pb, &got);
    const double off = fabs(got - want);
    const char *what = kind_name(kind);
    if (rc || !(off <= 1e-6) || (kind == GPU_SAME && got != 1.0)) {
        fprintf(stderr, "float_ssim %s %dx%d %d-bit: kernel %.12g (rc %d), reference %.12g\n",
                what, w, h, bpc, got, rc, want);
        return 0;
    }
    *worst = off > *worst ? off : *worst;
    return 1;
}

/* fssim_scale and fssim_size as their definitions read, for every side;
 * the boxes' taps stay within one reflection of the axis (fssim_mirror's
 * domain) at every scale. */
static int definitions_hold(void)
{
    int bad = 0;
    for (int n = 11; n <= VDNN_FR_MAX_DIMENSION; n++) {
        bad += fssim_scale(n, VDNN_FR_MAX_DIMENSION) != reference_scale(n, VDNN_FR_MAX_DIMENSION);
        bad += fssim_scale(VDNN_FR_MAX_DIMENSION, n) != reference_scale(n, VDNN_FR_MAX_DIMENSION);
        const int s = fssim_scale(n, n), count = fssim_size(n, s);
        bad += s > 1 && count != n / s + n % 2;
        bad += fssim_first(0, s) < -n || fssim_first(count - 1, s) + s - 1 >= 2 * n;
    }
    bad += fssim_scale(383, 5000) != 1 || fssim_scale(384, 384) != 2;
    bad += fssim_scale(639, 639) != 2 || fssim_scale(640, 9999) != 3;
    bad += fssim_scale(1920, 1080) != 4 || fssim_scale(32768, 32768) != 128;
    for (int p = -5; p < 15; p++)
        bad += fssim_mirror(p, 10) != symmetric(p, 10);
    return bad == 0;
}

static int same_as_cpu(const uint16_t *a, const uint16_t *b, int w, int h, int bpc,
                       const char *what)
{
    return gpu_same_as_cpu("float_ssim", vdnn_float_ssim, vk_float_ssim, a, b, w, h, bpc, what);
}

/* Where the scale is 1, ssim_y's score to the bit: the CPU kernel's, and
 * (gpu) the program's on the emulator, (float) of it. */
static int same_as_ssim_y(const uint16_t *a, const uint16_t *b, int w, int h, int bpc, int gpu)
{
    const VdnnPlane pa = gpu_plane(a, w, h, bpc), pb = gpu_plane(b, w, h, bpc);
    double cpu_fs = -1, cpu_y = -2;
    float gpu_fs = (float)cpu_y, gpu_y = (float)cpu_y;
    int rc = vdnn_float_ssim(&vdnn_kernel_env_malloc, &pa, &pb, &cpu_fs) |
             vdnn_ssim_y(&vdnn_kernel_env_malloc, &pa, &pb, &cpu_y);
    if (gpu)
        rc |= vk_float_ssim(&vk_emulator, a, b, w, h, bpc, &gpu_fs) |
              vk_ssim(&vk_emulator, a, b, w, h, bpc, &gpu_y);
    const float want = gpu ? (float)cpu_y : gpu_y;
    if (rc || memcmp(&cpu_fs, &cpu_y, sizeof cpu_fs) || memcmp(&gpu_fs, &gpu_y, sizeof gpu_fs) ||
        memcmp(&gpu_fs, &want, sizeof want)) {
        fprintf(stderr, "float_ssim %dx%d: %.17g %.9g, ssim_y %.17g %.9g\n", w, h, cpu_fs,
                (double)gpu_fs, cpu_y, (double)gpu_y);
        return 0;
    }
    return 1;
}

/* An env that counts its blocks, fails allocation number fail_at and
 * cancels from poll number cancel_at (0: neither). */
typedef struct Tally {
    long live, allocs, polls, fail_at, cancel_at;
} Tally;

static void *tally_alloc(void *opaque, size_t n)
{
    Tally *t = opaque;
    if (++t->allocs == t->fail_at)
        return NULL;
    void *p = vdnn_kernel_env_malloc.alloc(NULL, n);
    t->live += p != NULL;
    return p;
}

static void tally_release(void *opaque, void *p)
{
    ((Tally *)opaque)->live -= p != NULL;
    vdnn_kernel_env_malloc.release(NULL, p);
}

static int tally_cancelled(void *opaque)
{
    Tally *t = opaque;
    t->polls++;
    return t->cancel_at && t->polls >= t->cancel_at;
}

/* Every allocation failing in turn, then every cancellation point: the
 * error, nothing leaked, the output untouched. */
static void failures(const uint16_t *a, const uint16_t *b, int w, int h)
{
    const VdnnPlane pa = {a, w, (unsigned)w, (unsigned)h, 10};
    const VdnnPlane pb = {b, w, (unsigned)w, (unsigned)h, 10};
    Tally t = {0};
    const VdnnKernelEnv env = {tally_alloc, tally_release, tally_cancelled, &t};
    double v = -1;
    CHECK_EQ_INT(vdnn_float_ssim(&env, &pa, &pb, &v), 0);
    CHECK(v > 0 && v <= 1);
    CHECK_EQ_INT(t.live, 0);
    const long allocs = t.allocs, polls = t.polls;
    CHECK(allocs >= 1 && polls >= 2);
    for (long k = 1; k <= allocs; k++) {
        t = (Tally){.fail_at = k};
        v = -1;
        CHECK_EQ_INT(vdnn_float_ssim(&env, &pa, &pb, &v), -ENOMEM);
        CHECK(v == -1 && t.live == 0);
    }
    for (long k = 1; k <= polls; k++) {
        t = (Tally){.cancel_at = k};
        v = -1;
        CHECK_EQ_INT(vdnn_float_ssim(&env, &pa, &pb, &v), -ECANCELED);
        CHECK(v == -1 && t.live == 0);
    }
}

/* The emulator, counting launches and blocks, failing launch number
 * fail_launch or every alloc (fail_alloc). */
typedef struct Counted {
    long launches, live, fail_launch;
    int fail_alloc;
} Counted;

static int counted_launch(void *self, const VkKernelRef *k, unsigned w, unsigned h, unsigned d,
                          void *const *args)
{
    Counted *c = self;
    if (++c->launches == c->fail_launch)
        return -EIO;
    return vk_emulator.launch(vk_emulator.self, k, w, h, d, args);
}

static int counted_alloc(void *self, size_t bytes, void **out)
{
    Counted *c = self;
    if (c->fail_alloc) {
        *out = NULL;
        return -ENOMEM;
    }
    const int rc = vk_emulator.alloc(vk_emulator.self, bytes, out);
    c->live += rc == 0;
    return rc;
}

static void counted_release(void *self, void *block)
{
    ((Counted *)self)->live -= block != NULL;
    vk_emulator.release(vk_emulator.self, block);
}

/* The program's launches (5 at either scale), and its block given back
 * whichever launch fails (the launch's error returned) or when there is no
 * memory. */
static void program_failures(const uint16_t *a, const uint16_t *b, int w, int h)
{
    Counted c = {0};
    const VkBackend counted = {counted_launch, counted_alloc, counted_release,
                               vk_emulator.upload, vk_emulator.download, &c};
    float v = -1;
    CHECK_EQ_INT(vk_float_ssim(&counted, a, b, w, h, 10, &v), 0);
    CHECK_EQ_INT(c.launches, 5);
    CHECK_EQ_INT(c.live, 0);
    for (long k = 1; k <= 5; k++) {
        c = (Counted){.fail_launch = k};
        CHECK_EQ_INT(vk_float_ssim(&counted, a, b, w, h, 10, &v), -EIO);
        CHECK_EQ_INT(c.launches, k);
        CHECK_EQ_INT(c.live, 0);
    }
    c = (Counted){.fail_alloc = 1};
    CHECK_EQ_INT(vk_float_ssim(&counted, a, b, w, h, 10, &v), -ENOMEM);
    CHECK_EQ_INT(c.launches, 0);
}

/* A sample above the depth at (x, y) of a or b: the CPU kernel refuses the
 * pair (its output untouched), the program scores NaN. */
static int refused_at(uint16_t *a, uint16_t *b, int w, int h, int bpc, int x, int y, int in_b)
{
    uint16_t *p = in_b ? b : a;
    const size_t at = (size_t)y * w + x;
    const uint16_t keep = p[at];
    p[at] = (uint16_t)(1u << bpc);
    const VdnnPlane pa = gpu_plane(a, w, h, bpc), pb = gpu_plane(b, w, h, bpc);
    double v = -1;
    float g = 0;
    const int rc = vdnn_float_ssim(&vdnn_kernel_env_malloc, &pa, &pb, &v);
    const int grc = vk_float_ssim(&vk_emulator, a, b, w, h, bpc, &g);
    p[at] = keep;
    if (rc != -EINVAL || v != -1 || grc || !isnan(g)) {
        fprintf(stderr, "float_ssim %dx%d %d-bit, sample (%d, %d) of %s out of range: rc %d, "
                "%g; program rc %d, %g\n", w, h, bpc, x, y, in_b ? "dist" : "ref", rc, v, grc,
                (double)g);
        return 0;
    }
    return 1;
}

/* Unoptimised or under the sanitizers, fewer pairs of the large sizes. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define THOROUGH 0
#else
#define THOROUGH 1
#endif

/* Sizes and their scales: ssim_y's below 384, the steps to 2 and 3 on
 * either side, odd sides (iqa's extra sample; the last box past the end),
 * sides whose last rows or columns no box takes (384 at 2, 1080 at 4),
 * elongated frames, scales 5, 8 and 9 (past box_sums' constant ones). */
static const int sizes[][2] = {
    {11, 11},     {12, 13},     {11, 300},    {383, 383},  {384, 384},   {385, 391},
    {639, 700},   {2000, 400},  {400, 2001},  {640, 641},  {641, 1001},  {1283, 1283},
    {1920, 1080}, {1921, 1081}, {3840, 2160}, {2200, 2200}};
#define N_SIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

int main(void)
{
    CHECK(definitions_hold());

    const size_t most = 3840 * 2160;
    uint16_t *a = malloc(most * sizeof(uint16_t)), *b = malloc(most * sizeof(uint16_t));
    if (!a || !b)
        return 1;
    int cases = 0;
    double worst = 0;
    for (int s = 0; s < N_SIZES; s++)
        for (int d = 0; d < GPU_N_DEPTHS; d++)
            for (int kind = 0; kind < KINDS; kind++) {
                const int w = sizes[s][0], h = sizes[s][1], bpc = gpu_depths[d];
                const int scale = fssim_scale(w, h);
                /* what the emulated map takes: of the frames whose SSIM
                 * runs on more than 50k pixels, one pair (its depth and
                 * kind, noise, scene or saturated, the size's own); of the
                 * smaller ones, every pair, both orders (fewer
                 * unoptimised) */
                const long area = (long)(scale == 1 ? w : fssim_size(w, scale)) *
                                  (scale == 1 ? h : fssim_size(h, scale));
                const int small = area <= 50000 && (THOROUGH || area <= 10000);
                if (!small && (kind != s % 3 || d != s % GPU_N_DEPTHS))
                    continue;
                make_pair(kind, w, h, bpc, (uint64_t)(s * 31 + d * 7 + kind), a, b);
                if (scale == 1) {
                    CHECK(same_as_ssim_y(a, b, w, h, bpc, 1));
                } else {
                    CHECK(same_as_cpu(a, b, w, h, bpc, kind_name(kind)));
                    if (small)
                        CHECK(same_as_cpu(b, a, w, h, bpc, kind_name(kind)));
                }
                CHECK(near_reference(a, b, w, h, bpc, kind, &worst));
                cases++;
            }

    /* ssim_y's score where the scale is 1, of the largest such frames on
     * the CPU (the program: vk_ssim's, test_gpu_ssim.c's) */
    gpu_pair(GPU_SCENE, 383, 4000, 10, 11, a, b);
    CHECK(same_as_ssim_y(a, b, 383, 4000, 10, 0));
    gpu_pair(GPU_NOISE, 3000, 383, 16, 12, a, b);
    CHECK(same_as_ssim_y(a, b, 3000, 383, 16, 0));

    /* strides: rows apart score as packed ones (scale 2) */
    gpu_pair(GPU_SCENE, 400, 384, 10, 13, a, b);
    uint16_t *wide = calloc((size_t)419 * 384 * 2, sizeof(uint16_t));
    if (!wide)
        return 1;
    for (int y = 0; y < 384; y++) {
        memcpy(wide + (size_t)y * 419, a + (size_t)y * 400, 400 * sizeof(uint16_t));
        memcpy(wide + (size_t)(384 + y) * 419, b + (size_t)y * 400, 400 * sizeof(uint16_t));
    }
    const VdnnPlane pa = {a, 400, 400, 384, 10}, pb = {b, 400, 400, 384, 10};
    const VdnnPlane wa = {wide, 419, 400, 384, 10}, wb = {wide + 384 * 419, 419, 400, 384, 10};
    double packed = 0, strided = 1;
    CHECK_EQ_INT(vdnn_float_ssim(&vdnn_kernel_env_malloc, &pa, &pb, &packed), 0);
    CHECK_EQ_INT(vdnn_float_ssim(&vdnn_kernel_env_malloc, &wa, &wb, &strided), 0);
    CHECK(packed == strided && packed < 1);
    free(wide);

    /* every sample is checked: 400 x 384 at scale 2 (200 x 192 boxes from
     * column and row -1: no box takes column 399 or row 383), a box's, a
     * mirrored one's, the last box's, those no box takes; 1080p at scale
     * 4 (rows 1078 and 1079 in no box) */
    static const int at[][2] = {{0, 0}, {1, 1}, {200, 100}, {398, 382}, {399, 0},
                                {0, 383}, {399, 383}, {250, 383}, {399, 200}};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        for (int in_b = 0; in_b < 2; in_b++)
            CHECK(refused_at(a, b, 400, 384, 10, at[i][0], at[i][1], in_b));
    gpu_pair(GPU_SCENE, 1920, 1080, 8, 14, a, b);
    CHECK(refused_at(a, b, 1920, 1080, 8, 700, 1079, 1));
    CHECK(refused_at(a, b, 1920, 1080, 8, 1919, 1078, 0));
    CHECK(refused_at(a, b, 1920, 1080, 8, 3, 4, 0));
    /* and samples far out of range everywhere: NaN, no overflow */
    for (size_t i = 0; i < (size_t)400 * 384; i++)
        a[i] = (uint16_t)(i % 7 ? 65535 : 0), b[i] = (uint16_t)(i % 5 ? 0 : 65535);
    float got = 0;
    CHECK_EQ_INT(vk_float_ssim(&vk_emulator, a, b, 400, 384, 8, &got), 0);
    CHECK(isnan(got));

    /* failures, decimated and not */
    gpu_pair(GPU_SCENE, 400, 384, 10, 15, a, b);
    failures(a, b, 400, 384);
    program_failures(a, b, 400, 384);
    gpu_pair(GPU_SCENE, 64, 36, 10, 16, a, b);
    failures(a, b, 64, 36);
    program_failures(a, b, 64, 36);

    /* arguments: the kernel's planes one field off at a time (a, b: 64 x 36
     * planes of 10 bits; too wide: a width past the largest), then no env,
     * planes or output; the program's geometry likewise, then each pointer
     * missing */
    enum { BIG = VDNN_FR_MAX_DIMENSION + 1 };
    static const struct {
        ptrdiff_t stride;
        unsigned w, h, bpc, other_w, other_bpc;
    } bad_planes[] = {{64, 64, 36, 7, 64, 7},   {64, 64, 36, 17, 64, 17}, {64, 10, 36, 10, 10, 10},
                      {64, 64, 10, 10, 64, 10}, {64, 64, 36, 10, 63, 10}, {64, 64, 36, 10, 64, 12},
                      {63, 64, 36, 10, 64, 10}, {BIG, BIG, 11, 10, BIG, 10}};
    double v = -1;
    for (size_t i = 0; i < sizeof(bad_planes) / sizeof(bad_planes[0]); i++) {
        const VdnnPlane r = {a, bad_planes[i].stride, bad_planes[i].w, bad_planes[i].h,
                             bad_planes[i].bpc};
        const VdnnPlane d = {b, bad_planes[i].stride, bad_planes[i].other_w, bad_planes[i].h,
                             bad_planes[i].other_bpc};
        CHECK_EQ_INT(vdnn_float_ssim(&vdnn_kernel_env_malloc, &r, &d, &v), -EINVAL);
    }
    const VdnnPlane r64 = {a, 64, 64, 36, 10}, d64 = {b, 64, 64, 36, 10};
    const VdnnPlane none = {NULL, 64, 64, 36, 10};
    for (int missing = 0; missing < 4; missing++)
        CHECK_EQ_INT(vdnn_float_ssim(missing == 0 ? NULL : &vdnn_kernel_env_malloc,
                                     missing == 1 ? NULL : &r64, missing == 2 ? NULL : &d64,
                                     missing == 3 ? NULL : &v),
                     -EINVAL);
    CHECK_EQ_INT(vdnn_float_ssim(&vdnn_kernel_env_malloc, &none, &d64, &v), -EINVAL);
    CHECK(v == -1);
    static const int bad_frames[][3] = {{10, 36, 10}, {64, 10, 10}, {64, 36, 7}, {64, 36, 17},
                                        {VK_MAX_DIMENSION + 1, 384, 10},
                                        {384, VK_MAX_DIMENSION + 1, 10}};
    for (size_t i = 0; i < sizeof(bad_frames) / sizeof(bad_frames[0]); i++)
        CHECK_EQ_INT(vk_float_ssim(&vk_emulator, a, b, bad_frames[i][0], bad_frames[i][1],
                                   bad_frames[i][2], &got),
                     -EINVAL);
    for (int missing = 0; missing < 4; missing++)
        CHECK_EQ_INT(vk_float_ssim(missing == 0 ? NULL : &vk_emulator, missing == 1 ? NULL : a,
                                   missing == 2 ? NULL : b, 64, 36, 10,
                                   missing == 3 ? NULL : &got),
                     -EINVAL);

    printf("%d plane pairs, each against the double reference (at most %.3g apart)\n", cases,
           worst);
    free(a);
    free(b);
    return check_report();
}
