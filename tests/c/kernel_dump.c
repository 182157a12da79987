/* kernel_dump REF.y4m DIST.y4m [enhn_gain_limit]
 *
 * Runs the library's CPU kernels (csrc/vmaf_kernels.h, fr_kernels.h,
 * nr_kernels.h) on the luma of two Y4M clips and prints one JSON object per
 * frame on stdout: VMAF's features by libvmaf's names (integer_vif_scale0..3,
 * integer_adm2, integer_adm_scale0..3, integer_motion: the SAD of frames t-1
 * and t, 0 for the first), then psnr_y, ssim_y, float_ssim and sharpness_nr
 * (of the distorted clip), with 17 significant digits. On stderr: each
 * kernel's wall time in ms and which of the kernels' builds this CPU runs
 * ("builds: x86-64-v4", "avx2" or "baseline": vdnn_kernels_build, csrc/
 * vectorize.h's clones). The tests compare it with real libvmaf,
 * each x86-64 build with the others, and an AArch64 build with this
 * machine's (tests/python/test_vmaf_kernels.py).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fr_kernels.h"
#include "nr_kernels.h"
#include "vmaf_kernels.h"

typedef struct Y4m {
    FILE *f;
    unsigned w, h, bpc, cw, ch;
} Y4m;

static int open_y4m(const char *path, Y4m *y)
{
    char line[512];
    if (!(y->f = fopen(path, "rb")) || !fgets(line, sizeof(line), y->f) ||
        strncmp(line, "YUV4MPEG2 ", 10) != 0)
        return -1;
    y->w = y->h = 0;
    y->bpc = 8;
    const char *chroma = "420";
    for (char *tok = strtok(line + 10, " \n"); tok; tok = strtok(NULL, " \n")) {
        if (tok[0] == 'W')
            y->w = (unsigned)atoi(tok + 1);
        else if (tok[0] == 'H')
            y->h = (unsigned)atoi(tok + 1);
        else if (tok[0] == 'C') {
            static char c[32];
            snprintf(c, sizeof(c), "%s", tok + 1);
            chroma = c;
            char *p = strchr(c, 'p'); /* C420p10, not C420jpeg / C420paldv */
            if (p && p[1] >= '0' && p[1] <= '9')
                y->bpc = (unsigned)atoi(p + 1);
            if (strncmp(c, "mono", 4) == 0 && c[4])
                y->bpc = (unsigned)atoi(c + 4);
        }
    }
    if (!y->w || !y->h)
        return -1;
    if (strncmp(chroma, "444", 3) == 0)
        y->cw = y->w, y->ch = y->h;
    else if (strncmp(chroma, "422", 3) == 0)
        y->cw = (y->w + 1) / 2, y->ch = y->h;
    else if (strncmp(chroma, "mono", 4) == 0)
        y->cw = y->ch = 0;
    else
        y->cw = (y->w + 1) / 2, y->ch = (y->h + 1) / 2;
    return 0;
}

/* 1: a frame read into luma; 0: end; -1: error. */
static int read_frame(Y4m *y, uint16_t *luma)
{
    char line[256];
    if (!fgets(line, sizeof(line), y->f))
        return 0;
    if (strncmp(line, "FRAME", 5) != 0)
        return -1;
    const size_t bytes = y->bpc > 8 ? 2 : 1;
    const size_t n = (size_t)y->w * y->h;
    unsigned char *buf = malloc(n * bytes);
    if (!buf || fread(buf, bytes, n, y->f) != n) {
        free(buf);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        luma[i] = bytes == 2 ? (uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8) : buf[i];
    free(buf);
    const long chroma = 2L * y->cw * y->ch * (long)bytes;
    if (chroma && fseek(y->f, chroma, SEEK_CUR) != 0)
        return -1;
    return 1;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s REF.y4m DIST.y4m [enhn_gain_limit]\n", argv[0]);
        return 2;
    }
    const double egl = argc > 3 ? atof(argv[3]) : 100.0;
    Y4m r, d;
    if (open_y4m(argv[1], &r) || open_y4m(argv[2], &d) || r.w != d.w || r.h != d.h ||
        r.bpc != d.bpc) {
        fprintf(stderr, "cannot read the two clips as Y4M of one size and depth\n");
        return 2;
    }
    const size_t n = (size_t)r.w * r.h;
    uint16_t *ref = malloc(n * 2), *dist = malloc(n * 2), *prev = malloc(n * 2);
    if (!ref || !dist || !prev)
        return 2;
    const VdnnKernelEnv *env = &vdnn_kernel_env_malloc;
    /* Each kernel's outputs, in the order printed. */
    enum { VIF, ADM, MOTION, PSNR, SSIM, FLOAT_SSIM, SHARPNESS, KERNELS };
    static const char *const kernel_names[KERNELS] = {"vif",  "adm",        "motion",
                                                      "psnr_y", "ssim_y", "float_ssim",
                                                      "sharpness_nr"};
    static const int outputs[KERNELS] = {4, 5, 1, 1, 1, 1, 1};
    static const char *const names[] = {
        "integer_vif_scale0", "integer_vif_scale1", "integer_vif_scale2", "integer_vif_scale3",
        "integer_adm2",       "integer_adm_scale0", "integer_adm_scale1", "integer_adm_scale2",
        "integer_adm_scale3", "integer_motion",     "psnr_y",             "ssim_y",
        "float_ssim",         "sharpness_nr"};
    double ms[KERNELS] = {0};
    for (int frame = 0;; frame++) {
        int a = read_frame(&r, ref), b = read_frame(&d, dist);
        if (a == 0 && b == 0)
            break;
        if (a != 1 || b != 1) {
            fprintf(stderr, "frame %d: cannot read\n", frame);
            return 2;
        }
        VdnnPlane pr = {ref, r.w, r.w, r.h, r.bpc}, pd = {dist, r.w, r.w, r.h, r.bpc};
        VdnnPlane pp = {frame ? prev : ref, r.w, r.w, r.h, r.bpc};
        double v[14];
        for (int k = 0, at = 0; k < KERNELS; at += outputs[k++]) {
            const double t0 = now_ms();
            int rc = -EINVAL;
            switch (k) {
            case VIF: rc = vdnn_vif_integer(env, &pr, &pd, egl, &v[at]); break;
            case ADM: rc = vdnn_adm_integer(env, &pr, &pd, egl, &v[at], &v[at + 1]); break;
            case MOTION: rc = vdnn_motion_integer(env, &pp, &pr, &v[at]); break;
            case PSNR: rc = vdnn_psnr_y(env, &pr, &pd, &v[at]); break;
            case SSIM: rc = vdnn_ssim_y(env, &pr, &pd, &v[at]); break;
            case FLOAT_SSIM: rc = vdnn_float_ssim(env, &pr, &pd, &v[at]); break;
            case SHARPNESS: rc = vdnn_sharpness_nr(env, &pd, &v[at]); break;
            }
            ms[k] += now_ms() - t0;
            if (rc) {
                fprintf(stderr, "frame %d: %s failed: %s\n", frame, kernel_names[k],
                        strerror(-rc));
                return 1;
            }
        }
        printf("{\"frameNum\": %d", frame);
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
            printf(", \"%s\": %.17g", names[k], v[k]);
        printf("}\n");
        uint16_t *t = prev;
        prev = ref;
        ref = t;
    }
    fprintf(stderr, "ms total:");
    for (int k = 0; k < KERNELS; k++)
        fprintf(stderr, " %s %.1f", kernel_names[k], ms[k]);
    fprintf(stderr, "\nbuilds: %s\n", vdnn_kernels_build());
    free(ref);
    free(dist);
    free(prev);
    return 0;
}
