/* Internal: what the C tests may observe of a context beyond the public API,
 * and the checks the context shares with sessions (dnn_api.c), so that a
 * context refuses at open exactly what a session would refuse at attach.
 * Not exported from the shared library (hidden visibility). */
#ifndef VMAFDNN_CONTEXT_INTERNAL_H
#define VMAFDNN_CONTEXT_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>

#include "vmafdnn/context.h"

/* Public calls on `ctx` that have started and not returned: the one that
 * owns the context plus those queued for it (vmaf_dnn_context_close waits
 * for all of them). Lets a test close a context exactly while calls are in
 * flight instead of sleeping and hoping. Thread-safe. */
size_t vdnn_context_calls_in_flight(const VmafDnnContext *ctx);

/* Bytes the context's feature store holds, as charged to its budget (the
 * policy's max_memory_bytes; vdnn_feature_collector_bytes). Lets a test
 * check the budget by the store's own accounting rather than by the
 * process's memory, which ORT and the allocator also move. Thread-safe
 * (waits like any call on the context). */
size_t vdnn_context_feature_bytes(const VmafDnnContext *ctx);

/* Checks a session config (device, device_index, threads) and copies it,
 * normalised, to *out; NULL `in` gives the defaults. Messages start with
 * `what` ("" for a session, "context config: session." for a context), so
 * they name the field. Returns 0 or -EINVAL. (dnn_api.c) */
int vdnn_config_check(const VmafDnnConfig *in, VmafDnnConfig *out, const char *what);

/* Adds the session's run counts to *sum (vdnn_ort_add_run_counts: safe
 * from any thread while it runs). (dnn_api.c) */
void vdnn_session_add_run_counts(const VmafDnnSession *s, VmafDnnStaticRuns *sum);

/* vdnn_ort_host_alloc / vdnn_ort_host_free of the session: memory for the
 * data its runs copy to the device, from the EP device's host-accessible
 * (pinned) memory where it offers it, else malloc'ed. (dnn_api.c) */
void *vdnn_session_host_alloc(VmafDnnSession *s, size_t bytes);
void vdnn_session_host_free(VmafDnnSession *s, void *p);
/* vdnn_ort_host_blocks_pinned of the session: its blocks are pinned
 * memory, so data for its runs is better copied there than fed from where
 * it lies. (dnn_api.c) */
int vdnn_session_host_blocks_pinned(const VmafDnnSession *s);
/* vdnn_ort_host_memory of the session: the host-accessible memory its
 * blocks come from, NULL where plain. (dnn_api.c) */
typedef struct VdnnHostMemory VdnnHostMemory; /* ort_backend.h */
const VdnnHostMemory *vdnn_session_host_memory(const VmafDnnSession *s);

/* The kind of hardware the session's EP runs on: 0 CPU, 1 GPU, 2 NPU (ORT's
 * OrtHardwareDeviceType values), what a sidecar's {"value": "device_type"}
 * input is fed. */
int vdnn_session_device_type(const VmafDnnSession *s);

/* The same for the EP an attached_ep string names ("OpenVINO:CPU": 0). */
int vdnn_ep_device_type(const char *attached_ep);

/* vdnn_ort_runs_sessions_in_turn for the session's EP. */
int vdnn_session_runs_in_turn(const VmafDnnSession *s);

/* Whether the session's graph has nodes of the library's own operators
 * that run on ORT's CPU EP although it attached another (ep NULL), or that
 * would on EP `ep` (vdnn_ort_library_ops_on_ep): 1 with why (size bytes)
 * saying why, else 0. */
int vdnn_session_library_ops_off_ep(const VmafDnnSession *s, const char *ep, char *why,
                                    size_t size);

/* Adds `line` (and a newline) to what vmaf_dnn_session_fallback_reason
 * says. 0 or -ENOMEM. */
int vdnn_session_add_reason(VmafDnnSession *s, const char *line);

/* Checks the values of a model policy that no model file can change
 * (max_model_bytes > 0; the allow-list and the Loop, node and depth caps
 * only narrowing the built-in ones). Returns 0 or -EINVAL naming the field.
 * (dnn_api.c) */
int vdnn_model_policy_check(const VmafDnnModelPolicy *policy);

/* The model at `path` read and scanned under `policy` (NULL: the default)
 * exactly as vmaf_dnn_session_open_with_policy() does, without a session:
 * *out gets the interface it declares (vdnn_onnx_interface_free()). Returns
 * 0 or what the open would return for the file. (dnn_api.c) */
struct VdnnOnnxInterface;
int vdnn_model_interface(const char *path, const VmafDnnModelPolicy *policy,
                         struct VdnnOnnxInterface **out);

/* vdnn_ort_first_ep for a session config (checked first): the EP a session
 * opened with `cfg` binds unless its creation fails there. 0, -EAGAIN (ORT
 * chooses at creation), -EINVAL, -ENOSYS, -EIO. (dnn_api.c) */
int vdnn_session_first_ep(const VmafDnnConfig *cfg, const char **attached);

/* vdnn_ort_watch_stop_flag: the session runs this thread begins until the
 * next call (NULL: none) stop at once while *flag is set. A context sets its
 * frame's cancel flag before it cancels the published session, so a cancel
 * that lands before that session's run began still stops it. (dnn_api.c) */
void vdnn_session_watch_stop_flag(const atomic_int *flag);

/* What vdnn_session_run_samples' flags say an input's data holds. */
enum {
    VDNN_SAMPLES_UINT16 = 1, /* uint16_t values */
    VDNN_SAMPLES_UINT8 = 2,  /* uint8_t values: 8-bit samples, which the
                                session feeds as UINT8 where it narrows
                                (vdnn_session_narrows) and widens otherwise */
};

/* vmaf_dnn_session_run where samples[i] non-zero (samples: NULL, or one flag
 * per input, VDNN_SAMPLES_*) says that inputs[i].data points to samples for
 * a UINT16 slot, fed as they are: a picture's own samples, without the fp32
 * round trip (and its whole-number check) of the public call. -EINVAL for
 * samples given to a slot of another type. (dnn_api.c) */
int vdnn_session_run_samples(VmafDnnSession *s, const VmafDnnInput *inputs,
                             const unsigned char *samples, size_t n_inputs,
                             VmafDnnOutput *outputs, size_t n_outputs);

/* Whether the session's model can take 8-bit samples as UINT8 on its
 * specialised sessions (its UINT16 pictures only moved and cast; see
 * vdnn_onnx_narrow_samples), so that a caller with 8-bit pictures gains by
 * feeding them as VDNN_SAMPLES_UINT8. Fixed at open. (dnn_api.c) */
int vdnn_session_narrows(const VmafDnnSession *s);

#endif
