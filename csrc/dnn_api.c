/* The public session API: argument checks, binding of caller tensors to model
 * slots, fp16 and integer conversions, and the plane helpers. ORT itself is
 * reached only through ort_backend.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmafdnn/vmafdnn.h"

#include "context_internal.h"
#include "error.h"
#include "model_file.h"
#include "onnx_scan.h"
#include "ort_backend.h"
#include "resize.h"
#include "scratch.h"
#include "vmaf_kernels.h"

/* Larger planes than any video format has; keeps w * h * sizeof(float) far
 * from overflow. */
#define VDNN_MAX_PLANE_DIM VMAF_DNN_MAX_DIMENSION

struct VmafDnnSession {
    VdnnOrtSession *ort;
    VmafDnnConfig cfg;
    const char *attached_ep;  /* static */
    char *fallback_reason;    /* owned */
    size_t library_nodes;     /* of the library's own operators (custom_ops.h) */
    VdnnOrtBudget budget;     /* the policy's, fixed at open */
    /* Held for the whole of every call that runs the model: a second run
     * fails to take it (-EBUSY) and close waits for it. */
    pthread_mutex_t run_lock;
    size_t n_inputs, n_outputs;
    VmafDnnTensorInfo *input_info, *output_info; /* views of the backend's metadata */

    /* Per-run scratch, reused so steady-state runs do not allocate. */
    VdnnOrtFeed *feeds;        /* n_inputs */
    uint16_t **fp16_inputs;    /* n_inputs, grown on demand */
    size_t *fp16_capacity;     /* n_inputs, elements */
    size_t *requested_slots;   /* n_outputs */
    void **out_buffers;        /* n_outputs: caller buffers ORT writes into */
    size_t *fixed_counts;      /* n_outputs: elements of a FLOAT output of fixed
                                  shape (bindable), else 0 */
    VdnnOrtResult *results;    /* n_outputs */
    float *plane_in, *plane_out; /* plane helpers, grown on demand */
    size_t plane_capacity;       /* elements in each */
};

const char *vmaf_dnn_last_error(void)
{
    return vdnn_last_error();
}

void vmaf_dnn_session_cancel(VmafDnnSession *session)
{
    if (session)
        vdnn_ort_cancel(session->ort);
}

void vdnn_session_watch_stop_flag(const atomic_int *flag)
{
    vdnn_ort_watch_stop_flag(flag);
}

/* ------------------------------------------------------------------------ */
/* ORT loading                                                              */
/* ------------------------------------------------------------------------ */

int vmaf_dnn_load_ort(const char *path)
{
    vdnn_clear_error();
    return vdnn_ort_load(path);
}

int vmaf_dnn_available(void)
{
    vdnn_clear_error();
    return vdnn_ort_ensure_loaded() == 0;
}

const char *vmaf_dnn_ort_version(void)
{
    return vdnn_ort_version();
}

int vmaf_dnn_ort_api_version(void)
{
    return vdnn_ort_api_version();
}

const char *vmaf_dnn_ort_library_path(void)
{
    return vdnn_ort_library_path();
}

const char *vmaf_dnn_cpu_kernels(void)
{
    return vdnn_kernels_build();
}

/* ------------------------------------------------------------------------ */
/* Plugin execution providers                                               */
/* ------------------------------------------------------------------------ */

int vmaf_dnn_register_ep_library(const char *name, const char *path)
{
    vdnn_clear_error();
    return vdnn_ort_register_ep_library(name, path);
}

size_t vmaf_dnn_ep_library_count(void)
{
    return vdnn_ort_ep_library_count();
}

int vmaf_dnn_ep_library_info(size_t index, VmafDnnEpLibraryInfo *info)
{
    vdnn_clear_error();
    return vdnn_ort_ep_library_info(index, info);
}

size_t vmaf_dnn_ep_device_count(void)
{
    return vdnn_ort_ep_device_count();
}

int vmaf_dnn_ep_device_info(size_t index, VmafDnnEpDeviceInfo *info)
{
    vdnn_clear_error();
    return vdnn_ort_ep_device_info(index, info);
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

void vmaf_dnn_default_config(VmafDnnConfig *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->device = VMAF_DNN_DEVICE_AUTO;
}

int vdnn_config_check(const VmafDnnConfig *in, VmafDnnConfig *out, const char *what)
{
    if (!in) {
        vmaf_dnn_default_config(out);
        return 0;
    }
    if ((unsigned)in->device > VMAF_DNN_DEVICE_POLICY_MIN_POWER)
        return vdnn_fail(-EINVAL, "%sdevice %d is unknown (0..%d)", what, (int)in->device,
                         (int)VMAF_DNN_DEVICE_POLICY_MIN_POWER);
    if (in->device_index < 0)
        return vdnn_fail(-EINVAL, "%sdevice_index must be >= 0 (got %d)", what,
                         in->device_index);
    if (in->threads < 0 || in->threads > VMAF_DNN_MAX_THREADS)
        return vdnn_fail(-EINVAL, "%sthreads must be 0..%d (got %d)", what,
                         VMAF_DNN_MAX_THREADS, in->threads);
    if ((unsigned)in->static_shapes > VMAF_DNN_STATIC_SHAPES_ON)
        return vdnn_fail(-EINVAL, "%sstatic_shapes %d is unknown (0..%d)", what,
                         (int)in->static_shapes, (int)VMAF_DNN_STATIC_SHAPES_ON);
    if ((unsigned)in->device_io > VMAF_DNN_DEVICE_IO_ON)
        return vdnn_fail(-EINVAL, "%sdevice_io %d is unknown (0..%d)", what, (int)in->device_io,
                         (int)VMAF_DNN_DEVICE_IO_ON);
    *out = *in;
    out->fp16_io = in->fp16_io != 0;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Open / close / introspection                                             */
/* ------------------------------------------------------------------------ */

int vmaf_dnn_device_explain(const VmafDnnConfig *cfg, char *buf, size_t size, size_t *needed)
{
    vdnn_clear_error();
    VmafDnnConfig config;
    char *text = NULL;
    if (!buf && size)
        return vdnn_fail(-EINVAL, "device_explain: buf is NULL");
    int rc = vdnn_config_check(cfg, &config, "");
    if (rc || (rc = vdnn_ort_explain(&config, &text)))
        return rc;
    size_t len = strlen(text);
    if (needed)
        *needed = len;
    if (size)
        snprintf(buf, size, "%s", text);
    free(text);
    if (len >= size)
        return vdnn_fail(-ENOSPC, "device_explain: the text needs %zu bytes plus the "
                         "terminator; the buffer has %zu", len, size);
    return 0;
}


static const char *type_name(VmafDnnElementType t)
{
    switch (t) {
    case VMAF_DNN_TYPE_FLOAT: return "FLOAT";
    case VMAF_DNN_TYPE_UINT8: return "UINT8";
    case VMAF_DNN_TYPE_INT8: return "INT8";
    case VMAF_DNN_TYPE_UINT16: return "UINT16";
    case VMAF_DNN_TYPE_INT16: return "INT16";
    case VMAF_DNN_TYPE_INT32: return "INT32";
    case VMAF_DNN_TYPE_INT64: return "INT64";
    case VMAF_DNN_TYPE_STRING: return "STRING";
    case VMAF_DNN_TYPE_BOOL: return "BOOL";
    case VMAF_DNN_TYPE_FLOAT16: return "FLOAT16";
    case VMAF_DNN_TYPE_DOUBLE: return "DOUBLE";
    case VMAF_DNN_TYPE_UINT32: return "UINT32";
    case VMAF_DNN_TYPE_UINT64: return "UINT64";
    case VMAF_DNN_TYPE_BFLOAT16: return "BFLOAT16";
    default: return "UNDEFINED";
    }
}

static int output_type_convertible(VmafDnnElementType t)
{
    return t == VMAF_DNN_TYPE_FLOAT || t == VMAF_DNN_TYPE_FLOAT16 || t == VMAF_DNN_TYPE_DOUBLE ||
           t == VMAF_DNN_TYPE_INT32 || t == VMAF_DNN_TYPE_INT64;
}

/* Builds the public views and the run scratch, and refuses models whose
 * slots this API cannot feed or convert. */
static int init_slots(VmafDnnSession *s)
{
    s->n_inputs = vdnn_ort_input_count(s->ort);
    s->n_outputs = vdnn_ort_output_count(s->ort);
    size_t ni = s->n_inputs ? s->n_inputs : 1, no = s->n_outputs ? s->n_outputs : 1;
    s->input_info = calloc(ni, sizeof(*s->input_info));
    s->output_info = calloc(no, sizeof(*s->output_info));
    s->feeds = calloc(ni, sizeof(*s->feeds));
    s->fp16_inputs = calloc(ni, sizeof(*s->fp16_inputs));
    s->fp16_capacity = calloc(ni, sizeof(*s->fp16_capacity));
    s->requested_slots = calloc(no, sizeof(*s->requested_slots));
    s->out_buffers = calloc(no, sizeof(*s->out_buffers));
    s->fixed_counts = calloc(no, sizeof(*s->fixed_counts));
    s->results = calloc(no, sizeof(*s->results));
    if (!s->input_info || !s->output_info || !s->feeds || !s->fp16_inputs ||
        !s->fp16_capacity || !s->requested_slots || !s->out_buffers || !s->fixed_counts ||
        !s->results)
        return vdnn_fail(-ENOMEM, "out of memory");

    for (size_t i = 0; i < s->n_inputs; i++) {
        const VdnnTensorMeta *m = vdnn_ort_input_meta(s->ort, i);
        if (m->type != VMAF_DNN_TYPE_FLOAT && m->type != VMAF_DNN_TYPE_FLOAT16 &&
            m->type != VMAF_DNN_TYPE_UINT16)
            return vdnn_fail(-ENOTSUP, "input \"%s\" has element type %s; only FLOAT, "
                             "FLOAT16 and UINT16 inputs can be fed", m->name,
                             type_name(m->type));
        s->input_info[i] = (VmafDnnTensorInfo){m->name, m->type, m->rank,
                                               m->rank_known ? m->shape : NULL};
    }
    for (size_t i = 0; i < s->n_outputs; i++) {
        const VdnnTensorMeta *m = vdnn_ort_output_meta(s->ort, i);
        if (!output_type_convertible(m->type))
            return vdnn_fail(-ENOTSUP, "output \"%s\" has element type %s; only FLOAT, FLOAT16, "
                             "DOUBLE, INT32 and INT64 outputs are supported", m->name,
                             type_name(m->type));
        s->output_info[i] = (VmafDnnTensorInfo){m->name, m->type, m->rank,
                                                m->rank_known ? m->shape : NULL};
        /* Rank 0 is never bound: before ORT 1.24 it may be an output of
         * unknown rank whose real shape only the run shows. */
        size_t count = m->rank ? 1 : 0;
        for (size_t d = 0; d < m->rank; d++)
            count = m->shape[d] < 0 ? 0 : count * (size_t)m->shape[d];
        s->fixed_counts[i] = m->type == VMAF_DNN_TYPE_FLOAT ? count : 0;
    }
    return 0;
}

/* A plain decimal environment value of at most `max`, else `fallback`. A
 * value past the field it lands in is ignored like any other garbage rather
 * than cut to that field's width: VMAFDNN_MAX_RUN_MS=4294967296 would
 * otherwise become 0, which switches the time budget off. */
static uint64_t env_u64(const char *name, uint64_t max, uint64_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    uint64_t x = 0;
    for (; *v; v++) {
        const uint64_t digit = (uint64_t)(*v - '0');
        if (*v < '0' || *v > '9' || x > (UINT64_MAX - digit) / 10)
            return fallback;
        x = x * 10 + digit;
    }
    return x <= max ? x : fallback;
}

void vmaf_dnn_default_model_policy(VmafDnnModelPolicy *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof(*p));
    const char *dir = getenv("VMAFDNN_MODEL_DIR");
    p->model_dir = dir && *dir ? dir : NULL;
    p->max_model_bytes = VMAF_DNN_DEFAULT_MAX_MODEL_BYTES;
    p->max_loop_nodes = VMAF_DNN_MAX_LOOP_NODES;
    p->max_nodes = VMAF_DNN_DEFAULT_MAX_NODES;
    p->max_subgraph_depth = VMAF_DNN_MAX_SUBGRAPH_DEPTH;
    p->max_memory_bytes = env_u64("VMAFDNN_MAX_MEMORY_BYTES", UINT64_MAX,
                                  VMAF_DNN_DEFAULT_MAX_MEMORY_BYTES);
    p->max_run_ms =
        (unsigned)env_u64("VMAFDNN_MAX_RUN_MS", UINT_MAX, VMAF_DNN_DEFAULT_MAX_RUN_MS);
}

/* The scan policy of a model policy (which vdnn_scan_policy_check keeps from
 * loosening any built-in limit). */
static int scan_policy(const VmafDnnModelPolicy *p, VdnnScanPolicy *scan)
{
    vdnn_scan_policy_default(scan);
    scan->allowed_ops = p->allowed_ops;
    scan->n_allowed_ops = p->n_allowed_ops;
    scan->max_loop_nodes = p->max_loop_nodes;
    scan->max_graph_depth = p->max_subgraph_depth;
    scan->max_nodes = p->max_nodes;
    if (p->max_model_bytes == 0)
        return vdnn_fail(-EINVAL, "model policy: max_model_bytes must be > 0");
    return vdnn_scan_policy_check(scan);
}

int vdnn_model_policy_check(const VmafDnnModelPolicy *policy)
{
    VdnnScanPolicy scan;
    return scan_policy(policy, &scan);
}

/* Reads the model once, scans those bytes; the caller hands them to ORT. */
static int read_and_scan(const char *onnx_path, const VmafDnnModelPolicy *policy,
                         VdnnModelFile *model, VdnnScanReport *report)
{
    VdnnScanPolicy scan;
    int rc = scan_policy(policy, &scan);
    if (rc || (rc = vdnn_model_file_read(onnx_path, policy->max_model_bytes, policy->model_dir,
                                         model)))
        return rc;
    if ((rc = vdnn_onnx_scan(model->bytes, model->size, model->dir_fd, &scan, report))) {
        char reason[768];
        snprintf(reason, sizeof(reason), "%s", vdnn_last_error());
        vdnn_model_file_free(model);
        return vdnn_fail(rc, "model %s refused: %s", onnx_path, reason);
    }
    return 0;
}

int vdnn_model_interface(const char *path, const VmafDnnModelPolicy *policy,
                         VdnnOnnxInterface **out)
{
    VmafDnnModelPolicy default_policy;
    if (!policy) {
        vmaf_dnn_default_model_policy(&default_policy);
        policy = &default_policy;
    }
    VdnnModelFile model;
    int rc = read_and_scan(path, policy, &model, NULL);
    if (rc)
        return rc;
    rc = vdnn_onnx_interface(model.bytes, model.size, out);
    vdnn_model_file_free(&model);
    return rc;
}

int vdnn_session_first_ep(const VmafDnnConfig *cfg, const char **attached)
{
    VmafDnnConfig config;
    int rc = vdnn_config_check(cfg, &config, "");
    return rc ? rc : vdnn_ort_first_ep(&config, attached);
}

int vmaf_dnn_session_open(VmafDnnSession **out, const char *onnx_path, const VmafDnnConfig *cfg)
{
    return vmaf_dnn_session_open_with_policy(out, onnx_path, cfg, NULL);
}

int vmaf_dnn_session_open_with_policy(VmafDnnSession **out, const char *onnx_path,
                                      const VmafDnnConfig *cfg, const VmafDnnModelPolicy *policy)
{
    vdnn_clear_error();
    if (!out || !onnx_path)
        return vdnn_fail(-EINVAL, "session_open: %s is NULL", out ? "onnx_path" : "out");
    VmafDnnConfig config;
    int rc = vdnn_config_check(cfg, &config, "");
    if (rc || (rc = vdnn_ort_ensure_loaded()))
        return rc;
    VmafDnnModelPolicy default_policy;
    if (!policy) {
        vmaf_dnn_default_model_policy(&default_policy);
        policy = &default_policy;
    }
    VdnnModelFile model;
    VdnnScanReport report;
    if ((rc = read_and_scan(onnx_path, policy, &model, &report)))
        return rc;
    VmafDnnSession *s = calloc(1, sizeof(*s));
    if (!s) {
        vdnn_model_file_free(&model);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    pthread_mutex_init(&s->run_lock, NULL);
    s->cfg = config;
    s->library_nodes = report.n_library_nodes;
    s->budget.max_memory_bytes = policy->max_memory_bytes;
    s->budget.max_run_ms = policy->max_run_ms;
    rc = vdnn_ort_session_create(model.bytes, model.size, model.path, model.dir, &s->cfg,
                                 &s->budget, &s->ort, &s->attached_ep, &s->fallback_reason);
    vdnn_model_file_free(&model);
    if (!rc)
        rc = init_slots(s);
    if (rc) {
        vmaf_dnn_session_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void vmaf_dnn_session_close(VmafDnnSession *s)
{
    if (!s)
        return;
    /* Wait for a run in flight on another thread (see the header). */
    pthread_mutex_lock(&s->run_lock);
    pthread_mutex_unlock(&s->run_lock);
    pthread_mutex_destroy(&s->run_lock);
    vdnn_ort_session_destroy(s->ort);
    free(s->fallback_reason);
    free(s->input_info);
    free(s->output_info);
    free(s->feeds);
    for (size_t i = 0; s->fp16_inputs && i < s->n_inputs; i++)
        free(s->fp16_inputs[i]);
    free(s->fp16_inputs);
    free(s->fp16_capacity);
    free(s->requested_slots);
    free(s->out_buffers);
    free(s->fixed_counts);
    free(s->results);
    free(s->plane_in);
    free(s->plane_out);
    free(s);
}

const char *vmaf_dnn_session_attached_ep(const VmafDnnSession *s)
{
    return s ? s->attached_ep : NULL;
}

int vdnn_session_device_type(const VmafDnnSession *s)
{
    return vdnn_ort_device_type(s ? s->attached_ep : NULL);
}

int vdnn_ep_device_type(const char *attached_ep)
{
    return vdnn_ort_device_type(attached_ep);
}

int vdnn_session_runs_in_turn(const VmafDnnSession *s)
{
    return vdnn_ort_runs_sessions_in_turn(s ? s->attached_ep : NULL);
}

int vdnn_session_library_ops_off_ep(const VmafDnnSession *s, const char *ep, char *why,
                                    size_t size)
{
    return s->library_nodes && !vdnn_ort_library_ops_on_ep(s->ort, ep, &s->cfg, why, size);
}

int vdnn_session_add_reason(VmafDnnSession *s, const char *line)
{
    const size_t have = strlen(s->fallback_reason), add = strlen(line);
    char *grown = realloc(s->fallback_reason, have + add + 2);
    if (!grown)
        return vdnn_fail(-ENOMEM, "out of memory");
    memcpy(grown + have, line, add);
    memcpy(grown + have + add, "\n", 2);
    s->fallback_reason = grown;
    return 0;
}

const char *vmaf_dnn_session_fallback_reason(const VmafDnnSession *s)
{
    return s ? s->fallback_reason : NULL;
}

int vmaf_dnn_session_static_runs(const VmafDnnSession *s, VmafDnnStaticRuns *out)
{
    if (!s || !out)
        return vdnn_fail(-EINVAL, "session_static_runs: %s is NULL", !s ? "session" : "out");
    vdnn_ort_static_runs(s->ort, out);
    return 0;
}

void vdnn_session_add_run_counts(const VmafDnnSession *s, VmafDnnStaticRuns *sum)
{
    vdnn_ort_add_run_counts(s->ort, sum);
}

void *vdnn_session_host_alloc(VmafDnnSession *s, size_t bytes)
{
    return vdnn_ort_host_alloc(s->ort, bytes);
}

void vdnn_session_host_free(VmafDnnSession *s, void *p)
{
    if (p) /* a model that failed to attach may have no session */
        vdnn_ort_host_free(s->ort, p);
}

int vdnn_session_host_blocks_pinned(const VmafDnnSession *s)
{
    return vdnn_ort_host_blocks_pinned(s->ort);
}

const VdnnHostMemory *vdnn_session_host_memory(const VmafDnnSession *s)
{
    return vdnn_ort_host_memory(s->ort);
}

int vmaf_dnn_session_ep_nodes(const VmafDnnSession *s, size_t *on_ep, size_t *total)
{
    if (!s || !on_ep || !total)
        return vdnn_fail(-EINVAL, "session_ep_nodes: %s is NULL",
                         !s ? "session" : !on_ep ? "on_ep" : "total");
    size_t a, b;
    if (vdnn_ort_ep_nodes(s->ort, &a, &b))
        return vdnn_fail(-ENOTSUP, "ONNX Runtime %s does not tell which EP runs which node "
                         "(1.24 or newer does)", vdnn_ort_version() ? vdnn_ort_version() : "");
    *on_ep = a;
    *total = b;
    return 0;
}

const VmafDnnConfig *vmaf_dnn_session_config(const VmafDnnSession *s)
{
    return s ? &s->cfg : NULL;
}

size_t vmaf_dnn_session_input_count(const VmafDnnSession *s)
{
    return s ? s->n_inputs : 0;
}

size_t vmaf_dnn_session_output_count(const VmafDnnSession *s)
{
    return s ? s->n_outputs : 0;
}

static int slot_info(const VmafDnnTensorInfo *table, size_t n, size_t index, const char *what,
                     VmafDnnTensorInfo *info)
{
    if (!info)
        return vdnn_fail(-EINVAL, "%s_info: info is NULL", what);
    if (index >= n)
        return vdnn_fail(-EINVAL, "%s index %zu out of range (the model has %zu)", what, index, n);
    *info = table[index];
    return 0;
}

int vmaf_dnn_session_input_info(const VmafDnnSession *s, size_t index, VmafDnnTensorInfo *info)
{
    vdnn_clear_error();
    if (!s)
        return vdnn_fail(-EINVAL, "input_info: session is NULL");
    return slot_info(s->input_info, s->n_inputs, index, "input", info);
}

int vmaf_dnn_session_output_info(const VmafDnnSession *s, size_t index, VmafDnnTensorInfo *info)
{
    vdnn_clear_error();
    if (!s)
        return vdnn_fail(-EINVAL, "output_info: session is NULL");
    return slot_info(s->output_info, s->n_outputs, index, "output", info);
}

/* ------------------------------------------------------------------------ */
/* Running                                                                  */
/* ------------------------------------------------------------------------ */

static int find_slot(const VmafDnnTensorInfo *table, size_t n, const char *name, size_t *slot)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0) {
            *slot = i;
            return 0;
        }
    return -1;
}

/* Product of dims with overflow detection; -1 when it does not fit. */
static int element_count(const int64_t *shape, size_t rank, size_t *count)
{
    size_t n = 1;
    for (size_t d = 0; d < rank; d++) {
        uint64_t dim = (uint64_t)shape[d];
        if (dim && n > (SIZE_MAX / sizeof(float)) / dim)
            return -1;
        n *= (size_t)dim;
    }
    *count = n;
    return 0;
}

static int check_input_shape(const VmafDnnTensorInfo *slot, const VmafDnnInput *in, size_t *count)
{
    if (!in->data || (!in->shape && in->rank))
        return vdnn_fail(-EINVAL, "input \"%s\": data or shape is NULL", slot->name);
    /* An input whose model declares no shape (slot->shape NULL) takes any
     * rank the library can describe: ORT checks it against the graph. */
    if (slot->shape && in->rank != slot->rank)
        return vdnn_fail(-EINVAL, "input \"%s\" has rank %zu; the model expects rank %zu",
                         slot->name, in->rank, slot->rank);
    if (in->rank > VMAF_DNN_MAX_RANK)
        return vdnn_fail(-EINVAL, "input \"%s\" has rank %zu; at most %d is supported",
                         slot->name, in->rank, VMAF_DNN_MAX_RANK);
    for (size_t d = 0; d < in->rank; d++) {
        if (in->shape[d] < 1)
            return vdnn_fail(-EINVAL, "input \"%s\": dim %zu is %lld; dims must be >= 1",
                             slot->name, d, (long long)in->shape[d]);
        if (slot->shape && slot->shape[d] >= 0 && in->shape[d] != slot->shape[d])
            return vdnn_fail(-EINVAL, "input \"%s\": dim %zu is %lld; the model fixes it to %lld",
                             slot->name, d, (long long)in->shape[d], (long long)slot->shape[d]);
    }
    if (element_count(in->shape, in->rank, count))
        return vdnn_fail(-EINVAL, "input \"%s\" is too large", slot->name);
    return 0;
}

static int fp16_unsupported(const char *what, const char *name)
{
    return vdnn_fail(-ENOTSUP, "%s \"%s\" is FLOAT16; open the session with fp16_io to exchange "
                     "it as fp32", what, name);
}

/* The slot's 16-bit scratch (FLOAT16 casts, UINT16 conversions) with room
 * for `count` values. */
static uint16_t *u16_scratch(VmafDnnSession *s, size_t slot, size_t count)
{
    if (s->fp16_capacity[slot] < count) {
        uint16_t *grown = realloc(s->fp16_inputs[slot], (count ? count : 1) * sizeof(uint16_t));
        if (!grown) {
            vdnn_fail(-ENOMEM, "out of memory for input \"%s\"", s->input_info[slot].name);
            return NULL;
        }
        s->fp16_inputs[slot] = grown;
        s->fp16_capacity[slot] = count;
    }
    return s->fp16_inputs[slot];
}

/* fp32 values for a UINT16 slot: each must be a whole number 0..65535, so
 * that none changes on the way (a normalised 0..1 picture given to a
 * samples input would otherwise score as black). */
static int to_uint16(const char *name, const float *src, uint16_t *dst, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const float v = src[i];
        const int in_range = v >= 0.0f && v <= 65535.0f; /* NaN: 0 */
        dst[i] = in_range ? (uint16_t)v : 0;
        if (!in_range || (float)dst[i] != v)
            return vdnn_fail(-ERANGE, "input \"%s\" is UINT16: element %zu is %g, not a whole "
                             "number in 0..65535", name, i, (double)v);
    }
    return 0;
}

/* Points s->feeds[slot] at the caller's data: fp32 as it is for FLOAT slots,
 * cast to fp16 scratch for FLOAT16 ones (fp16_io), converted to uint16
 * scratch for UINT16 ones; `samples` data (VDNN_SAMPLES_*) goes to a UINT16
 * slot as it is, 8-bit samples as UINT8 (the backend widens them for a
 * session that takes UINT16). */
static int bind_input(VmafDnnSession *s, size_t slot, const VmafDnnInput *in, size_t count,
                      int samples)
{
    const VmafDnnTensorInfo *info = &s->input_info[slot];
    VdnnOrtFeed *f = &s->feeds[slot];
    f->shape = in->shape;
    f->rank = in->rank;
    f->type = info->type;
    if (samples && info->type != VMAF_DNN_TYPE_UINT16)
        return vdnn_fail(-EINVAL, "input \"%s\" is %s; it cannot take samples", info->name,
                         type_name(info->type));
    if (info->type == VMAF_DNN_TYPE_FLOAT || samples) {
        if (samples == VDNN_SAMPLES_UINT8)
            f->type = VMAF_DNN_TYPE_UINT8;
        f->data = in->data;
        return 0;
    }
    if (info->type == VMAF_DNN_TYPE_FLOAT16 && !s->cfg.fp16_io)
        return fp16_unsupported("input", info->name);
    uint16_t *scratch = u16_scratch(s, slot, count);
    if (!scratch)
        return -ENOMEM;
    if (info->type == VMAF_DNN_TYPE_UINT16) {
        int rc = to_uint16(info->name, in->data, scratch, count);
        if (rc)
            return rc;
    } else {
        vmaf_dnn_fp32_to_fp16(in->data, scratch, count);
    }
    f->data = scratch;
    return 0;
}

/* samples: NULL, or n_inputs flags: what inputs[i].data holds (VDNN_SAMPLES_*). */
static int bind_inputs(VmafDnnSession *s, const VmafDnnInput *inputs,
                       const unsigned char *samples, size_t n_inputs)
{
    if (n_inputs > s->n_inputs)
        return vdnn_fail(-EINVAL, "%zu inputs given; the model has %zu", n_inputs, s->n_inputs);
    for (size_t i = 0; i < s->n_inputs; i++)
        s->feeds[i].data = NULL;
    for (size_t i = 0; i < n_inputs; i++) {
        size_t slot = i;
        if (inputs[i].name && find_slot(s->input_info, s->n_inputs, inputs[i].name, &slot))
            return vdnn_fail(-EINVAL, "the model has no input named \"%s\"", inputs[i].name);
        if (s->feeds[slot].data)
            return vdnn_fail(-EINVAL, "input \"%s\" is given twice", s->input_info[slot].name);
        size_t count = 0;
        int rc = check_input_shape(&s->input_info[slot], &inputs[i], &count);
        if (rc || (rc = bind_input(s, slot, &inputs[i], count, samples ? samples[i] : 0)))
            return rc;
    }
    for (size_t i = 0; i < s->n_inputs; i++)
        if (!s->feeds[i].data)
            return vdnn_fail(-EINVAL, "input \"%s\" is missing", s->input_info[i].name);
    return 0;
}

static int resolve_outputs(VmafDnnSession *s, const VmafDnnOutput *outputs, size_t n_outputs)
{
    if (n_outputs == 0)
        return vdnn_fail(-EINVAL, "no output requested");
    if (n_outputs > s->n_outputs)
        return vdnn_fail(-EINVAL, "%zu outputs requested; the model has %zu", n_outputs,
                         s->n_outputs);
    for (size_t k = 0; k < n_outputs; k++) {
        size_t slot = k;
        if (outputs[k].name && find_slot(s->output_info, s->n_outputs, outputs[k].name, &slot))
            return vdnn_fail(-EINVAL, "the model has no output named \"%s\"", outputs[k].name);
        for (size_t j = 0; j < k; j++)
            if (s->requested_slots[j] == slot)
                return vdnn_fail(-EINVAL, "output \"%s\" is requested twice",
                                 s->output_info[slot].name);
        if (s->output_info[slot].type == VMAF_DNN_TYPE_FLOAT16 && !s->cfg.fp16_io)
            return fp16_unsupported("output", s->output_info[slot].name);
        s->requested_slots[k] = slot;
        /* Where the caller's buffer fits, ORT writes into it: no copy. */
        size_t fixed = s->fixed_counts[slot];
        s->out_buffers[k] =
            fixed && outputs[k].data && fixed <= outputs[k].capacity ? outputs[k].data : NULL;
    }
    return 0;
}

static void convert_to_fp32(const VdnnOrtResult *r, float *dst)
{
    size_t n = r->count;
    switch (r->type) {
    case VMAF_DNN_TYPE_FLOAT:
        memcpy(dst, r->data, n * sizeof(float));
        break;
    case VMAF_DNN_TYPE_FLOAT16:
        vmaf_dnn_fp16_to_fp32(r->data, dst, n);
        break;
    case VMAF_DNN_TYPE_DOUBLE:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)((const double *)r->data)[i];
        break;
    case VMAF_DNN_TYPE_INT32:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)((const int32_t *)r->data)[i];
        break;
    case VMAF_DNN_TYPE_INT64:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)((const int64_t *)r->data)[i];
        break;
    default:
        break; /* refused at open */
    }
}

/* Copies results out; every output's count is reported before -ENOSPC so
 * the caller can grow all its buffers at once. */
static int deliver_outputs(VmafDnnSession *s, VmafDnnOutput *outputs, size_t n_outputs)
{
    int rc = 0;
    for (size_t k = 0; k < n_outputs; k++) {
        const VdnnOrtResult *r = &s->results[k];
        outputs[k].count = r->count;
        outputs[k].rank = r->rank;
        memcpy(outputs[k].shape, r->shape, r->rank * sizeof(r->shape[0]));
        if (!rc && r->count > outputs[k].capacity)
            rc = vdnn_fail(-ENOSPC, "output \"%s\" has %zu elements; the buffer holds %zu",
                           s->output_info[s->requested_slots[k]].name, r->count,
                           outputs[k].capacity);
        if (!rc && r->count && !outputs[k].data)
            rc = vdnn_fail(-EINVAL, "output \"%s\": data is NULL",
                           s->output_info[s->requested_slots[k]].name);
    }
    for (size_t k = 0; !rc && k < n_outputs; k++)
        if (s->results[k].data != outputs[k].data)
            convert_to_fp32(&s->results[k], outputs[k].data);
    vdnn_ort_release_outputs(s->ort);
    return rc;
}

/* A run with the session already reserved by the caller. */
static int run_reserved(VmafDnnSession *s, const VmafDnnInput *inputs,
                        const unsigned char *samples, size_t n_inputs, VmafDnnOutput *outputs,
                        size_t n_outputs)
{
    int rc = bind_inputs(s, inputs, samples, n_inputs);
    if (rc || (rc = resolve_outputs(s, outputs, n_outputs)))
        return rc;
    rc = vdnn_ort_run(s->ort, s->feeds, s->requested_slots, n_outputs, s->out_buffers,
                      s->results);
    return rc ? rc : deliver_outputs(s, outputs, n_outputs);
}

static int reserve(VmafDnnSession *s)
{
    if (pthread_mutex_trylock(&s->run_lock))
        return vdnn_fail(-EBUSY, "the session is running on another thread");
    return 0;
}

static void release(VmafDnnSession *s)
{
    pthread_mutex_unlock(&s->run_lock);
}

int vdnn_session_run_samples(VmafDnnSession *s, const VmafDnnInput *inputs,
                             const unsigned char *samples, size_t n_inputs,
                             VmafDnnOutput *outputs, size_t n_outputs)
{
    vdnn_clear_error();
    if (!s || (!inputs && n_inputs) || !outputs)
        return vdnn_fail(-EINVAL, "session_run: %s is NULL",
                         !s ? "session" : !outputs ? "outputs" : "inputs");
    int rc = reserve(s);
    if (rc)
        return rc;
    rc = run_reserved(s, inputs, samples, n_inputs, outputs, n_outputs);
    release(s);
    return rc;
}

int vdnn_session_narrows(const VmafDnnSession *s)
{
    return vdnn_ort_narrows(s->ort);
}

int vmaf_dnn_session_run(VmafDnnSession *s, const VmafDnnInput *inputs, size_t n_inputs,
                         VmafDnnOutput *outputs, size_t n_outputs)
{
    return vdnn_session_run_samples(s, inputs, NULL, n_inputs, outputs, n_outputs);
}

/* ------------------------------------------------------------------------ */
/* Image-to-image helpers                                                   */
/* ------------------------------------------------------------------------ */

static int check_image_dim(const VmafDnnTensorInfo *in, size_t d, const char *what, int64_t want)
{
    if (in->shape[d] >= 0 && in->shape[d] != want)
        return vdnn_fail(-EINVAL, "input \"%s\": %s is %lld in the model, the plane has %lld",
                         in->name, what, (long long)in->shape[d], (long long)want);
    return 0;
}

/* "[1,1,H,W]" with "?" for a symbolic dim, into buf. */
static const char *shape_text(const int64_t *shape, size_t rank, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (size_t d = 0; d < rank && at < len; d++) {
        const char *sep = d ? "," : "";
        at += shape[d] < 0 ? (size_t)snprintf(buf + at, len - at, "%s?", sep)
                           : (size_t)snprintf(buf + at, len - at, "%s%lld", sep,
                                              (long long)shape[d]);
    }
    if (at < len)
        snprintf(buf + at, len - at, "]");
    return buf;
}

/* The output of an image model must be the plane: [1,1,h,w] exactly (so a
 * [1,1,w,h] output, transposed, is not taken for it). A shape the model
 * fixes is checked here, before running; one it leaves symbolic after. */
static int check_image_output(const char *name, const int64_t *shape, size_t rank, unsigned w,
                              unsigned h, int after_run)
{
    const int64_t want[4] = {1, 1, h, w};
    int ok = shape && rank == 4;
    for (size_t d = 0; ok && d < 4; d++)
        ok = shape[d] == want[d] || (!after_run && shape[d] < 0);
    if (ok)
        return 0;
    char got_text[VMAF_DNN_MAX_RANK * 24 + 4], want_text[4 * 24 + 4];
    shape_text(want, 4, want_text, sizeof(want_text));
    if (!shape)
        return vdnn_fail(-EINVAL, "output \"%s\" has no declared rank; an image-to-image model "
                         "must return %s for this plane", name, want_text);
    return vdnn_fail(-EINVAL, "output \"%s\" %s %s; an image-to-image model must return %s for "
                     "this plane", name, after_run ? "came back with shape" : "has shape",
                     shape_text(shape, rank, got_text, sizeof(got_text)), want_text);
}

static int check_image_model(const VmafDnnSession *s, unsigned w, unsigned h)
{
    if (s->n_inputs != 1 || s->n_outputs != 1)
        return vdnn_fail(-EINVAL, "an image-to-image model needs 1 input and 1 output; this one "
                         "has %zu and %zu", s->n_inputs, s->n_outputs);
    const VmafDnnTensorInfo *in = &s->input_info[0];
    if (in->type == VMAF_DNN_TYPE_UINT16)
        return vdnn_fail(-ENOTSUP, "input \"%s\" is UINT16 (a picture's samples); the plane "
                         "helpers feed normalised fp32: use vmaf_dnn_session_run", in->name);
    if (in->shape && in->rank != 4)
        return vdnn_fail(-EINVAL, "input \"%s\" has rank %zu; an image model takes NCHW (rank 4)",
                         in->name, in->rank);
    /* An input of no declared shape is fed as NCHW, for ORT to check. */
    int rc = 0;
    if (in->shape && ((rc = check_image_dim(in, 0, "the batch", 1)) ||
                      (rc = check_image_dim(in, 1, "the channel count", 1)) ||
                      (rc = check_image_dim(in, 2, "the height", h)) ||
                      (rc = check_image_dim(in, 3, "the width", w))))
        return rc;
    const VmafDnnTensorInfo *out = &s->output_info[0];
    return check_image_output(out->name, out->shape, out->rank, w, h, 0);
}

/* Runs the image model on s->plane_in (w*h normalised samples) into
 * s->plane_out, checking that the output is the same size. */
static int run_plane_reserved(VmafDnnSession *s, unsigned w, unsigned h)
{
    size_t n = (size_t)w * h;
    const int64_t shape[4] = {1, 1, h, w};
    VmafDnnInput in = {NULL, s->plane_in, shape, 4};
    VmafDnnOutput out = {.name = NULL, .data = s->plane_out, .capacity = n};
    int rc = run_reserved(s, &in, NULL, 1, &out, 1);
    if (rc == -ENOSPC || !rc) /* the shape is reported with -ENOSPC too */
        return check_image_output(s->output_info[0].name, out.shape, out.rank, w, h, 1);
    return rc;
}

/* Round to nearest and clamp; NaN becomes 0 so a broken model cannot write
 * out-of-range samples. */
static inline unsigned to_sample(float v, float max)
{
    float x = v * max + 0.5f;
    if (!(x >= 0.0f))
        return 0;
    return x >= max ? (unsigned)max : (unsigned)x;
}

typedef struct PlaneArgs {
    const void *src;
    ptrdiff_t src_stride;
    void *dst;
    ptrdiff_t dst_stride;
    unsigned w, h, bpc, sample_bytes;
} PlaneArgs;

static int run_plane(VmafDnnSession *s, const PlaneArgs *p)
{
    vdnn_clear_error();
    if (!s || !p->src || !p->dst)
        return vdnn_fail(-EINVAL, "plane run: %s is NULL", !s ? "session" : !p->src ? "src" : "dst");
    if (p->w == 0 || p->h == 0 || p->w > VDNN_MAX_PLANE_DIM || p->h > VDNN_MAX_PLANE_DIM)
        return vdnn_fail(-EINVAL, "plane size %ux%u is outside 1..%d in each dimension", p->w,
                         p->h, VDNN_MAX_PLANE_DIM);
    if (p->src_stride < (ptrdiff_t)(p->w * p->sample_bytes) ||
        p->dst_stride < (ptrdiff_t)(p->w * p->sample_bytes))
        return vdnn_fail(-EINVAL, "stride (src %td, dst %td bytes) is smaller than a row of %u "
                         "samples", p->src_stride, p->dst_stride, p->w);
    int rc = check_image_model(s, p->w, p->h);
    if (rc || (rc = reserve(s)))
        return rc;
    if ((rc = vdnn_grow_float_pair(&s->plane_in, &s->plane_out, &s->plane_capacity,
                                   (size_t)p->w * p->h, "plane")))
        goto done;

    vdnn_plane_normalise(p->src, p->src_stride, p->w, p->h, p->bpc, s->plane_in);
    const float max = (float)((1u << p->bpc) - 1);
    if ((rc = run_plane_reserved(s, p->w, p->h)))
        goto done;
    for (unsigned y = 0; y < p->h; y++) {
        uint8_t *row = (uint8_t *)p->dst + (ptrdiff_t)y * p->dst_stride;
        const float *f = s->plane_out + (size_t)y * p->w;
        if (p->sample_bytes == 1)
            for (unsigned x = 0; x < p->w; x++)
                row[x] = (uint8_t)to_sample(f[x], max);
        else
            for (unsigned x = 0; x < p->w; x++)
                ((uint16_t *)(void *)row)[x] = (uint16_t)to_sample(f[x], max);
    }
done:
    release(s);
    return rc;
}

int vmaf_dnn_session_run_luma8(VmafDnnSession *s, const uint8_t *src, ptrdiff_t src_stride,
                               uint8_t *dst, ptrdiff_t dst_stride, unsigned width,
                               unsigned height)
{
    PlaneArgs p = {src, src_stride, dst, dst_stride, width, height, 8, 1};
    return run_plane(s, &p);
}

int vmaf_dnn_session_run_plane16(VmafDnnSession *s, const uint16_t *src, ptrdiff_t src_stride,
                                 uint16_t *dst, ptrdiff_t dst_stride, unsigned width,
                                 unsigned height, unsigned bpc)
{
    if (bpc < 9 || bpc > 16) {
        vdnn_clear_error();
        return vdnn_fail(-EINVAL, "bpc must be 9..16 for plane16 (got %u)", bpc);
    }
    PlaneArgs p = {src, src_stride, dst, dst_stride, width, height, bpc, 2};
    return run_plane(s, &p);
}
