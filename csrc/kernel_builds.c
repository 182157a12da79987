/* Which of the CPU kernels' per-CPU builds (vectorize.h's clones) this CPU
 * runs: the question the ifunc resolvers answer at load, asked again with
 * the same CPU features, for the library to say which ran
 * (vmaf_dnn_cpu_kernels) and for the tests to check that each build was run. */
#include "vmaf_kernels.h"

const char *vdnn_kernels_build(void)
{
#if defined(VDNN_HAVE_CLONES)
    __builtin_cpu_init();
#if defined(VDNN_HAVE_AVX512_CLONES)
#if !defined(__clang__) && __GNUC__ >= 12
    if (__builtin_cpu_supports("x86-64-v4")) /* what gcc's resolvers test */
#else
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2"))
#endif
        return "x86-64-v4";
#endif
    if (__builtin_cpu_supports("avx2"))
        return "avx2";
#endif
    return "baseline";
}
