/* vk_self_check (self_check.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../fr_kernels.h"
#include "../nr_kernels.h"
#include "../vmaf_kernels.h"
#include "programs.h"
#include "self_check.h"

/* Where each program's scores go, side by side (VIF's four, ADM's adm2 then
 * its four scales). */
enum { VIF = 0, ADM = 4, MOTION = 9, SSIM, PSNR, SHARPNESS, FLOAT_SSIM, N_SCORES };
_Static_assert(ADM == VIF + 4 && MOTION == ADM + 5, "VIF's 4 scores, then ADM's 5");

static const char *const score_names[N_SCORES] = {
    "vif_scale0", "vif_scale1", "vif_scale2", "vif_scale3", "adm2",   "adm_scale0",   "adm_scale1",
    "adm_scale2", "adm_scale3", "motion",     "ssim_y",     "psnr_y", "sharpness_nr",
    "float_ssim"};

/* psnr_y's dB goes through log10, which is libdevice's on a GPU and glibc's
 * here: they may differ in the last bit of the double, and so the float at
 * a tie. One float step apart is not a fault of the kernels (the SSE before
 * it is an exact integer on both sides); refusing every kernel of a device
 * for it would be. */

static int one_ulp(float a, float b)
{
    return isfinite(a) && isfinite(b) && (nextafterf(a, b) == b);
}

static uint32_t next_random(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Noise in [-1, 1]. */
static double noise(uint64_t *s)
{
    return ((double)(next_random(s) % 2001) - 1000.0) / 1000.0;
}

static double picture(int x, int y)
{
    return 0.5 + 0.3 * sin(x / 9.0 + y / 31.0) * cos(y / 13.0) + 0.12 * sin(x * (double)y / 500.0);
}

static uint16_t sample(double v, int peak)
{
    const long s = lround(v * peak);
    return (uint16_t)(s < 0 ? 0 : s > peak ? peak : s);
}

/* ref: texture and noise; dist: ref with more noise; prev: ref two columns
 * and a row on (motion). A block saturated at peak in ref and 0 in dist
 * takes every clamp. */
static void fill(uint16_t *ref, uint16_t *dist, uint16_t *prev, int w, int h, int bpc)
{
    const int peak = (1 << bpc) - 1;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * (size_t)w + (size_t)x;
            const double n = 0.02 * noise(&s);
            ref[i] = sample(picture(x, y) + n, peak);
            prev[i] = sample(picture(x + 2, y + 1) + n, peak);
            dist[i] = sample(picture(x, y) + n + 0.05 * noise(&s), peak);
            if (x >= w / 3 && x < w / 3 + 12 && y >= h / 4 && y < h / 4 + 12) {
                ref[i] = (uint16_t)peak;
                dist[i] = 0;
            }
        }
}

static int cpu_scores(const uint16_t *ref, const uint16_t *dist, const uint16_t *prev, int w,
                      int h, int bpc, double egl, float out[N_SCORES])
{
    const VdnnPlane r = {ref, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    const VdnnPlane d = {dist, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    const VdnnPlane p = {prev, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    double s[N_SCORES] = {0};
    const VdnnKernelEnv *env = &vdnn_kernel_env_malloc;
    int rc = vdnn_vif_integer(env, &r, &d, egl, &s[VIF]);
    if (!rc)
        rc = vdnn_adm_integer(env, &r, &d, egl, &s[ADM], &s[ADM + 1]);
    if (!rc)
        rc = vdnn_motion_integer(env, &p, &r, &s[MOTION]);
    if (!rc)
        rc = vdnn_ssim_y(env, &r, &d, &s[SSIM]);
    if (!rc)
        rc = vdnn_psnr_y(env, &r, &d, &s[PSNR]);
    if (!rc)
        rc = vdnn_sharpness_nr(env, &d, &s[SHARPNESS]);
    if (!rc)
        rc = vdnn_float_ssim(env, &r, &d, &s[FLOAT_SSIM]);
    for (int k = 0; k < N_SCORES; k++)
        out[k] = (float)s[k];
    return rc;
}

static int device_scores(const VkBackend *b, const uint16_t *ref, const uint16_t *dist,
                         const uint16_t *prev, int w, int h, int bpc, double egl,
                         float out[N_SCORES])
{
    const size_t bytes = (size_t)w * (size_t)h * sizeof(uint16_t);
    uint16_t *planes = NULL;
    float *scores = NULL;
    int rc = b->alloc(b->self, 3 * bytes, (void **)&planes);
    if (!rc)
        rc = b->alloc(b->self, N_SCORES * sizeof(float), (void **)&scores);
    uint16_t *const d_ref = planes, *const d_dist = planes ? planes + (size_t)w * h : NULL,
                    *const d_prev = planes ? planes + 2 * (size_t)w * h : NULL;
    if (!rc)
        rc = b->upload(b->self, d_ref, ref, bytes);
    if (!rc)
        rc = b->upload(b->self, d_dist, dist, bytes);
    if (!rc)
        rc = b->upload(b->self, d_prev, prev, bytes);
    if (!rc)
        rc = vk_vif(b, d_ref, d_dist, w, h, bpc, egl, scores + VIF);
    if (!rc)
        rc = vk_adm(b, d_ref, d_dist, w, h, bpc, egl, scores + ADM);
    if (!rc)
        rc = vk_motion(b, d_prev, d_ref, w, h, bpc, scores + MOTION);
    if (!rc)
        rc = vk_ssim(b, d_ref, d_dist, w, h, bpc, scores + SSIM);
    if (!rc)
        rc = vk_psnr(b, d_ref, d_dist, w, h, bpc, scores + PSNR);
    if (!rc)
        rc = vk_sharpness(b, d_dist, w, h, bpc, scores + SHARPNESS);
    if (!rc)
        rc = vk_float_ssim(b, d_ref, d_dist, w, h, bpc, scores + FLOAT_SSIM);
    if (!rc)
        rc = b->download(b->self, out, scores, N_SCORES * sizeof(float));
    b->release(b->self, scores);
    b->release(b->self, planes);
    return rc;
}

int vk_self_check(const VkBackend *b, int w, int h, int bpc, double enhn_gain_limit)
{
    if (!b || w < 33 || h < 33 || w > 8192 || h > 8192 || bpc < 8 || bpc > 16 ||
        !(enhn_gain_limit >= 1.0 && enhn_gain_limit <= 100.0))
        return vdnn_fail(-EINVAL, "GPU self-check: bad argument");
    const size_t n = (size_t)w * (size_t)h;
    uint16_t *host = malloc(3 * n * sizeof(uint16_t));
    if (!host)
        return vdnn_fail(-ENOMEM, "out of memory");
    uint16_t *const ref = host, *const dist = host + n, *const prev = host + 2 * n;
    fill(ref, dist, prev, w, h, bpc);
    float want[N_SCORES], got[N_SCORES];
    int rc = cpu_scores(ref, dist, prev, w, h, bpc, enhn_gain_limit, want);
    if (rc) {
        free(host);
        return rc;
    }
    memset(got, 0, sizeof(got));
    rc = device_scores(b, ref, dist, prev, w, h, bpc, enhn_gain_limit, got);
    free(host);
    if (rc)
        return rc;
    for (int k = 0; k < N_SCORES; k++)
        if (memcmp(&got[k], &want[k], sizeof(float)) != 0 &&
            !(k == PSNR && one_ulp(got[k], want[k])))
            return vdnn_fail(-EIO, "the GPU kernels disagree with the CPU kernels: %s of a "
                             "%dx%d %d-bit frame (gain limit %g) is %.9g on the device, %.9g on "
                             "the CPU", score_names[k], w, h, bpc, enhn_gain_limit,
                             (double)got[k], (double)want[k]);
    return 0;
}
