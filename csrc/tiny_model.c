/* The attached-model loader: checks a model and its sidecar against the
 * tiny-model rules (documented on vmaf_dnn_use_tiny_model), decides how its
 * inputs are fed and what its outputs are called, and runs it per frame. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vmafdnn/catalog.h"

#include "context_internal.h"
#include "error.h"
#include "onnx_scan.h"
#include "picture_memory.h"
#include "resize.h"
#include "scratch.h"
#include "sidecar.h"
#include "tiny_model.h"

/* Fallback keys tried per output slot before giving up with -EEXIST. */
#define TINY_KEY_ATTEMPTS 100

/* How far a batched Run's value may be from one Run per frame's and count
 * as the same (sums in another order: 4.3e-6 dB of PSNR on CUDA). */
#define BATCH_ABS_TOLERANCE 1e-6
#define BATCH_REL_TOLERANCE 1e-5

/* Where each image input's plane comes from. */
typedef struct TinyImageSource {
    VdnnSourcePicture picture;
    unsigned back;                 /* frames back: 0 this frame, k: frame t - k */
} TinyImageSource;

/* A one-value input fed from a "value" or "feature" source. */
typedef struct TinyScalar {
    const char *name;              /* owned by the session */
    const VdnnSidecarSource *src;  /* owned by the sidecar */
    int64_t shape[4];              /* all 1 */
    size_t rank;
} TinyScalar;

/* Past planes of one picture at the model's input size, newest last. */
typedef struct TinyHistory {
    unsigned depth;                /* the farthest "offset" back, 0: none kept */
    unsigned filled;               /* planes held, <= depth */
    unsigned next;                 /* slot the next frame goes to */
    void *plane[VMAF_DNN_MAX_FRAME_OFFSET]; /* fp32, or uint16_t for a samples model */
    unsigned bpc[VMAF_DNN_MAX_FRAME_OFFSET];  /* a samples model's: the depth of each
                                                 plane's samples (a clip may change it) */
} TinyHistory;

struct VdnnTinyModel {
    char *path;              /* as given */
    char *form_path;         /* the sidecar's form for the attached EP that
                                the session was opened from; NULL: path */
    int forms_off;           /* VMAFDNN_MODEL_FORMS: no form is used */
    const char *forms_ep;    /* VMAFDNN_MODEL_FORMS: the EP (static name) whose
                                forms are used; NULL: the attached EP's */
    int on_cpu_ep;           /* AUTO's CPU device of another EP passed over for
                                ORT's CPU EP (prefers_cpu_ep) */
    VdnnSidecar *sc;
    VmafDnnSession *session;
    VmafDnnModelKind kind;
    VmafDnnResize resize;    /* resolved: NONE or a filter */
    uint64_t max_memory_bytes; /* the policy's budget for per-frame buffers; 0: none */

    /* Image inputs: those the sidecar's "input_sources" leaves unbound
     * first ([reference, distorted] or [distorted]), then the sourced ones. */
    size_t n_image, n_unbound;
    VdnnSourcePlane plane;         /* the plane every image input reads */
    const char **image_name;       /* n_image names, owned by the session */
    size_t *image_slot;            /* their input slots */
    TinyImageSource *image_src;    /* n_image */
    TinyHistory history[2];        /* by VdnnSourcePicture */
    size_t history_cap;            /* floats in each history plane */
    unsigned lag;                  /* frames this model runs behind (context's) */
    size_t n_image_fp16;           /* FLOAT16 ones: the session keeps a half copy */
    /* The image inputs are UINT16: they take the picture's own samples
     * (0..2^bpc-1), not normalised fp32, so a frame needs no fp32 planes
     * for this model (vdnn_tiny_model_takes_samples). */
    int samples;
    uint16_t **sample_plane;       /* n_image planes of sample_cap samples, fed */
    size_t sample_cap;
    float *sample_fp32;            /* a frame's plane normalised for the resizer when
                                      the frame carries samples only */
    size_t sample_fp32_cap;
    unsigned char *feed_samples;   /* per fed input: VDNN_SAMPLES_* or 0 */
    /* An 8-bit clip's samples go to the session as they are (uint8_t in the
     * same buffers, feed_samples VDNN_SAMPLES_UINT8), where the session
     * narrows (vdnn_session_narrows): half the bytes to the device. */
    int narrows;
    /* The session's host blocks are pinned memory: a picture's samples are
     * copied into sample_plane even where it could read them in place
     * (samples_in_place). */
    int stages;
    int64_t model_h, model_w;      /* -1: symbolic, the first frame's size */
    unsigned locked_h, locked_w;   /* that size; 0 before the first frame */
    int64_t image_shape[4];        /* {1, 1, H, W} of the current frame */
    VdnnResizer resizer;
    float **resized;               /* n_image planes of resized_cap floats */
    size_t resized_cap;

    /* Feature-vector input, filled from the sidecar's "features". */
    const char *vector_name;       /* owned by the session; NULL when none */
    int64_t vector_shape[2];       /* {1, F} */
    float *vector;                 /* F values */

    TinyScalar *scalar;            /* n_scalar "value" and "feature" inputs */
    size_t n_scalar;
    float *scalar_value;           /* their values, fed (the session's host memory) */
    VmafDnnInput *feed;            /* one per model input, filled per run */

    /* Attached outputs, in slot order. */
    size_t n_out;
    char **key;                    /* n_out owned keys */
    VmafDnnOutput *outputs;        /* n_out requests of one value each */
    float *value;                  /* n_out results */

    /* Frames per Run (vdnn_tiny_model_batch_run): only for a batchable
     * model, whose every input and output has a symbolic first dim. */
    int outputs_per_frame;         /* every attached output's first dim is symbolic */
    int batchable;
    int batch_trust;               /* the context's model: the verdict of its
                                      pools (vdnn_tiny_model_batch_trust) */
    uint64_t batched_kept;         /* of copies gone (vdnn_tiny_model_note_batching) */
    VmafDnnStaticRuns runs_kept;   /* of copies gone: the counts only */
    unsigned batch_frames;         /* frames the last batched Run scored */
    float **batch_in;              /* n_image planes of batch_cap floats */
    size_t batch_cap;
    float *batch_value;            /* n_out x batch_value_cap results */
    size_t batch_value_cap;
    int64_t batch_shape[4];        /* {B, 1, H, W} */
};

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/* "[1,?,4]": a shape for messages, '?' for a symbolic dim. */
static const char *shape_text(const VmafDnnTensorInfo *t, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t d = 0; d < t->rank && used < cap; d++) {
        const char *sep = d ? "," : "";
        if (t->shape[d] < 0)
            used += (size_t)snprintf(buf + used, cap - used, "%s?", sep);
        else
            used += (size_t)snprintf(buf + used, cap - used, "%s%lld", sep,
                                     (long long)t->shape[d]);
    }
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

static const char *kind_text(VmafDnnModelKind kind)
{
    return kind == VMAF_DNN_MODEL_FR ? "fr" : kind == VMAF_DNN_MODEL_NR ? "nr" : "features";
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                   */
/* ------------------------------------------------------------------------ */

static VmafDnnTensorInfo input_info(const VdnnTinyModel *m, size_t slot)
{
    VmafDnnTensorInfo info;
    vmaf_dnn_session_input_info(m->session, slot, &info); /* slot is in range */
    return info;
}

static VmafDnnTensorInfo output_info(const VdnnTinyModel *m, size_t slot)
{
    VmafDnnTensorInfo info;
    vmaf_dnn_session_output_info(m->session, slot, &info);
    return info;
}

static int check_batch(const VdnnTinyModel *m, const VmafDnnTensorInfo *in)
{
    if (in->shape[0] == 1 || in->shape[0] < 0)
        return 0;
    return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" has a fixed batch of %lld; tiny models "
                     "score one frame at a time (batch 1 or symbolic)", m->path, in->name,
                     (long long)in->shape[0]);
}

static int check_image_dim(const VdnnTinyModel *m, const VmafDnnTensorInfo *in, size_t d)
{
    const char *what = d == 2 ? "height" : "width";
    const long long v = in->shape[d];
    if (v < 0 && !m->sc->native_resolution)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" has a symbolic %s; re-export the "
                         "model at a fixed resolution, or set \"native_resolution\": true in "
                         "its sidecar to run it at the frame's size", m->path, in->name, what);
    if (v == 0 || v > VMAF_DNN_MAX_DIMENSION)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" has a %s of %lld; tiny models take "
                         "1..%d", m->path, in->name, what, v, VMAF_DNN_MAX_DIMENSION);
    return 0;
}

static int check_image_input(const VdnnTinyModel *m, const VmafDnnTensorInfo *in,
                             size_t n_inputs)
{
    int rc;
    if (in->shape[1] != 1 && in->shape[1] >= 0)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" has %lld channels; %s takes one luma "
                         "plane (C = 1)", m->path, in->name, (long long)in->shape[1],
                         n_inputs == 1 ? "a single-input image model" : "each image input");
    if ((rc = check_image_dim(m, in, 2)) || (rc = check_image_dim(m, in, 3)))
        return rc;
    return 0;
}

/* The sidecar's "input_sources" entry of input `name`, or NULL. */
static const VdnnSidecarSource *source_of(const VdnnTinyModel *m, const char *name)
{
    for (size_t i = 0; i < m->sc->n_sources; i++)
        if (strcmp(m->sc->sources[i].input, name) == 0)
            return &m->sc->sources[i];
    return NULL;
}

/* Whether the file at `path` (read and scanned under the policy) declares
 * an input `name`: 1 or 0, -1 when it cannot be read. */
static int file_declares_input(const char *path, const VmafDnnModelPolicy *policy,
                               const char *name)
{
    VdnnOnnxInterface *io = NULL;
    if (!path || vdnn_model_interface(path, policy, &io) != 0) {
        vdnn_clear_error(); /* the attach goes on: no stale message after its success */
        return -1;
    }
    int found = 0;
    for (size_t i = 0; i < io->n_inputs && !found; i++)
        found = strcmp(io->inputs[i].name, name) == 0;
    vdnn_onnx_interface_free(io);
    return found;
}

/* Whether the model at m->path, or a form its sidecar names, may declare an
 * input `name`: one does, or a form cannot be read (a model copied without
 * its forms still scores where none is used; a form that is used fails its
 * open saying why). */
static int some_form_declares(const VdnnTinyModel *m, const VmafDnnModelPolicy *policy,
                              const char *name)
{
    if (m->form_path && file_declares_input(m->path, policy, name) == 1)
        return 1; /* the scoring file is a form: the model itself may */
    for (size_t f = 0; f < m->sc->form_files.count; f++) {
        char *path = vdnn_sidecar_beside(m->path, m->sc->form_files.items[f]);
        const int found = file_declares_input(path, policy, name);
        free(path);
        if (found)
            return 1;
    }
    return 0;
}

/* Every "input_sources" entry names an input: a misspelt one would leave
 * the input it meant to the default rules. A "value" entry may name an
 * input that only another form of the model reads (a samples form's bpc,
 * which the model and its accelerator form do not take). */
static int check_sources_exist(const VdnnTinyModel *m, const VmafDnnModelPolicy *policy)
{
    const size_t n = vmaf_dnn_session_input_count(m->session);
    for (size_t e = 0; e < m->sc->n_sources; e++) {
        const VdnnSidecarSource *src = &m->sc->sources[e];
        size_t i = 0;
        while (i < n && strcmp(input_info(m, i).name, src->input) != 0)
            i++;
        if (i < n || (src->kind == VDNN_SOURCE_VALUE && some_form_declares(m, policy, src->input)))
            continue;
        return vdnn_fail(-EINVAL, "model %s: sidecar \"input_sources\" names \"%s\", which "
                         "is not an input of the model%s", m->path, src->input,
                         src->kind == VDNN_SOURCE_VALUE && m->sc->form_files.count
                             ? " nor of its forms" : "");
    }
    return 0;
}

/* A "value" or "feature" input holds one float: every dim 1 (or symbolic,
 * fed as 1). */
static int add_scalar(VdnnTinyModel *m, const VmafDnnTensorInfo *in, const VdnnSidecarSource *src)
{
    if (in->type != VMAF_DNN_TYPE_FLOAT && in->type != VMAF_DNN_TYPE_FLOAT16)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" is fed a number by \"input_sources\" "
                         "but is not FLOAT or FLOAT16", m->path, in->name);
    if (!in->shape || in->rank > 4)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" is fed one number by "
                         "\"input_sources\"; it needs a known rank of at most 4", m->path,
                         in->name);
    TinyScalar *sc = &m->scalar[m->n_scalar++];
    sc->name = in->name;
    sc->src = src;
    sc->rank = in->rank;
    for (size_t d = 0; d < in->rank; d++) {
        if (in->shape[d] != 1 && in->shape[d] >= 0)
            return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" is fed one number by "
                             "\"input_sources\", but dim %zu is %lld (each must be 1)", m->path,
                             in->name, d, (long long)in->shape[d]);
        sc->shape[d] = 1;
    }
    return 0;
}

/* Every image input reads the same plane: each plane has its own size (4:2:0
 * chroma is a quarter of luma), and a model's image inputs share one H x W. */
static int add_image(VdnnTinyModel *m, size_t slot, const VdnnSidecarSource *src)
{
    static const char *const names[] = {"Y", "U", "V"};
    const VdnnSourcePlane plane = src ? src->plane : VDNN_PLANE_Y;
    if (m->n_image && plane != m->plane)
        return vdnn_fail(-ENOTSUP, "model %s: image input \"%s\" reads plane %s, \"%s\" plane "
                         "%s; the image inputs of one model read one plane (planes differ in "
                         "size): attach a model per plane", m->path, input_info(m, slot).name,
                         names[plane], m->image_name[0], names[m->plane]);
    m->plane = plane;
    const size_t k = m->n_image++;
    m->image_slot[k] = slot;
    m->image_name[k] = input_info(m, slot).name;
    if (src) {
        m->image_src[k].picture = src->picture;
        m->image_src[k].back = (unsigned)-src->offset;
        TinyHistory *h = &m->history[src->picture];
        if ((unsigned)-src->offset > h->depth)
            h->depth = (unsigned)-src->offset;
    }
    return 0;
}

/* Sorts the inputs into sourced ones ("input_sources"), unbound images
 * (model order, at most two) and at most one vector, and applies the
 * per-input shape rules. Unbound images come first in image_*[]. */
static int classify_inputs(VdnnTinyModel *m, const VmafDnnModelPolicy *policy,
                           size_t *vector_slot, size_t *n_vector)
{
    const size_t n = vmaf_dnn_session_input_count(m->session);
    *n_vector = 0;
    if (n == 0)
        return vdnn_fail(-ENOTSUP, "model %s has no inputs", m->path);
    int rc = check_sources_exist(m, policy);
    if (rc)
        return rc;
    m->image_name = calloc(n, sizeof(*m->image_name));
    m->image_slot = calloc(n, sizeof(*m->image_slot));
    m->image_src = calloc(n, sizeof(*m->image_src));
    m->resized = calloc(n, sizeof(*m->resized));
    m->scalar = calloc(n, sizeof(*m->scalar));
    m->feed = calloc(n, sizeof(*m->feed));
    m->sample_plane = calloc(n, sizeof(*m->sample_plane));
    m->feed_samples = calloc(n, sizeof(*m->feed_samples));
    if (!m->image_name || !m->image_slot || !m->image_src || !m->resized || !m->scalar ||
        !m->feed || !m->sample_plane || !m->feed_samples)
        return vdnn_fail(-ENOMEM, "out of memory");
    /* Two passes so the unbound images keep the first places. */
    for (int sourced = 0; sourced < 2; sourced++) {
        for (size_t i = 0; i < n; i++) {
            VmafDnnTensorInfo in = input_info(m, i);
            const VdnnSidecarSource *src = source_of(m, in.name);
            if (!!src != sourced)
                continue;
            if (src && src->kind != VDNN_SOURCE_PICTURE) {
                if ((rc = add_scalar(m, &in, src)))
                    return rc;
                continue;
            }
            if (!in.shape)
                return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" declares no shape; a tiny "
                                 "model's inputs need one: NCHW images [1,1,H,W] (H and W may "
                                 "be symbolic)%s", m->path, in.name,
                                 src ? "" : " or a feature vector [1,K]");
            if (in.rank != 4 && (src || in.rank != 2))
                return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" has rank %zu; tiny models "
                                 "take NCHW images (rank 4)%s", m->path, in.name, in.rank,
                                 src ? "" : " or feature vectors (rank 2)");
            if ((rc = check_batch(m, &in)))
                return rc;
            if (in.rank == 2) {
                if (++*n_vector > 1)
                    return vdnn_fail(-ENOTSUP, "model %s has several feature-vector (rank 2) "
                                     "inputs; tiny models take at most one", m->path);
                *vector_slot = i;
                continue;
            }
            if (!src && m->n_unbound == 2)
                return vdnn_fail(-ENOTSUP, "model %s has more than two image (rank 4) inputs; "
                                 "tiny models take one (NR: distorted) or two (FR: reference, "
                                 "distorted), and any more through the sidecar's "
                                 "\"input_sources\"", m->path);
            if ((rc = check_image_input(m, &in, n)))
                return rc;
            if ((rc = add_image(m, i, src)))
                return rc;
            m->n_unbound += !src;
        }
    }
    /* Unbound images read this frame: [reference, distorted] or [distorted]. */
    for (size_t k = 0; k < m->n_unbound; k++)
        m->image_src[k] = (TinyImageSource){
            m->n_unbound == 2 && k == 0 ? VDNN_PICTURE_REFERENCE : VDNN_PICTURE_DISTORTED, 0};
    return 0;
}

/* Decides FR / NR / FEATURES and checks the sidecar and the caller agree. */
static int decide_kind(VdnnTinyModel *m, size_t n_image, int no_reference)
{
    int reads_reference = 0;
    for (size_t k = 0; k < n_image; k++)
        reads_reference |= m->image_src[k].picture == VDNN_PICTURE_REFERENCE;
    m->kind = reads_reference ? VMAF_DNN_MODEL_FR
              : n_image       ? VMAF_DNN_MODEL_NR
                              : VMAF_DNN_MODEL_FEATURES;
    /* The sidecar kind describes image inputs; a FEATURES model's kind is the
     * nature of its features, which cannot be checked here. */
    if (n_image && m->sc->kind != VDNN_SIDECAR_KIND_UNSET) {
        VmafDnnModelKind said =
            m->sc->kind == VDNN_SIDECAR_KIND_FR ? VMAF_DNN_MODEL_FR : VMAF_DNN_MODEL_NR;
        if (said != m->kind)
            return vdnn_fail(-ENOTSUP, "model %s: the sidecar says kind \"%s\" but the model has "
                             "%zu image input%s (FR models have two: reference and distorted; "
                             "NR models one)", m->path, kind_text(said), n_image,
                             n_image == 1 ? "" : "s");
    }
    for (size_t i = 0; i < m->n_scalar; i++)
        if (m->scalar[i].src->kind == VDNN_SOURCE_VALUE &&
            m->scalar[i].src->value != VDNN_VALUE_DEVICE_TYPE && !n_image)
            return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" is fed a value of the frame, but "
                             "the model reads no picture", m->path, m->scalar[i].name);
    if (no_reference && m->kind == VMAF_DNN_MODEL_FR)
        return vdnn_fail(-EINVAL, "model %s is full-reference (two image inputs) and cannot be "
                         "attached with no_reference", m->path);
    return 0;
}

/* Binds the image inputs to [reference, distorted] (or [distorted]): by the
 * sidecar's "input_names" when given, else in model order. Every entry must
 * name an input, whatever the kind. */
static int bind_images(VdnnTinyModel *m)
{
    const VdnnSidecarStrings *names = &m->sc->input_names;
    const size_t n_inputs = vmaf_dnn_session_input_count(m->session);
    if (!names->count)
        return 0;
    size_t bound = 0;
    for (size_t e = 0; e < names->count; e++) {
        size_t slot = n_inputs;
        for (size_t i = 0; i < n_inputs; i++)
            if (strcmp(input_info(m, i).name, names->items[e]) == 0)
                slot = i;
        if (slot == n_inputs)
            return vdnn_fail(-EINVAL, "model %s: sidecar \"input_names\" entry \"%s\" is not an "
                             "input of the model", m->path, names->items[e]);
        VmafDnnTensorInfo in = input_info(m, slot);
        if (source_of(m, in.name))
            return vdnn_fail(-EINVAL, "model %s: sidecar \"input_names\" lists \"%s\", which "
                             "\"input_sources\" feeds", m->path, in.name);
        if (in.rank != 4)
            continue; /* the feature vector is fed by its own rule */
        for (size_t k = 0; k < bound; k++)
            if (strcmp(m->image_name[k], in.name) == 0)
                return vdnn_fail(-EINVAL, "model %s: sidecar \"input_names\" lists \"%s\" twice",
                                 m->path, in.name);
        m->image_slot[bound] = slot;
        m->image_name[bound++] = in.name; /* distinct unbound image inputs: bound <= 2 */
    }
    if (bound != m->n_unbound)
        return vdnn_fail(-EINVAL, "model %s: sidecar \"input_names\" lists %zu of the model's %zu "
                         "image inputs; it must list %s", m->path, bound, m->n_unbound,
                         m->n_unbound == 2   ? "both, as [reference, distorted]"
                         : m->n_unbound == 1 ? "it"
                                             : "none");
    return 0;
}

/* The image inputs' H and W (equal in every image input), -1 when symbolic. */
static int decide_image_size(VdnnTinyModel *m)
{
    const size_t *image_slot = m->image_slot;
    VmafDnnTensorInfo first = input_info(m, image_slot[0]);
    m->n_image_fp16 = first.type == VMAF_DNN_TYPE_FLOAT16;
    m->samples = first.type == VMAF_DNN_TYPE_UINT16;
    for (size_t k = 1; k < m->n_image; k++) {
        VmafDnnTensorInfo other = input_info(m, image_slot[k]);
        m->n_image_fp16 += other.type == VMAF_DNN_TYPE_FLOAT16;
        if ((other.type == VMAF_DNN_TYPE_UINT16) != m->samples)
            return vdnn_fail(-ENOTSUP, "model %s: image input \"%s\" is %s and \"%s\" is %s; "
                             "the image inputs of a model take either the picture's samples "
                             "(UINT16) or normalised pictures (FLOAT, FLOAT16), all alike",
                             m->path, first.name, m->samples ? "UINT16" : "not",
                             other.name, m->samples ? "not" : "UINT16");
        if (other.shape[2] != first.shape[2] || other.shape[3] != first.shape[3]) {
            char a[64], b[64];
            return vdnn_fail(-ENOTSUP, "model %s: image inputs \"%s\" %s and \"%s\" %s differ in "
                             "size; both must take the same H x W", m->path, first.name,
                             shape_text(&first, a, sizeof(a)), other.name,
                             shape_text(&other, b, sizeof(b)));
        }
    }
    m->model_h = first.shape[2] < 0 ? -1 : first.shape[2];
    m->model_w = first.shape[3] < 0 ? -1 : first.shape[3];
    return 0;
}

static int setup_vector(VdnnTinyModel *m, size_t vector_slot, size_t n_vector)
{
    const VdnnSidecarStrings *features = &m->sc->features;
    if (!n_vector) {
        if (features->present)
            return vdnn_fail(-EINVAL, "model %s: the sidecar lists \"features\" but the model has "
                             "no feature-vector (rank 2) input", m->path);
        return 0;
    }
    VmafDnnTensorInfo in = input_info(m, vector_slot);
    if (!features->count)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" is a feature vector, but the sidecar "
                         "lists no \"features\" to fill it", m->path, in.name);
    if (in.shape[1] >= 0 && (size_t)in.shape[1] != features->count)
        return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" takes %lld features; the sidecar lists "
                         "%zu", m->path, in.name, (long long)in.shape[1], features->count);
    m->vector_name = in.name;
    m->vector_shape[0] = 1;
    m->vector_shape[1] = (int64_t)features->count;
    /* fed: the session's host memory (vdnn_session_host_alloc), as the pictures */
    if (!(m->vector = vdnn_session_host_alloc(m->session, features->count * sizeof(float))))
        return vdnn_fail(-ENOMEM, "out of memory");
    return 0;
}

static int is_image_slot(const VdnnTinyModel *m, size_t slot)
{
    for (size_t k = 0; k < m->n_image; k++)
        if (m->image_slot[k] == slot)
            return 1;
    return 0;
}

/* FLOAT16 slots open fine but every run would fail without fp16_io: say so
 * now. */
static int check_fp16(const VdnnTinyModel *m, const VmafDnnTensorInfo *t, const char *what)
{
    if (t->type != VMAF_DNN_TYPE_FLOAT16 || vmaf_dnn_session_config(m->session)->fp16_io)
        return 0;
    return vdnn_fail(-ENOTSUP, "model %s: %s \"%s\" is FLOAT16; attach the model with fp16_io in "
                     "its session config", m->path, what, t->name);
}

static int check_inputs(VdnnTinyModel *m, const VdnnTinyModelOptions *opt)
{
    size_t n_vector, vector_slot = 0;
    int rc = classify_inputs(m, opt->policy, &vector_slot, &n_vector);
    if (rc || (rc = decide_kind(m, m->n_image, opt->no_reference)))
        return rc;
    if ((rc = bind_images(m)) || (m->n_image && (rc = decide_image_size(m))))
        return rc;
    if ((rc = setup_vector(m, vector_slot, n_vector)))
        return rc;
    /* the values fed, like the pictures, from the session's host memory */
    if (m->n_scalar &&
        !(m->scalar_value = vdnn_session_host_alloc(m->session, m->n_scalar * sizeof(float))))
        return vdnn_fail(-ENOMEM, "out of memory");
    for (size_t i = 0; i < vmaf_dnn_session_input_count(m->session); i++) {
        VmafDnnTensorInfo in = input_info(m, i);
        if ((rc = check_fp16(m, &in, "input")))
            return rc;
        if (in.type == VMAF_DNN_TYPE_UINT16 && !is_image_slot(m, i))
            return vdnn_fail(-ENOTSUP, "model %s: input \"%s\" is UINT16; only picture inputs "
                             "(rank 4) take samples, the others take fp32", m->path, in.name);
    }
    for (size_t k = 0; m->samples && k < m->n_image; k++)
        m->feed_samples[k] = VDNN_SAMPLES_UINT16; /* feed_images puts the images first */
    m->narrows = m->samples && vdnn_session_narrows(m->session);
    m->stages = vdnn_session_host_blocks_pinned(m->session);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Outputs                                                                  */
/* ------------------------------------------------------------------------ */

static int has_symbolic_batch_input(const VdnnTinyModel *m)
{
    for (size_t i = 0; i < vmaf_dnn_session_input_count(m->session); i++)
        if (input_info(m, i).shape[0] < 0)
            return 1;
    return 0;
}

/* An attached output holds one value: fixed dims of 1, except a leading
 * symbolic dim that is the (symbolic, fed as 1) batch. */
static int check_scalar_output(const VdnnTinyModel *m, const VmafDnnTensorInfo *out,
                               int batch_symbolic)
{
    char shape[128];
    int scalar = 1;
    /* The session API's mark for "no rank declared" (ORT >= 1.24 tells it
     * from rank 0). Such an output may hold any number of values, so the
     * one-value rule cannot be checked: refuse it here rather than fail (or
     * read a stray shape) on every frame. */
    if (!out->shape)
        return vdnn_fail(-ENOTSUP, "model %s: output \"%s\" has no known rank (the model declares "
                         "no shape for it); attached tiny models must output one value, with a "
                         "fixed shape such as [1]", m->path, out->name);
    for (size_t d = 0; d < out->rank; d++) {
        if (out->shape[d] >= 0)
            scalar &= out->shape[d] == 1;
        else if (d != 0 || !batch_symbolic)
            return vdnn_fail(-ENOTSUP, "model %s: output \"%s\" has shape %s with a symbolic "
                             "dim; attached tiny models must output one value, with a fixed "
                             "shape (a symbolic dim may only be the first one, when an input "
                             "has a symbolic batch)", m->path, out->name,
                             shape_text(out, shape, sizeof(shape)));
    }
    if (!scalar)
        return vdnn_fail(-ENOTSUP, "model %s: output \"%s\" has shape %s: attached tiny models "
                         "must output scalars; use the session API for tensors", m->path,
                         out->name, shape_text(out, shape, sizeof(shape)));
    return check_fp16(m, out, "output");
}

/* Chooses the attached outputs (all, or the sidecar's legacy "output_name")
 * and sets up their one-value requests. */
static int setup_outputs(VdnnTinyModel *m)
{
    const size_t n = vmaf_dnn_session_output_count(m->session);
    size_t first = 0, count = n;
    if (n == 0)
        return vdnn_fail(-ENOTSUP, "model %s has no outputs", m->path);
    if (m->sc->output_name) {
        for (first = 0; first < n; first++)
            if (strcmp(output_info(m, first).name, m->sc->output_name) == 0)
                break;
        if (first == n)
            return vdnn_fail(-EINVAL, "model %s: sidecar \"output_name\" \"%s\" is not an output "
                             "of the model", m->path, m->sc->output_name);
        count = 1;
    }
    m->outputs = calloc(count, sizeof(*m->outputs));
    m->value = calloc(count, sizeof(*m->value));
    m->key = calloc(count, sizeof(*m->key));
    if (!m->outputs || !m->value || !m->key)
        return vdnn_fail(-ENOMEM, "out of memory");
    m->n_out = count;
    const int batch_symbolic = has_symbolic_batch_input(m);
    m->outputs_per_frame = 1;
    for (size_t s = 0; s < count; s++) {
        VmafDnnTensorInfo out = output_info(m, first + s);
        int rc = check_scalar_output(m, &out, batch_symbolic);
        if (rc)
            return rc;
        m->outputs_per_frame &= out.rank >= 1 && out.shape[0] < 0;
        m->outputs[s] = (VmafDnnOutput){.name = out.name, .data = &m->value[s], .capacity = 1};
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Memory budget of the per-frame buffers                                   */
/* ------------------------------------------------------------------------ */

/* Bytes of the per-frame buffers the model itself holds for a plane of
 * fw x fh fed at tw x th: when `resized`, the resized planes and the
 * resizer's row pass (and, for a samples model, the plane normalised for
 * it); the past planes it keeps ("input_sources" offsets); the session's
 * FLOAT16 copies of FLOAT16 image inputs; a samples model's fed planes. The
 * resizer's tap tables (O(W + H)) are left out. 64-bit: 2 x 20 x 32768^2 x 4
 * fits. */
static uint64_t own_bytes(const VdnnTinyModel *m, uint64_t fw, uint64_t fh, uint64_t tw,
                          uint64_t th, int resized)
{
    const uint64_t element = m->samples ? sizeof(uint16_t) : sizeof(float);
    uint64_t bytes = 0;
    if (resized) /* the resized planes and the resizer's scratch between its passes */
        bytes += m->n_image * tw * th * sizeof(float) +
                 vdnn_resize_scratch((unsigned)fw, (unsigned)fh, (unsigned)tw, (unsigned)th) *
                     sizeof(float) +
                 (m->samples ? fw * fh * sizeof(float) : 0);
    bytes += (uint64_t)(m->history[0].depth + m->history[1].depth) * tw * th * element;
    if (m->samples)
        bytes += m->n_image * tw * th * sizeof(uint16_t);
    return bytes + m->n_image_fp16 * tw * th * sizeof(uint16_t);
}

/* own_bytes plus the fp32 planes of fw x fh it reads (one per picture
 * read), which the context (or a frame worker) holds for it; a samples model
 * reads the caller's samples instead. */
static uint64_t frame_bytes(const VdnnTinyModel *m, uint64_t fw, uint64_t fh, uint64_t tw,
                            uint64_t th, int resized)
{
    int read[2] = {0, 0};
    for (size_t k = 0; k < m->n_image && !m->samples; k++)
        read[m->image_src[k].picture] = 1;
    return (uint64_t)(read[0] + read[1]) * fw * fh * sizeof(float) +
           own_bytes(m, fw, fh, tw, th, resized);
}

static int check_budget(const VdnnTinyModel *m, uint64_t bytes, const char *when, int resized)
{
    if (!m->max_memory_bytes || bytes <= m->max_memory_bytes)
        return 0;
    return vdnn_fail(-EDQUOT, "model %s: input \"%s\" %s needs %llu bytes of per-frame buffers "
                     "(%s planes%s), above the policy's max_memory_bytes of %llu", m->path,
                     m->image_name[0], when, (unsigned long long)bytes,
                     m->samples ? "sample" : "fp32", resized ? " and resize scratch" : "",
                     (unsigned long long)m->max_memory_bytes);
}

/* At attach, the least any frame needs: a frame at the model's own size
 * (no resize). A model that fails this can never score a frame. Symbolic
 * sizes are known only at the first frame (vdnn_tiny_model_check_frame). */
static int check_attach_budget(const VdnnTinyModel *m)
{
    if (!m->n_image || m->model_w < 0 || m->model_h < 0)
        return 0;
    char when[96];
    snprintf(when, sizeof(when), "of %lldx%lld", (long long)m->model_w, (long long)m->model_h);
    return check_budget(m, frame_bytes(m, (uint64_t)m->model_w, (uint64_t)m->model_h,
                                       (uint64_t)m->model_w, (uint64_t)m->model_h, 0),
                        when, 0);
}

/* A frame's plane the model reads (w x h) and the size it is fed at. */
typedef struct FedSize {
    unsigned w, h, tw, th;
    int resized;
} FedSize;

static FedSize fed_size(const VdnnTinyModel *m, const unsigned pw[3], const unsigned ph[3])
{
    FedSize s = {.w = pw[m->plane], .h = ph[m->plane]};
    s.tw = m->model_w < 0 ? s.w : (unsigned)m->model_w;
    s.th = m->model_h < 0 ? s.h : (unsigned)m->model_h;
    s.resized = (s.tw != s.w || s.th != s.h) && m->resize != VMAF_DNN_RESIZE_NONE;
    return s;
}

int vdnn_tiny_model_check_frame(const VdnnTinyModel *m, const unsigned pw[3],
                                const unsigned ph[3])
{
    if (!m->n_image)
        return 0;
    const FedSize s = fed_size(m, pw, ph);
    char when[96];
    snprintf(when, sizeof(when), "at %ux%u for a %ux%u frame", s.tw, s.th, s.w, s.h);
    return check_budget(m, frame_bytes(m, s.w, s.h, s.tw, s.th, s.resized), when, s.resized);
}

uint64_t vdnn_tiny_model_own_frame_bytes(const VdnnTinyModel *m, const unsigned pw[3],
                                         const unsigned ph[3])
{
    if (!m->n_image)
        return 0;
    const FedSize s = fed_size(m, pw, ph);
    return own_bytes(m, s.w, s.h, s.tw, s.th, s.resized);
}

uint64_t vdnn_policy_max_memory(const VmafDnnModelPolicy *policy)
{
    VmafDnnModelPolicy defaults;
    if (!policy) {
        vmaf_dnn_default_model_policy(&defaults);
        policy = &defaults;
    }
    return policy->max_memory_bytes;
}

/* ------------------------------------------------------------------------ */
/* Feature keys                                                             */
/* ------------------------------------------------------------------------ */

/* mcfg name > sidecar "name" > file name without directory and ".onnx". */
static char *base_name(const VdnnTinyModel *m, const char *override)
{
    if (override)
        return strdup(override);
    if (m->sc->name)
        return strdup(m->sc->name);
    const char *slash = strrchr(m->path, '/');
    const char *file = slash ? slash + 1 : m->path;
    size_t len = strlen(file);
    if (len > 5 && strcmp(file + len - 5, ".onnx") == 0)
        len -= 5;
    char *name = malloc(len + 1);
    if (name) {
        memcpy(name, file, len);
        name[len] = '\0';
    }
    return name;
}

static char *join_key(const char *base, const char *suffix)
{
    size_t len = strlen(base) + 1 + strlen(suffix);
    char *key = malloc(len + 1);
    if (key)
        snprintf(key, len + 1, "%s_%s", base, suffix);
    return key;
}

static void sanitise(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            *s = '_';
}

static int key_free(const VdnnTinyModel *m, size_t slot, const char *key,
                    const VdnnTinyModelOptions *opt)
{
    for (size_t s = 0; s < slot; s++)
        if (strcmp(m->key[s], key) == 0)
            return 0;
    return !(opt->key_taken && opt->key_taken(opt->opaque, key));
}

/* The key of output `slot` of a multi-output model: "<base>_<suffix>", else
 * the first free "<base>_output<slot>_<n>". */
static int multi_key(VdnnTinyModel *m, size_t slot, const char *base,
                     const VdnnTinyModelOptions *opt)
{
    const VdnnSidecarStrings *names = &m->sc->output_names;
    const char *suffix = names->count == m->n_out ? names->items[slot] : m->outputs[slot].name;
    char *key = join_key(base, suffix);
    if (!key)
        return vdnn_fail(-ENOMEM, "out of memory");
    sanitise(key + strlen(base) + 1);
    if (key_free(m, slot, key, opt)) {
        m->key[slot] = key;
        return 0;
    }
    const size_t len = strlen(base) + 64;
    char *fallback = malloc(len);
    if (!fallback) {
        free(key);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    for (unsigned n = 1; n <= TINY_KEY_ATTEMPTS; n++) {
        snprintf(fallback, len, "%s_output%zu_%u", base, slot, n);
        if (key_free(m, slot, fallback, opt)) {
            free(key);
            m->key[slot] = fallback;
            return 0;
        }
    }
    int rc = vdnn_fail(-EEXIST, "model %s: output \"%s\" has no free feature key: \"%s\" and "
                       "\"%s_output%zu_1\" .. \"%s_output%zu_%d\" are all taken", m->path,
                       m->outputs[slot].name, key, base, slot, base, slot, TINY_KEY_ATTEMPTS);
    free(key);
    free(fallback);
    return rc;
}

/* The sidecar's "output_keys": the keys as written, one per output. No
 * fallback key: a model that names its features (libvmaf's "adm2", say)
 * must not have them stored elsewhere, where its readers would not look. */
static int exact_keys(VdnnTinyModel *m, const VdnnTinyModelOptions *opt)
{
    const VdnnSidecarStrings *keys = &m->sc->output_keys;
    if (keys->count != m->n_out)
        return vdnn_fail(-EINVAL, "model %s: sidecar \"output_keys\" has %zu entries for %zu "
                         "attached output%s", m->path, keys->count, m->n_out,
                         m->n_out == 1 ? "" : "s");
    for (size_t s = 0; s < m->n_out; s++) {
        if (!key_free(m, s, keys->items[s], opt))
            return vdnn_fail(-EEXIST, "model %s: feature key \"%s\" (sidecar \"output_keys\") "
                             "is already taken by another attached model, a stored feature or "
                             "an earlier output", m->path, keys->items[s]);
        if (!(m->key[s] = strdup(keys->items[s])))
            return vdnn_fail(-ENOMEM, "out of memory");
    }
    return 0;
}

static int assign_keys(VdnnTinyModel *m, const VdnnTinyModelOptions *opt)
{
    if (opt->name && !*opt->name)
        return vdnn_fail(-EINVAL, "model %s: the model name given is empty", m->path);
    int rc = 0;
    char *base = NULL;
    if (m->sc->output_keys.present)
        rc = exact_keys(m, opt);
    else if (!(base = base_name(m, opt->name)))
        return vdnn_fail(-ENOMEM, "out of memory");
    else if (m->n_out == 1) {
        m->key[0] = base;
        if (!key_free(m, 0, base, opt))
            return vdnn_fail(-EEXIST, "model %s: feature key \"%s\" is already taken by another "
                             "attached model or a stored feature; attach it under another name",
                             m->path, base);
    } else {
        for (size_t s = 0; s < m->n_out && !rc; s++)
            rc = multi_key(m, s, base, opt);
        free(base);
    }
    for (size_t s = 0; s < m->n_out && !rc; s++) {
        if ((rc = vdnn_text_check(m->key[s], VDNN_FEATURE_NAME_MAX, "feature key"))) {
            char why[512];
            snprintf(why, sizeof(why), "%s", vdnn_last_error());
            return vdnn_fail(rc, "model %s: %s", m->path, why);
        }
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Open / close / introspection                                             */
/* ------------------------------------------------------------------------ */

static VmafDnnResize pick_resize(const VdnnSidecar *sc, VmafDnnResize mine, VmafDnnResize ctx)
{
    if (mine != VMAF_DNN_RESIZE_DEFAULT)
        return mine;
    switch (sc->resize) {
    case VDNN_SIDECAR_RESIZE_NONE: return VMAF_DNN_RESIZE_NONE;
    case VDNN_SIDECAR_RESIZE_BILINEAR: return VMAF_DNN_RESIZE_BILINEAR;
    case VDNN_SIDECAR_RESIZE_NEAREST: return VMAF_DNN_RESIZE_NEAREST;
    case VDNN_SIDECAR_RESIZE_BICUBIC: return VMAF_DNN_RESIZE_BICUBIC;
    case VDNN_SIDECAR_RESIZE_UNSET: break;
    }
    return ctx == VMAF_DNN_RESIZE_DEFAULT ? VMAF_DNN_RESIZE_NONE : ctx;
}

static int check_cap(const VdnnTinyModel *m)
{
    if (m->sc->has_cap_db_per_bpc && m->kind == VMAF_DNN_MODEL_FEATURES)
        return vdnn_fail(-ENOTSUP, "model %s: the sidecar's \"cap_db_per_bpc\" needs the frame's "
                         "bit depth, and a feature-vector model reads no picture", m->path);
    return 0;
}

/* Frames can share a Run when the model scores each on its own: every
 * picture of the frame scored has a symbolic first dim, every attached
 * output too (one value per frame); "value" inputs are the Run's (a fixed
 * shape), past pictures those of the Run's first frame (a first dim of 1),
 * and no "feature" input nor vector (a value per frame). A Run feeds the
 * past pictures of its first frame only, so frame b's picture k back, for
 * b < k, is the first frame's picture k - b back: every offset up to the
 * deepest a picture is read at must be an input of its own (a model reading
 * only 2 back has no input for its second frame's, the picture just before
 * the Run). */
static int decide_batchable(const VdnnTinyModel *m)
{
    if (!m->n_image || m->vector_name || !m->outputs_per_frame)
        return 0;
    for (int p = 0; p < 2; p++)
        for (unsigned back = 1; back <= m->history[p].depth; back++) {
            size_t k = 0;
            while (k < m->n_image && !(m->image_src[k].back == back &&
                                       (int)m->image_src[k].picture == p))
                k++;
            if (k == m->n_image)
                return 0;
        }
    for (size_t i = 0; i < m->n_scalar; i++)
        if (m->scalar[i].src->kind == VDNN_SOURCE_FEATURE)
            return 0; /* a value per frame */
    const size_t n_in = vmaf_dnn_session_input_count(m->session);
    for (size_t slot = 0; slot < n_in; slot++) {
        size_t k = 0;
        while (k < m->n_image && m->image_slot[k] != slot)
            k++;
        const VmafDnnTensorInfo info = input_info(m, slot);
        if (k < m->n_image && !m->image_src[k].back) {
            if (info.shape[0] >= 0) /* the frame's picture: [N, 1, H, W] */
                return 0;
            continue;
        }
        /* A value input (bpc, size, device type) is the Run's, and a past
         * picture the one before the Run's first frame: declared whole. */
        if (k < m->n_image ? info.shape[0] != 1 : info.rank > 0 && info.shape[0] < 0)
            return 0;
        for (size_t d = 1; k == m->n_image && d < info.rank; d++)
            if (info.shape[d] < 0)
                return 0;
    }
    return 1;
}

/* Every input the form declares after the model's is fed a "value" by the
 * sidecar ("input_sources"): vdnn_onnx_form_fits lets a form add one number
 * each but cannot read the sidecar, and an added input left to the default
 * rules would be read as a feature vector or a picture, or one fed a picture
 * or a feature would read what the model does not: no drop-in. */
static int check_added_inputs(const VdnnTinyModel *m, const char *ep,
                              const VdnnOnnxInterface *model_io,
                              const VdnnOnnxInterface *form_io)
{
    for (size_t i = model_io->n_inputs; i < form_io->n_inputs; i++) {
        const VdnnSidecarSource *src = source_of(m, form_io->inputs[i].name);
        if (!src || src->kind != VDNN_SOURCE_VALUE)
            return vdnn_fail(-EINVAL, "model %s: its form for %s, %s, adds input \"%s\", which "
                             "the sidecar's \"input_sources\" does not feed a \"value\" (a form "
                             "may add only numbers the sidecar feeds, such as \"bpc\")", m->path,
                             ep, m->form_path, form_io->inputs[i].name);
    }
    return 0;
}

/* Whether the form at m->form_path declares the inputs and outputs of the
 * model at opt->onnx_path (names, element types, shapes; vdnn_onnx_form_fits:
 * a picture input may take samples instead): a form must be a drop-in for
 * its model. Read from the files (scanned under the policy as
 * any open is), so that no session of the model is needed; model_io: the
 * model's, when the caller has read it already (else NULL). 0, -EINVAL
 * (another interface), or the read's error. */
static int check_form_interface(const VdnnTinyModel *m, const VdnnTinyModelOptions *opt,
                                const char *ep, const VdnnOnnxInterface *model_io)
{
    VdnnOnnxInterface *read = NULL, *form_io = NULL;
    int rc = model_io ? 0 : vdnn_model_interface(opt->onnx_path, opt->policy, &read);
    if (!rc)
        rc = vdnn_model_interface(m->form_path, opt->policy, &form_io);
    if (!rc && !vdnn_onnx_form_fits(model_io ? model_io : read, form_io))
        rc = vdnn_fail(-EINVAL, "model %s: its form for %s, %s, has other inputs or outputs "
                       "than the model", m->path, ep, m->form_path);
    if (!rc)
        rc = check_added_inputs(m, ep, model_io ? model_io : read, form_io);
    vdnn_onnx_interface_free(read);
    vdnn_onnx_interface_free(form_io);
    return rc;
}

/* VMAFDNN_MODEL_FORMS, read once per attach (read_forms_setting):
 *   0, false, no, off      every model on the file it was attached from
 *                          (tests compare the forms that way)
 *   unset, "", 1, true, yes, on, auto
 *                          the form the sidecar names for the attached EP
 *   an EP name ("CUDA")    the form that EP would get (the sidecar's for it,
 *                          open_form_on_ep's rule included), whatever EP
 *                          attached (tests run the accelerator forms on ORT's
 *                          CPU EP that way: VMAFDNN_MODEL_FORMS=CUDA); any
 *                          spelling vmaf_dnn_ep_from_name takes, anything
 *                          else fails the attach
 * Any case, spaces around. python/vmafdnn/results.py reads it the same way
 * for the batch's job keys. */
/* Whether v[0, n) is one of words[0, count), in any case. */
static int one_of(const char *v, size_t n, const char *const *words, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (n == strlen(words[i]) && strncasecmp(v, words[i], n) == 0)
            return 1;
    return 0;
}

static int read_forms_setting(VdnnTinyModel *m)
{
    static const char *const off[] = {"0", "false", "no", "off"};
    static const char *const by_ep[] = {"", "1", "true", "yes", "on", "auto"};
    const char *v = getenv("VMAFDNN_MODEL_FORMS");
    m->forms_off = 0;
    m->forms_ep = NULL;
    if (!v)
        return 0;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (one_of(v, n, off, sizeof(off) / sizeof(off[0]))) {
        m->forms_off = 1;
        return 0;
    }
    if (one_of(v, n, by_ep, sizeof(by_ep) / sizeof(by_ep[0])))
        return 0;
    char *name = strndup(v, n);
    if (!name)
        return vdnn_fail(-ENOMEM, "out of memory");
    VmafDnnEp ep;
    int rc = vmaf_dnn_ep_from_name(name, &ep);
    free(name);
    if (rc) {
        char why[512]; /* the message is rewritten below: keep it first */
        snprintf(why, sizeof(why), "%s", vmaf_dnn_last_error());
        return vdnn_fail(-EINVAL, "VMAFDNN_MODEL_FORMS: %s (or 0/off: no forms; 1/on/auto: "
                         "the attached EP's)", why);
    }
    m->forms_ep = vmaf_dnn_ep_name(ep);
    return 0;
}

/* The form (a file name from the sidecar) the model scores with when its
 * session attached `attached`: the sidecar's form for that EP, or for the
 * one VMAFDNN_MODEL_FORMS names; NULL for none. */
static const char *form_file(const VdnnTinyModel *m, const char *attached)
{
    if (m->forms_off)
        return NULL;
    return vdnn_sidecar_form(m->sc, m->forms_ep ? m->forms_ep : attached);
}

/* The EP whose form is used, as messages name it: VMAFDNN_MODEL_FORMS's
 * when it names one, else the attached `ep`. */
static const char *form_key(const VdnnTinyModel *m, const char *ep)
{
    return m->forms_ep ? m->forms_ep : ep;
}

/* Opens the form the sidecar names for `ep` (m->form_path set): 0 with
 * *form bound to that EP, -EAGAIN when it bound another (its creation failed
 * there and was retried on the CPU; the form is closed), or the failure,
 * saying why (a form the sidecar promises is never dropped silently).
 * model_io: as for check_form_interface. */
static int open_form(VdnnTinyModel *m, const VdnnTinyModelOptions *opt, const char *ep,
                     const char *file, const VdnnOnnxInterface *model_io,
                     VmafDnnSession **form)
{
    if (!m->form_path && !(m->form_path = vdnn_sidecar_beside(opt->onnx_path, file)))
        return vdnn_fail(-ENOMEM, "out of memory");
    int rc = vmaf_dnn_session_open_with_policy(form, m->form_path, opt->session, opt->policy);
    if (rc) {
        char why[512];
        snprintf(why, sizeof(why), "%s", vmaf_dnn_last_error());
        return vdnn_fail(rc, "model %s: its form for %s, %s, cannot be used: %s (with "
                         "VMAFDNN_MODEL_FORMS=0 the model scores with its own file)", m->path,
                         form_key(m, ep), m->form_path, why);
    }
    if (strcmp(vmaf_dnn_session_attached_ep(*form), ep) != 0) {
        vmaf_dnn_session_close(*form);
        *form = NULL;
        return -EAGAIN;
    }
    if ((rc = check_form_interface(m, opt, form_key(m, ep), model_io))) {
        vmaf_dnn_session_close(*form);
        *form = NULL;
    }
    return rc;
}

/* open_form, but a form the sidecar names for an EP, whose library
 * operators would run on ORT's CPU EP on that EP (CUDA's GPU kernels not
 * ready: no NVRTC, a device that failed their self-check), is passed over
 * for the EP's next choice (vdnn_sidecar_form_choice: the rest of its list,
 * then "*"): the kernels' form would copy every plane to the host and back,
 * which the next (on the EP whole) does not. The EP is the attached one, or
 * VMAFDNN_MODEL_FORMS's, which gets the form that EP would get. For the
 * attached EP the session's fallback reason says what was passed over and
 * why. The last choice scores as it is, and so does a form whose next
 * choice cannot be used here (the reason says so too). */
static int open_form_on_ep(VdnnTinyModel *m, const VdnnTinyModelOptions *opt, const char *ep,
                           const char *file, const VdnnOnnxInterface *model_io,
                           VmafDnnSession **form)
{
    char why[512], line[1536];
    int rc = open_form(m, opt, ep, file, model_io, form);
    if (rc || !vdnn_session_library_ops_off_ep(*form, m->forms_ep, why, sizeof(why)))
        return rc;
    const char *key = form_key(m, ep), *current = file, *next = NULL;
    for (size_t i = 0; (next = vdnn_sidecar_form_choice(m->sc, key, i)); i++) {
        if (strcmp(next, current) == 0 || strcmp(next, file) == 0)
            continue; /* the one open, or a choice listed twice */
        char *kept = m->form_path;
        VmafDnnSession *other = NULL;
        m->form_path = NULL;
        rc = open_form(m, opt, ep, next, model_io, &other);
        if (rc) {
            char refusal[512];
            snprintf(refusal, sizeof(refusal), "%s", rc == -EAGAIN ? "it attached another EP"
                                                                   : vdnn_last_error());
            vdnn_clear_error();
            free(m->form_path);
            m->form_path = kept;
            if (rc == -ENOMEM) {
                vmaf_dnn_session_close(*form);
                *form = NULL;
                return vdnn_fail(rc, "out of memory");
            }
            if (m->forms_ep)
                return 0;
            snprintf(line, sizeof(line), "%s: form %s runs the library's operators on ORT's CPU "
                     "EP (%s); the next choice, %s, cannot be used: %s", ep, current, why, next,
                     refusal);
            return vdnn_session_add_reason(*form, line);
        }
        free(kept);
        vmaf_dnn_session_close(*form);
        *form = other;
        if (!m->forms_ep) {
            snprintf(line, sizeof(line), "%s: form %s passed over for %s: it would run the "
                     "library's operators on ORT's CPU EP: %s", ep, current, next, why);
            if ((rc = vdnn_session_add_reason(*form, line)))
                return rc;
        }
        current = next;
        if (!vdnn_session_library_ops_off_ep(*form, m->forms_ep, why, sizeof(why)))
            return 0;
    }
    if (m->forms_ep)
        return 0;
    snprintf(line, sizeof(line), "%s: form %s runs the library's operators on ORT's CPU EP: %s",
             ep, current, why);
    return vdnn_session_add_reason(*form, line);
}

/* When the sidecar names a form of the model for the EP its session
 * attached, the model scores with that form instead: opened the same way,
 * on the same EP, with the same inputs and outputs, or the attach fails
 * saying why. */
static int use_form(VdnnTinyModel *m, const VdnnTinyModelOptions *opt)
{
    const char *ep = vmaf_dnn_session_attached_ep(m->session);
    const char *file = form_file(m, ep);
    if (!file)
        return 0;
    VmafDnnSession *form = NULL;
    int rc = open_form_on_ep(m, opt, ep, file, NULL, &form);
    if (rc == -EAGAIN)
        rc = vdnn_fail(-EINVAL, "model %s: its form for %s, %s, attached another execution "
                       "provider", m->path, form_key(m, ep), m->form_path);
    if (rc)
        return rc;
    vmaf_dnn_session_close(m->session);
    m->session = form;
    return 0;
}

/* AUTO reached a CPU device of another EP first (OpenVINO's CPU device
 * when onnxruntime-openvino is installed on a machine without an Intel GPU
 * or NPU), and the model's sidecar names a form for ORT's CPU EP ("CPU"):
 * the model goes to ORT's CPU EP instead, with that form. Both run on the
 * same processor, and a form for ORT's CPU EP is the model's way of saying
 * how it runs best there: the built-ins' are the library's fused kernels,
 * where the other EP would get the accelerator form, written for GPUs
 * (measured: the CLI's default models on 10 1080p frames, 0.91 s so, 6.15 s
 * on OpenVINO's CPU device, docs/execution_providers.md). An explicit device
 * (openvino, openvino-cpu, a policy) is taken as asked. */
static int prefers_cpu_ep(const VdnnTinyModel *m, const VdnnTinyModelOptions *opt,
                          const char *first_ep)
{
    const VmafDnnDevice device = opt->session ? opt->session->device : VMAF_DNN_DEVICE_AUTO;
    return device == VMAF_DNN_DEVICE_AUTO && strcmp(first_ep, "CPU") != 0 &&
           vdnn_ep_device_type(first_ep) == 0 /* CPU */ &&
           vdnn_sidecar_form(m->sc, "CPU") && form_file(m, "CPU");
}

/* The form without a session of the model itself (the pure-ONNX VMAF
 * features graph takes 0.2-0.5 s to create, its CPU form milliseconds): the
 * model file is read and scanned under the policy as an open would, then
 * its sidecar; when that names a form for the EP a session would bind and
 * the form binds it, the model scores with the form. 0 (m->session,
 * m->sc, m->form_path set), -EAGAIN when the model must be opened the usual
 * way (nothing kept), or the failure. */
static int open_form_first(VdnnTinyModel *m, const VdnnTinyModelOptions *opt, const char *jail)
{
    VdnnOnnxInterface *io = NULL;
    int rc = vdnn_model_interface(opt->onnx_path, opt->policy, &io);
    if (!rc)
        rc = vdnn_sidecar_load(opt->onnx_path, jail, &m->sc);
    const char *ep = NULL, *file = NULL;
    if (!rc && vdnn_session_first_ep(opt->session, &ep) == 0)
        file = form_file(m, ep);
    VdnnTinyModelOptions on_cpu;
    VmafDnnConfig cpu_session;
    const char *passed_over = NULL;
    if (!rc && ep && prefers_cpu_ep(m, opt, ep)) {
        if (opt->session)
            cpu_session = *opt->session;
        else
            vmaf_dnn_default_config(&cpu_session);
        cpu_session.device = VMAF_DNN_DEVICE_CPU;
        on_cpu = *opt;
        on_cpu.session = &cpu_session;
        opt = &on_cpu;
        passed_over = ep;
        ep = "CPU";
        file = form_file(m, ep);
    }
    if (!rc)
        rc = file ? open_form_on_ep(m, opt, ep, file, io, &m->session) : -EAGAIN;
    if (!rc && passed_over) {
        char line[512];
        const char *slash = strrchr(m->form_path, '/');
        snprintf(line, sizeof(line), "%s: passed over for ORT's CPU EP, the same processor, "
                 "where the model scores with its form %s", passed_over,
                 slash ? slash + 1 : m->form_path);
        m->on_cpu_ep = 1;
        rc = vdnn_session_add_reason(m->session, line);
    }
    vdnn_onnx_interface_free(io);
    if (rc == -EAGAIN) {
        vdnn_sidecar_free(m->sc);
        m->sc = NULL;
        free(m->form_path);
        m->form_path = NULL;
    }
    return rc;
}

/* opt->form_path opened directly: 0 when the sidecar names it for the EP
 * it attached (m->session and m->sc set), -EAGAIN when it does not (the
 * caller opens the model the usual way), or the open's error. */
static int open_known_form(VdnnTinyModel *m, const VdnnTinyModelOptions *opt, const char *jail)
{
    VmafDnnSession *form = NULL;
    int rc = vmaf_dnn_session_open_with_policy(&form, opt->form_path, opt->session, opt->policy);
    if (rc)
        return rc;
    if ((rc = vdnn_sidecar_load(opt->onnx_path, jail, &m->sc))) {
        vmaf_dnn_session_close(form);
        return rc;
    }
    /* the EP's form, or a later choice it was passed over for
     * (open_form_on_ep) */
    const char *ep = vmaf_dnn_session_attached_ep(form);
    const char *file = form_file(m, ep);
    char *named = file ? vdnn_sidecar_beside(opt->onnx_path, file) : NULL;
    for (size_t i = 1; named && strcmp(named, opt->form_path) != 0; i++) {
        const char *next = vdnn_sidecar_form_choice(m->sc, form_key(m, ep), i);
        if (!next)
            break;
        free(named);
        named = vdnn_sidecar_beside(opt->onnx_path, next);
    }
    if (!named || strcmp(named, opt->form_path) != 0) {
        vmaf_dnn_session_close(form);
        vdnn_sidecar_free(m->sc);
        m->sc = NULL;
        rc = file && !named ? vdnn_fail(-ENOMEM, "out of memory") : -EAGAIN;
        free(named);
        return rc;
    }
    m->form_path = named;
    m->session = form;
    return 0;
}

int vdnn_tiny_model_open(VdnnTinyModel **out, const VdnnTinyModelOptions *opt)
{
    if (!out || !opt || !opt->onnx_path)
        return vdnn_fail(-EINVAL, "tiny model: %s is NULL",
                         !out ? "out" : !opt ? "opt" : "onnx_path");
    VdnnTinyModel *m = calloc(1, sizeof(*m));
    if (!m || !(m->path = strdup(opt->onnx_path))) {
        free(m);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    VmafDnnModelPolicy defaults;
    if (!opt->policy)
        vmaf_dnn_default_model_policy(&defaults);
    const char *jail = (opt->policy ? opt->policy : &defaults)->model_dir;
    int rc = read_forms_setting(m);
    if (rc) {
        vdnn_tiny_model_close(m);
        return rc;
    }
    rc = m->forms_off ? -EAGAIN
             : opt->form_path ? open_known_form(m, opt, jail) : open_form_first(m, opt, jail);
    if (rc == -EAGAIN) {
        /* The model first: its policy (jail directory) is checked before
         * the sidecar beside it is read (beside the file the model's jail
         * lets the path reach). */
        rc = vmaf_dnn_session_open_with_policy(&m->session, opt->onnx_path, opt->session,
                                               opt->policy);
        if (!rc)
            rc = vdnn_sidecar_load(opt->onnx_path, jail, &m->sc);
        if (!rc)
            rc = use_form(m, opt);
    }
    if (!rc)
        rc = check_inputs(m, opt);
    if (!rc)
        rc = setup_outputs(m);
    if (!rc)
        rc = check_cap(m);
    if (!rc) {
        m->resize = pick_resize(m->sc, opt->resize, opt->context_resize);
        m->max_memory_bytes = vdnn_policy_max_memory(opt->policy);
        rc = check_attach_budget(m);
    }
    if (!rc)
        rc = assign_keys(m, opt);
    if (!rc)
        m->batchable = decide_batchable(m);
    if (rc) {
        vdnn_tiny_model_close(m);
        return rc;
    }
    *out = m;
    return 0;
}

void vdnn_tiny_model_close(VdnnTinyModel *m)
{
    if (!m)
        return;
    for (size_t s = 0; m->key && s < m->n_out; s++)
        free(m->key[s]);
    free(m->key);
    free(m->outputs);
    free(m->value);
    vdnn_session_host_free(m->session, m->vector);
    vdnn_session_host_free(m->session, m->scalar_value);
    for (size_t k = 0; m->resized && k < m->n_image; k++)
        vdnn_session_host_free(m->session, m->resized[k]);
    free(m->resized);
    for (size_t k = 0; m->sample_plane && k < m->n_image; k++)
        vdnn_session_host_free(m->session, m->sample_plane[k]);
    free(m->sample_plane);
    free(m->sample_fp32);
    free(m->feed_samples);
    for (size_t k = 0; m->batch_in && k < m->n_image; k++)
        vdnn_session_host_free(m->session, m->batch_in[k]);
    free(m->batch_in);
    free(m->batch_value);
    for (int p = 0; p < 2; p++)
        for (unsigned k = 0; k < m->history[p].depth; k++)
            vdnn_session_host_free(m->session, m->history[p].plane[k]);
    free(m->image_name);
    free(m->image_slot);
    free(m->image_src);
    free(m->scalar);
    free(m->feed);
    vdnn_resizer_release(&m->resizer);
    vmaf_dnn_session_close(m->session);
    vdnn_sidecar_free(m->sc);
    free(m->path);
    free(m->form_path);
    free(m);
}

void vdnn_tiny_model_cancel(VdnnTinyModel *m)
{
    vmaf_dnn_session_cancel(m->session);
}

int vdnn_tiny_model_on_cpu_ep(const VdnnTinyModel *m)
{
    return m->on_cpu_ep;
}

const char *vdnn_tiny_model_form_path(const VdnnTinyModel *m)
{
    return m->form_path ? m->form_path : m->path;
}

const char *vdnn_tiny_model_path(const VdnnTinyModel *m)
{
    return m->path;
}

VmafDnnModelKind vdnn_tiny_model_kind(const VdnnTinyModel *m)
{
    return m->kind;
}

const VmafDnnSession *vdnn_tiny_model_session(const VdnnTinyModel *m)
{
    return m->session;
}

size_t vdnn_tiny_model_key_count(const VdnnTinyModel *m)
{
    return m->n_out;
}

const char *vdnn_tiny_model_key(const VdnnTinyModel *m, size_t i)
{
    return i < m->n_out ? m->key[i] : NULL;
}

const VdnnSidecarStrings *vdnn_tiny_model_requires(const VdnnTinyModel *m)
{
    return &m->sc->requires;
}

size_t vdnn_tiny_model_read_count(const VdnnTinyModel *m)
{
    return (m->vector_name ? m->sc->features.count : 0) + m->n_scalar;
}

const char *vdnn_tiny_model_read(const VdnnTinyModel *m, size_t i, int *offset)
{
    const size_t n_vector = m->vector_name ? m->sc->features.count : 0;
    *offset = 0;
    if (i < n_vector)
        return m->sc->features.items[i];
    const VdnnSidecarSource *src = m->scalar[i - n_vector].src;
    if (src->kind != VDNN_SOURCE_FEATURE)
        return NULL;
    *offset = src->offset;
    return src->feature;
}

unsigned vdnn_tiny_model_planes(const VdnnTinyModel *m)
{
    unsigned bits = 0;
    for (size_t k = 0; k < m->n_image; k++)
        bits |= 1u << (m->image_src[k].picture * 3 + m->plane);
    return bits;
}

int vdnn_tiny_model_takes_samples(const VdnnTinyModel *m)
{
    return m->samples;
}

unsigned vdnn_tiny_model_fp32_planes(VdnnTinyModel *const *models, size_t n)
{
    unsigned bits = 0;
    for (size_t i = 0; i < n; i++)
        if (models[i] && !models[i]->samples)
            bits |= vdnn_tiny_model_planes(models[i]);
    return bits;
}

void vdnn_tiny_model_min_size(const VdnnTinyModel *m, unsigned *w, unsigned *h)
{
    *w = m->sc->has_min_width ? (unsigned)m->sc->min_width : 1;
    *h = m->sc->has_min_height ? (unsigned)m->sc->min_height : 1;
}

unsigned vdnn_tiny_model_lag(const VdnnTinyModel *m)
{
    return m->lag;
}

void vdnn_tiny_model_set_lag(VdnnTinyModel *m, unsigned lag)
{
    m->lag = lag;
}

int vdnn_tiny_model_reads_past(const VdnnTinyModel *m)
{
    return m->history[0].depth || m->history[1].depth;
}

int vdnn_tiny_model_temporal(const VdnnTinyModel *m)
{
    if (m->lag || vdnn_tiny_model_reads_past(m))
        return 1;
    for (size_t i = 0; i < vdnn_tiny_model_read_count(m); i++) {
        int offset;
        if (vdnn_tiny_model_read(m, i, &offset) && offset)
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Running                                                                  */
/* ------------------------------------------------------------------------ */

/* The size the model takes a w x h frame at, locking symbolic dims to the
 * first frame's size. Returns 0 when the frame can be brought to it (*resize
 * set when it must be resized), -ERANGE when not; sets no error message. */
static int fit_size(VdnnTinyModel *m, unsigned w, unsigned h, unsigned *tw, unsigned *th,
                    int *resize)
{
    if (!m->locked_w) {
        m->locked_w = w;
        m->locked_h = h;
    }
    if ((m->model_w < 0 && w != m->locked_w) || (m->model_h < 0 && h != m->locked_h))
        return -ERANGE;
    *tw = m->model_w < 0 ? w : (unsigned)m->model_w;
    *th = m->model_h < 0 ? h : (unsigned)m->model_h;
    *resize = *tw != w || *th != h;
    return *resize && m->resize == VMAF_DNN_RESIZE_NONE ? -ERANGE : 0;
}

/* fit_size with the message. */
static int target_size(VdnnTinyModel *m, const VdnnTinyFrame *f, unsigned *tw, unsigned *th,
                       int *resize)
{
    const unsigned w = f->w[m->plane], h = f->h[m->plane];
    if (!fit_size(m, w, h, tw, th, resize))
        return 0;
    if ((m->model_w < 0 && w != m->locked_w) || (m->model_h < 0 && h != m->locked_h))
        return vdnn_fail(-ERANGE, "frame %u is %ux%u; model %s runs at native resolution, which "
                         "its first frame set to %ux%u", f->index, w, h, m->path,
                         m->locked_w, m->locked_h);
    return vdnn_fail(-ERANGE, "frame %u is %ux%u, model %s takes %ux%u; choose a resize mode",
                     f->index, w, h, m->path, *tw, *th);
}

/* *buf (of `had` bytes) grown to `bytes`, its contents kept: a buffer the
 * session's runs copy to the device, so it comes from the session's host
 * memory (vdnn_session_host_alloc: the EP device's pinned memory where it
 * has some). 0 or -ENOMEM (*buf unchanged). */
static int grow_fed(VdnnTinyModel *m, void **buf, size_t had, size_t bytes)
{
    void *grown = vdnn_session_host_alloc(m->session, bytes);
    if (!grown)
        return -ENOMEM;
    if (*buf && had)
        memcpy(grown, *buf, had < bytes ? had : bytes);
    vdnn_session_host_free(m->session, *buf);
    *buf = grown;
    return 0;
}

static int grow_resized(VdnnTinyModel *m, size_t n)
{
    if (n <= m->resized_cap)
        return 0;
    for (size_t k = 0; k < m->n_image; k++)
        if (grow_fed(m, (void **)&m->resized[k], m->resized_cap * sizeof(float),
                     n * sizeof(float)))
            return vdnn_fail(-ENOMEM, "out of memory for a %zu-sample plane", n);
    m->resized_cap = n;
    return 0;
}

static const float *frame_plane(const VdnnTinyModel *m, const VdnnTinyFrame *f,
                                VdnnSourcePicture p)
{
    return f->plane[p][m->plane];
}

static int grow_sample_planes(VdnnTinyModel *m, size_t n)
{
    if (n <= m->sample_cap)
        return 0;
    for (size_t k = 0; k < m->n_image; k++)
        if (grow_fed(m, (void **)&m->sample_plane[k], m->sample_cap * sizeof(uint16_t),
                     n * sizeof(uint16_t)))
            return vdnn_fail(-ENOMEM, "out of memory for a %zu-sample plane", n);
    m->sample_cap = n;
    return 0;
}

/* Picture p of frame f as a samples model takes it, at tw x th, into dst
 * (uint16_t; uint8_t where `narrow`, which an 8-bit frame not resized
 * asks): the frame's own samples, or, when the frame is resized (the
 * resizer prepared, m->resized grown), its fp32 plane resized and rounded
 * back to samples, as a scaler hands libvmaf whole samples. */
static int samples_of(VdnnTinyModel *m, const VdnnTinyFrame *f, VdnnSourcePicture p,
                      int resize, int narrow, void *dst)
{
    const unsigned w = f->w[m->plane], h = f->h[m->plane];
    const void *samples = f->samples[p][m->plane];
    const ptrdiff_t stride = f->sample_stride[p][m->plane];
    if (narrow) {
        vdnn_plane_samples8(samples, stride, w, h, dst);
        return 0;
    }
    if (!resize) {
        vdnn_plane_samples(samples, stride, w, h, f->bpc, dst);
        return 0;
    }
    const float *plane = frame_plane(m, f, p);
    if (!plane) {
        int rc = vdnn_grow_floats(&m->sample_fp32, &m->sample_fp32_cap, (size_t)w * h,
                                  "a plane to resize");
        if (rc)
            return rc;
        vdnn_plane_normalise(samples, stride, w, h, f->bpc, m->sample_fp32);
        plane = m->sample_fp32;
    }
    vdnn_resizer_run(&m->resizer, plane, m->resized[0]);
    vdnn_fp32_to_samples(m->resized[0], (size_t)m->resizer.dw * m->resizer.dh, f->bpc, dst);
    return 0;
}

/* The plane `back` frames before this one, at the model's size; NULL when
 * the history holds none (then the frame itself stands in, as libvmaf's
 * motion does on its first frame). Farther back than the history reaches
 * reads the oldest plane held. */
static const void *past_plane(const VdnnTinyModel *m, VdnnSourcePicture p, unsigned back,
                              unsigned *bpc)
{
    const TinyHistory *h = &m->history[p];
    if (!back || !h->filled)
        return NULL;
    if (back > h->filled)
        back = h->filled;
    const unsigned slot = (h->next + h->depth - back) % h->depth;
    *bpc = h->bpc[slot];
    return h->plane[slot];
}

/* Picture p's own samples where the session can be fed them as they lie:
 * the frame not resized, its rows back to back, its samples what the
 * session is fed (8-bit where narrow, 16-bit words above 8 bits), and
 * either a session whose blocks are plain memory (m->stages 0: ORT's CPU EP
 * reads the input where it is, other EPs copy from any host memory alike)
 * or samples that lie in its device's host-accessible memory already (the
 * caller's picture buffers, vmaf_dnn_picture_buffer_alloc). NULL: they go
 * through sample_plane (samples_of). A frame's samples outlive its run: the
 * caller's pictures during vmaf_dnn_read_pictures or while kept, or the
 * slot's copy while the frame is in flight. */
static const void *samples_in_place(const VdnnTinyModel *m, const VdnnTinyFrame *f,
                                    VdnnSourcePicture p, int resize, int narrow)
{
    const size_t bytes = narrow ? 1 : f->bpc > 8 ? sizeof(uint16_t) : 0;
    const void *samples = f->samples[p][m->plane];
    const size_t row = (size_t)f->w[m->plane] * bytes;
    if (resize || !bytes || !samples || (uintptr_t)samples % bytes ||
        f->sample_stride[p][m->plane] != (ptrdiff_t)row)
        return NULL;
    if (m->stages && !vdnn_picture_memory_holds(vdnn_session_host_memory(m->session), samples,
                                                row * f->h[m->plane]))
        return NULL;
    return samples;
}

/* Whether frame f's pictures go to the session as 8-bit samples: an 8-bit
 * frame not resized, whose past pictures the model reads are 8-bit too
 * (a clip that changed its depth feeds UINT16, rescaled). */
static int feeds_narrow(const VdnnTinyModel *m, const VdnnTinyFrame *f, int resize)
{
    if (!m->narrows || f->bpc != 8 || resize)
        return 0;
    for (size_t k = 0; k < m->n_image; k++) {
        unsigned past_bpc = 0;
        if (past_plane(m, m->image_src[k].picture, m->image_src[k].back, &past_bpc) &&
            past_bpc != 8)
            return 0;
    }
    return 1;
}

/* Adds the image inputs of this frame to in[], resized when needed;
 * may_narrow: 8-bit samples may go as they are (feeds_narrow). */
static int feed_images(VdnnTinyModel *m, const VdnnTinyFrame *f, VmafDnnInput *in, size_t *n,
                       unsigned *tw, unsigned *th, int may_narrow)
{
    int resize = 0, rc = target_size(m, f, tw, th, &resize);
    if (rc)
        return rc;
    if (resize && ((rc = vdnn_resizer_prepare(&m->resizer, m->resize, f->w[m->plane],
                                              f->h[m->plane], *tw, *th)) ||
                   (rc = grow_resized(m, (size_t)*tw * *th))))
        return rc;
    if (m->samples && (rc = grow_sample_planes(m, (size_t)*tw * *th)))
        return rc;
    m->image_shape[0] = m->image_shape[1] = 1; /* batch folded to 1, one luma plane */
    m->image_shape[2] = *th;
    m->image_shape[3] = *tw;
    const int narrow = may_narrow && feeds_narrow(m, f, resize);
    for (size_t k = 0; k < m->n_image; k++) {
        unsigned past_bpc = 0;
        const void *data =
            past_plane(m, m->image_src[k].picture, m->image_src[k].back, &past_bpc);
        if (m->samples)
            m->feed_samples[k] = narrow ? VDNN_SAMPLES_UINT8 : VDNN_SAMPLES_UINT16;
        if (data && narrow) {
            /* the history keeps uint16_t: this frame's samples are 8-bit */
            vdnn_samples_narrow(data, (size_t)*tw * *th, (uint8_t *)m->sample_plane[k]);
            data = m->sample_plane[k];
        } else if (data && m->samples && past_bpc != f->bpc) {
            /* A past picture of another depth (the clip changed it): its
             * samples at this frame's, as the normalised plane a FLOAT model
             * keeps reads at any depth. */
            vdnn_samples_rescale(data, (size_t)*tw * *th, past_bpc, f->bpc, m->sample_plane[k]);
            data = m->sample_plane[k];
        } else if (!data && m->samples &&
                   !(data = samples_in_place(m, f, m->image_src[k].picture, resize, narrow))) {
            if ((rc = samples_of(m, f, m->image_src[k].picture, resize, narrow,
                                 m->sample_plane[k])))
                return rc;
            data = m->sample_plane[k];
        } else if (!data) {
            data = frame_plane(m, f, m->image_src[k].picture);
            if (resize) {
                vdnn_resizer_run(&m->resizer, data, m->resized[k]);
                data = m->resized[k];
            }
        }
        /* A samples model's planes are uint16_t: m->feed_samples says so to
         * the session (vdnn_session_run_samples). */
        in[(*n)++] = (VmafDnnInput){m->image_name[k], data, m->image_shape, 4};
    }
    return 0;
}

/* A picture smaller than the model's receptive field (its sidecar's
 * min_width x min_height): the model is not run on it. */
static int too_small(const VdnnTinyModel *m, const VdnnTinyFrame *f)
{
    unsigned w, h;
    vdnn_tiny_model_min_size(m, &w, &h);
    return m->n_image && (f->w[m->plane] < w || f->h[m->plane] < h);
}

static void forget_history(VdnnTinyModel *m)
{
    m->history[0].filled = m->history[1].filled = 0;
    m->history[0].next = m->history[1].next = 0;
}

unsigned vdnn_tiny_model_history_depth(const VdnnTinyModel *m, VdnnSourcePicture picture)
{
    return m->history[picture].depth;
}

int vdnn_tiny_model_holds_past(const VdnnTinyModel *m)
{
    return m->history[0].filled || m->history[1].filled;
}

void vdnn_tiny_model_note_frame(VdnnTinyModel *m, const VdnnTinyFrame *f)
{
    if (!m->n_image || too_small(m, f) || m->locked_w)
        return;
    m->locked_w = f->w[m->plane];
    m->locked_h = f->h[m->plane];
}

void vdnn_tiny_model_locked_size(const VdnnTinyModel *m, unsigned *w, unsigned *h)
{
    *w = m->locked_w;
    *h = m->locked_h;
}

void vdnn_tiny_model_set_locked_size(VdnnTinyModel *m, unsigned w, unsigned h)
{
    m->locked_w = w;
    m->locked_h = h;
}

void vdnn_tiny_model_forget_past(VdnnTinyModel *m)
{
    forget_history(m);
}

void vdnn_tiny_model_rewind(VdnnTinyModel *m)
{
    /* Buffers stay allocated (they grow to the next clip's size as needed);
     * ORT sessions keep nothing from one run to the next. */
    m->locked_w = m->locked_h = 0;
    forget_history(m);
}

int vdnn_tiny_model_remember(VdnnTinyModel *m, const VdnnTinyFrame *f)
{
    if (!vdnn_tiny_model_reads_past(m))
        return 0;
    unsigned tw, th;
    int resize;
    const unsigned fw = f->w[m->plane], fh = f->h[m->plane];
    if (too_small(m, f) || fit_size(m, fw, fh, &tw, &th, &resize)) {
        forget_history(m);
        return 0; /* the frame failed on this model already, with its message */
    }
    const size_t n = (size_t)tw * th;
    const size_t element = m->samples ? sizeof(uint16_t) : sizeof(float);
    int rc = 0;
    if (resize)
        rc = vdnn_resizer_prepare(&m->resizer, m->resize, fw, fh, tw, th);
    if (resize && !rc && m->samples)
        rc = grow_resized(m, n);
    for (int p = 0; p < 2 && !rc; p++) {
        TinyHistory *h = &m->history[p];
        for (unsigned k = 0; k < h->depth && !rc && n > m->history_cap; k++)
            if (grow_fed(m, &h->plane[k], m->history_cap * element, n * element))
                rc = vdnn_fail(-ENOMEM, "model %s: out of memory for its past frames", m->path);
    }
    if (rc) {
        forget_history(m);
        return rc;
    }
    if (n > m->history_cap)
        m->history_cap = n;
    for (int p = 0; p < 2; p++) {
        TinyHistory *h = &m->history[p];
        if (!h->depth)
            continue;
        if (m->samples) {
            if ((rc = samples_of(m, f, (VdnnSourcePicture)p, resize, 0, h->plane[h->next]))) {
                forget_history(m);
                return rc;
            }
            h->bpc[h->next] = f->bpc;
        } else if (resize) {
            vdnn_resizer_run(&m->resizer, frame_plane(m, f, (VdnnSourcePicture)p),
                             h->plane[h->next]);
        } else {
            memcpy(h->plane[h->next], frame_plane(m, f, (VdnnSourcePicture)p), n * sizeof(float));
        }
        h->next = (h->next + 1) % h->depth;
        if (h->filled < h->depth)
            h->filled++;
    }
    return 0;
}

/* Frame `index + offset`, kept inside the frames that exist [first, last]. */
static unsigned frame_at(const VdnnTinyFrame *f, int offset)
{
    const long long at = (long long)f->index + offset;
    return at < (long long)f->first ? f->first : at > (long long)f->last ? f->last : (unsigned)at;
}

static int read_feature(const VdnnTinyModel *m, const VdnnFeatureCollector *fc,
                        const VdnnTinyFrame *f, const char *name, int offset, double *v)
{
    const unsigned at = frame_at(f, offset);
    if (vdnn_feature_collector_get(fc, name, at, v) == 0)
        return 0;
    if (at != f->index)
        return vdnn_fail(-ENOENT, "model %s needs feature \"%s\" of frame %u (offset %+d) for "
                         "frame %u, which nobody produced", m->path, name, at, offset, f->index);
    return vdnn_fail(-ENOENT, "model %s needs feature \"%s\" at frame %u, which nobody "
                     "produced", m->path, name, f->index);
}

/* Fills the "value" and "feature" inputs. */
static int feed_scalars(VdnnTinyModel *m, const VdnnFeatureCollector *fc, const VdnnTinyFrame *f,
                        unsigned tw, unsigned th, VmafDnnInput *in, size_t *n)
{
    for (size_t i = 0; i < m->n_scalar; i++) {
        TinyScalar *sc = &m->scalar[i];
        const VdnnSidecarSource *src = sc->src;
        double v = 0;
        if (src->kind == VDNN_SOURCE_FEATURE) {
            int rc = read_feature(m, fc, f, src->feature, src->offset, &v);
            if (rc)
                return rc;
        } else if (src->value == VDNN_VALUE_DEVICE_TYPE) {
            v = vdnn_session_device_type(m->session);
        } else {
            v = src->value == VDNN_VALUE_BPC ? f->bpc : src->value == VDNN_VALUE_WIDTH ? tw : th;
        }
        m->scalar_value[i] = (float)v;
        in[(*n)++] = (VmafDnnInput){sc->name, &m->scalar_value[i], sc->shape, sc->rank};
    }
    return 0;
}

/* Reads the sidecar's features for this frame into the vector input. */
static int feed_vector(VdnnTinyModel *m, const VdnnFeatureCollector *fc, const VdnnTinyFrame *f,
                       VmafDnnInput *in, size_t *n)
{
    const VdnnSidecar *sc = m->sc;
    for (size_t i = 0; i < sc->features.count; i++) {
        double v;
        int rc = read_feature(m, fc, f, sc->features.items[i], 0, &v);
        if (rc)
            return rc;
        if (sc->feature_mean)
            v -= sc->feature_mean[i];
        if (sc->feature_std)
            v /= sc->feature_std[i];
        m->vector[i] = (float)v;
    }
    in[(*n)++] = (VmafDnnInput){m->vector_name, m->vector, m->vector_shape, 2};
    return 0;
}

const char *vdnn_tiny_model_scored_key(const VdnnTinyModel *m, const VdnnFeatureCollector *fc,
                                       unsigned index)
{
    for (size_t s = 0; s < m->n_out; s++)
        if (vdnn_feature_collector_has(fc, m->key[s], index))
            return m->key[s];
    return NULL;
}

/* What store_scores stores for value v of output s at frame f. */
static double stored_value(const VdnnTinyModel *m, const VdnnTinyFrame *f, double v)
{
    if (m->sc->has_cap_db_per_bpc) {
        const double cap = m->sc->cap_db_per_bpc[0] * f->bpc + m->sc->cap_db_per_bpc[1];
        if (v > cap)
            v = cap;
    }
    return v;
}

/* Appends the outputs, all or none: the keys are checked before the first
 * append (which then fails only for lack of memory). `missing`: NaN for
 * every output (a frame the model cannot score). */
static int store_scores(const VdnnTinyModel *m, const VdnnTinyFrame *f, VdnnFeatureCollector *fc,
                        int missing)
{
    const char *scored = vdnn_tiny_model_scored_key(m, fc, f->index);
    if (scored)
        return vdnn_fail(-EEXIST, "model %s: feature \"%s\" already has a value for frame %u",
                         m->path, scored, f->index);
    for (size_t s = 0; s < m->n_out; s++) {
        /* stored_value keeps NaN NaN (fmin would replace it). */
        const double v = stored_value(m, f, missing ? NAN : m->value[s]);
        int rc = vdnn_feature_collector_append(fc, m->key[s], f->index, v);
        if (rc)
            return rc;
    }
    return 0;
}

int vdnn_tiny_model_run(VdnnTinyModel *m, const VdnnTinyFrame *f, VdnnFeatureCollector *fc)
{
    VmafDnnInput *in = m->feed;
    size_t n = 0;
    unsigned tw = 0, th = 0;
    int rc = 0;
    if (too_small(m, f))
        return store_scores(m, f, fc, 1);
    if (m->n_image)
        rc = feed_images(m, f, in, &n, &tw, &th, 1);
    if (!rc && m->vector_name)
        rc = feed_vector(m, fc, f, in, &n);
    if (!rc)
        rc = feed_scalars(m, fc, f, tw, th, in, &n);
    if (!rc)
        rc = vdnn_session_run_samples(m->session, in, m->feed_samples, n, m->outputs, m->n_out);
    /* Shapes were checked at attach, but a symbolic batch could still make
     * a model return other than one value. */
    if (!rc || rc == -ENOSPC)
        for (size_t s = 0; s < m->n_out; s++)
            if (m->outputs[s].count != 1)
                return vdnn_fail(-ENOTSUP, "model %s: output \"%s\" gave %zu values at frame %u; "
                                 "attached tiny models must output scalars", m->path,
                                 m->outputs[s].name, m->outputs[s].count, f->index);
    return rc ? rc : store_scores(m, f, fc, 0);
}

/* ------------------------------------------------------------------------ */
/* Frames per Run                                                           */
/* ------------------------------------------------------------------------ */

int vdnn_tiny_model_batchable(const VdnnTinyModel *m)
{
    return m->batchable;
}

uint64_t vdnn_tiny_model_batch_bytes(const VdnnTinyModel *m, const unsigned pw[3],
                                     const unsigned ph[3], unsigned frames)
{
    if (!m->batchable || frames < 2)
        return 0;
    const FedSize s = fed_size(m, pw, ph);
    const uint64_t plane = (uint64_t)s.tw * s.th;
    /* The stacked inputs, the results, and the session's FLOAT16 copies
     * growing from one frame (own_bytes) to `frames`. */
    return frames * (m->n_image * plane * sizeof(float) + m->n_out * sizeof(float)) +
           (frames - 1) * m->n_image_fp16 * plane * sizeof(uint16_t);
}

static int grow_batch(VdnnTinyModel *m, size_t floats, size_t values)
{
    if (!m->batch_in && !(m->batch_in = calloc(m->n_image, sizeof(*m->batch_in))))
        return -ENOMEM;
    if (floats > m->batch_cap) {
        for (size_t k = 0; k < m->n_image; k++)
            if (grow_fed(m, (void **)&m->batch_in[k], m->batch_cap * sizeof(float),
                         floats * sizeof(float)))
                return -ENOMEM;
        m->batch_cap = floats;
    }
    if (values > m->batch_value_cap) {
        if (values > SIZE_MAX / sizeof(float) / m->n_out)
            return -ENOMEM;
        float *grown = realloc(m->batch_value, m->n_out * values * sizeof(float));
        if (!grown)
            return -ENOMEM;
        m->batch_value = grown;
        m->batch_value_cap = values;
    }
    return 0;
}

/* The size the frames are fed at when one Run can take them all: every
 * frame's plane the same size, fitting the model (its size lock included)
 * and not below its minimum. Returns 0 when it can. */
static int common_size(VdnnTinyModel *m, const VdnnTinyFrame *const *f, const unsigned *locks,
                       size_t n, unsigned *tw, unsigned *th, int *resize)
{
    const unsigned w = f[0]->w[m->plane], h = f[0]->h[m->plane];
    for (size_t b = 0; b < n; b++) {
        unsigned bw, bh;
        int bresize;
        vdnn_tiny_model_set_locked_size(m, locks[2 * b], locks[2 * b + 1]);
        if (f[b]->w[m->plane] != w || f[b]->h[m->plane] != h || f[b]->bpc != f[0]->bpc ||
            too_small(m, f[b]) || fit_size(m, w, h, &bw, &bh, &bresize))
            return -ERANGE;
        /* A model reading past pictures is fed those of the first frame
         * only: the graph takes the later frames' from the batch itself. */
        if (vdnn_tiny_model_reads_past(m) && f[b]->index != f[0]->index + b)
            return -ERANGE;
        if (b == 0) {
            *tw = bw;
            *th = bh;
            *resize = bresize;
        }
    }
    return 0;
}

int vdnn_tiny_model_batch_run(VdnnTinyModel *m, const VdnnTinyFrame *const *f,
                              const unsigned *locks, size_t n)
{
    m->batch_frames = 0;
    unsigned tw = 0, th = 0;
    int resize = 0;
    if (!m->batchable || n < 2 || n > VMAF_DNN_MAX_BATCH ||
        common_size(m, f, locks, n, &tw, &th, &resize))
        return 1;
    const size_t plane = (size_t)tw * th;
    if (plane > SIZE_MAX / sizeof(float) / n || grow_batch(m, plane * n, n))
        return 1;
    /* The first frame's inputs as a Run of it alone takes them (its past
     * pictures, the value inputs), then the frame's own pictures replaced
     * by the batch's, stacked (samples as uint16_t in the same buffers). */
    size_t n_in = 0;
    unsigned fw = 0, fh = 0;
    int may_narrow = 1; /* every frame of the batch 8-bit, or none narrowed */
    for (size_t b = 0; b < n; b++)
        may_narrow &= f[b]->bpc == 8;
    if (feed_images(m, f[0], m->feed, &n_in, &fw, &fh, may_narrow) ||
        feed_scalars(m, NULL, f[0], fw, fh, m->feed, &n_in))
        return 1;
    for (size_t k = 0; k < m->n_image; k++) {
        if (m->image_src[k].back)
            continue;
        /* The first frame's plane is the one feed_images prepared (converted
         * or resized already). */
        const int narrow = m->feed_samples[k] == VDNN_SAMPLES_UINT8;
        const size_t element = narrow ? sizeof(uint8_t) : m->samples ? sizeof(uint16_t)
                                                                     : sizeof(float);
        memcpy(m->batch_in[k], m->feed[k].data, plane * element);
        for (size_t b = 1; b < n; b++) {
            const VdnnSourcePicture pic = m->image_src[k].picture;
            if (m->samples) {
                if (samples_of(m, f[b], pic, resize, narrow,
                               (unsigned char *)m->batch_in[k] + b * plane * element))
                    return 1;
                continue;
            }
            const float *src = frame_plane(m, f[b], pic);
            float *dst = m->batch_in[k] + b * plane;
            if (resize)
                vdnn_resizer_run(&m->resizer, src, dst);
            else
                memcpy(dst, src, plane * sizeof(float));
        }
        m->feed[k] = (VmafDnnInput){m->image_name[k], m->batch_in[k], m->batch_shape, 4};
    }
    m->batch_shape[0] = (int64_t)n;
    m->batch_shape[1] = 1;
    m->batch_shape[2] = th;
    m->batch_shape[3] = tw;
    for (size_t s = 0; s < m->n_out; s++) {
        m->outputs[s].data = m->batch_value + s * n;
        m->outputs[s].capacity = n;
    }
    const int rc = vdnn_session_run_samples(m->session, m->feed, m->feed_samples, n_in,
                                            m->outputs, m->n_out);
    int whole = !rc;
    for (size_t s = 0; s < m->n_out; s++) {
        whole &= m->outputs[s].count == n;
        m->outputs[s].data = &m->value[s];
        m->outputs[s].capacity = 1;
    }
    if (rc == -ECANCELED)
        return rc;
    if (!whole) /* a model that only looks batchable, a Run over the budget or max_run_ms */
        return VDNN_BATCH_REFUSED;
    m->batch_frames = (unsigned)n;
    return 0;
}

int vdnn_tiny_model_batch_trust(const VdnnTinyModel *m)
{
    return m->batch_trust;
}

void vdnn_tiny_model_set_batch_trust(VdnnTinyModel *m, int trust)
{
    m->batch_trust = trust;
}

static int same_value(double a, double b, double abs_tol, double rel_tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return fabs(a - b) <= abs_tol + rel_tol * fabs(b);
}

int vdnn_tiny_model_batch_check(const VdnnTinyModel *m, const VdnnTinyFrame *const *f, size_t n,
                                const VdnnFeatureCollector *fc)
{
    if (n != m->batch_frames || n < 2)
        return 0;
    int varied = 0;
    for (size_t s = 0; s < m->n_out; s++) {
        double first = 0;
        for (size_t b = 0; b < n; b++) {
            double alone;
            if (vdnn_feature_collector_get(fc, m->key[s], f[b]->index, &alone))
                return -1;
            const double batched = stored_value(m, f[b], m->batch_value[s * n + b]);
            if (!same_value(batched, alone, BATCH_ABS_TOLERANCE, BATCH_REL_TOLERANCE))
                return -1;
            if (b == 0)
                first = alone;
            else if (!same_value(alone, first, 0, 0))
                varied = 1;
        }
    }
    return varied;
}

void vdnn_tiny_model_note_batching(VdnnTinyModel *m, uint64_t frames)
{
    m->batched_kept += frames;
}

uint64_t vdnn_tiny_model_batched_frames(const VdnnTinyModel *m)
{
    return m->batched_kept;
}

/* Adds part's run counts to sum's. */
static void add_counts(VmafDnnStaticRuns *sum, const VmafDnnStaticRuns *part)
{
    sum->fixed += part->fixed;
    sum->as_opened += part->as_opened;
    sum->device_io += part->device_io;
    sum->captured += part->captured;
    sum->pinned += part->pinned;
    sum->uint8 += part->uint8;
    sum->pictures += part->pictures;
}

void vdnn_tiny_model_add_run_counts(const VdnnTinyModel *m, VmafDnnStaticRuns *sum)
{
    vdnn_session_add_run_counts(m->session, sum);
    add_counts(sum, &m->runs_kept);
}

void vdnn_tiny_model_keep_run_counts(VdnnTinyModel *m, const VmafDnnStaticRuns *gone)
{
    add_counts(&m->runs_kept, gone);
}

int vdnn_tiny_model_batch_store(VdnnTinyModel *m, size_t b, const VdnnTinyFrame *f,
                                VdnnFeatureCollector *fc)
{
    if (b >= m->batch_frames)
        return vdnn_fail(-EINVAL, "model %s: no batched result for frame %u (internal)",
                         m->path, f->index);
    for (size_t s = 0; s < m->n_out; s++)
        m->value[s] = m->batch_value[s * m->batch_frames + b];
    return store_scores(m, f, fc, 0);
}
