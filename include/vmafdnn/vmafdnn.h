/*
 * libvmafdnn — run tiny ONNX video-quality and filter models through the
 * ONNX Runtime (ORT) C API.
 *
 * This header is the API's documentation: every pointer's owner, every return
 * code and every thread-safety rule is written next to the declaration.
 *
 * Conventions (the same for every function):
 *   - Functions return 0 on success or a negative errno (-EINVAL, ...). The
 *     codes a function can return are listed on it; the meaning of each code
 *     is the same everywhere (see "Error codes" below).
 *   - After a failure, vmaf_dnn_last_error() holds one readable sentence about
 *     what went wrong (for ORT failures, ORT's own status text). It is per
 *     thread, like errno.
 *   - Opaque handles are opened through a `**out` parameter, which is written
 *     only on success, and closed by a NULL-safe close function.
 *   - Strings returned as `const char *` are owned by the library and stay
 *     valid as documented on each function; never free them.
 *
 * Error codes:
 *   -EINVAL   an argument is invalid (NULL pointer, unknown enum value, a
 *             tensor whose rank, shape or name does not match the model, ...)
 *   -ENOMEM   an allocation failed
 *   -ENOENT   a file (the model) does not exist
 *   -EACCES   a file cannot be read with the caller's permissions
 *   -EPERM    the model is refused by the pre-load scan: an operator outside
 *             the allow-list or the standard ONNX domain, too many Loop
 *             nodes, subgraphs nested too deep, model-local functions, or
 *             external data outside the model's directory (docs/security.md)
 *   -EISDIR   the model path is not a regular file
 *   -E2BIG    the model file is larger than the size cap
 *   -EBADMSG  the model file is empty or is not a valid ONNX model
 *   -ENOSYS   ONNX Runtime could not be loaded (see vmaf_dnn_available())
 *   -ENOTSUP  the model uses something this library does not support (an
 *             element type, a shape), or the run needs fp16 I/O that the
 *             session was not configured for
 *   -ENOSPC   an output buffer is too small; the needed element count is
 *             reported through VmafDnnOutput.count
 *   -EBUSY    the session is already running on another thread
 *   -ENOEXEC  the model failed while running: ORT refused an operation of
 *             the graph on the data it was given (a Gather index out of
 *             range, an Expand or Reshape to an impossible shape, ...). The
 *             caller's arguments were valid; the model is at fault
 *   -ETIMEDOUT a run took longer than the policy's max_run_ms and was stopped
 *   -ECANCELED a run was stopped by vmaf_dnn_session_cancel() (or
 *             vmaf_dnn_context_cancel()) from another thread
 *   -EDQUOT   the model needs more memory than the policy's
 *             max_memory_bytes (at open, at attach or while running), or a
 *             context's stored scores would pass it (context.h)
 *   -ELOOP    the model path (or its sidecar or external data) crosses a
 *             symbolic link that the jail does not allow, or has too many
 *   -ENOTDIR  a component of a path is not a directory
 *   -ENAMETOOLONG a path or name is too long
 *   -EEXIST   a name is already taken (feature keys, see context.h)
 *   -EIO      ORT failed to create the session for any other reason, or an
 *             I/O error (reading a model, writing a report)
 */
#ifndef VMAFDNN_VMAFDNN_H
#define VMAFDNN_VMAFDNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VMAF_DNN_API
#if defined(_WIN32)
#define VMAF_DNN_API __declspec(dllimport)
#elif defined(__GNUC__)
#define VMAF_DNN_API __attribute__((visibility("default")))
#else
#define VMAF_DNN_API
#endif
#endif

/* Version of this library's API (not of ORT). */
#define VMAF_DNN_VERSION_MAJOR 0
#define VMAF_DNN_VERSION_MINOR 1
#define VMAF_DNN_VERSION_PATCH 0

/* The most dimensions a tensor may have in this API. */
#define VMAF_DNN_MAX_RANK 8

/* ------------------------------------------------------------------------ */
/* Limits (the one place each is defined; docs/security.md explains them)   */
/* ------------------------------------------------------------------------ */

/* Largest width or height of a picture, a plane or a model's image input. */
#define VMAF_DNN_MAX_DIMENSION 32768
/* Most ORT intra-op threads a session (or context) may ask for; more is
 * -EINVAL. Far above what tiny models profit from, far below what would
 * exhaust a host's memory with thread stacks. */
#define VMAF_DNN_MAX_THREADS 256
/* Defaults of VmafDnnModelPolicy (see there). */
#define VMAF_DNN_DEFAULT_MAX_MODEL_BYTES ((size_t)50 << 20)      /* 50 MiB */
#define VMAF_DNN_DEFAULT_MAX_MEMORY_BYTES ((uint64_t)2 << 30)    /* 2 GiB */
#define VMAF_DNN_DEFAULT_MAX_RUN_MS 60000u                       /* 60 s */
#define VMAF_DNN_DEFAULT_MAX_NODES 10000u
/* Hard caps of the pre-load scan: a policy may lower them, never raise them. */
#define VMAF_DNN_MAX_LOOP_NODES 4u
#define VMAF_DNN_MAX_SUBGRAPH_DEPTH 8u
#define VMAF_DNN_MAX_NODES 100000u

/* "MAJOR.MINOR.PATCH" of this library. Static storage. */
VMAF_DNN_API const char *vmaf_dnn_version(void);

/* 16 lowercase hex digits: a digest of the sources this library was built
 * from (its C files and headers, the GPU kernels' and the public ones), the
 * same for every build of the same sources and another for a build of
 * changed ones, where vmaf_dnn_version stays put between releases. For a
 * cache of scores to tell the library that made them from a rebuilt one
 * (the library's own operators score the built-ins' kernels forms). Static
 * storage. */
VMAF_DNN_API const char *vmaf_dnn_source_digest(void);

/* Which build of the library's CPU kernels this CPU runs (the fused
 * kernels that score VMAF's features, psnr, ssim, float_ssim and sharpness_nr
 * on ORT's CPU EP), chosen when the library is loaded: "x86-64-v4" (VMAF's ADM
 * and motion with AVX-512, the other kernels with AVX2), "avx2", or
 * "baseline": the build's own target, as on every architecture but x86-64
 * and wherever the library was built without per-CPU builds (compilers
 * without target_clones, ThreadSanitizer). Every build gives the same scores
 * to the last digit: this says which ran, not what it scored. Static storage;
 * any thread. */
VMAF_DNN_API const char *vmaf_dnn_cpu_kernels(void);

/* The calling thread's message about its last failed call, "" when none.
 * Valid until the next libvmafdnn call on the same thread. */
VMAF_DNN_API const char *vmaf_dnn_last_error(void);

/* ------------------------------------------------------------------------ */
/* Loading ONNX Runtime                                                     */
/* ------------------------------------------------------------------------ */

/*
 * ORT is loaded at run time (dlopen), so one build of this library works with
 * any ORT from 1.20 on: the `onnxruntime`, `onnxruntime-gpu` and
 * `onnxruntime-openvino` Python wheels or a system package. It is loaded once
 * per process, on the first call that needs it, from the first of:
 *   1. the path given to vmaf_dnn_load_ort();
 *   2. the path in the environment variable VMAFDNN_ORT_LIBRARY;
 *   3. `libonnxruntime.so.1` on the dynamic loader's search path.
 * (The Python package adds the `onnxruntime` package's own library between 2
 * and 3 by calling vmaf_dnn_load_ort() itself.)
 * The API version used is the minor number of ORT's version string, capped at
 * the version of the headers this library was built with.
 *
 * fork(): a child may open sessions and contexts of its own; its parent's
 * handles (and picture buffers) must not be used there, nor closed or freed.
 * A child forked after ORT was loaded (vmaf_dnn_available() loads it, as
 * does every open) ends at exit() without running the exit handlers
 * registered before the fork: ORT's own teardown waits for a thread of
 * ORT's that stayed in the parent and hung every such child. The library's handler writes out
 * stdio's buffers as exit() does and ends the child with exit()'s status
 * (glibc). So in such a child, exit handlers and C++ static destructors of
 * the parent's (an std::ofstream's last buffer among them) do not run;
 * handlers the child registers itself do. A child that calls exec or _exit
 * is not concerned. The library is never unloaded (dlclose leaves it
 * mapped), since ORT is not either.
 */

/* Loads ORT from `path` (a shared library exporting OrtGetApiBase).
 * Thread-safe. Once ORT is loaded, later calls change nothing: they return 0
 * when `path` is the library already loaded, -EBUSY otherwise.
 * Returns 0, -EINVAL (path NULL), -ENOSYS (cannot be loaded, is not a
 * regular file, has no OrtGetApiBase, or is older than 1.20), -EBUSY. */
VMAF_DNN_API int vmaf_dnn_load_ort(const char *path);

/* 1 when ORT is (or can now be) loaded, 0 otherwise; never fails. Tries the
 * search order above on first use. When 0, vmaf_dnn_last_error() says why
 * and how to install ORT. Thread-safe. */
VMAF_DNN_API int vmaf_dnn_available(void);

/* ORT's version string ("1.31.1"), or NULL when ORT is not loaded. Static
 * storage owned by ORT. Thread-safe. */
VMAF_DNN_API const char *vmaf_dnn_ort_version(void);

/* The ORT API version negotiated with the loaded library (e.g. 29), or 0 when
 * ORT is not loaded. */
VMAF_DNN_API int vmaf_dnn_ort_api_version(void);

/* The file ORT was loaded from, or NULL when not loaded. Static storage. */
VMAF_DNN_API const char *vmaf_dnn_ort_library_path(void);

/* ------------------------------------------------------------------------ */
/* Plugin execution providers (ORT >= 1.22)                                 */
/* ------------------------------------------------------------------------ */

/*
 * Plugin EP libraries (ORT's EP ABI: onnxruntime-ep-openvino, -webgpu,
 * -nv-tensorrt-rtx, ...) are shared libraries registered with the process's
 * one ORT environment. Once registered, ORT pairs them with the hardware it
 * found and offers "EP devices"; sessions bind them through the chains of
 * VmafDnnDevice. They come from:
 *   1. vmaf_dnn_register_ep_library();
 *   2. the environment variable VMAFDNN_EP_LIBRARIES, read once (on the
 *      first session open or EP query): entries separated by ':', each
 *      "NAME=PATH" or just "PATH" (the name is then the file name without
 *      "lib" and ".so..."). Empty entries are skipped;
 *   3. in the Python package, every installed onnxruntime_ep_* package;
 *   4. ORT's own CUDA provider (libonnxruntime_providers_cuda.so beside the
 *      loaded libonnxruntime.so: a GPU build), registered as
 *      "CUDAExecutionProvider" when a chain first reaches its CUDA step and
 *      ORT is 1.23 or newer, unless a library of that name was given: its EP
 *      device is what the CUDA step then binds, and it brings the CUDA data
 *      transfer into ORT's environment, which device-resident I/O
 *      (VmafDnnDeviceIo) needs to copy frames to the GPU itself.
 * A library that cannot be registered is skipped and its reason kept
 * (vmaf_dnn_ep_library_info); it never makes a session fail. With ORT 1.20
 * or 1.21 (no EP ABI) every registration is refused with that reason and the
 * chains use the compiled-in EPs only, as before.
 */

/* Registers the plugin EP library at `path` under `name` (a name ORT keys it
 * by; at most 127 bytes), loading ORT first if needed. Thread-safe; a library
 * is registered once per process: registering the same name and path again
 * returns 0 (or the first attempt's error) and changes nothing. Unregistration
 * does not exist (sessions may use the library until the process ends).
 * Every outcome is kept in the list of vmaf_dnn_ep_library_info.
 * Returns 0, -EINVAL (NULL or empty name or path, name too long), -ENOSYS
 * (ORT cannot be loaded), -ENOENT (no such file), -EISDIR (not a regular
 * file: a directory, FIFO or device, refused before dlopen could block on
 * it), -EACCES,
 * -ENOTSUP (the loaded ORT is older than 1.22: no plugin EPs), -EEXIST (the
 * name is registered with another path), -EIO (ORT refused the library: not
 * a shared library, not an EP library, or built for an incompatible ORT;
 * the message carries ORT's reason), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_register_ep_library(const char *name, const char *path);

/* One plugin EP library that was given to this process, registered or not. */
typedef struct VmafDnnEpLibraryInfo {
    const char *name;   /* registration name */
    const char *path;   /* as given */
    const char *source; /* "api", "env" (VMAFDNN_EP_LIBRARIES), "ort" (ORT's
                           own CUDA provider, item 4 above) */
    int status;         /* 0: registered; else the negative errno of
                           vmaf_dnn_register_ep_library */
    const char *reason; /* "" when registered, else why not */
} VmafDnnEpLibraryInfo;

/* Number of libraries in the list (reads VMAFDNN_EP_LIBRARIES first when
 * ORT is loaded and it was not read yet). Thread-safe. */
VMAF_DNN_API size_t vmaf_dnn_ep_library_count(void);
/* Describes library `index` (registration order). Strings live as long as
 * the process. Returns 0, -EINVAL (NULL info, index out of range). */
VMAF_DNN_API int vmaf_dnn_ep_library_info(size_t index, VmafDnnEpLibraryInfo *info);

/* One EP device ORT offers: an EP paired with a piece of hardware. */
typedef struct VmafDnnEpDeviceInfo {
    const char *ep_name;       /* ORT's EP name, "OpenVINOExecutionProvider" */
    const char *ep_vendor;     /* "Intel" */
    const char *device_type;   /* "CPU", "GPU" or "NPU" */
    const char *device_vendor; /* the hardware's vendor, "AMD" */
    uint32_t vendor_id;        /* PCI vendor id (0 when ORT does not know) */
    uint32_t device_id;        /* PCI device id (0 when ORT does not know) */
    int device_index;          /* the n-th device of this EP and type: the
                                  VmafDnnConfig.device_index that selects it */
    const char *library;       /* registration name of the plugin library that
                                  brought it, NULL for an EP built into ORT */
    const char *attached_name; /* what vmaf_dnn_session_attached_ep() says
                                  when a session binds it, "OpenVINO:CPU" */
} VmafDnnEpDeviceInfo;

/* Number of EP devices ORT offers now (0 before ORT 1.22, or when ORT cannot
 * be loaded). Registering a library may add devices. Thread-safe. */
VMAF_DNN_API size_t vmaf_dnn_ep_device_count(void);
/* Describes EP device `index`, in ORT's order. Strings live as long as the
 * process. Returns 0, -EINVAL (NULL info, index out of range). */
VMAF_DNN_API int vmaf_dnn_ep_device_info(size_t index, VmafDnnEpDeviceInfo *info);


/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/* Where a session should run. A device is a hint, not a requirement: when the
 * requested execution provider (EP) is not available the session opens on the
 * CPU and says so through vmaf_dnn_session_attached_ep() and
 * vmaf_dnn_session_fallback_reason(). Values are append-only.
 *
 * Each step of a chain below binds an EP compiled into the loaded ORT or a
 * plugin EP library registered with it (vmaf_dnn_register_ep_library): a
 * step uses the plugin when ORT offers an EP device of that EP and hardware
 * type (vmaf_dnn_ep_device_info), else the compiled-in EP. device_index picks
 * the n-th such device (plugins) or is the EP's device id (compiled-in).
 * Why AUTO's order: discrete accelerators first (CUDA, then TensorRT RTX,
 * which builds an engine per session: slower to open for models this small),
 * then OpenVINO (GPU, NPU, then its CPU device, faster than ORT's CPU EP on
 * many graphs), then AMD (MIGraphX, ROCm), then WebGPU (portable, slowest of
 * the GPU paths), and ORT's CPU EP, which is always there.
 * docs/execution_providers.md has the whole table. */
typedef enum VmafDnnDevice {
    VMAF_DNN_DEVICE_AUTO = 0,     /* CUDA -> TensorRT RTX -> OpenVINO GPU -> OpenVINO NPU ->
                                     OpenVINO CPU -> MIGraphX -> ROCm -> WebGPU -> CPU */
    VMAF_DNN_DEVICE_CPU = 1,      /* ORT's CPU EP */
    VMAF_DNN_DEVICE_CUDA = 2,     /* CUDA EP, device_id = device_index */
    VMAF_DNN_DEVICE_OPENVINO = 3, /* OpenVINO GPU (GPU.<n> for device_index n > 0), then
                                     OpenVINO NPU, then OpenVINO CPU */
    VMAF_DNN_DEVICE_ROCM = 4,     /* ROCm EP, device_id = device_index, then MIGraphX */
    VMAF_DNN_DEVICE_OPENVINO_CPU = 5, /* OpenVINO pinned to its CPU device */
    VMAF_DNN_DEVICE_OPENVINO_GPU = 6, /* OpenVINO pinned to its GPU device */
    VMAF_DNN_DEVICE_WEBGPU = 7,       /* WebGPU EP (plugin onnxruntime-ep-webgpu) */
    VMAF_DNN_DEVICE_TENSORRT_RTX = 8, /* NVIDIA TensorRT RTX EP */
    VMAF_DNN_DEVICE_MIGRAPHX = 9,     /* AMD MIGraphX EP, then ROCm */
    /* ORT chooses (its EP selection policy, ORT >= 1.22) among every EP
     * device it offers; attached_ep says what it chose (from ORT 1.23 on;
     * 1.22 cannot tell and reports "ORT-policy"). Older ORT: the AUTO chain,
     * with the reason in the fallback reason. device_index is ignored. */
    VMAF_DNN_DEVICE_POLICY_PREFER_CPU = 10,
    VMAF_DNN_DEVICE_POLICY_PREFER_GPU = 11,
    VMAF_DNN_DEVICE_POLICY_PREFER_NPU = 12,
    VMAF_DNN_DEVICE_POLICY_MAX_PERFORMANCE = 13,
    VMAF_DNN_DEVICE_POLICY_MAX_EFFICIENCY = 14,
    VMAF_DNN_DEVICE_POLICY_MIN_POWER = 15,
} VmafDnnDevice;

/* Whether a session specialises the model to the shapes it is run with.
 * A model whose inputs have named symbolic dims ("H", "W", "N") keeps the
 * shape arithmetic that depends on them in the graph: on an accelerator it
 * runs every time, on ORT's CPU EP with copies around it. A specialised
 * session is the model created again with those dims fixed to the values of
 * a run's inputs (ORT's free-dimension overrides), so ORT folds that
 * arithmetic away when it creates the session. It is created at the first
 * run of those shapes, on the EP the session attached, and kept for later
 * runs of the same shapes; the session keeps at most
 * VMAF_DNN_MAX_STATIC_SHAPES of them, runs of other shapes (and runs whose
 * inputs give one dim name two values) use the session as opened. When ORT
 * cannot create one, or the memory budget has no room for it (each ORT
 * session counts the model's bytes, and so does the copy kept to create
 * them from), the session creates no more and goes on with those it made
 * and the session as opened (the reason is kept:
 * vmaf_dnn_session_static_runs). Values are append-only. */
typedef enum VmafDnnStaticShapes {
    VMAF_DNN_STATIC_SHAPES_AUTO = 0, /* on every EP but ORT's CPU EP, whose
                                        kernels gain little from it while a
                                        second session costs its creation */
    VMAF_DNN_STATIC_SHAPES_OFF = 1,  /* never: every run uses the session as opened */
    VMAF_DNN_STATIC_SHAPES_ON = 2,   /* on every EP, ORT's CPU EP too */
} VmafDnnStaticShapes;

/* How a specialised session (VmafDnnStaticShapes) exchanges its inputs and
 * outputs with an accelerator. Without it ORT copies every input from the
 * caller's host memory to the device inside each run, and every output back.
 * With it the specialised session keeps one device tensor per input that ORT
 * wants in device memory (ORT >= 1.23 says where each input and output
 * lives), copies the run's data into it before the run (ORT's CopyTensors,
 * through the EP's data transfer), and binds it at the same address for
 * every run (ORT's IO binding). Where the EP runs the whole graph and can
 * record it (CUDA graphs on the CUDA EP, graph capture on WebGPU), the
 * specialised session is created with capture on and its outputs too live
 * in device tensors of fixed address, copied back after the run: the EP
 * then replays the recorded kernels instead of launching each node. Where
 * ORT refuses capture, the session is created without it and the reason is
 * kept; where ORT's recording fails in a run (seen on CUDA), or a run brings
 * another value for an input the recorded graph read in host memory (a
 * flag, a shape: held by value, up to 4096 bytes), that shape's session is
 * created again without capture and the run repeated, the reason kept. On
 * CUDA the runs in which ORT records exclude every other creation, run and
 * release of the library's CUDA sessions in the process (CUDA records in
 * its global capture mode, where another thread's allocation spoils the
 * recording). vmaf_dnn_session_static_runs reports how runs went. Values
 * are append-only. */
typedef enum VmafDnnDeviceIo {
    VMAF_DNN_DEVICE_IO_AUTO = 0, /* on specialised sessions whose inputs or
                                    outputs live in device memory */
    VMAF_DNN_DEVICE_IO_OFF = 1,  /* never: ORT copies inside each run */
    VMAF_DNN_DEVICE_IO_ON = 2,   /* on every specialised session, also where
                                    every slot lives in host memory (ORT's
                                    CPU EP: the same scores through the
                                    binding path, for tests; no gain) */
} VmafDnnDeviceIo;

/* Specialised sessions one session keeps (see VmafDnnStaticShapes). */
#define VMAF_DNN_MAX_STATIC_SHAPES 4

typedef struct VmafDnnConfig {
    VmafDnnDevice device; /* see VmafDnnDevice */
    int device_index;     /* GPU ordinal for CUDA / ROCm / OpenVINO GPU; >= 0 */
    int threads;          /* ORT intra-op threads; 0 = ORT's default (one per
                             core); 0..VMAF_DNN_MAX_THREADS. The pool does not
                             spin between runs, so the models of a frame run
                             one after another never fight over cores
                             (VMAFDNN_ORT_SPIN=1: ORT's spinning default) */
    int fp16_io;          /* non-zero: fp32 data is cast to/from FLOAT16 model slots,
                             and OpenVINO's GPU device is asked for precision=FP16
                             (its CPU device refuses FP16 and is left at FP32) */
    VmafDnnStaticShapes static_shapes; /* see VmafDnnStaticShapes; AUTO by default */
    VmafDnnDeviceIo device_io;         /* see VmafDnnDeviceIo; AUTO by default */
} VmafDnnConfig;

/* Fills `cfg` with the defaults: AUTO, device 0, ORT's default threads, no
 * fp16 I/O. A NULL config given to an open function means these defaults. */
VMAF_DNN_API void vmaf_dnn_default_config(VmafDnnConfig *cfg);

/* Walks the chain of cfg->device (NULL: defaults) the way an open does, up to
 * the EP an open would try to create the session on, without creating one,
 * and writes one line per step into `buf` (at most `size` bytes, always
 * terminated when size > 0): "<EP>: skipped: <why>" for each step passed
 * over, then "<EP>: selected (<how>)". An open can still fall back to the
 * CPU after that if ORT cannot create the session there.
 * *needed (may be NULL) gets the length of the whole text.
 * Returns 0, -EINVAL (buf NULL with size > 0, bad cfg), -ENOSYS, -ENOSPC
 * (the text was cut: see *needed), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_device_explain(const VmafDnnConfig *cfg, char *buf,
                                         size_t size, size_t *needed);

/* ------------------------------------------------------------------------ */
/* Sessions                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct VmafDnnSession VmafDnnSession;

/* Element types, numbered like ONNX's TensorProto.DataType. */
typedef enum VmafDnnElementType {
    VMAF_DNN_TYPE_UNDEFINED = 0,
    VMAF_DNN_TYPE_FLOAT = 1,
    VMAF_DNN_TYPE_UINT8 = 2,
    VMAF_DNN_TYPE_INT8 = 3,
    VMAF_DNN_TYPE_UINT16 = 4,
    VMAF_DNN_TYPE_INT16 = 5,
    VMAF_DNN_TYPE_INT32 = 6,
    VMAF_DNN_TYPE_INT64 = 7,
    VMAF_DNN_TYPE_STRING = 8,
    VMAF_DNN_TYPE_BOOL = 9,
    VMAF_DNN_TYPE_FLOAT16 = 10,
    VMAF_DNN_TYPE_DOUBLE = 11,
    VMAF_DNN_TYPE_UINT32 = 12,
    VMAF_DNN_TYPE_UINT64 = 13,
    VMAF_DNN_TYPE_BFLOAT16 = 16,
} VmafDnnElementType;

/*
 * What a model file may be and contain (docs/security.md). The defaults are
 * the safe limits; a caller may tighten them (and raise the size cap).
 * Pointers are borrowed: they must stay valid while a call (or a context
 * holding the policy) uses them.
 */
typedef struct VmafDnnModelPolicy {
    const char *model_dir;        /* non-NULL: the model, its sidecar and its
                                     external data are opened beneath this
                                     directory, walking from a descriptor of
                                     it, so no symlink or ".." (and no swap
                                     during the open) leads out: -EACCES
                                     otherwise. Default: the environment
                                     variable VMAFDNN_MODEL_DIR, or NULL */
    size_t max_model_bytes;       /* size cap of the model file (-E2BIG above
                                     it); default VMAF_DNN_DEFAULT_MAX_MODEL_BYTES */
    const char *const *allowed_ops; /* NULL: the built-in operator allow-list
                                     (standard ONNX operators) and the
                                     library's own operators of domain
                                     "org.vmafdnn" (Samples, VifInteger,
                                     AdmInteger, MotionInteger: the fused
                                     VMAF kernels, docs/vmaf.md); nothing
                                     else of that domain or any other. Else
                                     n_allowed_ops names, each on the
                                     built-in list or a library operator
                                     written "org.vmafdnn:<op>" (-EINVAL
                                     otherwise) */
    size_t n_allowed_ops;
    unsigned max_loop_nodes;      /* Loop nodes allowed; default and most
                                     VMAF_DNN_MAX_LOOP_NODES */
    /* --- budgets: what one model may cost the host ---------------------- */
    unsigned max_nodes;           /* nodes in the graph and all its subgraphs
                                     (ORT's session creation time grows
                                     faster than linearly with them); 1..
                                     VMAF_DNN_MAX_NODES, default
                                     VMAF_DNN_DEFAULT_MAX_NODES; more: -EPERM */
    unsigned max_subgraph_depth;  /* nesting of subgraphs (If/Loop bodies);
                                     0..VMAF_DNN_MAX_SUBGRAPH_DEPTH, default
                                     VMAF_DNN_MAX_SUBGRAPH_DEPTH; deeper: -EPERM */
    uint64_t max_memory_bytes;    /* memory ORT may hold for one session
                                     (its tensors, arena included) plus the
                                     per-frame buffers of a context model; an
                                     allocation past it fails the open or run
                                     with -EDQUOT. A context also caps its
                                     stored scores, all models' and appended
                                     ones together, at this figure
                                     (vmaf_dnn_feature_append). 0: no limit.
                                     Default
                                     VMAF_DNN_DEFAULT_MAX_MEMORY_BYTES, or the
                                     environment variable
                                     VMAFDNN_MAX_MEMORY_BYTES. Blocks a
                                     session freed may stay with the process
                                     for reuse until that session closes (at
                                     most 64 MiB per process, counted in no
                                     budget: docs/security.md, "Memory";
                                     VMAFDNN_NO_BLOCK_CACHE=1: none) */
    unsigned max_run_ms;          /* wall-clock time one run may take; a run
                                     past it is stopped and returns
                                     -ETIMEDOUT. 0: no limit. Default
                                     VMAF_DNN_DEFAULT_MAX_RUN_MS, or the
                                     environment variable VMAFDNN_MAX_RUN_MS */
} VmafDnnModelPolicy;

/* Fills `p` with the defaults above (reading VMAFDNN_MODEL_DIR,
 * VMAFDNN_MAX_MEMORY_BYTES and VMAFDNN_MAX_RUN_MS; a value that is not a
 * plain decimal number, or does not fit its field, is ignored). */
VMAF_DNN_API void vmaf_dnn_default_model_policy(VmafDnnModelPolicy *p);

/*
 * Opens a session on the ONNX model at `onnx_path` with `cfg` (NULL means
 * defaults) under the default model policy (vmaf_dnn_default_model_policy:
 * mind VMAFDNN_MODEL_DIR). The file is opened once (beneath the policy's
 * model_dir when it has one), read into memory (at most max_model_bytes), scanned
 * (operator allow-list, see -EPERM) and ORT is given those same bytes.
 * Execution providers are tried in the order documented on VmafDnnDevice;
 * the first whose append succeeds is used. If ORT then fails to create the
 * session with that EP, the session is created again on the CPU with the
 * same thread count, and the reason is kept (vmaf_dnn_session_fallback_reason).
 *
 * On success *out is a new session the caller owns (close it with
 * vmaf_dnn_session_close); on failure *out is left untouched.
 * Returns 0, -EINVAL (out/onnx_path NULL, or cfg has an unknown device,
 * negative device_index or threads), -ENOSYS, -ENOENT, -EACCES (unreadable,
 * or outside the policy's model_dir), -EPERM,
 * -EISDIR, -ELOOP, -ENOTDIR, -ENAMETOOLONG, -E2BIG, -EBADMSG (malformed or
 * truncated ONNX), -ENOTSUP (an input or output of a type this library
 * cannot feed or convert: inputs are FLOAT, FLOAT16 or UINT16; an output of unknown rank is accepted
 * and described with a NULL shape, see VmafDnnTensorInfo), -EINVAL also for
 * threads above VMAF_DNN_MAX_THREADS,
 * -EDQUOT (creating the session needs more than max_memory_bytes), -ENOMEM,
 * -EIO.
 * Thread-safe: any number of sessions may be opened concurrently.
 */
VMAF_DNN_API int vmaf_dnn_session_open(VmafDnnSession **out, const char *onnx_path,
                                       const VmafDnnConfig *cfg);

/* vmaf_dnn_session_open with an explicit policy (NULL: the default policy).
 * Also returns -EINVAL for a policy that loosens a built-in limit. */
VMAF_DNN_API int vmaf_dnn_session_open_with_policy(VmafDnnSession **out, const char *onnx_path,
                                                   const VmafDnnConfig *cfg,
                                                   const VmafDnnModelPolicy *policy);

/* Releases the session and everything it owns. NULL is a no-op.
 * When another thread is inside a call on this session (a run), close waits
 * for that call to return before it frees anything (to make the wait short,
 * call vmaf_dnn_session_cancel() first). A call that starts after close has
 * begun is a use after free, as with fclose(): the caller must make sure no
 * thread starts one (the Python binding turns it into a closed-handle
 * error). */
VMAF_DNN_API void vmaf_dnn_session_close(VmafDnnSession *session);

/* Asks the run in flight on `session` (if any) to stop as soon as ORT
 * reaches a point where it checks: that run returns -ECANCELED. Runs that
 * start later are not affected. Callable from any thread, including while a
 * run is in progress; not async-signal-safe (call it from a thread that
 * watches for the signal). NULL is a no-op. */
VMAF_DNN_API void vmaf_dnn_session_cancel(VmafDnnSession *session);

/* The execution provider the session really runs on: "CPU", "CUDA",
 * "OpenVINO:GPU", "OpenVINO:CPU", "OpenVINO:NPU", "ROCm", "MIGraphX:GPU",
 * "WebGpu:GPU", "NvTensorRTRTX:GPU", or "ORT-policy" (a POLICY device on ORT
 * 1.22, which cannot tell what it chose): the names of VmafDnnEp
 * (catalog.h), vmaf_dnn_ep_from_name() parses each. For a plugin EP, its
 * name as ORT reports it without "ExecutionProvider", a colon and the
 * hardware type ("OpenVINO:CPU" for onnxruntime-ep-openvino on the CPU: the
 * same string as the compiled-in EP on the same device); a plugin EP that
 * is none of the above (only a POLICY device can pick one) gives a string
 * outside that list. Static storage (valid for the life of the process);
 * never NULL for a valid session (NULL for a NULL session). */
VMAF_DNN_API const char *vmaf_dnn_session_attached_ep(const VmafDnnSession *session);

/* Why the session does not run (wholly) on the device that was asked for:
 * one line per EP that was tried and declined (with ORT's reason), and,
 * when the attached EP is not the CPU EP and ORT gave it only some of the
 * graph's nodes, a line "<EP>: took N of M nodes; the rest run on ORT's CPU
 * EP" (see vmaf_dnn_session_ep_nodes). "" when the first choice bound and
 * took every node (or ORT before 1.24, which cannot tell). Owned by the
 * session, valid until it is closed. */
VMAF_DNN_API const char *vmaf_dnn_session_fallback_reason(const VmafDnnSession *session);

/* How much of the model the attached EP really runs: ORT partitions the
 * graph, and the nodes an appended EP cannot take run on ORT's CPU EP
 * (OpenVINO:CPU takes 1 of the 28 nodes of the built-in vmaf; see
 * docs/execution_providers.md). *on_ep: nodes assigned to the EP that
 * vmaf_dnn_session_attached_ep() names; *total: all nodes, as ORT counts
 * them after its basic optimisation (folded or fused nodes are gone; the
 * nodes of Loop and If bodies count too). *on_ep == *total when the EP runs
 * the whole graph (always so on "CPU"). Counted once at open; the session
 * keeps no ORT data for it. Returns 0, -EINVAL (a NULL argument; nothing
 * written) or -ENOTSUP (ONNX Runtime before 1.24 cannot tell; nothing
 * written). Thread-safe: reads state fixed at open. */
VMAF_DNN_API int vmaf_dnn_session_ep_nodes(const VmafDnnSession *session, size_t *on_ep,
                                           size_t *total);

/* How the session's runs went with static shapes (VmafDnnConfig.
 * static_shapes), filled by vmaf_dnn_session_static_runs. */
typedef struct VmafDnnStaticRuns {
    uint64_t fixed;      /* runs made on a session specialised to their shapes */
    uint64_t as_opened;  /* the other runs */
    const char *reason;  /* why runs go on as opened: "" while nothing stops
                            specialising, else one line: static_shapes OFF,
                            AUTO on ORT's CPU EP, a model without named
                            symbolic input dims, the memory budget, or ORT's
                            reason for refusing a specialised session (set
                            once, at that run). Owned by the session, valid
                            until it is closed */
    size_t specialised;  /* specialised sessions made so far
                            (<= VMAF_DNN_MAX_STATIC_SHAPES). Their nodes per
                            EP are not reported: ORT records the assignment
                            when it partitions the graph, before it folds
                            what the fixed sizes make constant, so the count
                            would be that of the session as opened */
    uint64_t device_io;  /* of the fixed runs, those made with device-resident
                            I/O (VmafDnnDeviceIo) */
    uint64_t captured;   /* of those, runs on a session created with graph
                            capture (CUDA graphs, WebGPU graph capture) */
    uint64_t pinned;     /* of the device_io runs, those whose every input
                            copied to the device came from the EP device's
                            host-accessible memory (CUDA: pinned; a copy from
                            it is one DMA, not staged by the driver): the
                            pictures a context's models feed are kept there
                            where the EP offers it (ORT 1.23+) */
    const char *device_io_reason; /* "" while every specialised session binds
                            its I/O and captures its graph; else one line on
                            the last that does not: device_io OFF, slots in
                            host memory (AUTO), ORT before 1.23, an EP
                            without graph capture or one that runs only part
                            of the graph, or ORT's refusal. Owned by the
                            session, valid until it is closed */
    uint64_t uint8;      /* of the fixed runs, those whose pictures went to
                            the session as 8-bit samples (UINT8), half the
                            bytes of UINT16: a context's samples model
                            (UINT16 pictures that its graph only moves and
                            casts) scoring an 8-bit clip gets a session
                            specialised with its pictures declared UINT8
                            (its values bit for bit those of UINT16). The
                            environment variable VMAFDNN_UINT8=0, read when
                            a session opens, keeps them UINT16 (a benchmark's
                            comparison, an EP whose UINT8 Cast misbehaves) */
    uint64_t pictures;   /* runs fed a picture from where it lay in the EP
                            device's host-accessible memory (the memory of
                            `pinned`): a caller's buffer of
                            vmaf_dnn_picture_buffer_alloc, or the library's
                            copy of a frame in flight there; not copied into
                            the model's own block first (context.h,
                            "Picture buffers") */
} VmafDnnStaticRuns;

/* Fills *out (see VmafDnnStaticRuns). Returns 0 or -EINVAL (a NULL
 * argument). Thread-safe: the run counts are read atomically; reason and
 * specialised change only during a run that creates a specialised session,
 * so read them from the thread that runs, or between runs. */
VMAF_DNN_API int vmaf_dnn_session_static_runs(const VmafDnnSession *session,
                                              VmafDnnStaticRuns *out);

/* The configuration the session was opened with (defaults filled in). */
VMAF_DNN_API const VmafDnnConfig *vmaf_dnn_session_config(const VmafDnnSession *session);

/* A model input or output as the model declares it. */
typedef struct VmafDnnTensorInfo {
    const char *name;          /* owned by the session */
    VmafDnnElementType type;
    size_t rank;               /* <= VMAF_DNN_MAX_RANK */
    const int64_t *shape;      /* `rank` dims, -1 for a symbolic dim; owned by the session.
                                  NULL (with rank 0) for an input or output of unknown
                                  rank: the model declares no shape, and only a run tells
                                  (a true scalar has rank 0 and a non-NULL shape). Such an
                                  input takes any rank up to VMAF_DNN_MAX_RANK.
                                  ORT before 1.24 cannot tell the two apart and reports
                                  both as scalars. */
} VmafDnnTensorInfo;

/* Number of model inputs / outputs. NULL session: 0. */
VMAF_DNN_API size_t vmaf_dnn_session_input_count(const VmafDnnSession *session);
VMAF_DNN_API size_t vmaf_dnn_session_output_count(const VmafDnnSession *session);

/* Describes input / output slot `index`. The pointers written into `info`
 * stay valid until the session is closed.
 * Returns 0, -EINVAL (NULL argument or index out of range). */
VMAF_DNN_API int vmaf_dnn_session_input_info(const VmafDnnSession *session, size_t index,
                                             VmafDnnTensorInfo *info);
VMAF_DNN_API int vmaf_dnn_session_output_info(const VmafDnnSession *session, size_t index,
                                              VmafDnnTensorInfo *info);

/* One input to vmaf_dnn_session_run: caller-owned fp32 data, read only
 * during the call. */
typedef struct VmafDnnInput {
    const char *name;     /* the model input's name, or NULL: the slot at the
                             same position in the inputs array */
    const float *data;    /* product(shape) fp32 values, C order */
    const int64_t *shape; /* `rank` dims, each >= 1; must match the model's
                             rank and every fixed dim (any rank up to
                             VMAF_DNN_MAX_RANK where the model declares no
                             shape: VmafDnnTensorInfo) */
    size_t rank;
} VmafDnnInput;

/* One requested output: the library writes fp32 values into caller-owned
 * `data` and reports the shape it wrote. */
typedef struct VmafDnnOutput {
    const char *name;   /* the model output's name, or NULL: the slot at the
                           same position in the outputs array */
    float *data;        /* room for `capacity` fp32 values */
    size_t capacity;    /* in elements */
    size_t count;       /* out: elements written; on -ENOSPC, elements needed */
    size_t rank;        /* out: rank of the result */
    int64_t shape[VMAF_DNN_MAX_RANK]; /* out: dims of the result */
} VmafDnnOutput;

/*
 * Runs the model once. Every model input must be given exactly once (by name,
 * or by position when name is NULL); any subset of the outputs may be
 * requested. Outputs of type FLOAT, FLOAT16, DOUBLE, INT32 and INT64 are
 * converted to fp32. Inputs of FLOAT16 slots are cast from fp32 when the
 * session has fp16_io. UINT16 slots (a picture's own samples, as the
 * library's sample-input models take them) are given fp32 values that are
 * whole numbers 0..65535, converted exactly. Other input slots must be FLOAT.
 *
 * Returns 0, -EINVAL (NULL argument, unknown or repeated name, missing input,
 * wrong rank or dim; the message names the tensor), -ERANGE (a value for a
 * UINT16 slot that is not a whole number 0..65535; the message names the
 * input and the element), -ENOTSUP (a FLOAT16 slot
 * without fp16_io, or a slot of a type that cannot be fed from fp32), -ENOSPC
 * (an output's capacity is too small: its count holds the elements needed and
 * no output data is valid), -EBUSY, -ENOMEM, -ENOEXEC (the model failed
 * while running: ORT's message says which node), -ETIMEDOUT (the run took
 * longer than the policy's max_run_ms), -ECANCELED (vmaf_dnn_session_cancel),
 * -EDQUOT (the run needed more memory than max_memory_bytes), -EIO (ORT
 * refused a step around the run, such as a copy to or from the device or a
 * binding of device-resident I/O, VmafDnnDeviceIo; the message names the
 * input or output).
 * Every requested output carries the values the model computed, whichever
 * buffer ORT produced them in (an output that is also an input included).
 * Thread-safety: a session runs one call at a time; a second thread calling
 * while a run is in progress gets -EBUSY. Different sessions run in parallel.
 * vmaf_dnn_session_cancel and vmaf_dnn_session_close may be called from
 * another thread during a run (see there).
 */
VMAF_DNN_API int vmaf_dnn_session_run(VmafDnnSession *session,
                                      const VmafDnnInput *inputs, size_t n_inputs,
                                      VmafDnnOutput *outputs, size_t n_outputs);

/*
 * Runs an image-to-image model on one plane. The model has one input and one
 * output, both rank 4 NCHW with N = C = 1; H and W are fixed to the plane's
 * size or symbolic. Samples are normalised to [0,1] by 2^bpc - 1 (bpc = 8 for
 * luma8), and the model's output is scaled back by the same factor, rounded to
 * nearest and clamped to [0, 2^bpc - 1].
 *
 * luma8: 8-bit samples. plane16: samples of `bpc` bits (9..16) in uint16_t.
 * Strides are in bytes and at least width * sample size. `src` and `dst` may
 * be the same plane. Buffers are caller-owned and used only during the call.
 *
 * The output must be exactly [1,1,height,width]: a fixed shape that is not
 * (a transposed [1,1,W,H], another rank, an unknown rank) is refused before
 * running, a symbolic one after the run, naming the output and both shapes.
 *
 * Returns 0, -EINVAL (NULL pointer, zero size, stride too small, bpc outside
 * 9..16 for plane16, or a model that is not image-to-image at this size: the
 * message says which dim or shape), -ENOTSUP (a UINT16 input: these helpers
 * feed normalised fp32), and every code of vmaf_dnn_session_run.
 */
VMAF_DNN_API int vmaf_dnn_session_run_luma8(VmafDnnSession *session,
                                            const uint8_t *src, ptrdiff_t src_stride,
                                            uint8_t *dst, ptrdiff_t dst_stride,
                                            unsigned width, unsigned height);
VMAF_DNN_API int vmaf_dnn_session_run_plane16(VmafDnnSession *session,
                                              const uint16_t *src, ptrdiff_t src_stride,
                                              uint16_t *dst, ptrdiff_t dst_stride,
                                              unsigned width, unsigned height, unsigned bpc);

/* ------------------------------------------------------------------------ */
/* fp16 conversion                                                          */
/* ------------------------------------------------------------------------ */

/* IEEE binary32 -> binary16, round to nearest, ties to even; overflow gives
 * +-Inf; NaN stays NaN with its sign and the top 10 payload bits (a payload
 * that would become 0 becomes 1, and a signalling NaN stays signalling). The
 * result is bit-identical to numpy's astype(np.float16) for every input, NaNs
 * included.
 * Integer arithmetic only, so results are identical on every platform.
 * `src` and `dst` must not overlap. Never fails. Thread-safe. */
VMAF_DNN_API void vmaf_dnn_fp32_to_fp16(const float *src, uint16_t *dst, size_t n);

/* IEEE binary16 -> binary32, exact for all 65536 inputs (NaN payloads kept,
 * as numpy's astype(np.float32) does).
 * `src` and `dst` must not overlap. Never fails. Thread-safe. */
VMAF_DNN_API void vmaf_dnn_fp16_to_fp32(const uint16_t *src, float *dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* VMAFDNN_VMAFDNN_H */
