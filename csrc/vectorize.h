/* Internal: how the library's hot loops get vector code from portable C. */
#ifndef VMAFDNN_VECTORIZE_H
#define VMAFDNN_VECTORIZE_H

/* Marks a hot loop function for one build per instruction set,
 * chosen at load (an ifunc): the code stays portable C that the compiler
 * vectorises, and an AVX2 machine runs AVX2 code from a baseline x86-64
 * build. Elsewhere (other architectures, compilers without target_clones)
 * the function is built once, for the build's own target. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VDNN_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define VDNN_TSAN 1
#endif
/* Not under ThreadSanitizer: an ifunc resolver runs while the program is
 * being relocated, before TSan's runtime starts, and the instrumented
 * resolver crashes (every test that linked a clone died of SIGSEGV). */
#if defined(__x86_64__) && defined(__ELF__) && !defined(VDNN_NO_TARGET_CLONES) && \
    !defined(VDNN_TSAN) && \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define VDNN_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#define VDNN_HAVE_CLONES 1
#if (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11) || defined(__clang__)
#define VDNN_HAVE_AVX512_CLONES 1
#endif
#else
#define VDNN_TARGET_CLONES
#endif

/* VDNN_TARGET_CLONES plus a build for x86-64-v4 (AVX-512 F/BW/DQ/VL), for
 * the loops measured faster with it: VMAF's ADM and motion, whose 64-bit
 * products (vpmullq) AVX2 lacks (on a Zen 4, bench/bench_kernels.py: ADM
 * 1.26-1.30x, motion 1-3%; VIF and the other kernels gained nothing, and
 * float_ssim lost).
 * The build asks for 256-bit vectors (-mprefer-vector-width=256, the
 * top-level meson.build): AVX-512's instructions on ymm registers, without the
 * 512-bit ones that lower some Intel Xeons' clocks for every core's work. */
#if defined(VDNN_HAVE_AVX512_CLONES)
#define VDNN_TARGET_CLONES_AVX512 \
    __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define VDNN_TARGET_CLONES_AVX512 VDNN_TARGET_CLONES
#endif

/* A hot loop function: VDNN_TARGET_CLONES, and (gcc) the vectoriser's
 * dynamic cost model, without which gcc 12 at -O2 leaves simple loops
 * scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#define VDNN_VECTOR_LOOP __attribute__((optimize("vect-cost-model=dynamic"))) VDNN_TARGET_CLONES
#else
#define VDNN_VECTOR_LOOP VDNN_TARGET_CLONES
#endif

#endif
