/* Internal: fused CPU kernels for VMAF's features, following libvmaf's
 * integer feature extractors (integer_vif.c, integer_adm.c,
 * integer_motion.c: the fixed-point features vmaf_v0.6.1 is trained on), so
 * that each feature equals libvmaf's.
 *
 * Plain C with no ONNX Runtime in sight: ort_custom_ops.c wraps them as ORT
 * custom operators of the library's own domain (see docs/vmaf.md), and the
 * tests call them directly. One file per family: vmaf_vif.c, vmaf_adm.c,
 * vmaf_motion.c.
 *
 * Every kernel is re-entrant and thread-safe: it keeps no state between
 * calls, reads its planes only and takes every buffer it needs from `env`
 * (so several frames may be in flight at once, each on its own thread).
 * Buffers are row-tiled where the algorithm allows, so a frame's working set
 * stays small. A kernel polls env->cancelled between row tiles.
 *
 * Return codes (kernels never print, never abort):
 *   0           done; the outputs are written
 *   -EINVAL     a NULL pointer, w/h outside the kernel's range (documented
 *               per kernel), bpc outside 8..16, a stride smaller than w, a
 *               sample above 2^bpc - 1, or planes of different sizes
 *   -ENOMEM     env->alloc returned NULL
 *   -ECANCELED  env->cancelled returned nonzero
 * On failure the outputs are left as they were, and every buffer taken from
 * env has been given back.
 */
#ifndef VMAFDNN_VMAF_KERNELS_H
#define VMAFDNN_VMAF_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "vectorize.h" /* VDNN_TARGET_CLONES for the kernels' hot loops */


/* Row or column i of a filter's window over n, mirrored at both ends
 * without repeating the edge (-1 -> 1, n -> n - 2): the reflection libvmaf's
 * VIF and motion filters use. */
static inline int vdnn_mirror(int i, int n)
{
    if (i < 0)
        return -i;
    if (i >= n)
        return 2 * n - i - 2;
    return i;
}

/* Where a kernel's buffers come from and whether to stop. alloc(opaque,
 * size) returns a block of at least `size` bytes aligned to 64, or NULL;
 * release(opaque, block) gives it back (NULL-safe). cancelled may be NULL
 * (never cancelled). */
typedef struct VdnnKernelEnv {
    void *(*alloc)(void *opaque, size_t size);
    void (*release)(void *opaque, void *block);
    int (*cancelled)(void *opaque);
    void *opaque;
} VdnnKernelEnv;

/* A luma plane of integer samples of bpc bits (8..16), w x h, rows `stride`
 * samples apart (stride >= w). Not owned by the kernel. */
typedef struct VdnnPlane {
    const uint16_t *data;
    ptrdiff_t stride;
    unsigned w, h;
    unsigned bpc;
} VdnnPlane;

/* An env whose alloc/release are aligned malloc/free and which is never
 * cancelled: for tests and tools. */
extern const VdnnKernelEnv vdnn_kernel_env_malloc;

/* The kernels' build this CPU runs (kernel_builds.c): "x86-64-v4" (ADM and
 * motion on AVX-512, the rest AVX2), "avx2" or "baseline" (also wherever the
 * kernels have one build). Static storage. */
const char *vdnn_kernels_build(void);

/* libvmaf's integer_vif: VIF at four scales, scores[s] =
 * num[s] / den[s] (libvmaf's VMAF_integer_feature_vif_scale<s>_score),
 * with its enhancement-gain limit (100 for vmaf_v0.6.1, 1.0 for
 * vmaf_v0.6.1neg; 1..100, else -EINVAL). w, h >= 16: below that a scale's
 * filter would mirror past its image, where libvmaf reads memory outside
 * the frame (no exact result to follow): -EINVAL. */
int vdnn_vif_integer(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                     double enhn_gain_limit, double scores[4]);

/* libvmaf's integer_adm: adm2 (VMAF_integer_feature_adm2_score) and the
 * four scales' scores (adm_scale0..3), with its enhancement-gain limit
 * (100, or 1.0 for vmaf_v0.6.1neg; 1..100, else -EINVAL). `scales` may be
 * NULL. w, h >= 33: the fourth DWT level needs an input at least 5 wide
 * (libvmaf reads out of bounds below that rather than refusing). */
int vdnn_adm_integer(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                     double enhn_gain_limit, double *adm2, double scales[4]);

/* libvmaf's integer_motion, one frame: the SAD score of `cur` against the
 * previous reference `prev` as libvmaf logs it
 * (VMAF_integer_feature_motion_sad_score): the integer 5-tap blur of the
 * difference prev - cur (mirrored at the edges without repeating the edge
 * sample), its absolute values summed, min(sum / 256 / (w * h), 10000).
 * The first frame of a clip passes itself as prev and gets 0. motion2 (the
 * min of a frame's and the next frame's) is the caller's business.
 * w, h >= 3. */
int vdnn_motion_integer(const VdnnKernelEnv *env, const VdnnPlane *prev, const VdnnPlane *cur,
                        double *sad);

#endif
