/* Internal: one ADM level's constants, the one definition both ADMs use:
 * the CPU kernel (vmaf_adm.c's run_level) and the GPU kernels
 * (adm_kernels.h, handed them by value by adm_program.c). They take libm,
 * so the host computes them: vdnn_adm_level (vmaf_adm.c). Valid C for the
 * host compiler and, after dialect.h, for NVRTC (csrc/gpu/meson.build
 * embeds it before adm_kernels.h). */
#ifndef VDNN_GPU_ADM_LEVEL_H
#define VDNN_GPU_ADM_LEVEL_H

#ifndef __CUDACC_RTC__
#include <stdint.h>
#endif

/* One level's constants: its geometry, libvmaf's shifts and rounding terms,
 * CSF factors and noise term. 8-byte members first: one layout for the host
 * compiler and NVRTC. */
typedef struct AdmLevel {
    int64_t vadd, hadd;                    /* DWT rounding terms (levels 1..3) */
    int64_t n_add_hv, n_add_d, n_add_cub;  /* numerator cube terms */
    int64_t n_add_acc;                     /* numerator row sums */
    uint64_t sq_add, d_add_cub, d_add_acc; /* denominator (levels 1..3; d_add_acc all) */
    double p_hv, p_d;                      /* level 0 numerator scales */
    double shc;                            /* denominator scale */
    double pow3[3];                        /* rfl^3 (h, v, d) */
    uint32_t rf[3];                        /* CSF factors, levels 1..3 */
    float fs;                              /* levels 1..3 numerator scale */
    float noise;                           /* (area / 32)^(1/3) */
    int lev;
    int win, hin, w, h;                    /* input and band sizes */
    int top, bottom, left, right;          /* masking / denominator region */
    int rlo, rhi, clo, chi;                /* decoupled region */
    int vsh, hsh;                          /* DWT shifts (levels 1..3) */
    int n_sh_hv, n_sh_d, n_sh_cub, n_sh_acc;
    int sq_sh, d_sh_cub, d_sh_acc;
    int pad;
} AdmLevel;

typedef struct AdmLevels {
    AdmLevel l[4];
} AdmLevels;

#ifndef __CUDACC_RTC__
/* Level lev (0..3) of an input of win x hin (the frame at level 0, the
 * level above's LL band below): libvmaf's integer_adm constants, as its
 * reference build computes them (libm's log10, pow, powf). */
void vdnn_adm_level(AdmLevel *L, int lev, int win, int hin);
#endif

#endif
