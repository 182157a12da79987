/* The sharpness program (csrc/gpu/sharpness_program.c) on the emulator
 * against the CPU kernel vdnn_sharpness_nr (nr_kernels.h): the same float
 * on both planes of every pair of gpu_planes.h; the CPU kernel against a
 * plain long-double reference; exactly 0 for a flat plane; the smallest
 * sizes; strides; NaN (program) and -EINVAL (CPU) for a sample out of range
 * wherever it lies; cancellation; arguments refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu/programs.h"
#include "gpu_planes.h"
#include "nr_kernels.h"

/* The one-plane metric in gpu_same_as_cpu's two-plane shape: it scores
 * `dist`. */
static int cpu_dist(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                    double *out)
{
    (void)ref;
    return vdnn_sharpness_nr(env, dist, out);
}

static int gpu_dist(const VkBackend *b, const uint16_t *ref, const uint16_t *dist, int w, int h,
                    int bpc, float *score)
{
    (void)ref;
    return vk_sharpness(b, dist, w, h, bpc, score);
}

static int same_as_cpu(const uint16_t *p, int w, int h, int bpc, const char *what)
{
    return gpu_same_as_cpu("sharpness", cpu_dist, gpu_dist, p, p, w, h, bpc, what);
}

/* The obvious variance: the Laplacian of s / peak in long double, its mean,
 * then the mean squared deviation (two passes). */
static long double reference_sharpness(const uint16_t *p, int w, int h, int bpc)
{
    const long double peak = (long double)((1u << bpc) - 1u);
    const long double n = (long double)(w - 2) * (h - 2);
#define X(y, x) ((long double)p[(size_t)(y) * w + (x)] / peak)
#define LAP(y, x) (X(y - 1, x) + X(y + 1, x) + X(y, x - 1) + X(y, x + 1) - 4 * X(y, x))
    long double sum = 0, dev = 0;
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++)
            sum += LAP(y, x);
    const long double mean = sum / n;
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++)
            dev += (LAP(y, x) - mean) * (LAP(y, x) - mean);
#undef LAP
#undef X
    return dev / n;
}

static int near_reference(const uint16_t *p, int w, int h, int bpc, const char *what)
{
    const VdnnPlane plane = gpu_plane(p, w, h, bpc);
    double got = -1;
    const long double want = reference_sharpness(p, w, h, bpc);
    const int rc = vdnn_sharpness_nr(&vdnn_kernel_env_malloc, &plane, &got);
    const long double err = fabsl((long double)got - want);
    if (rc || !(err <= 1e-9L * fabsl(want) || err <= 1e-12L)) {
        fprintf(stderr, "sharpness %s %dx%d %d-bit: kernel %.17g (rc %d), reference %.17Lg\n",
                what, w, h, bpc, got, rc, want);
        return 0;
    }
    return 1;
}

/* Both sides on p: the same float, near the reference. */
static int both(const uint16_t *p, int w, int h, int bpc, const char *what)
{
    return same_as_cpu(p, w, h, bpc, what) && near_reference(p, w, h, bpc, what);
}

/* A sample above 2^bpc - 1 at (x, y) of a 64 x 36 10-bit plane: refused by
 * the CPU kernel, NaN from the program. */
static int out_of_range(uint16_t *p, int x, int y)
{
    gpu_pair(GPU_SCENE, 64, 36, 10, 11, p, p + 64 * 36);
    p[y * 64 + x] = 1024;
    const VdnnPlane plane = {p, 64, 64, 36, 10};
    double cpu = 0;
    float got = 0;
    const int rc_cpu = vdnn_sharpness_nr(&vdnn_kernel_env_malloc, &plane, &cpu);
    const int rc_gpu = vk_sharpness(&vk_emulator, p, 64, 36, 10, &got);
    if (rc_cpu != -EINVAL || rc_gpu || !isnan(got)) {
        fprintf(stderr, "sharpness: 1024 at (%d, %d): cpu rc %d, gpu %g (rc %d)\n", x, y, rc_cpu,
                (double)got, rc_gpu);
        return 0;
    }
    return 1;
}

static int polls;

static int cancel_after_first(void *opaque)
{
    (void)opaque;
    return polls++ > 0;
}

int main(void)
{
    uint16_t *a = gpu_plane_alloc(), *b = gpu_plane_alloc();
    if (!a || !b)
        return 1;
    const VdnnKernelEnv *env = &vdnn_kernel_env_malloc;
    int cases = 0;
    for (GpuCase c = GPU_CASE_START; gpu_next_pair(&c, a, b);) {
        CHECK(both(b, c.w, c.h, c.bpc, c.kind_name));
        CHECK(both(a, c.w, c.h, c.bpc, c.kind_name));
        cases++;
    }

    /* a flat plane (any level): exactly 0 on both sides; a plane whose
     * Laplacian is the same everywhere (x^2 + y^2: 4) too */
    for (int i = 0; i < 97 * 61; i++)
        a[i] = 4095, b[i] = (uint16_t)((i % 97) * (i % 97) + (i / 97) * (i / 97));
    const VdnnPlane flat = {a, 97, 97, 61, 12}, bowl = {b, 97, 97, 61, 14};
    double var = -1;
    float got = -1;
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &flat, &var), 0);
    CHECK(var == 0.0);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 97, 61, 12, &got), 0);
    CHECK(got == 0.0f);
    var = -1;
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &bowl, &var), 0);
    CHECK(var == 0.0);
    CHECK(same_as_cpu(b, 97, 61, 14, "bowl"));

    /* the smallest sizes: one valid pixel (variance 0), one row or column
     * of them; 16-bit extremes at every depth */
    for (int bpc = 8; bpc <= 16; bpc += 4) {
        const uint16_t peak = (uint16_t)((1u << bpc) - 1u);
        for (int i = 0; i < 16; i++)
            a[i] = (uint16_t)((i * 7 + bpc) % 3 ? peak : 0);
        CHECK(both(a, 3, 3, bpc, "3x3"));
        CHECK(both(a, 4, 3, bpc, "4x3"));
        CHECK(both(a, 3, 4, bpc, "3x4"));
        CHECK(both(a, 5, 3, bpc, "5x3"));
    }
    for (int i = 0; i < 9; i++)
        a[i] = (uint16_t)(i * 31);
    const VdnnPlane one = {a, 3, 3, 3, 8};
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &one, &var), 0);
    CHECK(var == 0.0);

    /* rows `stride` apart score as packed ones */
    gpu_pair(GPU_SCENE, 64, 36, 10, 8, a, b);
    uint16_t *wide = calloc((size_t)80 * 36, sizeof(uint16_t));
    if (!wide)
        return 1;
    for (int y = 0; y < 36; y++)
        memcpy(wide + y * 80, b + y * 64, 64 * sizeof(uint16_t));
    const VdnnPlane packed = {b, 64, 64, 36, 10}, strided = {wide, 80, 64, 36, 10};
    double packed_var = 0, strided_var = 1;
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &packed, &packed_var), 0);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &strided, &strided_var), 0);
    CHECK(packed_var == strided_var);
    CHECK(packed_var > 0);
    /* a sample out of range in the padding is no sample */
    for (int y = 0; y < 36; y++)
        wide[y * 80 + 64 + y % 16] = 65535;
    strided_var = 1;
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &strided, &strided_var), 0);
    CHECK(packed_var == strided_var);
    free(wide);

    /* a sample out of range anywhere: corners (outside the Laplacian's
     * cross), edges, the first two rows, the last, the middle */
    static const int spots[][2] = {{0, 0},  {63, 0},  {0, 35}, {63, 35}, {10, 0}, {10, 1},
                                   {0, 17}, {63, 17}, {31, 17}, {5, 35}, {62, 34}, {1, 1}};
    for (size_t i = 0; i < sizeof spots / sizeof spots[0]; i++)
        CHECK(out_of_range(a, spots[i][0], spots[i][1]));
    /* every sample far out of range (8-bit planes of 16-bit extremes) */
    for (int i = 0; i < 64 * 36; i++)
        a[i] = (uint16_t)(i % 7 ? 65535 : 0);
    for (int bpc = 8; bpc <= 15; bpc++) {
        got = 0;
        CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 64, 36, bpc, &got), 0);
        CHECK(isnan(got));
    }

    /* cancelled between row bands */
    gpu_pair(GPU_NOISE, 200, 300, 8, 3, a, b);
    const VdnnKernelEnv cancelling = {env->alloc, env->release, cancel_after_first, NULL};
    const VdnnPlane tall = {a, 200, 200, 300, 8};
    CHECK_EQ_INT(vdnn_sharpness_nr(&cancelling, &tall, &var), -ECANCELED);

    /* arguments refused */
    const int big = VDNN_FR_MAX_DIMENSION + 1;
    const VdnnPlane ok = {a, 64, 64, 36, 10};
    const VdnnPlane bad7 = {a, 64, 64, 36, 7}, bad17 = {a, 64, 64, 36, 17};
    const VdnnPlane narrow = {a, 64, 2, 36, 10}, low = {a, 64, 64, 2, 10};
    const VdnnPlane too_wide = {a, big, (unsigned)big, 2, 10};
    const VdnnPlane too_tall = {a, 64, 64, (unsigned)big, 10}, tight = {a, 63, 64, 36, 10};
    const VdnnPlane null_data = {NULL, 64, 64, 36, 10};
    const VdnnKernelEnv no_alloc = {NULL, env->release, NULL, NULL};
    for (int i = 0; i < 64 * 36; i++)
        a[i] = (uint16_t)(i % 1024);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &ok, &var), 0);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &bad7, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &bad17, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &narrow, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &low, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &too_wide, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &too_tall, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &tight, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &null_data, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, NULL, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(env, &ok, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(NULL, &ok, &var), -EINVAL);
    CHECK_EQ_INT(vdnn_sharpness_nr(&no_alloc, &ok, &var), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 64, 36, 10, &got), 0);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 2, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 3, 2, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 64, 36, 7, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 64, 36, 17, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, NULL, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 64, 36, 10, NULL), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(NULL, a, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, big, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_sharpness(&vk_emulator, a, 64, big, 10, &got), -EINVAL);

    printf("%d plane pairs, both planes\n", cases);
    free(a);
    free(b);
    return check_report();
}
