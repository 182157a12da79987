/* Internal: the only door to ONNX Runtime.
 *
 * ort_backend.c is the one file that includes onnxruntime_c_api.h, with
 * ort_custom_ops.c, its part that wraps the library's own operators. It loads
 * ORT at run time, owns the process-wide OrtEnv, chooses execution providers
 * and creates, describes and runs sessions. Everything it hands out is in the
 * library's own types, so no other file needs ORT's headers.
 */
#ifndef VMAFDNN_ORT_BACKEND_H
#define VMAFDNN_ORT_BACKEND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "vmafdnn/vmafdnn.h"

/* --- Loading ORT (thread-safe; the loaded library stays for the process) - */

/* Loads ORT from `path` unless it is loaded already (see vmaf_dnn_load_ort
 * for the contract). */
int vdnn_ort_load(const char *path);

/* Makes sure ORT is loaded, trying VMAFDNN_ORT_LIBRARY then
 * libonnxruntime.so.1 on the first call. 0 or -ENOSYS (with a message that
 * says how to install ORT). The outcome of the search is remembered. */
int vdnn_ort_ensure_loaded(void);

/* NULL / 0 when ORT is not loaded. */
const char *vdnn_ort_version(void);
int vdnn_ort_api_version(void);
const char *vdnn_ort_library_path(void);

/* --- Plugin EP libraries and EP devices (see vmafdnn.h) ------------------ */

/* vmaf_dnn_register_ep_library's contract; loads ORT first. */
int vdnn_ort_register_ep_library(const char *name, const char *path);
/* The public list functions' contracts; the first call of any of them (or
 * of a session open) lists ORT's own EP devices and reads
 * VMAFDNN_EP_LIBRARIES. The counts are 0 when ORT cannot be loaded. */
size_t vdnn_ort_ep_library_count(void);
int vdnn_ort_ep_library_info(size_t index, VmafDnnEpLibraryInfo *info);
size_t vdnn_ort_ep_device_count(void);
int vdnn_ort_ep_device_info(size_t index, VmafDnnEpDeviceInfo *info);
/* The chain of `cfg` (complete) as an open would walk it, without creating a
 * session: *text (malloc'ed, the caller frees) has the fallback-reason lines
 * of the declined steps and "<EP>: selected (<how>)". 0, -ENOSYS, -ENOMEM. */
int vdnn_ort_explain(const VmafDnnConfig *cfg, char **text);
/* The EP a session opened with `cfg` (complete) binds unless its creation
 * fails there: the first step of the chain that appends, without creating a
 * session. *attached: its attached_ep name (static). 0; -EAGAIN when ORT
 * makes the choice at creation (the policy step); -ENOSYS, -EIO. */
int vdnn_ort_first_ep(const VmafDnnConfig *cfg, const char **attached);

/* --- Sessions ------------------------------------------------------------- */

typedef struct VdnnOrtSession VdnnOrtSession;

/* One model input or output as declared by the model. */
typedef struct VdnnTensorMeta {
    char *name;                       /* owned by the session */
    VmafDnnElementType type;
    size_t rank;
    int64_t shape[VMAF_DNN_MAX_RANK]; /* -1 for symbolic dims */
    int rank_known;                   /* 0: the model declares no shape at all
                                         (rank is then 0); only ORT >= 1.24
                                         tells, older ones report rank 0 */
    int aliases_input;                /* an output that is also a graph input
                                         (same name): never bound, see
                                         vdnn_ort_run */
    int dim_key[VMAF_DNN_MAX_RANK];   /* inputs: which of the session's named
                                         symbolic dims each dim is (static
                                         shapes), -1: fixed or unnamed */
} VdnnTensorMeta;

/* What one session may cost (VmafDnnModelPolicy's budgets). 0: no limit. */
typedef struct VdnnOrtBudget {
    uint64_t max_memory_bytes; /* ORT's tensors for this session, arena and
                                  initializers included: -EDQUOT past it */
    unsigned max_run_ms;       /* wall clock per run: -ETIMEDOUT past it */
} VdnnOrtBudget;

/* Creates a session from the serialized model in `model` (len bytes; read
 * during the call only, except that a session which may specialise itself
 * to its runs' shapes (cfg->static_shapes) keeps a copy). `model_path` names the model in messages;
 * `model_dir` is where external data files are looked up. `cfg` must be
 * complete (no NULL); `budget` (no NULL) holds for the life of the session.
 * Every EP attempt starts from fresh session options carrying only `cfg`'s
 * settings, so a declined EP leaves nothing behind for the next one. On
 * success *out owns the session, *attached_ep is a static string ("CPU",
 * "CUDA", ...) and *fallback_reason a malloc'ed string the caller frees (""
 * when the first choice bound).
 * Returns 0, -ENOSYS, -ENOMEM, -EBADMSG (ORT: invalid protobuf/graph),
 * -ENOTSUP (ORT: not implemented, or a model rank above VMAF_DNN_MAX_RANK),
 * -EDQUOT (building the session, constant folding included, needed more than
 * budget->max_memory_bytes), -EIO (any other ORT failure; the message
 * carries ORT's status text). */
int vdnn_ort_session_create(const void *model, size_t len, const char *model_path,
                            const char *model_dir, const VmafDnnConfig *cfg,
                            const VdnnOrtBudget *budget, VdnnOrtSession **out,
                            const char **attached_ep, char **fallback_reason);

/* The hardware an attached_ep string of vdnn_ort_session_create runs on, as
 * ORT's OrtHardwareDeviceType (0 CPU, 1 GPU, 2 NPU): the EP table's own
 * entry, else a ":GPU" / ":NPU" suffix, else the CPU ("ORT-policy" when ORT
 * cannot tell what its policy chose). */
int vdnn_ort_device_type(const char *attached_ep);

/* Whether sessions on the EP of an attached_ep string run one at a time in
 * a process and each on threads of the EP's own (OpenVINO: its
 * INFERENCE_NUM_THREADS, set from the session's thread count, except where
 * ORT's selection policy chose it: a policy takes no EP options, and
 * OpenVINO then takes a thread per core), so that a
 * context gains nothing from frames in flight there and gives each session
 * all its threads instead. Measured with onnxruntime-ep-openvino 1.8.1:
 * two sessions run from two threads took as long as one after the other.
 * WebGPU too: the library creates, runs and releases its sessions one at a
 * time (ort_backend.c, ep_one_at_a_time). */
int vdnn_ort_runs_sessions_in_turn(const char *attached_ep);

/* Makes the run in flight on `s` (if any) stop with -ECANCELED. Thread-safe;
 * a run that starts later is not affected. */
void vdnn_ort_cancel(VdnnOrtSession *s);

/* Ties the runs this thread begins to a caller's stop flag (a frame's
 * "cancelled"), until it is called again with NULL: a run that begins while
 * *flag is non-zero stops at once with -ECANCELED. A caller who publishes a
 * session for cancel before running it leaves a window in which
 * vdnn_ort_cancel lands before the run began and finds nothing to stop; it
 * sets *flag first and then calls vdnn_ort_cancel, so that one of the two
 * stops the run whichever comes first. The flag must outlive the runs. */
void vdnn_ort_watch_stop_flag(const atomic_int *flag);

/* vmaf_dnn_session_static_runs' contract (s and out not NULL). */
void vdnn_ort_static_runs(const VdnnOrtSession *s, VmafDnnStaticRuns *out);

/* Adds the session's run counts (VmafDnnStaticRuns' fixed, as_opened,
 * device_io, captured) to *sum, leaving its other fields alone: atomic
 * reads, safe from any thread while the session runs (its reasons are not:
 * a run may replace them). */
void vdnn_ort_add_run_counts(const VdnnOrtSession *s, VmafDnnStaticRuns *sum);

/* NULL-safe. Also releases any outputs still held from the last run. */
void vdnn_ort_session_destroy(VdnnOrtSession *s);

/* Host memory for data the session's runs copy to its EP's device: a block
 * of the device's host-accessible memory (CUDA: pinned) where the EP offers
 * it (ORT 1.23+), else malloc'ed memory; NULL for 0 bytes or out of memory.
 * Contents undefined. Free it with vdnn_ort_host_free on the same session,
 * before the session is destroyed (which frees what is left). Thread-safe.
 * Runs with device-resident I/O whose device inputs all lie in such blocks
 * are counted (VmafDnnStaticRuns.pinned). */
void *vdnn_ort_host_alloc(VdnnOrtSession *s, size_t bytes);
/* NULL-safe. */
void vdnn_ort_host_free(VdnnOrtSession *s, void *p);

/* Whether vdnn_ort_host_alloc's blocks are the EP device's host-accessible
 * memory: then data a run copies to the device is better copied into one
 * first (one DMA from there) than fed from other memory, which the driver
 * stages itself. 0 where they are plain memory (ORT's CPU EP, WebGPU): data
 * fed from anywhere is read or copied alike. Fixed at creation. */
int vdnn_ort_host_blocks_pinned(const VdnnOrtSession *s);

/* The memory vdnn_ort_host_alloc's blocks come from, where it is a device's
 * host-accessible memory (an opaque token: ORT's shared allocator of it,
 * which lives as long as ORT's env, for the process); NULL where they are
 * plain memory. Sessions of one EP device share it. Fixed at creation. */
typedef struct VdnnHostMemory VdnnHostMemory;
const VdnnHostMemory *vdnn_ort_host_memory(const VdnnOrtSession *s);
/* A block of `bytes` of that memory, its owner in *handle (for
 * vdnn_ort_host_memory_release, from any thread, at any time later); NULL
 * when the allocator cannot give it (then *handle is NULL). */
void *vdnn_ort_host_memory_block(const VdnnHostMemory *mem, size_t bytes, void **handle);
void vdnn_ort_host_memory_release(void *handle); /* NULL-safe */
/* ORT's name of that memory (its OrtMemoryInfo's: "CudaPinned", ...);
 * "host-accessible" where ORT does not say. Valid for the process. */
const char *vdnn_ort_host_memory_name(const VdnnHostMemory *mem);

/* Whether runs that feed 8-bit samples (VdnnOrtFeed type UINT8 for a UINT16
 * input) get a specialised session whose pictures are UINT8: the model's
 * pictures are only moved and cast (vdnn_onnx_narrow_samples) and it was
 * opened to be specialised (static shapes). Such feeds are widened to
 * UINT16 for any other session. Fixed at creation. */
int vdnn_ort_narrows(const VdnnOrtSession *s);

/* Whether session s (made with cfg) runs the library's own operators
 * (custom_ops.h) on the EP it attached (ep NULL), or would on EP `ep` (a
 * name of vdnn_ort_session_create's attached_ep): ORT's CPU EP always;
 * CUDA, appended by its own step of the chain, where the GPU kernels are
 * ready on cfg->device_index (cuda_kernels.h) and VMAFDNN_CUDA_KERNELS is
 * not 0; no other EP. 0 with why (size bytes, not NULL) saying why not:
 * such a session runs them on ORT's CPU EP, its planes copied there and
 * back. */
int vdnn_ort_library_ops_on_ep(const VdnnOrtSession *s, const char *ep,
                               const VmafDnnConfig *cfg, char *why, size_t size);

/* The nodes ORT assigned to the attached EP (*on_ep) and in all (*total),
 * counted once at creation after ORT's basic optimisation. 0, or -ENOTSUP
 * when ORT cannot tell (before 1.24). */
int vdnn_ort_ep_nodes(const VdnnOrtSession *s, size_t *on_ep, size_t *total);

size_t vdnn_ort_input_count(const VdnnOrtSession *s);
size_t vdnn_ort_output_count(const VdnnOrtSession *s);
/* Slot metadata; valid while the session lives. index must be in range. */
const VdnnTensorMeta *vdnn_ort_input_meta(const VdnnOrtSession *s, size_t index);
const VdnnTensorMeta *vdnn_ort_output_meta(const VdnnOrtSession *s, size_t index);

/* One bound input: `data` holds product(shape) elements of `type` (FLOAT,
 * FLOAT16, UINT16; UINT8 for a UINT16 input: 8-bit samples, see
 * vdnn_ort_narrows), read during the call only. */
typedef struct VdnnOrtFeed {
    const void *data;
    VmafDnnElementType type;
    const int64_t *shape;
    size_t rank;
} VdnnOrtFeed;

/* A produced output, owned by the session until the next run or
 * vdnn_ort_release_outputs(). */
typedef struct VdnnOrtResult {
    const void *data;
    VmafDnnElementType type;
    size_t count;                     /* elements */
    size_t rank;
    int64_t shape[VMAF_DNN_MAX_RANK];
} VdnnOrtResult;

/* Runs the model. feeds[i] feeds input slot i (all inputs, slot order).
 * output_slots lists the n_outputs output slots wanted; results[k] describes
 * the output of output_slots[k]. out_buffers (NULL, or n_outputs entries)
 * lets ORT write output k straight into out_buffers[k] when it is not NULL:
 * only for FLOAT slots of fixed shape, with room for all their elements;
 * results[k].data then points there, unless ORT produced that output in a
 * buffer of its own: then results[k] describes ORT's buffer and the caller
 * copies. An output that is also a graph input is never bound (ORT answers
 * it with the feed and leaves a pre-bound buffer unwritten). Returns 0,
 * -EINVAL (a feed ORT cannot wrap), -ENOMEM, -ENOTSUP (an output of rank
 * above VMAF_DNN_MAX_RANK), -ETIMEDOUT (the run outlived budget.max_run_ms),
 * -ECANCELED (vdnn_ort_cancel), -EDQUOT (an allocation past
 * budget.max_memory_bytes), -ENOEXEC (any other failure of ORT's Run: the
 * model failed on this data; ORT's message says which node), -EIO (a copy
 * or binding of device-resident I/O ORT refused: ort_device_io.h). The run may
 * first create a session specialised to the feeds' shapes (see
 * VmafDnnStaticShapes); its failure is not the run's. Not thread-safe
 * on one session (the caller serialises), except for vdnn_ort_cancel. */
int vdnn_ort_run(VdnnOrtSession *s, const VdnnOrtFeed *feeds,
                 const size_t *output_slots, size_t n_outputs, void *const *out_buffers,
                 VdnnOrtResult *results);

/* Frees the outputs of the last run early (they are freed by the next run
 * and by destroy anyway). */
void vdnn_ort_release_outputs(VdnnOrtSession *s);

#endif
