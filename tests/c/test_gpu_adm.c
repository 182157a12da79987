/* The ADM program (csrc/gpu/adm_program.c) on the emulator against the CPU
 * kernel vdnn_adm_integer: the same five floats (adm2, the four scales) on
 * every plane pair of gpu_planes.h, both orders, with the gain limits of
 * vmaf_v0.6.1 (100) and its neg variant (1) and a non-integer one (the CPU
 * kernel's generic paths); NaN where a sample is out of range; its
 * arguments refused. And the kernels' cube root against libm's powf. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
/* adm_cbrtf (the kernels themselves are not called here) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/adm_kernels.h"
#pragma GCC diagnostic pop
#include "gpu/programs.h"
#include "gpu_gain_contract.h"
#include "gpu_planes.h"
#include "vmaf_kernels.h"

static int same_as_cpu(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                       double egl, const char *what)
{
    const VdnnPlane r = gpu_plane(ref, w, h, bpc), d = gpu_plane(dist, w, h, bpc);
    double adm2 = -1, scales[4] = {-1, -1, -1, -1};
    float got[5] = {-1, -1, -1, -1, -1};
    const int rc_cpu = vdnn_adm_integer(&vdnn_kernel_env_malloc, &r, &d, egl, &adm2, scales);
    const int rc_gpu = vk_adm(&vk_emulator, ref, dist, w, h, bpc, egl, got);
    const double want[5] = {adm2, scales[0], scales[1], scales[2], scales[3]};
    int ok = !rc_cpu && !rc_gpu;
    for (int i = 0; i < 5; i++)
        ok &= got[i] == (float)want[i];
    if (!ok) {
        fprintf(stderr, "adm %s %dx%d %d-bit egl %g: rc cpu %d, gpu %d\n", what, w, h, bpc, egl,
                rc_cpu, rc_gpu);
        for (int i = 0; i < 5; i++)
            fprintf(stderr, "  [%d] cpu %.9g gpu %.9g\n", i, (double)(float)want[i],
                    (double)got[i]);
    }
    return ok;
}

/* adm_cbrtf is glibc's powf(x, 1/3f): every 4099th float pattern (both
 * signs, zeros, subnormals, infinities, NaNs among them). */
static void cube_root_is_powf(void)
{
    int bad = 0;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
        const float x = adm_as_float((uint32_t)u);
        const float want = powf(x, 1.0f / 3.0f), got = adm_cbrtf(x);
        if (!(isnan(want) ? isnan(got) : adm_as_u32(got) == adm_as_u32(want)) && bad++ < 5)
            fprintf(stderr, "adm_cbrtf(%a) = %a, powf %a\n", (double)x, (double)got,
                    (double)want);
    }
    CHECK_EQ_INT(bad, 0);
}

/* vdnn_adm_integer's return code, for gpu_gain_contract */
static int adm_rc(const VdnnPlane *ref, const VdnnPlane *dist, double egl)
{
    double adm2, scales[4];
    return vdnn_adm_integer(&vdnn_kernel_env_malloc, ref, dist, egl, &adm2, scales);
}

int main(void)
{
    cube_root_is_powf();
    uint16_t *a = gpu_plane_alloc(), *b = gpu_plane_alloc();
    if (!a || !b)
        return 1;
    static const double egls[] = {100.0, 1.0, 2.5};
    int cases = 0;
    for (GpuCase c = GPU_CASE_START; gpu_next_pair(&c, a, b);)
        for (int e = 0; e < 3; e++) {
            /* the generic paths once per size and depth at 1080p */
            if (e == 2 && c.w * c.h > 500000 && c.kind != GPU_SCENE)
                continue;
            CHECK(same_as_cpu(a, b, c.w, c.h, c.bpc, egls[e], c.kind_name));
            CHECK(same_as_cpu(b, a, c.w, c.h, c.bpc, egls[e], c.kind_name));
            cases++;
        }

    gpu_gain_contract("adm", vk_adm, 5, 33, adm_rc, a, b);
    printf("%d plane pairs x gain limits, both orders\n", cases);
    free(a);
    free(b);
    return check_report();
}
