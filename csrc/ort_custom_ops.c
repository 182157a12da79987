/* The library's own ONNX operators (custom_ops.h) as ONNX Runtime custom ops:
 * the glue between ORT's kernel context and the plain-C kernels of
 * vmaf_kernels.h. Part of the ORT backend (ort_custom_ops.h).
 *
 * Every input is checked here before a kernel sees it (a third-party model
 * may use these ops, so nothing about the tensors is trusted): element type,
 * rank, leading dims of 1, plane sizes within VMAF_DNN_MAX_DIMENSION, equal
 * shapes, a bit depth of 8..16, samples within it. A failure fails the Run
 * with a message naming the op and what was wrong. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_kernels.h"
#include "custom_ops.h"
#include "error.h"
#include "fr_kernels.h"
#include "nr_kernels.h"
#include "gpu/programs.h"
#include "ort_custom_ops.h"
#include "vectorize.h"
#include "vmaf_kernels.h"
#include "vmafdnn/vmafdnn.h"

typedef enum { OP_SAMPLES, OP_VIF, OP_ADM, OP_MOTION, OP_SSIM, OP_FLOAT_SSIM, OP_PSNR,
              OP_SHARPNESS } OpKind;

#define MAX_IN 3
#define MAX_OUT 5

typedef struct OpDef {
    OrtCustomOp op; /* first: ORT hands &op back to every callback */
    OpKind kind;
    const char *name;
    int cuda; /* on ORT's CUDA EP (the kernels of csrc/gpu), else its CPU EP */
    size_t n_in, n_out;
    ONNXTensorElementDataType in[MAX_IN], out[MAX_OUT];
} OpDef;

#define F32 ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
#define U8 ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8
#define U16 ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16
/* A plane of samples: UINT8 or UINT16 (ORT's "undefined" input type takes
 * any; read_input holds it to these two). UINT8 is what an 8-bit clip's
 * planes become on their way to a session made for them (onnx_scan.h
 * vdnn_onnx_narrow_samples): half the bytes to copy to a device. */
#define SAMPLES ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED

static OpDef ops[] = {
    {.kind = OP_SAMPLES, .name = "Samples", .n_in = 2, .n_out = 1, .in = {F32, F32}, .out = {U16}},
    {.kind = OP_VIF, .name = "VifInteger", .n_in = 3, .n_out = 4, .in = {SAMPLES, SAMPLES, F32},
     .out = {F32, F32, F32, F32}},
    {.kind = OP_ADM, .name = "AdmInteger", .n_in = 3, .n_out = 5, .in = {SAMPLES, SAMPLES, F32},
     .out = {F32, F32, F32, F32, F32}},
    {.kind = OP_MOTION, .name = "MotionInteger", .n_in = 3, .n_out = 1,
     .in = {SAMPLES, SAMPLES, F32}, .out = {F32}},
    {.kind = OP_SSIM, .name = "Ssim", .n_in = 3, .n_out = 1, .in = {SAMPLES, SAMPLES, F32},
     .out = {F32}},
    {.kind = OP_FLOAT_SSIM, .name = "FloatSsim", .n_in = 3, .n_out = 1,
     .in = {SAMPLES, SAMPLES, F32}, .out = {F32}},
    {.kind = OP_PSNR, .name = "Psnr", .n_in = 3, .n_out = 1, .in = {SAMPLES, SAMPLES, F32},
     .out = {F32}},
    {.kind = OP_SHARPNESS, .name = "LaplacianVariance", .n_in = 2, .n_out = 1,
     .in = {SAMPLES, F32}, .out = {F32}},
};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

/* The same ops on ORT's CUDA EP (every op but Samples), for the sessions
 * whose EP is CUDA when the GPU kernels are ready there (cuda_kernels.h):
 * the planes stay on the device, bpc comes from host memory. ops[]'s
 * definitions with .cuda set, copied when the first domain with them is made
 * (vdnn_ort_custom_ops_create), so the two cannot list different inputs. */
#define N_CUDA_OPS (N_OPS - 1)
static OpDef cuda_ops[N_CUDA_OPS];

/* One node of a session: the op and its attribute. */
typedef struct Kernel {
    const OrtApi *api;
    const OpDef *def;
    double enhn_gain_limit;
} Kernel;

/* --- the kernels' env: the session's budget and stop flag ---------------- */

static void *env_alloc(void *opaque, size_t size)
{
    (void)opaque;
    return vdnn_ort_kernel_alloc(size);
}

static void env_release(void *opaque, void *block)
{
    (void)opaque;
    vdnn_ort_kernel_free(block);
}

static int env_cancelled(void *opaque)
{
    (void)opaque;
    return vdnn_ort_kernel_stopped();
}

static const VdnnKernelEnv session_env = {env_alloc, env_release, env_cancelled, NULL};

/* --- checking what ORT hands over ----------------------------------------- */

static OrtStatus *failure(const Kernel *k, OrtErrorCode code, const char *fmt, ...)
    VDNN_PRINTF(3, 4);
static OrtStatus *failure(const Kernel *k, OrtErrorCode code, const char *fmt, ...)
{
    char msg[400];
    int n = snprintf(msg, sizeof(msg), "%s:%s: ", VDNN_CUSTOM_OP_DOMAIN, k->def->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    return k->api->CreateStatus(code, msg);
}

#define MAX_RANK 8

typedef struct Tensor {
    void *data;
    ONNXTensorElementDataType type;
    size_t rank, count;
    int64_t dims[MAX_RANK];
} Tensor;

static OrtStatus *read_input(const Kernel *k, OrtKernelContext *ctx, size_t i, Tensor *t)
{
    const OrtApi *a = k->api;
    const OrtValue *v = NULL;
    OrtStatus *st = a->KernelContext_GetInput(ctx, i, &v);
    if (st)
        return st;
    if (!v)
        return failure(k, ORT_INVALID_ARGUMENT, "input %zu is missing", i);
    OrtTensorTypeAndShapeInfo *info = NULL;
    if ((st = a->GetTensorTypeAndShape(v, &info)))
        return st;
    if (!(st = a->GetTensorElementType(info, &t->type)) &&
        !(st = a->GetDimensionsCount(info, &t->rank)) && t->rank <= MAX_RANK)
        st = a->GetDimensions(info, t->dims, t->rank);
    a->ReleaseTensorTypeAndShapeInfo(info);
    if (st)
        return st;
    if (t->rank > MAX_RANK)
        return failure(k, ORT_INVALID_ARGUMENT, "input %zu has rank %zu (at most %d)", i, t->rank,
                       MAX_RANK);
    if (k->def->in[i] == SAMPLES ? t->type != U8 && t->type != U16 : t->type != k->def->in[i])
        return failure(k, ORT_INVALID_ARGUMENT, "input %zu has element type %d, expected %s", i,
                       (int)t->type, k->def->in[i] == SAMPLES ? "UINT8 or UINT16 samples"
                       : k->def->in[i] == F32 ? "FLOAT" : "UINT16");
    t->count = 1;
    for (size_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0 || (t->dims[d] && t->count > SIZE_MAX / (size_t)t->dims[d]))
            return failure(k, ORT_INVALID_ARGUMENT, "input %zu has an invalid shape", i);
        t->count *= (size_t)t->dims[d];
    }
    return a->GetTensorMutableData((OrtValue *)(uintptr_t)v, &t->data);
}

/* A plane [1, ..., 1, H, W] of 1..VMAF_DNN_MAX_DIMENSION in each direction. */
static OrtStatus *plane_size(const Kernel *k, const Tensor *t, size_t i, unsigned *w, unsigned *h)
{
    int leading_ones = 1;
    for (size_t d = 0; d + 2 < t->rank; d++)
        leading_ones &= t->dims[d] == 1;
    if (t->rank < 2 || !leading_ones)
        return failure(k, ORT_INVALID_ARGUMENT, "input %zu must be a plane [1, ..., 1, H, W]", i);
    const int64_t hh = t->dims[t->rank - 2], ww = t->dims[t->rank - 1];
    if (hh < 1 || ww < 1 || hh > VMAF_DNN_MAX_DIMENSION || ww > VMAF_DNN_MAX_DIMENSION)
        return failure(k, ORT_INVALID_ARGUMENT, "input %zu is a %lldx%lld plane: each side must "
                       "be 1..%d", i, (long long)ww, (long long)hh, VMAF_DNN_MAX_DIMENSION);
    *w = (unsigned)ww;
    *h = (unsigned)hh;
    return NULL;
}

static OrtStatus *read_bpc(const Kernel *k, const Tensor *t, size_t i, unsigned *bpc)
{
    const float v = t->count == 1 ? *(const float *)t->data : NAN;
    if (!(v >= 8.0f && v <= 16.0f && v == floorf(v)))
        return failure(k, ORT_INVALID_ARGUMENT, "input %zu (bpc) must be one integer of 8..16", i);
    *bpc = (unsigned)v;
    return NULL;
}

static OrtStatus *output(const Kernel *k, OrtKernelContext *ctx, size_t i, const int64_t *dims,
                         size_t rank, void **data)
{
    OrtValue *v = NULL;
    OrtStatus *st = k->api->KernelContext_GetOutput(ctx, i, dims, rank, &v);
    if (st)
        return st;
    if (!v)
        return failure(k, ORT_FAIL, "no tensor for output %zu", i);
    return k->api->GetTensorMutableData(v, data);
}

/* Scalar outputs [1] (the outputs a model's graph may leave unused still
 * get a tensor: ORT hands one out only when asked). */
static OrtStatus *write_scalars(const Kernel *k, OrtKernelContext *ctx, const double *v, size_t n)
{
    static const int64_t one[1] = {1};
    for (size_t i = 0; i < n; i++) {
        void *data = NULL;
        OrtStatus *st = output(k, ctx, i, one, 1, &data);
        if (st)
            return st;
        *(float *)data = (float)v[i];
    }
    return NULL;
}

/* --- the ops -------------------------------------------------------------- */

/* x * (2^bpc - 1) rounded, and whether any x was outside [0, 1] (or NaN).
 * The library feeds sample / (2^bpc - 1) in fp32: the product is within
 * 0.008 of the sample, so the rounding recovers it exactly. */
static int to_samples_scalar(const float *restrict x, uint16_t *restrict out, size_t n,
                             float maxv)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float v = x[i];
        const int in_range = v >= 0.0f && v <= 1.0f;
        bad |= !in_range;
        out[i] = (uint16_t)(int32_t)((in_range ? v : 0.0f) * maxv + 0.5f);
    }
    return bad;
}

#if defined(__GNUC__) && (__GNUC__ >= 9 || defined(__clang__)) && !defined(VDNN_NO_VECTOR_EXT)
/* No compiler vectorises the loop above (the range test is a branch per
 * sample to gcc 12: a third of the CPU form's time went here). Generic
 * vectors, 8 lanes, on any target. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint16_t v8w __attribute__((vector_size(16)));
typedef float v8f_un __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint16_t v8w_un __attribute__((vector_size(16), aligned(2), may_alias));

VDNN_TARGET_CLONES
static int to_samples(const float *restrict x, uint16_t *restrict out, size_t n, float maxv)
{
    const v8f zero = {0}, one = zero + 1.0f, half = zero + 0.5f, scale = zero + maxv;
    v8i bad = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const v8f v = *(const v8f_un *)(const void *)(x + i);
        const v8i in_range = (v >= zero) & (v <= one); /* NaN: 0 */
        bad |= ~in_range;
        const v8f kept = (v8f)((v8i)v & in_range);
        *(v8w_un *)(void *)(out + i) =
            __builtin_convertvector(__builtin_convertvector(kept * scale + half, v8i), v8w);
    }
    int any = 0;
    for (int k = 0; k < 8; k++)
        any |= bad[k] != 0;
    return any | to_samples_scalar(x + i, out + i, n - i, maxv);
}
#else
#define to_samples to_samples_scalar
#endif

static OrtStatus *compute_samples(const Kernel *k, OrtKernelContext *ctx)
{
    Tensor x, b;
    unsigned bpc = 0;
    OrtStatus *st;
    if ((st = read_input(k, ctx, 0, &x)) || (st = read_input(k, ctx, 1, &b)) ||
        (st = read_bpc(k, &b, 1, &bpc)))
        return st;
    void *out = NULL;
    if ((st = output(k, ctx, 0, x.dims, x.rank, &out)))
        return st;
    if (to_samples(x.data, out, x.count, (float)((1u << bpc) - 1u)))
        return failure(k, ORT_INVALID_ARGUMENT, "input 0 has a value outside [0, 1] (or NaN): "
                       "it must be samples divided by 2^bpc - 1");
    return NULL;
}

/* What a kernel refuses with -EINVAL, past the checks made here
 * (vmaf_kernels.h): its minimum size, samples above the bit depth. */
static const char *kernel_limits(OpKind kind)
{
    switch (kind) {
    case OP_VIF:
        return "VIF needs planes of at least 16x16 with every sample below 2^bpc";
    case OP_ADM:
        return "ADM needs planes of at least 33x33 with every sample below 2^bpc";
    case OP_SSIM:
    case OP_FLOAT_SSIM:
        return "SSIM needs planes of at least 11x11 with every sample below 2^bpc";
    case OP_PSNR:
        return "PSNR needs every sample below 2^bpc";
    case OP_SHARPNESS:
        return "the Laplacian needs a plane of at least 3x3 with every sample below 2^bpc";
    default:
        return "motion needs planes of at least 3x3 with every sample below 2^bpc";
    }
}

static OrtStatus *kernel_failed(const Kernel *k, int rc, unsigned w, unsigned h, unsigned bpc)
{
    const char *why = vdnn_last_error();
    if (!why[0] && rc == -EINVAL)
        why = kernel_limits(k->def->kind);
    return failure(k, rc == -EINVAL ? ORT_INVALID_ARGUMENT : ORT_FAIL,
                   "cannot score a %ux%u plane of %u bits: %s%s%s", w, h, bpc, strerror(-rc),
                   why[0] ? ": " : "", why);
}

/* The inputs of every op but Samples (on either EP): its planes (n_in - 1 of
 * them: one or two) of one shape (w x h) and one element type, then bpc. */
static OrtStatus *read_planes(const Kernel *k, OrtKernelContext *ctx, Tensor *planes,
                              unsigned *w, unsigned *h, unsigned *bpc)
{
    const size_t n = k->def->n_in - 1;
    Tensor depth;
    OrtStatus *st;
    for (size_t i = 0; i < n; i++) {
        unsigned wi, hi;
        if ((st = read_input(k, ctx, i, &planes[i])) ||
            (st = plane_size(k, &planes[i], i, i ? &wi : w, i ? &hi : h)))
            return st;
        if (i && (wi != *w || hi != *h))
            return failure(k, ORT_INVALID_ARGUMENT, "its planes differ in size (%ux%u and "
                           "%ux%u)", *w, *h, wi, hi);
        if (i && planes[i].type != planes[0].type)
            return failure(k, ORT_INVALID_ARGUMENT, "its planes differ in element type (%d and "
                           "%d)", (int)planes[0].type, (int)planes[i].type);
    }
    if ((st = read_input(k, ctx, n, &depth)) || (st = read_bpc(k, &depth, n, bpc)))
        return st;
    return NULL;
}

/* An 8-bit plane's n samples as the kernels take them (uint16), in a block
 * of the session's budget; NULL when it refused. */
static uint16_t *widened(const uint8_t *src, size_t n)
{
    uint16_t *dst = session_env.alloc(session_env.opaque, n * sizeof(uint16_t));
    for (size_t i = 0; dst && i < n; i++)
        dst[i] = src[i];
    return dst;
}

/* Every op but Samples on ORT's CPU EP. */
static OrtStatus *compute_planes(const Kernel *k, OrtKernelContext *ctx)
{
    Tensor t[2];
    unsigned w, h, bpc = 0;
    OrtStatus *st = read_planes(k, ctx, t, &w, &h, &bpc);
    if (st)
        return st;
    const size_t n = k->def->n_in - 1;
    uint16_t *wide[2] = {NULL, NULL};
    VdnnPlane p[2];
    for (size_t i = 0; i < n; i++) {
        if (t[i].type == U8 && !(wide[i] = widened(t[i].data, t[i].count))) {
            session_env.release(session_env.opaque, wide[0]);
            return failure(k, ORT_FAIL, "no memory to widen a %ux%u plane of 8-bit samples", w,
                           h);
        }
        p[i] = (VdnnPlane){wide[i] ? wide[i] : t[i].data, w, w, h, bpc};
    }
    double v[MAX_OUT];
    int rc;
    vdnn_clear_error();
    switch (k->def->kind) {
    case OP_VIF:
        rc = vdnn_vif_integer(&session_env, &p[0], &p[1], k->enhn_gain_limit, v);
        break;
    case OP_ADM:
        rc = vdnn_adm_integer(&session_env, &p[0], &p[1], k->enhn_gain_limit, &v[0], &v[1]);
        break;
    case OP_SSIM:
        rc = vdnn_ssim_y(&session_env, &p[0], &p[1], &v[0]);
        break;
    case OP_FLOAT_SSIM:
        rc = vdnn_float_ssim(&session_env, &p[0], &p[1], &v[0]);
        break;
    case OP_PSNR:
        rc = vdnn_psnr_y(&session_env, &p[0], &p[1], &v[0]);
        break;
    case OP_SHARPNESS:
        rc = vdnn_sharpness_nr(&session_env, &p[0], &v[0]);
        break;
    default:
        rc = vdnn_motion_integer(&session_env, &p[0], &p[1], &v[0]);
        break;
    }
    session_env.release(session_env.opaque, wide[0]);
    session_env.release(session_env.opaque, wide[1]);
    if (rc)
        return kernel_failed(k, rc, w, h, bpc);
    return write_scalars(k, ctx, v, k->def->n_out);
}

/* The same on ORT's CUDA EP: the planes are device memory on the stream ORT
 * computes on; the program's scores go to the outputs, all in stream order
 * (nothing waits here). Where a sample is above 2^bpc - 1 the scores are NaN
 * (programs.h), where the CPU variants fail the Run: through the library
 * that cannot happen (a context refuses such a sample when it reads the
 * frame). */
static OrtStatus *compute_planes_cuda(const Kernel *k, OrtKernelContext *ctx)
{
    const OrtApi *a = k->api;
    Tensor t[2];
    unsigned w, h, bpc = 0;
    OrtStatus *st = read_planes(k, ctx, t, &w, &h, &bpc);
    if (st)
        return st;
    /* the device: the one the first plane is on */
    const OrtValue *v = NULL;
    const OrtMemoryInfo *mem = NULL;
    int device = 0;
    void *stream = NULL;
    if ((st = a->KernelContext_GetInput(ctx, 0, &v)) || (st = a->GetTensorMemoryInfo(v, &mem)) ||
        (st = a->MemoryInfoGetId(mem, &device)) ||
        (st = a->KernelContext_GetGPUComputeStream(ctx, &stream)))
        return st;
    VdnnCudaStream cs;
    vdnn_clear_error();
    int rc = vdnn_cuda_stream_init(&cs, device, stream);
    if (rc)
        return failure(k, ORT_FAIL, "the CUDA kernels cannot run on device %d: %s", device,
                       vdnn_last_error());
    static const int64_t one[1] = {1};
    float *outs[MAX_OUT];
    for (size_t i = 0; i < k->def->n_out; i++) {
        void *data = NULL;
        if ((st = output(k, ctx, i, one, 1, &data)))
            return st;
        outs[i] = data;
    }
    const size_t n = k->def->n_in - 1, samples = (size_t)w * h;
    void *scores = NULL, *wide = NULL;
    const uint16_t *p[2] = {t[0].data, n > 1 ? t[1].data : NULL};
    if (t[0].type == U8) { /* widened on the device: the copy there was of 8-bit samples */
        if ((rc = cs.backend.alloc(cs.backend.self, n * samples * sizeof(uint16_t), &wide)))
            return failure(k, ORT_FAIL, "%s", vdnn_last_error());
        for (size_t i = 0; !rc && i < n; i++) {
            uint16_t *const dst = (uint16_t *)wide + i * samples;
            rc = vk_widen(&cs.backend, t[i].data, dst, (int)w, (int)h);
            p[i] = dst;
        }
        if (rc) {
            cs.backend.release(cs.backend.self, wide);
            return failure(k, ORT_FAIL, "CUDA: %s", vdnn_last_error());
        }
    }
    if ((rc = cs.backend.alloc(cs.backend.self, MAX_OUT * sizeof(float), &scores))) {
        cs.backend.release(cs.backend.self, wide);
        return failure(k, ORT_FAIL, "%s", vdnn_last_error());
    }
    const int iw = (int)w, ih = (int)h, ib = (int)bpc;
    switch (k->def->kind) {
    case OP_VIF:
        rc = vk_vif(&cs.backend, p[0], p[1], iw, ih, ib, k->enhn_gain_limit, scores);
        break;
    case OP_ADM:
        rc = vk_adm(&cs.backend, p[0], p[1], iw, ih, ib, k->enhn_gain_limit, scores);
        break;
    case OP_SSIM:
        rc = vk_ssim(&cs.backend, p[0], p[1], iw, ih, ib, scores);
        break;
    case OP_FLOAT_SSIM:
        rc = vk_float_ssim(&cs.backend, p[0], p[1], iw, ih, ib, scores);
        break;
    case OP_PSNR:
        rc = vk_psnr(&cs.backend, p[0], p[1], iw, ih, ib, scores);
        break;
    case OP_SHARPNESS:
        rc = vk_sharpness(&cs.backend, p[0], iw, ih, ib, scores);
        break;
    default:
        rc = vk_motion(&cs.backend, p[0], p[1], iw, ih, ib, scores);
        break;
    }
    if (!rc)
        rc = vk_scatter(&cs.backend, scores, outs, (int)k->def->n_out);
    cs.backend.release(cs.backend.self, scores);
    cs.backend.release(cs.backend.self, wide);
    if (rc == -EINVAL)
        return failure(k, ORT_INVALID_ARGUMENT, "cannot score a %ux%u plane of %u bits: %s", w,
                       h, bpc, kernel_limits(k->def->kind));
    return rc ? failure(k, ORT_FAIL, "CUDA: %s", vdnn_last_error()) : NULL;
}

/* --- OrtCustomOp callbacks ------------------------------------------------ */

static const OpDef *def_of(const OrtCustomOp *op)
{
    return (const OpDef *)(const void *)op;
}

static OrtStatus *ORT_API_CALL create_kernel(const OrtCustomOp *op, const OrtApi *api,
                                             const OrtKernelInfo *info, void **out)
{
    Kernel *k = calloc(1, sizeof(*k));
    if (!k)
        return api->CreateStatus(ORT_FAIL, "out of memory");
    k->api = api;
    k->def = def_of(op);
    k->enhn_gain_limit = 100.0;
    if (k->def->kind == OP_VIF || k->def->kind == OP_ADM) {
        float egl;
        OrtStatus *st = api->KernelInfoGetAttribute_float(info, "enhn_gain_limit", &egl);
        if (st) /* absent: libvmaf's default */
            api->ReleaseStatus(st);
        else if (!(egl >= 1.0f && egl <= 100.0f)) {
            st = failure(k, ORT_INVALID_ARGUMENT, "attribute enhn_gain_limit must be 1..100");
            free(k);
            return st;
        } else
            k->enhn_gain_limit = egl;
    }
    *out = k;
    return NULL;
}

static OrtStatus *ORT_API_CALL compute(void *kernel, OrtKernelContext *ctx)
{
    const Kernel *k = kernel;
    if (k->def->kind == OP_SAMPLES)
        return compute_samples(k, ctx);
    return k->def->cuda ? compute_planes_cuda(k, ctx) : compute_planes(k, ctx);
}

static void ORT_API_CALL destroy_kernel(void *kernel)
{
    free(kernel);
}

static const char *ORT_API_CALL op_name(const OrtCustomOp *op)
{
    return def_of(op)->name;
}

static const char *ORT_API_CALL op_ep(const OrtCustomOp *op)
{
    return def_of(op)->cuda ? "CUDAExecutionProvider" : NULL; /* NULL: ORT's CPU EP */
}

static ONNXTensorElementDataType ORT_API_CALL input_type(const OrtCustomOp *op, size_t i)
{
    return i < def_of(op)->n_in ? def_of(op)->in[i] : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

static size_t ORT_API_CALL input_count(const OrtCustomOp *op)
{
    return def_of(op)->n_in;
}

static ONNXTensorElementDataType ORT_API_CALL output_type(const OrtCustomOp *op, size_t i)
{
    return i < def_of(op)->n_out ? def_of(op)->out[i] : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

static size_t ORT_API_CALL output_count(const OrtCustomOp *op)
{
    return def_of(op)->n_out;
}

static OrtCustomOpInputOutputCharacteristic ORT_API_CALL required(const OrtCustomOp *op,
                                                                  size_t i)
{
    (void)op;
    (void)i;
    return INPUT_OUTPUT_REQUIRED;
}

/* On CUDA, bpc (the last input) is read on the host. */
static OrtMemType ORT_API_CALL input_memory(const OrtCustomOp *op, size_t i)
{
    return def_of(op)->cuda && i == def_of(op)->n_in - 1 ? OrtMemTypeCPUInput : OrtMemTypeDefault;
}

static int ORT_API_CALL variadic_min_arity(const OrtCustomOp *op)
{
    (void)op;
    return 1;
}

static int ORT_API_CALL variadic_homogeneous(const OrtCustomOp *op)
{
    (void)op;
    return 1;
}

static int ORT_API_CALL start_version(const OrtCustomOp *op)
{
    (void)op;
    return 1;
}

static int ORT_API_CALL end_version(const OrtCustomOp *op)
{
    (void)op;
    return INT_MAX;
}

/* No output reuses or aliases an input. */
static size_t ORT_API_CALL no_index_map(int **input_index, int **output_index)
{
    *input_index = NULL;
    *output_index = NULL;
    return 0;
}

static void ORT_API_CALL release_index_map(int *input_index, int *output_index)
{
    (void)input_index;
    (void)output_index;
}

/* Every op named in custom_ops.h has an entry in ops[] (and no other). */
#define OP_LISTED(name, planes) {#name, planes},
static const struct {
    const char *name;
    size_t planes;
} listed[] = {VDNN_CUSTOM_OPS(OP_LISTED)};
_Static_assert(sizeof(listed) / sizeof(listed[0]) == N_OPS,
               "custom_ops.h and ops[] list different operators");

/* Whether def takes the planes custom_ops.h says its op takes (the ONNX
 * scanner reads them from there: vdnn_onnx_narrow_samples). */
static int planes_as_listed(const OpDef *def)
{
    size_t planes = 0;
    for (size_t i = 0; i < def->n_in; i++)
        planes += def->in[i] == SAMPLES;
    for (size_t i = 0; i < N_OPS; i++)
        if (strcmp(listed[i].name, def->name) == 0)
            return planes == listed[i].planes;
    return 0;
}

/* Fills an op's callbacks, once (an op added to a second domain keeps
 * them). ORT refuses ops that claim a newer API than its own. */
static void fill_op(OpDef *d, int api_version)
{
    if (d->op.version)
        return;
    d->op = (OrtCustomOp){
        .version = (uint32_t)api_version,
        .GetName = op_name,
        .GetExecutionProviderType = op_ep,
        .GetInputType = input_type,
        .GetInputTypeCount = input_count,
        .GetOutputType = output_type,
        .GetOutputTypeCount = output_count,
        .KernelDestroy = destroy_kernel,
        .GetInputCharacteristic = required,
        .GetOutputCharacteristic = required,
        .GetInputMemoryType = input_memory,
        .GetVariadicInputMinArity = variadic_min_arity,
        .GetVariadicInputHomogeneity = variadic_homogeneous,
        .GetVariadicOutputMinArity = variadic_min_arity,
        .GetVariadicOutputHomogeneity = variadic_homogeneous,
        .CreateKernelV2 = create_kernel,
        .KernelComputeV2 = compute,
        .GetStartVersion = start_version,
        .GetEndVersion = end_version,
        .GetMayInplace = no_index_map,
        .ReleaseMayInplace = release_index_map,
        .GetAliasMap = no_index_map,
        .ReleaseAliasMap = release_index_map,
    };
}

int vdnn_ort_custom_ops_create(const OrtApi *a, int api_version, int with_cuda,
                               OrtCustomOpDomain **out)
{
    for (size_t i = 0; i < N_OPS; i++)
        if (strcmp(ops[i].name, listed[i].name) != 0)
            return vdnn_fail(-EINVAL, "custom op %zu is %s in ops[] but %s in custom_ops.h", i,
                             ops[i].name, listed[i].name);
    for (size_t i = 0; i < N_OPS; i++)
        if (!planes_as_listed(&ops[i]))
            return vdnn_fail(-EINVAL, "custom op %s takes other planes than custom_ops.h lists",
                             ops[i].name);
    OrtCustomOpDomain *domain = NULL;
    OrtStatus *st = a->CreateCustomOpDomain(VDNN_CUSTOM_OP_DOMAIN, &domain);
    for (size_t i = 0; !st && i < N_OPS; i++) {
        fill_op(&ops[i], api_version);
        st = a->CustomOpDomain_Add(domain, &ops[i].op);
    }
    /* ops[0] is Samples (custom_ops.h lists it first, checked above), the
     * one op with no CUDA variant */
    for (size_t c = 0; !st && with_cuda && c < N_CUDA_OPS; c++) {
        if (!cuda_ops[c].cuda) { /* ops[c + 1] filled above: its callbacks come along */
            cuda_ops[c] = ops[c + 1];
            cuda_ops[c].cuda = 1;
        }
        st = a->CustomOpDomain_Add(domain, &cuda_ops[c].op);
    }
    if (st) {
        int rc = vdnn_fail(-ENOMEM, "ONNX Runtime refused the library's operators (%s): %s",
                           VDNN_CUSTOM_OP_DOMAIN, a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        if (domain)
            a->ReleaseCustomOpDomain(domain);
        return rc;
    }
    *out = domain;
    return 0;
}
