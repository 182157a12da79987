/* The only file that talks to ONNX Runtime, with ort_custom_ops.c (see
 * ort_backend.h). */
#define _GNU_SOURCE /* dladdr() */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <onnxruntime_c_api.h>

#include "block_cache.h"
#include "error.h"
#include "ort_backend.h"
#include "cuda_kernels.h"
#include "loadable.h"
#include "ort_custom_ops.h"
#include "ort_device_io.h"
#include "onnx_scan.h"
#include "picture_memory.h"

/* Oldest ORT release whose API has every member this file calls. */
#define ORT_MIN_MINOR 20

#define INSTALL_HINT                                                              \
    "install it with `pip install onnxruntime` (or onnxruntime-gpu / "            \
    "onnxruntime-openvino) or your system's libonnxruntime package, or set "      \
    "VMAFDNN_ORT_LIBRARY to the path of libonnxruntime.so"

/* ------------------------------------------------------------------------ */
/* Memory budget                                                            */
/* ------------------------------------------------------------------------ */

/* ORT takes every CPU tensor of a session (initializers, the results of
 * constant folding, intermediates, outputs, a Loop's scan outputs) from the
 * CPU allocator the session uses. One allocator of ours is registered with
 * the env and every session is told to use it ("session.use_env_allocators");
 * it charges each block to the account of the session being created or run
 * on the calling thread (ORT's sequential executor allocates on the thread
 * that calls Run, and so does constant folding inside CreateSession) and
 * refuses a block that would take the account past its limit. ORT's own
 * allocators refuse by throwing (its arena throws, and ORT's tensor code does
 * not check for NULL: a NULL block is a crash), so a refusal here throws
 * std::bad_alloc too, built with the C++ runtime ORT itself loaded (see
 * resolve_cxx_throw). ORT turns it into a failed node or a failed session
 * creation, and the mark on the account turns that failure into -EDQUOT. A
 * block taken on a thread with no current session (none seen so far) is not
 * charged. A block records its account, so it may be freed on any thread and
 * after the run. The account lives while its session or any block does. */
typedef struct Account {
    uint64_t serial;             /* the session's, unique in the process: the
                                    block cache's owner tag */
    atomic_uint_least64_t used;  /* bytes of live blocks */
    uint64_t limit;              /* 0: none */
    atomic_uint_least64_t refused; /* size of the last refused block; 0: none */
    atomic_long refs;            /* the session + every live block */
} Account;

static _Thread_local Account *current_account;

/* Keeps the 64-byte alignment ORT's kernels (MLAS) expect of its blocks. */
#define BLOCK_HEADER 64

typedef struct BlockHeader {
    Account *account;
    size_t size; /* what ORT asked for, charged to the account; the block is
                    BLOCK_HEADER + size bytes */
} BlockHeader;

static atomic_uint_least64_t next_serial;

static OrtMemoryInfo *budget_memory_info;

/* What throwing std::bad_alloc takes, from the libstdc++ ORT links: the
 * Itanium C++ ABI entry points and std::bad_alloc's type info, vtable and
 * destructor. Resolved once at load; all NULL when ORT does not use that
 * runtime (then the memory budget is not enforced, see budget_alloc). */
static struct {
    void *(*allocate_exception)(size_t);
    void (*throw_exception)(void *, void *, void (*)(void *));
    void *type_info;
    char *vtable;
    void (*destructor)(void *);
} cxx;

static void resolve_cxx_throw(void *ort_handle)
{
    void *sym[5] = {dlsym(ort_handle, "__cxa_allocate_exception"),
                    dlsym(ort_handle, "__cxa_throw"), dlsym(ort_handle, "_ZTISt9bad_alloc"),
                    dlsym(ort_handle, "_ZTVSt9bad_alloc"), dlsym(ort_handle, "_ZNSt9bad_allocD1Ev")};
    for (int i = 0; i < 5; i++)
        if (!sym[i])
            return;
    memcpy(&cxx.allocate_exception, &sym[0], sizeof(sym[0]));
    memcpy(&cxx.throw_exception, &sym[1], sizeof(sym[1]));
    cxx.type_info = sym[2];
    cxx.vtable = sym[3];
    memcpy(&cxx.destructor, &sym[4], sizeof(sym[4]));
}

/* `throw std::bad_alloc();`: the object is a bare vtable pointer, which
 * points two words into the vtable symbol (past offset-to-top and the type
 * info), as the Itanium ABI lays it out. Unwinds through this C frame (x86-64
 * and AArch64 compilers emit unwind tables for C by default) into ORT. */
static void throw_bad_alloc(void)
{
    void **object = cxx.allocate_exception(sizeof(void *));
    *object = cxx.vtable + 2 * sizeof(void *);
    cxx.throw_exception(object, cxx.type_info, cxx.destructor);
}

static void account_unref(Account *acct)
{
    if (acct && atomic_fetch_sub(&acct->refs, 1) == 1)
        free(acct);
}

/* Charges `bytes` that ORT holds for a session outside the allocator: the
 * model's own bytes, once per ORT session created from them (releases that
 * keep the initializers where the parsed model put them, as 1.32 does, never
 * ask the allocator for them; where a release copies them through it, they
 * count twice, which errs on the safe side). 0, or -EDQUOT (nothing
 * charged) when the budget has no room for them. */
static void account_release(Account *acct, uint64_t bytes)
{
    atomic_fetch_sub(&acct->used, bytes);
}

static int account_charge(Account *acct, uint64_t bytes)
{
    uint64_t used = atomic_fetch_add(&acct->used, bytes) + bytes;
    if (acct->limit && used > acct->limit) {
        account_release(acct, bytes);
        return -EDQUOT;
    }
    return 0;
}

/* A block charged to the calling thread's account. A refusal (past the
 * budget, or the host out of memory) throws std::bad_alloc into ORT when
 * `for_ort`, else returns NULL: the library's own kernels are C and must
 * unwind themselves (ort_custom_ops.h). */
static void *take_block(size_t size, int for_ort)
{
    Account *acct = current_account;
    if (size > SIZE_MAX - BLOCK_HEADER)
        return NULL;
    if (acct) {
        uint64_t used = atomic_fetch_add(&acct->used, size) + size;
        if (acct->limit && used > acct->limit && (cxx.throw_exception || !for_ort)) {
            atomic_fetch_sub(&acct->used, size);
            atomic_store(&acct->refused, size ? (uint64_t)size : 1);
            if (!for_ort)
                return NULL;
            throw_bad_alloc();
        }
        atomic_fetch_add(&acct->refs, 1);
    }
    /* A large block freed earlier, of exactly this size (block_cache.h). */
    const size_t capacity = BLOCK_HEADER + size;
    void *block = vdnn_block_cache_take(capacity);
    if (!block && posix_memalign(&block, BLOCK_HEADER, capacity) != 0) {
        /* The blocks kept for reuse go back first. */
        block = NULL;
        vdnn_block_cache_purge();
        if (posix_memalign(&block, BLOCK_HEADER, capacity) != 0)
            block = NULL;
    }
    if (!block) {
        if (acct) {
            atomic_fetch_sub(&acct->used, size);
            account_unref(acct);
        }
        if (for_ort && cxx.throw_exception) /* the host is out of memory: as ORT's arena would */
            throw_bad_alloc();
        return NULL;
    }
    BlockHeader *h = block;
    h->account = acct;
    h->size = size;
    return (char *)block + BLOCK_HEADER;
}

static void *ORT_API_CALL budget_alloc(OrtAllocator *self, size_t size)
{
    (void)self;
    return take_block(size, 1);
}

static void ORT_API_CALL budget_free(OrtAllocator *self, void *p)
{
    (void)self;
    if (!p)
        return;
    BlockHeader *h = (BlockHeader *)(void *)((char *)p - BLOCK_HEADER);
    uint64_t owner = 0;
    if (h->account) {
        owner = h->account->serial;
        atomic_fetch_sub(&h->account->used, h->size);
        account_unref(h->account);
    }
    if (!vdnn_block_cache_put(h, BLOCK_HEADER + h->size, owner))
        free(h);
}

static const OrtMemoryInfo *ORT_API_CALL budget_info(const OrtAllocator *self)
{
    (void)self;
    return budget_memory_info;
}

/* Version 18 (Reserve) is the newest member this allocator fills in; ORT
 * reads later members (GetStats, AllocOnStream) only from allocators that
 * claim a newer version. */
static OrtAllocator budget_allocator = {
    .version = 18,
    .Alloc = budget_alloc,
    .Free = budget_free,
    .Info = budget_info,
    .Reserve = budget_alloc,
};

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */
/* ------------------------------------------------------------------------ */

/* Written once under `load_lock`, then read without locking: `api` is
 * published last with release semantics, so a reader that sees it non-NULL
 * (acquire) also sees the fields written before it. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const OrtApi *) loaded_api;
static OrtEnv *env;
/* The library's own operators, added to every session's options (created
 * at load, kept for the process: see ort_custom_ops.h). */
static OrtCustomOpDomain *custom_ops;
/* The same with VMAF's ops on CUDA too (the GPU kernels of csrc/gpu), made
 * when a session first goes to CUDA and the kernels are ready on its device
 * (ops_for_ep); kept for the process like custom_ops. */
static pthread_mutex_t cuda_ops_lock = PTHREAD_MUTEX_INITIALIZER;
static OrtCustomOpDomain *custom_ops_cuda;
static const char *ort_version_string;
static int ort_api_version;
static int ort_minor; /* the release's: 1.<ort_minor>; ort_api_version is at
                         most the headers' (ORT_API_VERSION) */
static char ort_path[PATH_MAX];

static const OrtApi *api(void)
{
    return atomic_load_explicit(&loaded_api, memory_order_acquire);
}

/* The file a loaded symbol lives in, resolved, so that "libonnxruntime.so.1"
 * and the wheel's full path compare equal when they are the same library. */
static void resolve_library_path(void *symbol, const char *fallback, char *dst)
{
    Dl_info info;
    const char *name = fallback;
    if (dladdr(symbol, &info) && info.dli_fname)
        name = info.dli_fname;
    if (!realpath(name, dst))
        snprintf(dst, PATH_MAX, "%s", name);
}

static int parse_version(const char *v, int *major, int *minor)
{
    char *end;
    long maj = strtol(v, &end, 10);
    if (end == v || *end != '.')
        return -1;
    const char *p = end + 1;
    long min = strtol(p, &end, 10);
    if (end == p || maj < 0 || maj > INT_MAX || min < 0 || min > INT_MAX)
        return -1;
    *major = (int)maj;
    *minor = (int)min;
    return 0;
}

/* ORT's own log goes to stderr. Every failure it reports also comes back as
 * a status (and from there into vmaf_dnn_last_error or the fallback reason),
 * so by default only fatal messages are printed: an AUTO open on a machine
 * without CUDA must not spray provider-loading errors at the user.
 * VMAFDNN_ORT_LOG_LEVEL=0..4 (verbose..fatal) shows more when debugging. */
static OrtLoggingLevel log_level(void)
{
    const char *v = getenv("VMAFDNN_ORT_LOG_LEVEL");
    if (v && v[0] >= '0' && v[0] <= '4' && v[1] == '\0')
        return (OrtLoggingLevel)(v[0] - '0');
    return ORT_LOGGING_LEVEL_FATAL;
}

static int load_locked(const char *path)
{
    struct stat sb;
    if (strchr(path, '/') && vdnn_loadable_file(path, &sb) != 0)
        return vdnn_fail(-ENOSYS, "cannot load ONNX Runtime from %s (%s); " INSTALL_HINT, path,
                         errno == EINVAL ? "not a regular file" : strerror(errno));
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return vdnn_fail(-ENOSYS, "cannot load ONNX Runtime from %s (%s); " INSTALL_HINT,
                         path, dlerror());

    void *sym = dlsym(handle, "OrtGetApiBase");
    if (!sym) {
        dlclose(handle);
        return vdnn_fail(-ENOSYS, "%s exports no OrtGetApiBase: not an ONNX Runtime library",
                         path);
    }
    const OrtApiBase *(*get_api_base)(void);
    memcpy(&get_api_base, &sym, sizeof(sym)); /* object -> function pointer, as POSIX allows */
    const OrtApiBase *base = get_api_base();
    const char *version = base->GetVersionString();

    /* Asking GetApi() for a version the library lacks prints to stderr, so
     * the version is derived from the version string instead: API N is
     * release 1.N, and headers of API M can drive any release >= 1.M. */
    int major, minor;
    if (parse_version(version, &major, &minor) || major != 1 || minor < ORT_MIN_MINOR) {
        dlclose(handle);
        return vdnn_fail(-ENOSYS, "ONNX Runtime %s at %s is not supported: libvmafdnn needs 1.%d "
                         "or newer; %s", version, path, ORT_MIN_MINOR, INSTALL_HINT);
    }
    int api_version = minor < ORT_API_VERSION ? minor : ORT_API_VERSION;
    const OrtApi *a = base->GetApi((uint32_t)api_version);
    if (!a) {
        dlclose(handle);
        return vdnn_fail(-ENOSYS, "ONNX Runtime %s at %s refused API version %d", version, path,
                         api_version);
    }

    OrtEnv *new_env = NULL;
    OrtStatus *st = a->CreateEnv(log_level(), "vmafdnn", &new_env);
    if (st) {
        int rc = vdnn_fail(-ENOSYS, "ONNX Runtime %s at %s failed to create its environment: %s",
                           version, path, a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        dlclose(handle);
        return rc;
    }

    /* The budget allocator is registered once, for the life of the env. */
    int rc_ops;
    resolve_cxx_throw(handle);
    if ((st = a->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault,
                                     &budget_memory_info)) ||
        (st = a->RegisterAllocator(new_env, &budget_allocator))) {
        int rc = vdnn_fail(-ENOSYS, "ONNX Runtime %s at %s refused the memory-budget allocator: %s",
                           version, path, a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        if (budget_memory_info)
            a->ReleaseMemoryInfo(budget_memory_info);
        budget_memory_info = NULL;
        a->ReleaseEnv(new_env);
        dlclose(handle);
        return rc;
    }

    if ((rc_ops = vdnn_ort_custom_ops_create(a, api_version, 0, &custom_ops))) {
        a->ReleaseEnv(new_env);
        dlclose(handle);
        return rc_ops;
    }

    /* The library stays loaded (and the env alive) for the life of the
     * process: sessions may be opened at any time, and tearing ORT down at
     * exit is a known source of crashes in its thread pools. */
    env = new_env;
    ort_version_string = version;
    ort_api_version = api_version;
    ort_minor = minor;
    resolve_library_path(sym, path, ort_path);
    atomic_store_explicit(&loaded_api, a, memory_order_release);
    return 0;
}

static void register_fork_handlers(void);
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

int vdnn_ort_load(const char *path)
{
    if (!path || !*path)
        return vdnn_fail(-EINVAL, "ONNX Runtime library path is NULL or empty");
    pthread_once(&fork_handlers_once, register_fork_handlers);
    pthread_mutex_lock(&load_lock);
    int rc;
    if (api()) {
        char wanted[PATH_MAX];
        if (!realpath(path, wanted))
            snprintf(wanted, sizeof(wanted), "%s", path);
        rc = strcmp(wanted, ort_path) == 0
                 ? 0
                 : vdnn_fail(-EBUSY, "ONNX Runtime is already loaded from %s; cannot switch to %s",
                             ort_path, path);
    } else {
        rc = load_locked(path);
    }
    pthread_mutex_unlock(&load_lock);
    return rc;
}

int vdnn_ort_ensure_loaded(void)
{
    if (api())
        return 0;
    pthread_once(&fork_handlers_once, register_fork_handlers);
    pthread_mutex_lock(&load_lock);
    int rc = 0;
    if (!api()) {
        const char *from_env = getenv("VMAFDNN_ORT_LIBRARY");
        if (from_env && *from_env) {
            /* An explicit choice that fails is reported, not replaced by a
             * library the user did not ask for. */
            rc = load_locked(from_env);
        } else {
            rc = load_locked("libonnxruntime.so.1");
        }
    }
    pthread_mutex_unlock(&load_lock);
    return rc;
}

const char *vdnn_ort_version(void)
{
    return api() ? ort_version_string : NULL;
}

int vdnn_ort_api_version(void)
{
    return api() ? ort_api_version : 0;
}

const char *vdnn_ort_library_path(void)
{
    return api() ? ort_path : NULL;
}

/* ------------------------------------------------------------------------ */
/* Status helpers                                                           */
/* ------------------------------------------------------------------------ */

/* Turns a failed OrtStatus into the library's error (and releases it).
 * `what` says which step failed. */
static int status_error(OrtStatus *st, int err, const char *what)
{
    int rc = vdnn_fail(err, "%s: %s", what, api()->GetErrorMessage(st));
    api()->ReleaseStatus(st);
    return rc;
}

/* The errno for a failed CreateSession. */
static int create_errno(OrtStatus *st)
{
    switch (api()->GetErrorCode(st)) {
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
        return -EBADMSG;
    case ORT_NOT_IMPLEMENTED:
        return -ENOTSUP;
    case ORT_NO_SUCHFILE:
        return -ENOENT;
    default:
        return -EIO;
    }
}

/* A growing text buffer for the fallback log. Allocation failures leave the
 * log shorter, never the session unusable. */
typedef struct Log {
    char *text;
    size_t len;
} Log;

static void log_line(Log *log, const char *ep, const char *what, const char *msg)
{
    /* One line per EP: ORT's messages may end in newlines or spaces. */
    size_t msg_len = strlen(msg);
    while (msg_len && (msg[msg_len - 1] == '\n' || msg[msg_len - 1] == ' '))
        msg_len--;
    size_t add = strlen(ep) + strlen(what) + msg_len + 8;
    char *grown = realloc(log->text, log->len + add);
    if (!grown)
        return;
    log->text = grown;
    int n = snprintf(log->text + log->len, add, "%s: %s%.*s\n", ep, what, (int)msg_len, msg);
    for (int i = 0; i < n - 1; i++) /* keep inner newlines from splitting the line */
        if (log->text[log->len + (size_t)i] == '\n')
            log->text[log->len + (size_t)i] = ' ';
    log->len += (size_t)n;
}

/* ------------------------------------------------------------------------ */
/* Execution providers                                                      */
/* ------------------------------------------------------------------------ */

/* First ORT API with plugin EP libraries and EP devices (the EP ABI). Older
 * OrtApi structs end before these members: never read them there. */
#define ORT_EP_ABI_API 22
/* First ORT API that tells which EP device a session's inputs live on. */
#define ORT_SESSION_EP_DEVICE_API 23
/* First ORT API that tells which EP each node was assigned to
 * (Session_GetEpGraphAssignmentInfo, recorded on request at creation). */
#define ORT_EP_GRAPH_INFO_API 24

/* One step of a device chain. EP_POLICY hands the choice to ORT. */
typedef enum EpKind {
    EP_CPU, EP_CUDA, EP_OPENVINO_GPU, EP_OPENVINO_CPU, EP_ROCM, EP_OPENVINO_NPU,
    EP_TENSORRT_RTX, EP_MIGRAPHX, EP_WEBGPU, EP_POLICY
} EpKind;

/* name: what attached_ep says when the step binds (a plugin EP device of the
 * same EP and hardware type gives the same string, see device_attached_name).
 * ort_ep / hw: the EP devices a plugin offers for this step. */
static const struct {
    const char *name;
    const char *ort_ep;
    OrtHardwareDeviceType hw;
} ep_kinds[] = {
    [EP_CPU] = {"CPU", NULL, OrtHardwareDeviceType_CPU},
    [EP_CUDA] = {"CUDA", "CUDAExecutionProvider", OrtHardwareDeviceType_GPU},
    [EP_OPENVINO_GPU] = {"OpenVINO:GPU", "OpenVINOExecutionProvider", OrtHardwareDeviceType_GPU},
    [EP_OPENVINO_CPU] = {"OpenVINO:CPU", "OpenVINOExecutionProvider", OrtHardwareDeviceType_CPU},
    [EP_ROCM] = {"ROCm", "ROCMExecutionProvider", OrtHardwareDeviceType_GPU},
    [EP_OPENVINO_NPU] = {"OpenVINO:NPU", "OpenVINOExecutionProvider", OrtHardwareDeviceType_NPU},
    [EP_TENSORRT_RTX] = {"NvTensorRTRTX:GPU", "NvTensorRTRTXExecutionProvider",
                         OrtHardwareDeviceType_GPU},
    [EP_MIGRAPHX] = {"MIGraphX:GPU", "MIGraphXExecutionProvider", OrtHardwareDeviceType_GPU},
    [EP_WEBGPU] = {"WebGpu:GPU", "WebGpuExecutionProvider", OrtHardwareDeviceType_GPU},
    [EP_POLICY] = {"ORT-policy", NULL, OrtHardwareDeviceType_CPU},
};

/* The order in which each device setting tries EPs (vmafdnn.h says why).
 * Every list ends with the CPU EP, which is always there: a device is a
 * hint, not a requirement. */
static const EpKind *ep_order(VmafDnnDevice device, size_t *n)
{
    static const EpKind order_auto[] = {EP_CUDA, EP_TENSORRT_RTX, EP_OPENVINO_GPU,
                                        EP_OPENVINO_NPU, EP_OPENVINO_CPU, EP_MIGRAPHX,
                                        EP_ROCM, EP_WEBGPU, EP_CPU};
    static const EpKind order_cuda[] = {EP_CUDA, EP_CPU};
    static const EpKind order_openvino[] = {EP_OPENVINO_GPU, EP_OPENVINO_NPU, EP_OPENVINO_CPU,
                                            EP_CPU};
    static const EpKind order_openvino_cpu[] = {EP_OPENVINO_CPU, EP_CPU};
    static const EpKind order_openvino_gpu[] = {EP_OPENVINO_GPU, EP_CPU};
    static const EpKind order_rocm[] = {EP_ROCM, EP_MIGRAPHX, EP_CPU};
    static const EpKind order_migraphx[] = {EP_MIGRAPHX, EP_ROCM, EP_CPU};
    static const EpKind order_webgpu[] = {EP_WEBGPU, EP_CPU};
    static const EpKind order_tensorrt_rtx[] = {EP_TENSORRT_RTX, EP_CPU};
    static const EpKind order_policy[] = {EP_POLICY, EP_CPU};
    static const EpKind order_cpu[] = {EP_CPU};
#define ORDER(list) (*n = sizeof(list) / sizeof(list[0]), list)
    switch (device) {
    case VMAF_DNN_DEVICE_AUTO: return ORDER(order_auto);
    case VMAF_DNN_DEVICE_CUDA: return ORDER(order_cuda);
    case VMAF_DNN_DEVICE_OPENVINO: return ORDER(order_openvino);
    case VMAF_DNN_DEVICE_OPENVINO_CPU: return ORDER(order_openvino_cpu);
    case VMAF_DNN_DEVICE_OPENVINO_GPU: return ORDER(order_openvino_gpu);
    case VMAF_DNN_DEVICE_ROCM: return ORDER(order_rocm);
    case VMAF_DNN_DEVICE_MIGRAPHX: return ORDER(order_migraphx);
    case VMAF_DNN_DEVICE_WEBGPU: return ORDER(order_webgpu);
    case VMAF_DNN_DEVICE_TENSORRT_RTX: return ORDER(order_tensorrt_rtx);
    case VMAF_DNN_DEVICE_POLICY_PREFER_CPU:
    case VMAF_DNN_DEVICE_POLICY_PREFER_GPU:
    case VMAF_DNN_DEVICE_POLICY_PREFER_NPU:
    case VMAF_DNN_DEVICE_POLICY_MAX_PERFORMANCE:
    case VMAF_DNN_DEVICE_POLICY_MAX_EFFICIENCY:
    case VMAF_DNN_DEVICE_POLICY_MIN_POWER:
        if (ort_api_version >= ORT_EP_ABI_API)
            return ORDER(order_policy);
        return ORDER(order_auto); /* the caller logs why */
    case VMAF_DNN_DEVICE_CPU: break;
    }
    return ORDER(order_cpu);
#undef ORDER
}

static int is_policy(VmafDnnDevice d)
{
    return d >= VMAF_DNN_DEVICE_POLICY_PREFER_CPU && d <= VMAF_DNN_DEVICE_POLICY_MIN_POWER;
}

static OrtExecutionProviderDevicePolicy ort_policy(VmafDnnDevice d)
{
    switch (d) {
    case VMAF_DNN_DEVICE_POLICY_PREFER_CPU: return OrtExecutionProviderDevicePolicy_PREFER_CPU;
    case VMAF_DNN_DEVICE_POLICY_PREFER_GPU: return OrtExecutionProviderDevicePolicy_PREFER_GPU;
    case VMAF_DNN_DEVICE_POLICY_PREFER_NPU: return OrtExecutionProviderDevicePolicy_PREFER_NPU;
    case VMAF_DNN_DEVICE_POLICY_MAX_EFFICIENCY:
        return OrtExecutionProviderDevicePolicy_MAX_EFFICIENCY;
    case VMAF_DNN_DEVICE_POLICY_MIN_POWER:
        return OrtExecutionProviderDevicePolicy_MIN_OVERALL_POWER;
    default: return OrtExecutionProviderDevicePolicy_MAX_PERFORMANCE;
    }
}

static const char *hw_name(OrtHardwareDeviceType t)
{
    switch (t) {
    case OrtHardwareDeviceType_GPU: return "GPU";
    case OrtHardwareDeviceType_NPU: return "NPU";
    default: return "CPU";
    }
}

/* --- Plugin EP libraries and the EP devices ORT offers ------------------- */

/* Everything below is guarded by ep_lock. Entries are only ever added and
 * their strings never freed: the public info structs hand them out for the
 * life of the process, and ORT's EP devices live as long as their library
 * stays registered, which is forever (sessions may use it at any time). */
typedef struct EpLibrary {
    char *name, *path;
    const char *source;
    int status;
    char *reason;
} EpLibrary;

typedef struct EpDevice {
    const OrtEpDevice *device;
    const char *library;  /* registration name; NULL: built into ORT */
    const char *attached; /* attached_ep when a session binds it */
    int index;            /* among the devices of its EP and hardware type */
} EpDevice;

static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;
static EpLibrary *ep_libs;
static size_t n_ep_libs;
static EpDevice *ep_devs;
static size_t n_ep_devs;
static int ep_setup_done; /* built-in devices listed, VMAFDNN_EP_LIBRARIES read */

/* Attached names that are not a static string (plugin EPs this file does not
 * know), interned for the life of the process. */
#define MAX_INTERNED 32
static char interned[MAX_INTERNED][96];
static size_t n_interned;

static const char *intern_locked(const char *name)
{
    for (size_t k = 0; k < sizeof(ep_kinds) / sizeof(ep_kinds[0]); k++)
        if (strcmp(ep_kinds[k].name, name) == 0)
            return ep_kinds[k].name;
    for (size_t k = 0; k < n_interned; k++)
        if (strcmp(interned[k], name) == 0)
            return interned[k];
    if (n_interned == MAX_INTERNED)
        return "plugin"; /* 32 distinct plugin EPs in one process: not a real case */
    snprintf(interned[n_interned], sizeof(interned[0]), "%s", name);
    return interned[n_interned++];
}

/* "OpenVINOExecutionProvider" on a CPU -> "OpenVINO:CPU"; ORT's own CPU EP
 * -> "CPU". ep_lock held. */
static const char *device_attached_name(const char *ep_name, OrtHardwareDeviceType hw)
{
    static const char suffix[] = "ExecutionProvider";
    if (strcmp(ep_name, "CPUExecutionProvider") == 0)
        return ep_kinds[EP_CPU].name;
    /* A known EP on its step's hardware reads as that step, whether it came
     * compiled in or as a plugin ("CUDA", not "CUDA:GPU"), so the string is
     * one of the documented names (vmaf_dnn_ep_from_string). */
    for (size_t k = 0; k < sizeof(ep_kinds) / sizeof(ep_kinds[0]); k++)
        if (ep_kinds[k].ort_ep && ep_kinds[k].hw == hw &&
            strcasecmp(ep_kinds[k].ort_ep, ep_name) == 0)
            return ep_kinds[k].name;
    size_t len = strlen(ep_name), sl = sizeof(suffix) - 1;
    if (len > sl && strcmp(ep_name + len - sl, suffix) == 0)
        len -= sl;
    char name[96];
    snprintf(name, sizeof(name), "%.*s:%s", (int)(len > 80 ? 80 : len), ep_name, hw_name(hw));
    return intern_locked(name);
}

/* Adds the devices ORT offers that are not listed yet, crediting them to
 * `library` (NULL: ORT's own). ep_lock held. */
static void list_devices_locked(const char *library)
{
    const OrtApi *a = api();
    const OrtEpDevice *const *devices = NULL;
    size_t n = 0;
    OrtStatus *st = a->GetEpDevices(env, &devices, &n);
    if (st) {
        a->ReleaseStatus(st); /* nothing offered is what the list then says */
        return;
    }
    EpDevice *grown = realloc(ep_devs, (n_ep_devs + n + 1) * sizeof(*grown));
    if (!grown)
        return;
    ep_devs = grown;
    for (size_t i = 0; i < n; i++) {
        int known = 0;
        for (size_t j = 0; j < n_ep_devs && !known; j++)
            known = ep_devs[j].device == devices[i];
        if (known)
            continue;
        const char *ep_name = a->EpDevice_EpName(devices[i]);
        OrtHardwareDeviceType hw = a->HardwareDevice_Type(a->EpDevice_Device(devices[i]));
        int index = 0;
        for (size_t j = 0; j < n_ep_devs; j++)
            if (strcmp(a->EpDevice_EpName(ep_devs[j].device), ep_name) == 0 &&
                a->HardwareDevice_Type(a->EpDevice_Device(ep_devs[j].device)) == hw)
                index++;
        ep_devs[n_ep_devs++] = (EpDevice){devices[i], library,
                                          device_attached_name(ep_name, hw), index};
    }
}

static char *dup_or_empty(const char *s)
{
    char *d = strdup(s ? s : "");
    return d;
}

/* Records one registration attempt. ep_lock held. Returns the entry or NULL
 * (out of memory). */
static EpLibrary *add_library_locked(const char *name, const char *path, const char *source)
{
    EpLibrary *grown = realloc(ep_libs, (n_ep_libs + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    ep_libs = grown;
    EpLibrary *lib = &ep_libs[n_ep_libs];
    lib->name = dup_or_empty(name);
    lib->path = dup_or_empty(path);
    lib->reason = NULL;
    lib->source = source;
    lib->status = 0;
    if (!lib->name || !lib->path) {
        free(lib->name);
        free(lib->path);
        return NULL;
    }
    n_ep_libs++;
    return lib;
}

#define EP_NAME_MAX 127

static int register_locked(const char *name, const char *path, const char *source)
{
    if (!name || !*name || !path || !*path)
        return vdnn_fail(-EINVAL, "plugin EP library: %s is NULL or empty",
                         !name || !*name ? "the registration name" : "the path");
    if (strlen(name) > EP_NAME_MAX)
        return vdnn_fail(-EINVAL, "plugin EP library name is longer than %d bytes", EP_NAME_MAX);
    for (size_t i = 0; i < n_ep_libs; i++) {
        EpLibrary *old = &ep_libs[i];
        if (strcmp(old->name, name) != 0 || old->status == -EEXIST)
            continue;
        if (strcmp(old->path, path) != 0)
            break; /* recorded below as refused */
        return old->status ? vdnn_fail(old->status, "%s", old->reason) : 0;
    }

    EpLibrary *lib = add_library_locked(name, path, source);
    if (!lib)
        return vdnn_fail(-ENOMEM, "out of memory");
    int rc = 0;
    struct stat sb;
    char resolved[PATH_MAX];
    OrtStatus *st = NULL;
    for (size_t i = 0; i + 1 < n_ep_libs; i++)
        if (strcmp(ep_libs[i].name, name) == 0 && ep_libs[i].status != -EEXIST) {
            rc = vdnn_fail(-EEXIST, "plugin EP library %s: the name is already registered "
                           "with %s", path, ep_libs[i].path);
            break;
        }
    if (rc)
        ;
    else if (ort_api_version < ORT_EP_ABI_API)
        rc = vdnn_fail(-ENOTSUP, "plugin EP library %s not registered: ONNX Runtime %s has no "
                       "plugin execution providers (they need 1.22 or newer)", path,
                       ort_version_string);
    else if (vdnn_loadable_file(path, &sb) != 0)
        rc = errno == EISDIR || errno == EINVAL
                 ? vdnn_fail(-EISDIR, "plugin EP library %s is not a regular file", path)
                 : vdnn_fail(errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EACCES,
                             "plugin EP library %s: %s", path, strerror(errno));
    else if (access(path, R_OK) != 0)
        rc = vdnn_fail(-EACCES, "plugin EP library %s: %s", path, strerror(errno));
    else if (!realpath(path, resolved))
        rc = vdnn_fail(-EACCES, "plugin EP library %s: %s", path, strerror(errno));
    /* ORT resolves a relative path against its own directory, not ours. */
    else if ((st = api()->RegisterExecutionProviderLibrary(env, name, resolved))) {
        rc = vdnn_fail(-EIO, "ONNX Runtime refused plugin EP library %s (%s): %s", path, name,
                       api()->GetErrorMessage(st));
        api()->ReleaseStatus(st);
    } else {
        list_devices_locked(lib->name);
    }
    lib->status = rc;
    lib->reason = strdup(rc ? vdnn_last_error() : "");
    return rc;
}

/* The name of a library given as a bare path: its file name without "lib"
 * and without ".so" and anything after it. */
static void name_from_path(const char *path, char *name, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "lib", 3) == 0 && base[3])
        base += 3;
    size_t len = strcspn(base, ".");
    if (!len)
        len = strlen(base);
    snprintf(name, size, "%.*s", (int)(len < size ? len : size - 1), base);
}

/* VMAFDNN_EP_LIBRARIES: "NAME=PATH" or "PATH" entries separated by ':'.
 * Failures are kept in the list, never reported: the variable is a wish
 * list, and a missing library must not stop scoring. ep_lock held. */
static void register_from_env_locked(void)
{
    const char *v = getenv("VMAFDNN_EP_LIBRARIES");
    if (!v || !*v)
        return;
    char *copy = strdup(v), *save = NULL;
    if (!copy)
        return;
    for (char *entry = strtok_r(copy, ":", &save); entry; entry = strtok_r(NULL, ":", &save)) {
        char name[EP_NAME_MAX + 2];
        const char *path = entry;
        char *eq = strchr(entry, '=');
        if (eq) {
            *eq = '\0';
            path = eq + 1;
            snprintf(name, sizeof(name), "%s", entry);
        } else {
            name_from_path(entry, name, sizeof(name));
        }
        (void)register_locked(name, path, "env");
    }
    free(copy);
    vdnn_clear_error();
}

/* Lists ORT's own EP devices and reads VMAFDNN_EP_LIBRARIES, once. ORT must
 * be loaded. ep_lock held. */
static void ep_setup_locked(void)
{
    if (ep_setup_done)
        return;
    ep_setup_done = 1;
    if (ort_api_version >= ORT_EP_ABI_API)
        list_devices_locked(NULL);
    register_from_env_locked();
}

/* ORT's own CUDA provider as a plugin EP library (vmafdnn.h, item 4 of the
 * sources), tried once per process when a chain first reaches its CUDA
 * step: late enough that the Python package has loaded the CUDA libraries
 * the provider links (vmafdnn/_gpu_libraries.py). ORT wraps the provider in
 * an EP factory of its own (1.23+), whose data transfer CopyTensors uses;
 * a compiled-in CUDA EP appended through provider options brings none. A
 * failure stays in the library list with its reason. ep_lock held. */
static void register_cuda_provider_locked(void)
{
    static int tried;
    static const char provider[] = "libonnxruntime_providers_cuda.so";
    if (tried || ort_api_version < ORT_SESSION_EP_DEVICE_API)
        return;
    tried = 1;
    for (size_t i = 0; i < n_ep_libs; i++)
        if (strcmp(ep_libs[i].name, ep_kinds[EP_CUDA].ort_ep) == 0)
            return; /* the caller's own choice */
    const char *slash = strrchr(ort_path, '/');
    char path[PATH_MAX];
    struct stat sb;
    if (!slash || snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - ort_path), ort_path,
                           provider) >= (int)sizeof(path) ||
        vdnn_loadable_file(path, &sb) != 0)
        return; /* a CPU build */
    (void)register_locked(ep_kinds[EP_CUDA].ort_ep, path, "ort");
    vdnn_clear_error();
}

int vdnn_ort_register_ep_library(const char *name, const char *path)
{
    int rc = vdnn_ort_ensure_loaded();
    if (rc)
        return rc;
    pthread_mutex_lock(&ep_lock);
    ep_setup_locked();
    rc = register_locked(name, path, "api");
    pthread_mutex_unlock(&ep_lock);
    return rc;
}

/* Takes ep_lock after making sure the lists are set up; 0 or the load error. */
static int ep_lock_setup(void)
{
    int rc = vdnn_ort_ensure_loaded();
    if (rc)
        return rc;
    pthread_mutex_lock(&ep_lock);
    ep_setup_locked();
    return 0;
}

size_t vdnn_ort_ep_library_count(void)
{
    if (ep_lock_setup())
        return 0;
    size_t n = n_ep_libs;
    pthread_mutex_unlock(&ep_lock);
    return n;
}

int vdnn_ort_ep_library_info(size_t index, VmafDnnEpLibraryInfo *info)
{
    if (!info)
        return vdnn_fail(-EINVAL, "ep_library_info: info is NULL");
    int rc = ep_lock_setup();
    if (rc)
        return rc;
    if (index >= n_ep_libs) {
        size_t n = n_ep_libs;
        pthread_mutex_unlock(&ep_lock);
        return vdnn_fail(-EINVAL, "EP library index %zu out of range (%zu listed)", index, n);
    }
    const EpLibrary *lib = &ep_libs[index];
    *info = (VmafDnnEpLibraryInfo){lib->name, lib->path, lib->source, lib->status,
                                   lib->reason ? lib->reason : "out of memory"};
    pthread_mutex_unlock(&ep_lock);
    return 0;
}

size_t vdnn_ort_ep_device_count(void)
{
    if (ep_lock_setup())
        return 0;
    size_t n = n_ep_devs;
    pthread_mutex_unlock(&ep_lock);
    return n;
}

int vdnn_ort_ep_device_info(size_t index, VmafDnnEpDeviceInfo *info)
{
    if (!info)
        return vdnn_fail(-EINVAL, "ep_device_info: info is NULL");
    int rc = ep_lock_setup();
    if (rc)
        return rc;
    if (index >= n_ep_devs) {
        size_t n = n_ep_devs;
        pthread_mutex_unlock(&ep_lock);
        return vdnn_fail(-EINVAL, "EP device index %zu out of range (%zu offered)", index, n);
    }
    const OrtApi *a = api();
    const EpDevice *d = &ep_devs[index];
    const OrtHardwareDevice *hw = a->EpDevice_Device(d->device);
    *info = (VmafDnnEpDeviceInfo){
        .ep_name = a->EpDevice_EpName(d->device),
        .ep_vendor = a->EpDevice_EpVendor(d->device),
        .device_type = hw_name(a->HardwareDevice_Type(hw)),
        .device_vendor = a->HardwareDevice_Vendor(hw),
        .vendor_id = a->HardwareDevice_VendorId(hw),
        .device_id = a->HardwareDevice_DeviceId(hw),
        .device_index = d->index,
        .library = d->library,
        .attached_name = d->attached,
    };
    pthread_mutex_unlock(&ep_lock);
    return 0;
}

/* Copies into *out the EP device a plugin offers for step `ep` (the
 * device_index-th of its EP and hardware type; with any_hardware, failing
 * that, of its EP on other hardware); 0 when there is none. ORT's EP names
 * are compared without case: vendors have changed capitalisation between
 * releases. */
static int find_device(EpKind ep, int device_index, int any_hardware, EpDevice *out)
{
    const char *want = ep_kinds[ep].ort_ep;
    if (!want || ort_api_version < ORT_EP_ABI_API)
        return 0;
    const OrtApi *a = api();
    int found = 0;
    pthread_mutex_lock(&ep_lock);
    ep_setup_locked();
    if (ep == EP_CUDA)
        register_cuda_provider_locked();
    for (size_t i = 0; i < n_ep_devs * (any_hardware ? 2 : 1) && !found; i++) {
        const EpDevice *d = &ep_devs[i % n_ep_devs];
        const int step_hw = a->HardwareDevice_Type(a->EpDevice_Device(d->device)) ==
                            ep_kinds[ep].hw;
        if (strcasecmp(a->EpDevice_EpName(d->device), want) == 0 &&
            (i < n_ep_devs ? step_hw : !step_hw) && d->index == device_index) {
            *out = *d;
            found = 1;
        }
    }
    pthread_mutex_unlock(&ep_lock);
    return found;
}

/* Room for openvino_options' load_config text. */
#define OPENVINO_CONFIG_SIZE 160

/* OpenVINO's options for step `ep`, appended to keys/values (room for 2);
 * returns how many. `config` (OPENVINO_CONFIG_SIZE bytes) holds the
 * load_config text and must outlive the append. `plugin`: the EP comes as
 * an EP device (the plugin library), which reads OpenVINO's own properties
 * from load_config only and warns that "precision" is ignored.
 * Precision: OpenVINO runs a model in the device's fast precision unless
 * told otherwise: bf16 on a CPU with AMX, fp16 on a GPU. Unasked, that moved
 * ssim_y by 0.0035 on a Xeon through the plugin
 * (docs/execution_providers.md), so sessions ask for f32: OpenVINO's
 * INFERENCE_PRECISION_HINT and EXECUTION_MODE_HINT=ACCURACY through
 * "load_config" (a JSON string; onnxruntime-openvino 1.24.1 accepts it
 * too), and for the compiled-in EP also its "precision" (deprecated in ORT
 * 1.23, still read). FP16 only on a GPU with fp16_io, the caller's opt-in;
 * the CPU device refuses FP16 at append, the NPU runs FP16 only (no
 * options).
 * Threads: OpenVINO's CPU device runs on its own threads, one per core, and
 * ignores ORT's intra-op count: two frame workers' sessions each took both
 * cores of a 2-core machine and VMAF ran no faster on 2 threads than on 1
 * (2.72 against 2.80 fps, docs/execution_providers.md). So the session's
 * thread count, when set, is also OpenVINO's INFERENCE_NUM_THREADS. */
static size_t openvino_options(EpKind ep, const VmafDnnConfig *cfg, int plugin,
                               const char **keys, const char **values, char *config)
{
    if (ep != EP_OPENVINO_CPU && ep != EP_OPENVINO_GPU)
        return 0;
    const int fp16 = ep == EP_OPENVINO_GPU && cfg->fp16_io;
    size_t n = 0;
    if (!plugin) {
        keys[n] = "precision";
        values[n++] = fp16 ? "FP16" : "FP32";
        if (fp16)
            return n;
    }
    char threads[48] = "";
    if (ep == EP_OPENVINO_CPU && cfg->threads > 0)
        snprintf(threads, sizeof(threads), ", \"INFERENCE_NUM_THREADS\": \"%d\"", cfg->threads);
    snprintf(config, OPENVINO_CONFIG_SIZE, "{\"%s\": {\"INFERENCE_PRECISION_HINT\": \"%s\"%s%s}}",
             ep == EP_OPENVINO_CPU ? "CPU" : "GPU", fp16 ? "f16" : "f32",
             fp16 ? "" : ", \"EXECUTION_MODE_HINT\": \"ACCURACY\"", threads);
    keys[n] = "load_config";
    values[n++] = config;
    return n;
}

/* CUDA's options, for the compiled-in EP and its EP devices alike:
 *   cudnn_conv_algo_search HEURISTIC  exhaustive search costs more than a
 *                                     tiny model's run (the environment's
 *                                     VMAFDNN_CUDNN_CONV_ALGO_SEARCH, one of
 *                                     EXHAUSTIVE, HEURISTIC, DEFAULT, picks
 *                                     another: VMAF's accelerator form's
 *                                     grouped 1x17 Convs may run far better
 *                                     on another algorithm, which the lent
 *                                     GPU's benchmark asks)
 *   use_tf32 0   the built-ins' filters have 15-bit taps, and the VMAF
 *                features' accelerator form sums integers exactly in fp32
 *                (docs/vmaf.md): TF32 products (10-bit mantissas) would
 *                round them; the convolutions are too small for tensor cores
 *                to matter. */
#define CUDA_OPTIONS 3
static size_t cuda_options(int capture, const char **keys, const char **values)
{
    const char *search = getenv("VMAFDNN_CUDNN_CONV_ALGO_SEARCH");
    keys[0] = "cudnn_conv_algo_search";
    values[0] = search && (strcmp(search, "EXHAUSTIVE") == 0 || strcmp(search, "DEFAULT") == 0)
                    ? search
                    : "HEURISTIC";
    keys[1] = "use_tf32";
    values[1] = "0";
    if (!capture)
        return CUDA_OPTIONS - 1;
    keys[2] = "enable_cuda_graph"; /* see capture_refusal */
    values[2] = "1";
    return CUDA_OPTIONS;
}

/* WebGPU's option for graph capture, for the compiled-in EP and the plugin's
 * EP devices alike. */
static size_t webgpu_options(int capture, const char **keys, const char **values)
{
    if (!capture)
        return 0;
    keys[0] = "enableGraphCapture";
    values[0] = "1";
    return 1;
}

/* Whether step `ep` may bind an EP device on other hardware than its own:
 * only WebGPU, only asked for by name (VMAF_DNN_DEVICE_WEBGPU, never from
 * AUTO), and only where the user told the WebGPU plugin to offer its
 * device on the CPU (ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1, the plugin's
 * own switch): then Dawn serves it with a software Vulkan adapter (Mesa's
 * lavapipe), slower than ORT's CPU EP, and attached_ep says so
 * ("WebGpu:CPU"). What it is for: running the WebGPU path, graph capture
 * included, on a machine without a GPU. */
static int software_adapter_allowed(EpKind ep, const VmafDnnConfig *cfg)
{
    const char *v = getenv("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER");
    return ep == EP_WEBGPU && cfg->device == VMAF_DNN_DEVICE_WEBGPU && v && strcmp(v, "1") == 0;
}

/* The EP compiled into ORT for step `ep`; NULL status when it appended.
 * capture: ask the EP to record the graph (CUDA, WebGPU; see
 * capture_refusal). */
static OrtStatus *append_builtin(OrtSessionOptions *opts, EpKind ep, const VmafDnnConfig *cfg,
                                 int capture)
{
    const OrtApi *a = api();
    char index[16];
    snprintf(index, sizeof(index), "%d", cfg->device_index);
    const char *id_key[] = {"device_id"}, *id_value[] = {index};
    switch (ep) {
    case EP_CUDA: {
        /* The V2 options, for use_tf32 (which the legacy struct lacks); the
         * rest are ORT's defaults but the cuDNN search (see CUDA_OPTIONS). */
        OrtCUDAProviderOptionsV2 *cuda = NULL;
        OrtStatus *st = a->CreateCUDAProviderOptions(&cuda);
        if (st)
            return st; /* a build without CUDA says so here */
        /* device_id only when it is not ORT's default 0: parsing it asks
         * the driver for the device count, so on a machine without a GPU
         * the append would fail instead of the session creation (which
         * retries on the CPU and says why, as the legacy options did). */
        const char *keys[1 + CUDA_OPTIONS] = {"device_id"}, *values[1 + CUDA_OPTIONS] = {index};
        const size_t skip = cfg->device_index == 0;
        const size_t n = 1 + cuda_options(capture, keys + 1, values + 1) - skip;
        if (!(st = a->UpdateCUDAProviderOptions(cuda, keys + skip, values + skip, n)))
            st = a->SessionOptionsAppendExecutionProvider_CUDA_V2(opts, cuda);
        a->ReleaseCUDAProviderOptions(cuda);
        return st;
    }
    case EP_OPENVINO_GPU:
    case EP_OPENVINO_NPU:
    case EP_OPENVINO_CPU: {
        char device_type[32];
        if (ep == EP_OPENVINO_CPU)
            snprintf(device_type, sizeof(device_type), "CPU");
        else if (ep == EP_OPENVINO_NPU)
            snprintf(device_type, sizeof(device_type), "NPU");
        else if (cfg->device_index > 0)
            snprintf(device_type, sizeof(device_type), "GPU.%d", cfg->device_index);
        else
            snprintf(device_type, sizeof(device_type), "GPU");
        const char *keys[3] = {"device_type"}, *values[3] = {device_type};
        char config[OPENVINO_CONFIG_SIZE];
        const size_t n = 1 + openvino_options(ep, cfg, 0, keys + 1, values + 1, config);
        return a->SessionOptionsAppendExecutionProvider(opts, "OpenVINO", keys, values, n);
    }
    case EP_ROCM: {
        /* The dedicated entry point: the generic one does not know "ROCM"
         * ("Unknown provider name"), so it could never bind on a ROCm build.
         * Defaults restated as for CUDA. */
        OrtROCMProviderOptions rocm;
        memset(&rocm, 0, sizeof(rocm));
        rocm.device_id = cfg->device_index;
        rocm.gpu_mem_limit = SIZE_MAX;
        rocm.do_copy_in_default_stream = 1;
        return a->SessionOptionsAppendExecutionProvider_ROCM(opts, &rocm);
    }
    /* The generic entry point: these EPs' option structs changed between
     * releases; builds without them answer with a clean error. */
    case EP_TENSORRT_RTX:
        return a->SessionOptionsAppendExecutionProvider(opts, "NvTensorRtRtx", id_key, id_value, 1);
    case EP_MIGRAPHX:
        return a->SessionOptionsAppendExecutionProvider(opts, "MIGraphX", id_key, id_value, 1);
    case EP_WEBGPU: {
        const char *keys[1], *values[1];
        const size_t n = webgpu_options(capture, keys, values);
        return a->SessionOptionsAppendExecutionProvider(opts, "WebGPU", keys, values, n);
    }
    case EP_POLICY:
    case EP_CPU:
        break;
    }
    return NULL;
}

/* ORT's name of the CPU EP, as its graph assignment info reports it. */
static const char cpu_ep_name[] = "CPUExecutionProvider";

/* Appends step `ep` to `opts`: the EP device a plugin offers for it when
 * there is one (a plugin is what the user installed for this device), else
 * the EP compiled into ORT. NULL status when it appended; *attached is then
 * what the session reports, *ort_name ORT's name of that EP (static or ORT's
 * for the life of the process; NULL for a POLICY step, known only once the
 * session exists) and `how` says which way it bound. */
static OrtStatus *append_ep(OrtSessionOptions *opts, EpKind ep, const VmafDnnConfig *cfg,
                            int capture, const char **attached, const char **ort_name,
                            char *how, size_t how_size)
{
    const OrtApi *a = api();
    EpDevice dev;
    *attached = ep_kinds[ep].name;
    *ort_name = ep == EP_CPU ? cpu_ep_name : ep_kinds[ep].ort_ep;
    if (ep == EP_POLICY) {
        snprintf(how, how_size, "ORT's EP selection policy");
        return a->SessionOptionsSetEpSelectionPolicy(opts, ort_policy(cfg->device));
    }
    if (find_device(ep, ep == EP_OPENVINO_CPU ? 0 : cfg->device_index,
                    software_adapter_allowed(ep, cfg), &dev)) {
        const char *keys[2 > CUDA_OPTIONS ? 2 : CUDA_OPTIONS];
        const char *values[2 > CUDA_OPTIONS ? 2 : CUDA_OPTIONS];
        char config[OPENVINO_CONFIG_SIZE];
        const size_t n = ep == EP_CUDA     ? cuda_options(capture, keys, values)
                         : ep == EP_WEBGPU ? webgpu_options(capture, keys, values)
                         : openvino_options(ep, cfg, dev.library != NULL, keys, values, config);
        *attached = dev.attached;
        *ort_name = a->EpDevice_EpName(dev.device);
        snprintf(how, how_size, "EP device of %s%s%s", a->EpDevice_EpName(dev.device),
                 dev.library ? " from plugin library " : ", built into ORT",
                 dev.library ? dev.library : "");
        OrtStatus *st = a->SessionOptionsAppendExecutionProvider_V2(opts, env, &dev.device, 1,
                                                                    keys, values, n);
        if (st && ep == EP_CUDA) {
            /* Not verified on a GPU yet (docs/execution_providers.md): an EP
             * device that refuses these keys still binds, and says so. */
            size_t used = strlen(how);
            snprintf(how + used, how_size - used, "; without use_tf32=0 (%s)",
                     a->GetErrorMessage(st));
            a->ReleaseStatus(st);
            st = a->SessionOptionsAppendExecutionProvider_V2(opts, env, &dev.device, 1, NULL,
                                                             NULL, 0);
        }
        return st;
    }
    snprintf(how, how_size, "built into ORT");
    return append_builtin(opts, ep, cfg, capture);
}

/* Why step `ep` was passed over, for the fallback reason: ORT's answer to
 * the compiled-in append, and that no plugin offers a device for it. */
static void log_declined(Log *log, EpKind ep, OrtStatus *st)
{
    const char *msg = api()->GetErrorMessage(st);
    int len = (int)strlen(msg);
    while (len && (msg[len - 1] == ' ' || msg[len - 1] == '\n'))
        len--;
    char line[1024];
    if (ep_kinds[ep].ort_ep && ort_api_version >= ORT_EP_ABI_API)
        snprintf(line, sizeof(line), "%.*s (and no plugin EP library offers a %s device of %s)",
                 len, msg, hw_name(ep_kinds[ep].hw), ep_kinds[ep].ort_ep);
    else
        snprintf(line, sizeof(line), "%.*s", len, msg);
    log_line(log, ep_kinds[ep].name, "not available: ", line);
}

/* The first ORT release measured to fold constants with the session's
 * allocator (1.31.1 and 1.32.0 here); 1.20.1 and 1.24.1 fold with one of
 * their own, past the memory budget: a ConstantOfShape of a constant 3 GiB
 * shape took 6-9 GiB while creating the session. */
#define ORT_FOLDS_WITH_SESSION_ALLOCATOR 31

static int spin_allowed(void)
{
    const char *v = getenv("VMAFDNN_ORT_SPIN");
    return v && strcmp(v, "1") == 0;
}

/* The library's operators for a session about to go to `ep`: on CUDA with
 * the GPU kernels ready on the configured device, the domain that also runs
 * VMAF's ops there (their planes then never leave the device); else the CPU
 * EP's, where ORT copies a CUDA session's planes to the host and back. A
 * device where the kernels cannot be made (no NVRTC, an old driver) is
 * asked once (cuda_kernels.c keeps the answer); VMAFDNN_CUDA_KERNELS=0 keeps
 * the CPU EP's ops everywhere. */
static OrtCustomOpDomain *cuda_ops_domain(void)
{
    pthread_mutex_lock(&cuda_ops_lock);
    if (!custom_ops_cuda &&
        vdnn_ort_custom_ops_create(api(), ort_api_version, 1, &custom_ops_cuda))
        custom_ops_cuda = NULL;
    OrtCustomOpDomain *domain = custom_ops_cuda;
    pthread_mutex_unlock(&cuda_ops_lock);
    return domain;
}

/* The domain that also runs the library's operators on CUDA device
 * cfg->device_index, or NULL (why, if not NULL, says why): the GPU kernels
 * not ready there, or VMAFDNN_CUDA_KERNELS=0. A refusal here is no error of
 * the caller's: its last error and errno are left as they were. */
static OrtCustomOpDomain *cuda_domain_if_ready(const VmafDnnConfig *cfg, char *why, size_t size)
{
    const char *off = getenv("VMAFDNN_CUDA_KERNELS");
    if (off && strcmp(off, "0") == 0) {
        if (why)
            snprintf(why, size, "VMAFDNN_CUDA_KERNELS=0");
        return NULL;
    }
    const int saved_errno = errno;
    char saved[512];
    snprintf(saved, sizeof(saved), "%s", vdnn_last_error());
    OrtCustomOpDomain *domain = NULL;
    if (vdnn_cuda_kernels_open(cfg->device_index) == 0) {
        if (!(domain = cuda_ops_domain()) && why)
            snprintf(why, size, "ORT refused the CUDA variants of the library's operators");
    } else if (why)
        snprintf(why, size, "%s", vdnn_last_error());
    if (saved[0])
        vdnn_fail(-EIO, "%s", saved);
    else
        vdnn_clear_error();
    errno = saved_errno;
    return domain;
}

static OrtCustomOpDomain *ops_for_ep(EpKind ep, const VmafDnnConfig *cfg)
{
    /* Tests: the domain with the CUDA variants on every session, whose CPU
     * EP must still take the CPU variants (ORT picks by EP). */
    const char *test = getenv("VMAFDNN_TEST_CUDA_OPS_EVERYWHERE");
    if (test && strcmp(test, "1") == 0) {
        OrtCustomOpDomain *both = cuda_ops_domain();
        return both ? both : custom_ops;
    }
    OrtCustomOpDomain *both = ep == EP_CUDA ? cuda_domain_if_ready(cfg, NULL, 0) : NULL;
    return both ? both : custom_ops;
}

/* Session options with everything but the EP (`ep`: the library's
 * operators are added here, but CUDA's by choose_ep): threads and the
 * folder for external data (needed because ORT gets bytes, not a path).
 * With a memory budget, ORT releases that fold constants outside it do not
 * fold. */
static int make_options(const VmafDnnConfig *cfg, const char *model_dir, int budgeted, EpKind ep,
                        OrtSessionOptions **out)
{
    const OrtApi *a = api();
    OrtSessionOptions *opts = NULL;
    OrtStatus *st = a->CreateSessionOptions(&opts);
    if (st)
        return status_error(st, -ENOMEM, "cannot create ORT session options");
    if (cfg->threads > 0 && (st = a->SetIntraOpNumThreads(opts, cfg->threads)))
        goto fail;
    /* ORT's pool threads spin after each run by default, taking the cores
     * from the pools of the next model of the frame: three 1080p built-ins
     * run one after another took longer on 2 threads than on 1 (issue 12;
     * figures in docs/execution_providers.md). Without spinning, threads
     * only ever add speed. VMAFDNN_ORT_SPIN=1 restores ORT's default. */
    if (!spin_allowed() &&
        (st = a->AddSessionConfigEntry(opts, "session.intra_op.allow_spinning", "0")))
        goto fail;
    /* Bytes starting like an ORT-format flatbuffer would otherwise be loaded
     * as one, bypassing the ONNX scan done on them. */
    if ((st = a->AddSessionConfigEntry(opts, "session.load_model_format", "ONNX")))
        goto fail;
    /* CPU tensors come from the budget allocator (see Memory budget). */
    if ((st = a->AddSessionConfigEntry(opts, "session.use_env_allocators", "1")))
        goto fail;
    /* CUDA's step adds its operators once its EP appended (choose_ep): the
     * GPU kernels are not made for a step that goes no further */
    if (ep != EP_CUDA && (st = a->AddCustomOpDomain(opts, ops_for_ep(ep, cfg))))
        goto fail;
    if (budgeted && ort_minor < ORT_FOLDS_WITH_SESSION_ALLOCATOR &&
        (st = a->AddSessionConfigEntry(opts, "optimization.disable_specified_optimizers",
                                       "ConstantFolding")))
        goto fail;
    if (model_dir &&
        (st = a->AddSessionConfigEntry(opts, "session.model_external_initializers_file_folder_path",
                                       model_dir)))
        goto fail;
    /* VMAFDNN_ORT_PROFILE=PREFIX: ORT's own profile of every session, its
     * nodes' times on their EPs, written as PREFIX_<date>.json when the
     * session is released: where a model's time goes on an EP
     * (bench/ort_profile_summary.py sums them). A diagnostic: it slows runs. */
    const char *profile = getenv("VMAFDNN_ORT_PROFILE");
    if (profile && *profile && (st = a->EnableProfiling(opts, profile)))
        goto fail;
    /* Which EP each node went to (vdnn_ort_ep_nodes): an EP that appended
     * may still leave nodes to ORT's CPU EP. */
    if (ort_api_version >= ORT_EP_GRAPH_INFO_API &&
        (st = a->AddSessionConfigEntry(opts, "session.record_ep_graph_assignment_info", "1")))
        goto fail;
    *out = opts;
    return 0;
fail:
    a->ReleaseSessionOptions(opts);
    return status_error(st, -EIO, "cannot configure ORT session options");
}

/* ------------------------------------------------------------------------ */
/* Sessions                                                                 */
/* ------------------------------------------------------------------------ */

/* A run registered with the watchdog: an entry of its circular list. */
typedef struct Watch {
    struct Watch *prev, *next;
    uint64_t deadline_ns; /* CLOCK_MONOTONIC */
    VdnnOrtSession *session;
} Watch;

/* A block of host-accessible memory handed out by vdnn_ort_host_alloc: the
 * data of a tensor of `bytes` bytes made with the host allocator (see
 * host_block_new for why a tensor). */
typedef struct HostBlock {
    OrtValue *tensor;
    void *data;
    size_t bytes;
} HostBlock;

struct VdnnOrtSession {
    OrtSession *session;
    EpKind kind; /* the chain's step that made it (EP_POLICY: ORT chose) */
    OrtMemoryInfo *cpu_memory;
    Account *account;
    OrtRunOptions *run_options; /* one per session: its terminate flag stops
                                   the run in flight */
    unsigned max_run_ms;
    Watch watch;
    /* Who stopped the run in flight. Taken by the running thread, by
     * vdnn_ort_cancel and by the watchdog (which holds watch_lock first). */
    pthread_mutex_t stop_lock;
    int in_run;       /* a Run is in flight */
    int stop_reason;  /* 0, -ECANCELED or -ETIMEDOUT: why terminate was set */
    int terminating;  /* run_options' terminate flag is set */
    size_t n_inputs, n_outputs;
    /* Nodes on the attached EP and in all, as ORT assigned them after basic
     * optimisation; ep_nodes_known 0 where ORT cannot tell (before 1.24). */
    int ep_nodes_known;
    size_t nodes_on_ep, nodes_total;
    VdnnTensorMeta *inputs, *outputs;
    const char **input_names;    /* n_inputs, point into inputs[].name */
    const char **output_names;   /* n_outputs, point into outputs[].name */
    /* Static shapes (VmafDnnStaticShapes): what creating the model again
     * needs, the named symbolic dims of its inputs (VdnnTensorMeta.dim_key
     * indexes dim_names) and the sessions specialised so far. */
    int static_on;               /* runs may still get a specialised session */
    /* Why not: "" or a static string or one of whys. Atomic, and no text
     * is freed before the session, so vdnn_ort_static_runs may read it from
     * any thread while a run replaces it. */
    _Atomic(const char *) static_reason;
    char **whys;                 /* owned: the reasons given so far */
    size_t n_whys;
    void *model;                 /* owned copy while static_on can be set */
    size_t model_len;
    /* narrowable: the model's UINT16 pictures can take UINT8
     * (vdnn_onnx_narrow_samples), decided at creation. model8: that model,
     * for the runs fed 8-bit samples, made at the first of them and charged
     * beside model (narrowed_model); model8_refused: it could not be had,
     * and those runs take their samples widened. */
    int narrowable, model8_refused;
    void *model8;
    int run_narrow;              /* the session being made takes UINT8 */
    char *model_path, *model_dir;
    int dir_fd, dir_fd_held;     /* owned: the directory model_dir names */
    VmafDnnConfig cfg;
    const char *attached;        /* static */
    char **dim_names;            /* n_dims, owned */
    size_t n_dims;
    int64_t *run_dims;           /* n_dims: the values of the run being made */
    struct {
        OrtSession *session;
        int64_t *dims;           /* n_dims values it was specialised to */
        VdnnDeviceIo *io;        /* its device-resident I/O; NULL: ORT copies */
        int captured;            /* created with graph capture */
        unsigned runs_done;      /* runs that succeeded, up to CAPTURE_RUNS */
        int narrow;              /* made from model8: its pictures are UINT8 */
    } fixed[VMAF_DNN_MAX_STATIC_SHAPES];
    size_t n_fixed;
    _Atomic uint64_t runs_fixed, runs_as_opened, runs_device_io, runs_captured, runs_pinned;
    _Atomic uint64_t runs_pictures;
    _Atomic uint64_t runs_uint8;
    /* Host memory the caller's pictures live in (vdnn_ort_host_alloc): the
     * EP device's host-accessible memory, or NULL (malloc). */
    OrtAllocator *host_alloc;
    pthread_mutex_t host_lock;   /* the blocks, allocated and freed by any thread */
    HostBlock *blocks;
    size_t n_blocks, cap_blocks;
    /* Why a specialised session keeps ORT's copies or records no graph (the
     * last one made): NULL, "" or a static string or one of whys. */
    _Atomic(const char *) io_reason;
    _Atomic size_t specialised;  /* n_fixed, for other threads */
    /* Per-run scratch, sized once at creation so runs do not allocate. */
    OrtValue **input_values;     /* n_inputs */
    uint16_t **widened;          /* n_inputs: UINT8 feeds widened for a UINT16 session */
    size_t *widened_cap;
    OrtValue **output_values;    /* n_outputs: results held until the next run */
    const char **run_output_names; /* n_outputs */
    size_t n_held;
};

/* ------------------------------------------------------------------------ */
/* Stopping runs: cancel and the run-time watchdog                          */
/* ------------------------------------------------------------------------ */

/* Sets the terminate flag of the run in flight, if any, and records why.
 * ORT checks the flag before each node (Loop bodies included) and fails the
 * run. Returns whether a run was stopped. */
static void stop_run(VdnnOrtSession *s, int reason)
{
    pthread_mutex_lock(&s->stop_lock);
    if (s->in_run && !s->stop_reason) {
        OrtStatus *st = api()->RunOptionsSetTerminate(s->run_options);
        if (st)
            api()->ReleaseStatus(st); /* cannot fail: it only sets a flag */
        s->stop_reason = reason;
        s->terminating = 1;
    }
    pthread_mutex_unlock(&s->stop_lock);
}

void vdnn_ort_cancel(VdnnOrtSession *s)
{
    if (s)
        stop_run(s, -ECANCELED);
}

/* One process-wide watchdog thread, started by the first run with a time
 * budget, serves every session: it sleeps until the earliest deadline of the
 * runs registered in `watch_list` and stops the runs past theirs. A run only
 * links itself in and out (no thread per run, no wake-up unless its deadline
 * is the earliest), so the budget costs a lock and a clock read per run. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond;
static Watch watch_list = {&watch_list, &watch_list, 0, NULL};
static int watch_started;
static uint64_t watch_sleep_until = UINT64_MAX; /* what the watchdog waits for */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&watch_lock);
    for (;;) {
        uint64_t now = monotonic_ns(), next = UINT64_MAX;
        for (Watch *w = watch_list.next; w != &watch_list; w = w->next) {
            if (w->deadline_ns <= now)
                stop_run(w->session, -ETIMEDOUT);
            else if (w->deadline_ns < next)
                next = w->deadline_ns;
        }
        watch_sleep_until = next;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&watch_cond, &watch_lock);
        } else {
            struct timespec until = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            pthread_cond_timedwait(&watch_cond, &watch_lock, &until);
        }
    }
    return NULL;
}

/* Starts the watchdog (watch_lock held). Signals stay with the caller's
 * threads: the watchdog blocks them all. */
static int start_watchdog_locked(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&watch_cond, &attr);
    pthread_condattr_destroy(&attr);

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int err = pthread_create(&thread, NULL, watchdog, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        pthread_cond_destroy(&watch_cond);
        return vdnn_fail(-err, "cannot start the run-time watchdog thread (max_run_ms)");
    }
    pthread_detach(thread);
    watch_started = 1;
    return 0;
}

static int watch_add(VdnnOrtSession *s)
{
    Watch *w = &s->watch;
    w->deadline_ns = monotonic_ns() + (uint64_t)s->max_run_ms * 1000000u;
    pthread_mutex_lock(&watch_lock);
    int rc = watch_started ? 0 : start_watchdog_locked();
    if (!rc) {
        w->next = &watch_list;
        w->prev = watch_list.prev;
        watch_list.prev->next = w;
        watch_list.prev = w;
        if (w->deadline_ns < watch_sleep_until)
            pthread_cond_signal(&watch_cond);
    }
    pthread_mutex_unlock(&watch_lock);
    return rc;
}

static void watch_remove(VdnnOrtSession *s)
{
    pthread_mutex_lock(&watch_lock);
    s->watch.prev->next = s->watch.next;
    s->watch.next->prev = s->watch.prev;
    pthread_mutex_unlock(&watch_lock);
}

/* ORT's WebGPU EP keeps one WebGPU device context for the sessions of a
 * process and takes no concurrent work on it: two sessions run from two
 * threads (frames in flight, threads 2 or 4) crashed the process in Dawn
 * (a segfault, or an assertion in its compute pass bookkeeping), on the
 * accelerator forms and the Loop forms alike (onnxruntime-ep-webgpu 0.4.0,
 * Mesa's lavapipe). So the sessions on such an EP are created, run (with
 * their device copies) and released one at a time, under one lock. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

/* CUDA graphs are recorded in ORT's global capture mode: while one stream
 * records, a cudaMalloc, cudaFree or synchronous copy from any thread fails
 * and spoils the recording (seen on an H200 with two frame workers: the
 * other session's allocation failed with "operation not permitted when
 * stream is capturing", the recording one with "operation failed due to a
 * previous error during capture"). So a captured session's first runs,
 * where ORT records (its second run: one regular run first allocates what
 * the graph uses), hold this lock alone; every other creation, run and
 * release of a session that may be on CUDA shares it. */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
/* Writers first: glibc's default lets new readers in while a recording
 * waits, so with frames in flight on CUDA a recording could wait for every
 * run to pause at once. No thread takes the shared side twice. */
static pthread_rwlock_t cuda_capture_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t cuda_capture_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif

/* cuda_capture_lock made anew, unheld, of the kind above (fork_child). */
static void init_capture_lock(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    pthread_rwlock_init(&cuda_capture_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
}

/* fork() copies only the calling thread: a process-wide lock another thread
 * held at that moment would stay locked in the child for ever (a child that
 * opened its own session hung in watch_add, the watchdog having held
 * watch_lock). So fork takes every process-wide lock of this file first, in
 * the order the code nests them (one_at_a_time, load, ep, watch), and the
 * child also forgets the watchdog, which did not come with it, and the runs
 * it watched, which belong to threads that do not exist there: its first
 * run with a budget starts a watchdog of its own. Sessions of the parent
 * stay unusable in the child (docs/security.md); this keeps the child's own
 * sessions working. The block cache's lock is not taken around fork (it is
 * taken on frees that may happen under a host's lock, which the host's own
 * fork handler may take after ours): the child's cache starts empty. Nor
 * is the CUDA capture lock: glibc tells an rwlock's writer by its thread id,
 * which the child's thread does not share, so the child could not unlock
 * it; the child makes it again, unheld, as no thread of the parent's came
 * with it. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&one_at_a_time);
    pthread_mutex_lock(&load_lock);
    pthread_mutex_lock(&ep_lock);
    pthread_mutex_lock(&watch_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&watch_lock);
    pthread_mutex_unlock(&ep_lock);
    pthread_mutex_unlock(&load_lock);
    pthread_mutex_unlock(&one_at_a_time);
}

/* A child forked after ORT was loaded leaves at exit() without the exit
 * handlers registered before the fork, ORT's static destructors among them:
 * ORT starts a thread of its own (1.31 and 1.32 here; 1.20 starts none: at a
 * session's creation, and after loading alone, which vmaf_dnn_available()
 * does) that waits on a condition variable for the life of the process,
 * and the destructor that ends it calls pthread_cond_destroy, which glibc
 * makes wait for the waiters it counted; in the child that waiter is a
 * thread that did not come with it, so every such child hung at exit for
 * ever (Python's sys.exit() or the end of its script, C's exit(): 20
 * children of 20; registered only after a session, children of a process
 * that had only loaded ORT still hung, or aborted in ORT's teardown when
 * they had made sessions of their own). A handler registered here runs
 * before them (exit runs the newest first): it writes out stdio's buffers
 * as exit would after the handlers (fcloseall is glibc's _IO_cleanup: no
 * stream's lock is taken, where fflush would wait for ever on one a thread
 * held) and ends the child with exit's status. Handlers the child registers
 * after the fork still run; the library stays loaded for the life of the
 * process (-z nodelete, csrc/meson.build), so the handler cannot outlive its
 * code. glibc only: its pthread_cond_destroy is the one that waits (musl's
 * returns at once), and on_exit, which hands the handler exit's status, is
 * glibc's. */
#ifdef __GLIBC__
static void exit_before_ort_teardown(int status, void *arg)
{
    (void)arg;
    fcloseall();
    _exit(status);
}
#endif

static void fork_child(void)
{
#ifdef __GLIBC__
    if (api())
        on_exit(exit_before_ort_teardown, NULL);
#endif
    vdnn_block_cache_fork_child();
    init_capture_lock();
    watch_list.next = watch_list.prev = &watch_list;
    watch_started = 0;
    watch_sleep_until = UINT64_MAX;
    fork_parent();
}

static void register_fork_handlers(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The caller's stop flag for the runs this thread begins (see
 * vdnn_ort_watch_stop_flag). */
static _Thread_local const atomic_int *thread_stop_flag;

void vdnn_ort_watch_stop_flag(const atomic_int *flag)
{
    thread_stop_flag = flag;
}

/* Whether the caller's unit of work on this thread was stopped. */
static int thread_flagged(void)
{
    return thread_stop_flag && atomic_load(thread_stop_flag);
}

/* Marks the start of a run: a stop meant for an earlier run is forgotten,
 * unless the caller's unit of work was cancelled already. The flag is read
 * under stop_lock: a cancel that set it and then found no run in flight
 * (stop_run) released the lock before this took it, so its store is seen. */
static void begin_run(VdnnOrtSession *s)
{
    pthread_mutex_lock(&s->stop_lock);
    if (s->terminating) {
        OrtStatus *st = api()->RunOptionsUnsetTerminate(s->run_options);
        if (st)
            api()->ReleaseStatus(st); /* cannot fail: it only clears a flag */
        s->terminating = 0;
    }
    s->stop_reason = 0;
    s->in_run = 1;
    pthread_mutex_unlock(&s->stop_lock);
    if (thread_flagged())
        stop_run(s, -ECANCELED);
}

/* Marks the end of a run; returns why it was stopped (0: it was not). */
static int end_run(VdnnOrtSession *s)
{
    pthread_mutex_lock(&s->stop_lock);
    s->in_run = 0;
    int reason = s->stop_reason;
    pthread_mutex_unlock(&s->stop_lock);
    return reason;
}

/* ------------------------------------------------------------------------ */
/* What the library's own operators need (ort_custom_ops.h)                 */
/* ------------------------------------------------------------------------ */

/* The session whose Run is on this thread (set beside current_account). */
static _Thread_local VdnnOrtSession *current_session;

void *vdnn_ort_kernel_alloc(size_t size)
{
    return take_block(size, 0);
}

void vdnn_ort_kernel_free(void *block)
{
    budget_free(NULL, block);
}

/* Whether the run in flight on `s` was stopped (cancel, time budget). */
static int run_stopped(VdnnOrtSession *s)
{
    pthread_mutex_lock(&s->stop_lock);
    const int stopped = s->stop_reason != 0;
    pthread_mutex_unlock(&s->stop_lock);
    return stopped;
}

int vdnn_ort_kernel_stopped(void)
{
    VdnnOrtSession *s = current_session;
    return s && run_stopped(s);
}

/* ------------------------------------------------------------------------ */
/* Session creation and runs                                                */
/* ------------------------------------------------------------------------ */

static size_t element_size(VmafDnnElementType t)
{
    switch (t) {
    case VMAF_DNN_TYPE_FLOAT: case VMAF_DNN_TYPE_INT32: case VMAF_DNN_TYPE_UINT32: return 4;
    case VMAF_DNN_TYPE_FLOAT16: case VMAF_DNN_TYPE_BFLOAT16:
    case VMAF_DNN_TYPE_INT16: case VMAF_DNN_TYPE_UINT16: return 2;
    case VMAF_DNN_TYPE_DOUBLE: case VMAF_DNN_TYPE_INT64: case VMAF_DNN_TYPE_UINT64: return 8;
    case VMAF_DNN_TYPE_UINT8: case VMAF_DNN_TYPE_INT8: case VMAF_DNN_TYPE_BOOL: return 1;
    default: return 0;
    }
}

/* Elements of an input fed to a run (its shape's product). */
static size_t feed_count(const VdnnOrtFeed *f)
{
    size_t count = 1;
    for (size_t d = 0; d < f->rank; d++)
        count *= (size_t)f->shape[d];
    return count;
}

/* Reads type and dims from tensor shape info into `meta`. */
static int read_shape(const OrtTensorTypeAndShapeInfo *info, const char *what, const char *name,
                      VmafDnnElementType *type, size_t *rank, int64_t *shape, int *rank_known)
{
    const OrtApi *a = api();
    ONNXTensorElementDataType t;
    size_t n;
    OrtStatus *st;
    if ((st = a->GetTensorElementType(info, &t)) || (st = a->GetDimensionsCount(info, &n)))
        return status_error(st, -EIO, "cannot read a tensor's type");
    if (n > VMAF_DNN_MAX_RANK)
        return vdnn_fail(-ENOTSUP, "%s \"%s\" has rank %zu; at most %d is supported", what, name,
                         n, VMAF_DNN_MAX_RANK);
    if ((st = a->GetDimensions(info, shape, n)))
        return status_error(st, -EIO, "cannot read a tensor's dims");
    for (size_t d = 0; d < n; d++)
        if (shape[d] < 0)
            shape[d] = -1; /* symbolic, whatever ORT's encoding */
    *type = (VmafDnnElementType)t;
    *rank = n;
    /* ORT before 1.24 reports "no shape declared" as rank 0, like a scalar;
     * from 1.24 on it says which. */
    if (rank_known)
        *rank_known = ort_api_version < 24 || n > 0 || a->TensorTypeAndShape_HasShape(info);
    return 0;
}

typedef OrtStatus *(*NameFn)(const OrtSession *, size_t, OrtAllocator *, char **);
typedef OrtStatus *(*TypeInfoFn)(const OrtSession *, size_t, OrtTypeInfo **);

static int describe_slot(OrtSession *session, size_t index, const char *what, NameFn get_name,
                         TypeInfoFn get_type, VdnnTensorMeta *meta)
{
    const OrtApi *a = api();
    OrtAllocator *alloc;
    OrtStatus *st = a->GetAllocatorWithDefaultOptions(&alloc);
    char *ort_name = NULL;
    if (st || (st = get_name(session, index, alloc, &ort_name)))
        return status_error(st, -EIO, "cannot read a model slot's name");
    meta->name = strdup(ort_name);
    if ((st = a->AllocatorFree(alloc, ort_name)))
        a->ReleaseStatus(st); /* the copy is made; nothing to undo */
    if (!meta->name)
        return vdnn_fail(-ENOMEM, "out of memory");

    OrtTypeInfo *type_info = NULL;
    if ((st = get_type(session, index, &type_info)))
        return status_error(st, -EIO, "cannot read a model slot's type");
    const OrtTensorTypeAndShapeInfo *tensor_info = NULL;
    int rc;
    if ((st = a->CastTypeInfoToTensorInfo(type_info, &tensor_info)))
        rc = status_error(st, -EIO, "cannot read a model slot's type");
    else if (!tensor_info)
        rc = vdnn_fail(-ENOTSUP, "%s \"%s\" is not a tensor (sequence or map)", what, meta->name);
    else
        rc = read_shape(tensor_info, what, meta->name, &meta->type, &meta->rank, meta->shape,
                        &meta->rank_known);
    a->ReleaseTypeInfo(type_info);
    return rc;
}

static int describe_session(VdnnOrtSession *s)
{
    const OrtApi *a = api();
    OrtStatus *st;
    if ((st = a->SessionGetInputCount(s->session, &s->n_inputs)) ||
        (st = a->SessionGetOutputCount(s->session, &s->n_outputs)))
        return status_error(st, -EIO, "cannot count the model's inputs and outputs");

    /* calloc(0) may return NULL: allocate at least one element. */
    size_t ni = s->n_inputs ? s->n_inputs : 1, no = s->n_outputs ? s->n_outputs : 1;
    s->inputs = calloc(ni, sizeof(*s->inputs));
    s->outputs = calloc(no, sizeof(*s->outputs));
    s->input_names = calloc(ni, sizeof(*s->input_names));
    s->output_names = calloc(no, sizeof(*s->output_names));
    s->input_values = calloc(ni, sizeof(*s->input_values));
    s->widened = calloc(ni, sizeof(*s->widened));
    s->widened_cap = calloc(ni, sizeof(*s->widened_cap));
    s->output_values = calloc(no, sizeof(*s->output_values));
    s->run_output_names = calloc(no, sizeof(*s->run_output_names));
    if (!s->inputs || !s->outputs || !s->input_names || !s->output_names || !s->input_values ||
        !s->output_values || !s->run_output_names || !s->widened || !s->widened_cap)
        return vdnn_fail(-ENOMEM, "out of memory");

    for (size_t i = 0; i < s->n_inputs; i++) {
        int rc = describe_slot(s->session, i, "input", a->SessionGetInputName,
                               a->SessionGetInputTypeInfo, &s->inputs[i]);
        if (rc)
            return rc;
        s->input_names[i] = s->inputs[i].name;
    }
    for (size_t i = 0; i < s->n_outputs; i++) {
        int rc = describe_slot(s->session, i, "output", a->SessionGetOutputName,
                               a->SessionGetOutputTypeInfo, &s->outputs[i]);
        if (rc)
            return rc;
        s->output_names[i] = s->outputs[i].name;
        for (size_t j = 0; j < s->n_inputs; j++)
            if (strcmp(s->outputs[i].name, s->inputs[j].name) == 0)
                s->outputs[i].aliases_input = 1;
    }
    return 0;
}

/* Walks the chain of cfg->device up to the first step that appends. Each
 * attempt starts from fresh options: a failed append may leave provider
 * options behind (OpenVINO:GPU's precision=FP16 made the OpenVINO:CPU attempt
 * fail), so nothing of one attempt may reach the next. On success *opts holds
 * the options of the chosen step (the CPU's at worst), *chosen and *attached
 * say which, `how` how it bound; every declined step is logged. capture:
 * the EPs that can record the graph are asked to (create_fixed). */
static int choose_ep(const VmafDnnConfig *cfg, const char *model_dir, int budgeted, int capture,
                     OrtSessionOptions **opts, EpKind *chosen, const char **attached,
                     const char **ort_name, char *how, size_t how_size, Log *log)
{
    const OrtApi *a = api();
    size_t n;
    const EpKind *order = ep_order(cfg->device, &n);
    int rc;
    if (is_policy(cfg->device) && order[0] != EP_POLICY)
        log_line(log, ep_kinds[EP_POLICY].name, "not available: ",
                 "ONNX Runtime before 1.22 has no EP selection policy; using the AUTO chain");
    *opts = NULL;
    for (size_t i = 0; i < n; i++) {
        if ((rc = make_options(cfg, model_dir, budgeted, order[i], opts)))
            return rc;
        OrtStatus *st = append_ep(*opts, order[i], cfg, capture, attached, ort_name, how,
                                  how_size);
        if (!st && order[i] == EP_CUDA)
            st = a->AddCustomOpDomain(*opts, ops_for_ep(EP_CUDA, cfg));
        if (!st) {
            *chosen = order[i];
            return 0;
        }
        log_declined(log, order[i], st);
        a->ReleaseStatus(st);
        a->ReleaseSessionOptions(*opts);
        *opts = NULL;
    }
    return vdnn_fail(-EIO, "no execution provider could be appended"); /* lists end in CPU */
}

int vdnn_ort_device_type(const char *attached_ep)
{
    const size_t len = attached_ep ? strlen(attached_ep) : 0;
    for (size_t i = 0; len && i < sizeof(ep_kinds) / sizeof(ep_kinds[0]); i++)
        if (strcmp(ep_kinds[i].name, attached_ep) == 0)
            return (int)ep_kinds[i].hw;
    if (len > 4 && strcmp(attached_ep + len - 4, ":GPU") == 0)
        return OrtHardwareDeviceType_GPU;
    if (len > 4 && strcmp(attached_ep + len - 4, ":NPU") == 0)
        return OrtHardwareDeviceType_NPU;
    return OrtHardwareDeviceType_CPU;
}

/* An attached_ep string of ORT's WebGPU EP, on any hardware. */
static int is_webgpu(const char *attached_ep)
{
    return attached_ep && strncmp(attached_ep, "WebGpu:", 7) == 0;
}

static int ep_one_at_a_time(const char *attached_ep)
{
    return is_webgpu(attached_ep);
}

/* Takes the lock for work on a session of `attached_ep` where that EP needs
 * it; returns whether it did (the caller then calls unlock_if). */
static int lock_if_one_at_a_time(const char *attached_ep)
{
    if (!ep_one_at_a_time(attached_ep))
        return 0;
    pthread_mutex_lock(&one_at_a_time);
    return 1;
}

static void unlock_if(int locked)
{
    if (locked)
        pthread_mutex_unlock(&one_at_a_time);
}

int vdnn_ort_runs_sessions_in_turn(const char *attached_ep)
{
    return attached_ep &&
           (strncmp(attached_ep, "OpenVINO", 8) == 0 || ep_one_at_a_time(attached_ep));
}

/* What ORT's selection policy chose: the EP device of the session's first
 * input (ORT 1.23 on). "ORT-policy" when ORT cannot tell (1.22), "CPU" when
 * no EP device holds the input (ORT's CPU EP without one). *ort_name is
 * ORT's name of that EP, NULL when it cannot tell. */
static const char *policy_choice(OrtSession *session, const char **ort_name)
{
    const OrtApi *a = api();
    size_t n_inputs = 0;
    *ort_name = NULL;
    if (ort_api_version < ORT_SESSION_EP_DEVICE_API)
        return ep_kinds[EP_POLICY].name;
    OrtStatus *st = a->SessionGetInputCount(session, &n_inputs);
    const OrtEpDevice *first[1] = {NULL};
    const OrtEpDevice **devices = n_inputs > 1 ? calloc(n_inputs, sizeof(*devices)) : first;
    if (st || !devices || !n_inputs) {
        if (st)
            a->ReleaseStatus(st);
        if (!st && !n_inputs)
            *ort_name = cpu_ep_name;
        return ep_kinds[n_inputs ? EP_POLICY : EP_CPU].name;
    }
    const char *name = ep_kinds[EP_POLICY].name;
    if ((st = a->SessionGetEpDeviceForInputs(session, devices, n_inputs))) {
        a->ReleaseStatus(st);
    } else if (!devices[0]) {
        name = ep_kinds[EP_CPU].name;
        *ort_name = cpu_ep_name;
    } else {
        *ort_name = a->EpDevice_EpName(devices[0]);
        pthread_mutex_lock(&ep_lock);
        name = device_attached_name(a->EpDevice_EpName(devices[0]),
                                    a->HardwareDevice_Type(a->EpDevice_Device(devices[0])));
        pthread_mutex_unlock(&ep_lock);
    }
    if (devices != first)
        free((void *)devices);
    return name;
}

/* Creates the session on the first EP of cfg->device's chain that appends;
 * see vmaf_dnn_session_open for the policy. On success *attached names the
 * EP that bound and *ort_name is ORT's name of it (NULL: unknown). The
 * caller has set current_account. */
static int create_with_fallback(const void *model, size_t len, const char *model_path,
                                const char *model_dir, const VmafDnnConfig *cfg,
                                OrtSession **out, const char **attached,
                                const char **ort_name, EpKind *kind, Log *log)
{
    const OrtApi *a = api();
    const int budgeted = current_account && current_account->limit;
    OrtSessionOptions *opts = NULL;
    EpKind chosen = EP_CPU;
    char how[256];
    *kind = EP_CPU;
    int rc = choose_ep(cfg, model_dir, budgeted, 0, &opts, &chosen, attached, ort_name, how,
                       sizeof(how), log);
    if (rc)
        return rc;

    int locked = lock_if_one_at_a_time(*attached);
    OrtStatus *st = a->CreateSessionFromArray(env, model, len, opts, out);
    unlock_if(locked);
    a->ReleaseSessionOptions(opts);
    if (st && chosen != EP_CPU && !(current_account && atomic_load(&current_account->refused))) {
        /* The EP appended but cannot run here (e.g. CUDA libraries present,
         * no GPU or driver). One more try on the CPU, same threads. */
        log_line(log, *attached, "session creation failed, retrying on CPU: ",
                 a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        chosen = EP_CPU;
        *attached = ep_kinds[EP_CPU].name;
        *ort_name = cpu_ep_name;
        if ((rc = make_options(cfg, model_dir, budgeted, EP_CPU, &opts)))
            return rc;
        st = a->CreateSessionFromArray(env, model, len, opts, out);
        a->ReleaseSessionOptions(opts);
    }
    if (st) {
        uint64_t refused = current_account ? atomic_load(&current_account->refused) : 0;
        if (refused)
            rc = vdnn_fail(-EDQUOT, "ONNX Runtime cannot load model %s within the memory budget "
                           "of %llu bytes (max_memory_bytes): a block of %llu bytes was refused "
                           "(%s)", model_path, (unsigned long long)current_account->limit,
                           (unsigned long long)refused, a->GetErrorMessage(st));
        else
            rc = vdnn_fail(create_errno(st), "ONNX Runtime cannot load model %s: %s", model_path,
                           a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        return rc;
    }
    if (chosen == EP_POLICY)
        *attached = policy_choice(*out, ort_name);
    *kind = chosen;
    return 0;
}

/* Counts the nodes ORT assigned to the EP named `ort_name` (compared without
 * case, as find_device does), to its CPU EP and in all, from the assignment
 * recorded at creation (make_options asks for it). -ENOTSUP where ORT cannot
 * tell: before 1.24, or when it answers with an error. */
static int count_ep_nodes(OrtSession *session, const char *ort_name, size_t *on_ep,
                          size_t *on_cpu, size_t *total)
{
    const OrtApi *a = api();
    if (ort_api_version < ORT_EP_GRAPH_INFO_API || !ort_name)
        return -ENOTSUP;
    const OrtEpAssignedSubgraph *const *subgraphs = NULL; /* owned by the session */
    size_t n = 0;
    OrtStatus *st = a->Session_GetEpGraphAssignmentInfo(session, &subgraphs, &n);
    *on_ep = *on_cpu = *total = 0;
    for (size_t i = 0; !st && i < n; i++) {
        const char *ep = NULL;
        const OrtEpAssignedNode *const *nodes = NULL;
        size_t n_nodes = 0;
        if ((st = a->EpAssignedSubgraph_GetEpName(subgraphs[i], &ep)) ||
            (st = a->EpAssignedSubgraph_GetNodes(subgraphs[i], &nodes, &n_nodes)))
            break;
        *total += n_nodes;
        if (ep && strcasecmp(ep, ort_name) == 0)
            *on_ep += n_nodes;
        if (ep && strcmp(ep, cpu_ep_name) == 0)
            *on_cpu += n_nodes;
    }
    if (st) {
        a->ReleaseStatus(st);
        return -ENOTSUP;
    }
    return 0;
}

/* Records on `s` how many nodes the attached EP took; when it is not ORT's
 * CPU EP and took only some, the fallback reason says so: the EP that
 * appended is not the whole truth about where the model runs. */
static void note_ep_nodes(VdnnOrtSession *s, const char *attached, const char *ort_name,
                          Log *log)
{
    size_t on_ep, on_cpu, total;
    if (count_ep_nodes(s->session, ort_name, &on_ep, &on_cpu, &total))
        return;
    s->ep_nodes_known = 1;
    s->nodes_on_ep = on_ep;
    s->nodes_total = total;
    if (on_ep >= total || strcmp(ort_name, cpu_ep_name) == 0)
        return;
    char line[160];
    if (on_ep + on_cpu == total)
        snprintf(line, sizeof(line), "%zu of %zu nodes; the rest run on ORT's CPU EP", on_ep,
                 total);
    else
        snprintf(line, sizeof(line), "%zu of %zu nodes; %zu run on ORT's CPU EP, %zu on other "
                 "EPs", on_ep, total, on_cpu, total - on_ep - on_cpu);
    log_line(log, attached, "took ", line);
}

/* The chain of cfg walked as an open would, without creating a session:
 * the step that appended (*chosen, *attached, `how`), the declined ones in
 * *log (the caller frees log->text). */
static int walk_chain(const VmafDnnConfig *cfg, EpKind *chosen, const char **attached,
                      char *how, size_t how_size, Log *log)
{
    int rc = vdnn_ort_ensure_loaded();
    if (rc)
        return rc;
    OrtSessionOptions *opts = NULL;
    const char *ort_name = NULL;
    rc = choose_ep(cfg, NULL, 0, 0, &opts, chosen, attached, &ort_name, how, how_size, log);
    if (opts)
        api()->ReleaseSessionOptions(opts);
    return rc;
}

int vdnn_ort_explain(const VmafDnnConfig *cfg, char **text)
{
    Log log = {NULL, 0};
    EpKind chosen = EP_CPU;
    const char *attached = NULL;
    char how[256];
    int rc = walk_chain(cfg, &chosen, &attached, how, sizeof(how), &log);
    if (!rc) {
        char what[300];
        snprintf(what, sizeof(what), "(%s)", how);
        log_line(&log, attached, "selected ", what);
    }
    if (!rc && !log.text)
        rc = vdnn_fail(-ENOMEM, "out of memory");
    if (rc) {
        free(log.text);
        return rc;
    }
    *text = log.text;
    return 0;
}

int vdnn_ort_first_ep(const VmafDnnConfig *cfg, const char **attached)
{
    Log log = {NULL, 0};
    EpKind chosen = EP_CPU;
    char how[256];
    int rc = walk_chain(cfg, &chosen, attached, how, sizeof(how), &log);
    free(log.text);
    return rc ? rc : chosen == EP_POLICY ? -EAGAIN : 0;
}

/* ------------------------------------------------------------------------ */
/* Static shapes: sessions specialised to the shapes of their runs          */
/* ------------------------------------------------------------------------ */

/* The named symbolic dims of the inputs: s->dim_names, and each input dim's
 * dim_key. 0, -ENOMEM, -EIO. */
static int collect_dims(VdnnOrtSession *s)
{
    const OrtApi *a = api();
    for (size_t i = 0; i < s->n_inputs; i++)
        for (size_t d = 0; d < VMAF_DNN_MAX_RANK; d++)
            s->inputs[i].dim_key[d] = -1;
    if (!(s->dim_names = calloc(s->n_inputs * VMAF_DNN_MAX_RANK + 1, sizeof(*s->dim_names))))
        return vdnn_fail(-ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n_inputs; i++) {
        VdnnTensorMeta *m = &s->inputs[i];
        int symbolic = 0;
        for (size_t d = 0; d < m->rank; d++)
            symbolic |= m->shape[d] < 0;
        if (!symbolic)
            continue;
        OrtTypeInfo *type_info = NULL;
        const OrtTensorTypeAndShapeInfo *tensor_info = NULL;
        const char *params[VMAF_DNN_MAX_RANK] = {NULL};
        OrtStatus *st = a->SessionGetInputTypeInfo(s->session, i, &type_info);
        if (!st && !(st = a->CastTypeInfoToTensorInfo(type_info, &tensor_info)) && tensor_info)
            st = a->GetSymbolicDimensions(tensor_info, params, m->rank);
        int rc = st ? status_error(st, -EIO, "cannot read an input's symbolic dims") : 0;
        for (size_t d = 0; !rc && d < m->rank; d++) {
            if (m->shape[d] >= 0 || !params[d] || !params[d][0])
                continue;
            size_t k = 0;
            while (k < s->n_dims && strcmp(s->dim_names[k], params[d]) != 0)
                k++;
            if (k == s->n_dims && !(s->dim_names[s->n_dims++] = strdup(params[d]))) {
                s->n_dims--;
                rc = vdnn_fail(-ENOMEM, "out of memory");
            }
            m->dim_key[d] = (int)k;
        }
        a->ReleaseTypeInfo(type_info); /* params pointed into it */
        if (rc)
            return rc;
    }
    return 0;
}

/* The folder a specialised session reads external data from. `model_dir`
 * may name a descriptor its owner closes once the session is created
 * ("/proc/self/fd/N": model_file.c, dnn_api.c): by the first run that number
 * may name another directory, whose files ORT would take for this model's
 * external data. The session holds a descriptor of that same directory,
 * opened now while `model_dir` still names it, and names its own (or, where
 * /proc cannot name it, `model_dir` as the first creation used it). 0 (with
 * s->dir_fd_held 0 where the directory cannot be opened) or -ENOMEM. */
static int keep_model_dir(VdnnOrtSession *s, const char *model_dir)
{
    int fd = open(model_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    s->dir_fd = fd;
    s->dir_fd_held = 1;
    char proc[64];
    struct stat a, b;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    const int by_fd = stat(proc, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
                      a.st_ino == b.st_ino;
    if (!(s->model_dir = strdup(by_fd ? proc : model_dir)))
        return vdnn_fail(-ENOMEM, "out of memory");
    return 0;
}

static void drop_model_dir(VdnnOrtSession *s)
{
    if (s->dir_fd_held)
        close(s->dir_fd);
    s->dir_fd_held = 0;
}

/* Whether the model has UINT16 pictures that its graph only moves and
 * casts (s->narrowable), so that runs fed 8-bit samples may get sessions
 * taking UINT8; its copy for them is made at the first such run
 * (narrowed_model), so that a clip of another depth is charged nothing. */
static void check_narrowable(VdnnOrtSession *s)
{
    uint8_t *narrow = NULL;
    const char *setting = getenv("VMAFDNN_UINT8");
    if (setting && strcmp(setting, "0") == 0)
        return;
    if (vdnn_onnx_narrow_samples(s->model, s->model_len, &narrow)) {
        vdnn_clear_error(); /* -ENOTSUP: not such a model; -ENOMEM: the same */
        return;
    }
    free(narrow);
    s->narrowable = 1;
}

/* s->model8, made and charged to the budget now if need be: 0 when it
 * cannot be had (specialising stopped, the budget or memory refused it:
 * then runs fed 8-bit samples take them widened, and it is not tried
 * again). */
static int narrowed_model(VdnnOrtSession *s)
{
    if (s->model8 || !s->narrowable || !s->model)
        return s->model8 != NULL;
    uint8_t *narrow = NULL;
    if (vdnn_onnx_narrow_samples(s->model, s->model_len, &narrow) ||
        account_charge(s->account, s->model_len)) {
        vdnn_clear_error();
        free(narrow);
        s->model8_refused = 1;
        return 0;
    }
    s->model8 = narrow;
    return 1;
}

static void drop_narrowed(VdnnOrtSession *s)
{
    if (s->model8)
        account_release(s->account, s->model_len);
    free(s->model8);
    s->model8 = NULL;
}

/* Decides at creation whether runs may be specialised, and keeps what
 * creating the model again needs. */
static int setup_static(VdnnOrtSession *s, const void *model, size_t len, const char *model_path,
                        const char *model_dir, const VmafDnnConfig *cfg, const char *attached)
{
    s->cfg = *cfg;
    s->attached = attached;
    if (cfg->static_shapes == VMAF_DNN_STATIC_SHAPES_OFF) {
        s->static_reason = "static_shapes is OFF";
        return 0;
    }
    if (cfg->static_shapes == VMAF_DNN_STATIC_SHAPES_AUTO &&
        strcmp(attached, ep_kinds[EP_CPU].name) == 0) {
        s->static_reason = "ORT's CPU EP (static_shapes AUTO specialises on the other EPs)";
        return 0;
    }
    int rc = collect_dims(s);
    if (rc)
        return rc;
    if (!s->n_dims) {
        s->static_reason = "the model's inputs have no named symbolic dims";
        return 0;
    }
    if (model_dir && (rc = keep_model_dir(s, model_dir)))
        return rc;
    if (model_dir && !s->dir_fd_held) {
        s->static_reason = "the model's directory cannot be kept open for its external data";
        return 0;
    }
    if (account_charge(s->account, len)) {
        s->static_reason = "the memory budget (max_memory_bytes) has no room for a copy of the "
                           "model to specialise it from";
        drop_model_dir(s); /* nothing will be created from it */
        return 0;
    }
    s->model_len = len; /* charged: released with the copy */
    if (!(s->run_dims = calloc(s->n_dims, sizeof(*s->run_dims))) ||
        !(s->model = malloc(len ? len : 1)) || !(s->model_path = strdup(model_path)))
        return vdnn_fail(-ENOMEM, "out of memory");
    memcpy(s->model, model, len);
    s->static_on = 1;
    s->static_reason = "";
    check_narrowable(s);
    return 0;
}

/* "H=1080, W=1920" for messages. */
static void dims_text(const VdnnOrtSession *s, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < s->n_dims && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s=%lld", k ? ", " : "",
                                 s->dim_names[k], (long long)s->run_dims[k]);
}

/* A reason's text of n bytes, which the session keeps until it is closed:
 * vdnn_ort_static_runs hands reasons out while runs may give new ones. */
static char *keep_why(VdnnOrtSession *s, size_t n)
{
    char **grown = realloc(s->whys, (s->n_whys + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    s->whys = grown;
    char *why = malloc(n);
    if (why)
        s->whys[s->n_whys++] = why;
    return why;
}

/* Stops specialising: runs go on as opened, for the reason given. */
static void give_up_static(VdnnOrtSession *s, const char *fmt, const char *a1, const char *a2)
{
    char dims[256];
    dims_text(s, dims, sizeof(dims));
    size_t n = (size_t)snprintf(NULL, 0, fmt, dims, a1, a2) + 1;
    char *why = keep_why(s, n);
    if (why)
        snprintf(why, n, fmt, dims, a1, a2);
    s->static_reason = why ? why : "no memory to say why";
    s->static_on = 0;
    if (s->model) /* nothing will be created from it again */
        account_release(s->account, s->model_len);
    free(s->model);
    s->model = NULL;
    drop_narrowed(s);
    drop_model_dir(s);
}

/* A specialised session gone again, and the model bytes charged for it. */
static void release_fixed(VdnnOrtSession *s, OrtSession *session)
{
    api()->ReleaseSession(session);
    account_release(s->account, s->model_len);
}

/* The model created again with run_dims fixed, on the EP the session
 * attached: *out, or NULL. capture: asks the EP to record the graph; then a
 * failure is not the end of specialising: *refused (malloc'ed) says why and
 * the caller tries again without. Otherwise a failure gives up
 * (give_up_static). The session's bytes are charged to the budget while it
 * lives (release_fixed). */
static void make_fixed(VdnnOrtSession *s, int capture, OrtSession **out, char **refused)
{
    const OrtApi *a = api();
    const int budgeted = s->account->limit != 0;
    OrtSessionOptions *opts = NULL;
    const char *attached = ep_kinds[EP_CPU].name, *ort_name = cpu_ep_name;
    EpKind chosen = EP_CPU;
    Log log = {NULL, 0};
    char how[256];
    *out = NULL;
    int rc = strcmp(s->attached, ep_kinds[EP_CPU].name) == 0
                 ? make_options(&s->cfg, s->model_dir, budgeted, EP_CPU, &opts)
                 : choose_ep(&s->cfg, s->model_dir, budgeted, capture, &opts, &chosen,
                             &attached, &ort_name, how, sizeof(how), &log);
    free(log.text);
    if (rc) {
        give_up_static(s, "cannot specialise the session to %s: %s%s", vmaf_dnn_last_error(),
                       "");
        return;
    }
    if (account_charge(s->account, s->model_len)) {
        a->ReleaseSessionOptions(opts);
        give_up_static(s, "the memory budget (max_memory_bytes) has no room for the session "
                       "specialised to %s%s%s", "", "");
        return;
    }
    OrtStatus *st = NULL;
    for (size_t k = 0; !st && k < s->n_dims; k++)
        st = a->AddFreeDimensionOverrideByName(opts, s->dim_names[k], s->run_dims[k]);
    if (!st) {
        /* uncapture creates inside a run: that run's account comes back after */
        Account *outer = current_account;
        atomic_store(&s->account->refused, 0);
        current_account = s->account; /* run_guarded holds one_at_a_time where needed */
        st = a->CreateSessionFromArray(env, s->run_narrow ? s->model8 : s->model, s->model_len,
                                       opts, out);
        current_account = outer;
    }
    a->ReleaseSessionOptions(opts);
    if (st) {
        account_release(s->account, s->model_len); /* no session holds the bytes */
        const int over_budget = atomic_load(&s->account->refused) != 0;
        if (capture && !over_budget)
            *refused = strdup(a->GetErrorMessage(st));
        else
            give_up_static(s, "ONNX Runtime cannot create the session specialised to %s%s: %s",
                           over_budget ? " within the memory budget (max_memory_bytes)" : "",
                           a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        *out = NULL;
        return;
    }
    if (chosen == EP_POLICY)
        attached = policy_choice(*out, &ort_name);
    if (strcmp(attached, s->attached) != 0) {
        release_fixed(s, *out);
        *out = NULL;
        give_up_static(s, "the session specialised to %s bound %s, not %s", attached,
                       s->attached);
    }
}

/* Records why the specialised session just made keeps ORT's copies or
 * records no graph (vmaf_dnn_session_static_runs' device_io_reason). */
static void note_io(VdnnOrtSession *s, const char *what, const char *detail)
{
    if (!detail) {
        s->io_reason = what;
        return;
    }
    size_t n = strlen(what) + strlen(detail) + 3;
    char *why = keep_why(s, n);
    if (why)
        snprintf(why, n, "%s: %s", what, detail);
    s->io_reason = why ? why : what;
}

/* Whether the EP of an attached_ep string records graphs for replay: CUDA
 * (CUDA graphs) and WebGPU (its graph capture). */
static int ep_captures(const char *attached)
{
    return strcmp(attached, ep_kinds[EP_CUDA].name) == 0 || is_webgpu(attached);
}

static const char device_io_off[] = "device_io is OFF";

/* NULL when the specialised sessions are to be created with graph capture;
 * else why not. */
static const char *capture_refusal(const VdnnOrtSession *s)
{
    if (s->cfg.device_io == VMAF_DNN_DEVICE_IO_OFF)
        return device_io_off;
    if (!ep_captures(s->attached))
        return "the EP records no graphs (CUDA graphs and WebGPU graph capture only)";
    /* ORT refuses capture unless the EP runs every node. The session as
     * opened cannot tell: its shape arithmetic, which fixed sizes fold away,
     * may be what runs elsewhere (psnr_y on WebGPU). A refusal costs one
     * more creation per specialised session. */
    return NULL;
}

/* The device-resident I/O of a specialised session (see ort_device_io.h):
 * 0 with *io set or NULL (the reason noted), -EAGAIN when a captured
 * session cannot keep its outputs at fixed addresses, another negative
 * errno when ORT refused a step (the message is the library's last error). */
static int bind_device_io(VdnnOrtSession *s, OrtSession *session, int captured,
                          VdnnDeviceIo **io)
{
    *io = NULL;
    for (size_t k = 0; k < s->n_outputs; k++)
        if (s->outputs[k].aliases_input) {
            note_io(s, "an output of the model is also one of its inputs", NULL);
            return captured ? vdnn_fail(-EAGAIN, "an output of the model is also one of its "
                                        "inputs") : 0;
        }
    const VdnnDeviceIoSpec spec = {
        .api = api(), .api_version = ort_api_version, .env = env, .session = session,
        .n_inputs = s->n_inputs, .n_outputs = s->n_outputs, .input_names = s->input_names,
        .output_names = s->output_names,
        .force = s->cfg.device_io == VMAF_DNN_DEVICE_IO_ON, .captured = captured,
    };
    const char *why = "";
    int rc = vdnn_device_io_create(&spec, io, &why);
    if (!rc && !*io)
        note_io(s, why, NULL);
    return rc;
}

/* The model created again with run_dims fixed, on the EP the session
 * attached, with its device-resident I/O where device_io allows: first with
 * graph capture where the EP records graphs, then without. *out, or NULL
 * after give_up_static; *io and *captured describe it. */
static void create_fixed(VdnnOrtSession *s, OrtSession **out, VdnnDeviceIo **io, int *captured)
{
    *io = NULL;
    *captured = 0;
    const char *no_capture = capture_refusal(s);
    if (!no_capture) {
        char *refused = NULL;
        make_fixed(s, 1, out, &refused);
        if (*out) {
            int rc = bind_device_io(s, *out, 1, io);
            if (!rc && *io) {
                *captured = 1;
                note_io(s, "", NULL);
                return;
            }
            refused = strdup(vmaf_dnn_last_error());
            release_fixed(s, *out);
            *out = NULL;
        }
        if (!s->static_on) /* make_fixed gave up: nothing else will be created */
            return;
        note_io(s, "the EP did not record the graph", refused ? refused : "out of memory");
        free(refused);
    } else {
        note_io(s, no_capture, NULL);
    }
    make_fixed(s, 0, out, NULL);
    if (*out && s->cfg.device_io != VMAF_DNN_DEVICE_IO_OFF &&
        bind_device_io(s, *out, 0, io) < 0)
        note_io(s, "device I/O refused, ONNX Runtime copies", vmaf_dnn_last_error());
}

/* Whether the run in flight was stopped already (then nothing is created
 * for it: its Run fails at once). */
static int stop_pending(VdnnOrtSession *s)
{
    return thread_flagged() || run_stopped(s);
}

#define CAPTURE_RUNS 3

static int is_cuda(const char *attached_ep)
{
    return attached_ep && strcmp(attached_ep, ep_kinds[EP_CUDA].name) == 0;
}

/* Shares cuda_capture_lock where `cuda`; returns whether it took it. */
static int share_capture_lock(int cuda)
{
    if (cuda)
        pthread_rwlock_rdlock(&cuda_capture_lock);
    return cuda;
}

static void unlock_capture(int locked)
{
    if (locked)
        pthread_rwlock_unlock(&cuda_capture_lock);
}

#define NO_SLOT ((size_t)-1)

/* Whether the run feeds 8-bit samples (UINT8) to UINT16 pictures. */
static int feeds_narrow(const VdnnOrtSession *s, const VdnnOrtFeed *feeds)
{
    for (size_t i = 0; i < s->n_inputs; i++)
        if (feeds[i].type == VMAF_DNN_TYPE_UINT8 && s->inputs[i].type == VMAF_DNN_TYPE_UINT16)
            return 1;
    return 0;
}

/* The session a run with these feeds uses: one specialised to their shapes
 * and to their samples' width where they are 8-bit ones and the model can
 * take them so (model8), created now if need be; else the session as
 * opened. *io: the specialised session's device-resident I/O, NULL where
 * ORT copies. *slot: the specialised session's index in fixed, NO_SLOT for
 * the one as opened. */
static OrtSession *session_for_run(VdnnOrtSession *s, const VdnnOrtFeed *feeds,
                                   VdnnDeviceIo **io, size_t *slot)
{
    *io = NULL;
    *slot = NO_SLOT;
    /* once specialising stopped, narrow sessions made before may still serve */
    const int narrow = s->narrowable && !s->model8_refused && feeds_narrow(s, feeds) &&
                       (!s->static_on || narrowed_model(s));
    /* Once it stops specialising, a session keeps using those it made. */
    if (!s->static_on && !s->n_fixed)
        goto as_opened;
    for (size_t k = 0; k < s->n_dims; k++)
        s->run_dims[k] = -1;
    for (size_t i = 0; i < s->n_inputs; i++) {
        const VdnnTensorMeta *m = &s->inputs[i];
        for (size_t d = 0; d < m->rank && d < feeds[i].rank; d++) {
            const int k = m->dim_key[d];
            const int64_t v = feeds[i].shape[d];
            if (k < 0)
                continue;
            if (v <= 0 || (s->run_dims[k] >= 0 && s->run_dims[k] != v))
                goto as_opened; /* ORT would refuse it anyway, or an empty tensor */
            s->run_dims[k] = v;
        }
    }
    size_t f = 0;
    while (f < s->n_fixed && (s->fixed[f].narrow != narrow ||
                              memcmp(s->fixed[f].dims, s->run_dims, s->n_dims * sizeof(int64_t))))
        f++;
    if (f < s->n_fixed)
        goto fixed;
    if (!s->static_on || s->n_fixed == VMAF_DNN_MAX_STATIC_SHAPES || stop_pending(s))
        goto as_opened;
    int64_t *dims = malloc(s->n_dims * sizeof(int64_t));
    OrtSession *made = NULL;
    VdnnDeviceIo *made_io = NULL;
    int captured = 0;
    s->run_narrow = narrow;
    if (dims)
        create_fixed(s, &made, &made_io, &captured);
    if (!made) {
        free(dims);
        goto as_opened;
    }
    memcpy(dims, s->run_dims, s->n_dims * sizeof(int64_t));
    f = s->n_fixed++;
    atomic_store(&s->specialised, s->n_fixed);
    s->fixed[f].session = made;
    s->fixed[f].dims = dims;
    s->fixed[f].io = made_io;
    s->fixed[f].captured = captured;
    s->fixed[f].runs_done = 0;
    s->fixed[f].narrow = narrow;
fixed:
    *slot = f;
    atomic_fetch_add(&s->runs_fixed, 1);
    if ((*io = s->fixed[f].io)) {
        atomic_fetch_add(&s->runs_device_io, 1);
        if (s->fixed[f].captured)
            atomic_fetch_add(&s->runs_captured, 1);
    }
    return s->fixed[f].session;
as_opened:
    atomic_fetch_add(&s->runs_as_opened, 1);
    return s->session;
}

int vdnn_ort_narrows(const VdnnOrtSession *s)
{
    return s->narrowable;
}

void vdnn_ort_add_run_counts(const VdnnOrtSession *s, VmafDnnStaticRuns *sum)
{
    sum->fixed += atomic_load(&s->runs_fixed);
    sum->as_opened += atomic_load(&s->runs_as_opened);
    sum->device_io += atomic_load(&s->runs_device_io);
    sum->captured += atomic_load(&s->runs_captured);
    sum->pinned += atomic_load(&s->runs_pinned);
    sum->uint8 += atomic_load(&s->runs_uint8);
    sum->pictures += atomic_load(&s->runs_pictures);
}

void vdnn_ort_static_runs(const VdnnOrtSession *s, VmafDnnStaticRuns *out)
{
    memset(out, 0, sizeof(*out));
    vdnn_ort_add_run_counts(s, out);
    const char *reason = s->static_reason, *io_reason = s->io_reason;
    out->reason = reason ? reason : "";
    out->specialised = atomic_load(&s->specialised);
    out->device_io_reason = io_reason ? io_reason
                            : s->cfg.device_io == VMAF_DNN_DEVICE_IO_OFF ? device_io_off
                            : !out->specialised ? "no specialised session (device I/O binds only "
                                                  "those; see reason)"
                                                : "";
}

/* ------------------------------------------------------------------------ */
/* Host-accessible memory for the pictures                                  */
/* ------------------------------------------------------------------------ */

/* The allocator of the host-accessible memory (ORT 1.23's
 * OrtDeviceMemoryType_HOST_ACCESSIBLE: CUDA's pinned memory) of the EP
 * device that holds the session's inputs, or NULL where it has none (ORT's
 * CPU EP, WebGPU, ORT before 1.23). A copy to the device from such memory
 * is one DMA; from malloc'ed memory the driver stages it through a buffer of
 * its own (about 5 GB/s measured on an H200, where psnr_y's Run was its
 * copy). VMAFDNN_TEST_HOST_ACCESSIBLE=1 takes ORT's CPU allocator where the
 * device has none: a test hook, so that the blocks' path runs on machines
 * without a GPU. */
static OrtAllocator *host_accessible_allocator(OrtSession *session, size_t n_inputs)
{
    const OrtApi *a = api();
    OrtAllocator *alloc = NULL;
    const OrtEpDevice **devices = NULL;
    if (ort_api_version >= ORT_SESSION_EP_DEVICE_API && n_inputs &&
        (devices = calloc(n_inputs, sizeof(*devices)))) {
        OrtStatus *st = a->SessionGetEpDeviceForInputs(session, devices, n_inputs);
        for (size_t i = 0; !st && !alloc && i < n_inputs; i++) {
            const OrtMemoryInfo *mem =
                devices[i] ? a->EpDevice_MemoryInfo(devices[i], OrtDeviceMemoryType_HOST_ACCESSIBLE)
                           : NULL;
            if (mem && (st = a->GetSharedAllocator(env, mem, &alloc)))
                alloc = NULL;
        }
        if (st)
            a->ReleaseStatus(st);
        free((void *)devices);
    }
    const char *hook = getenv("VMAFDNN_TEST_HOST_ACCESSIBLE");
    if (!alloc && hook && strcmp(hook, "1") == 0) {
        OrtStatus *st = a->GetAllocatorWithDefaultOptions(&alloc);
        if (st) {
            a->ReleaseStatus(st);
            alloc = NULL;
        }
    }
    return alloc;
}

/* A block of `bytes` bytes from `alloc`, as the data of a UINT8 tensor that
 * owns it, or {NULL} when the allocator cannot give it. Not alloc->Alloc:
 * ORT's allocators throw C++ exceptions where they run out (std::bad_alloc
 * from its CPU allocator, CUDA's pinned allocator and arenas throw too), and
 * one unwinding through this C code terminates the process; an ORT API call
 * catches them and returns a status, so the caller can fall back to malloc. */
static HostBlock host_block_new(OrtAllocator *alloc, size_t bytes)
{
    const OrtApi *a = api();
    HostBlock b = {NULL, NULL, bytes};
    if (bytes > (size_t)INT64_MAX)
        return (HostBlock){NULL, NULL, 0};
    const int64_t shape[1] = {(int64_t)bytes};
    OrtStatus *st = a->CreateTensorAsOrtValue(alloc, shape, 1,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, &b.tensor);
    if (!st)
        st = a->GetTensorMutableData(b.tensor, &b.data);
    if (st || !b.data) {
        if (st)
            a->ReleaseStatus(st);
        if (b.tensor)
            a->ReleaseValue(b.tensor);
        return (HostBlock){NULL, NULL, 0};
    }
    return b;
}

void *vdnn_ort_host_alloc(VdnnOrtSession *s, size_t bytes)
{
    if (!bytes)
        return NULL;
    if (!s->host_alloc)
        return malloc(bytes);
    pthread_mutex_lock(&s->host_lock);
    void *p = NULL;
    if (s->n_blocks == s->cap_blocks) {
        const size_t cap = s->cap_blocks ? 2 * s->cap_blocks : 8;
        HostBlock *grown = realloc(s->blocks, cap * sizeof(*grown));
        if (grown) {
            s->blocks = grown;
            s->cap_blocks = cap;
        }
    }
    if (s->n_blocks < s->cap_blocks) {
        const HostBlock b = host_block_new(s->host_alloc, bytes);
        if ((p = b.data))
            s->blocks[s->n_blocks++] = b;
    }
    pthread_mutex_unlock(&s->host_lock);
    return p ? p : malloc(bytes); /* pinned memory is scarce: plain memory still works */
}

void vdnn_ort_host_free(VdnnOrtSession *s, void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&s->host_lock);
    size_t k = 0;
    while (k < s->n_blocks && s->blocks[k].data != p)
        k++;
    if (k < s->n_blocks) {
        api()->ReleaseValue(s->blocks[k].tensor);
        s->blocks[k] = s->blocks[--s->n_blocks];
        p = NULL;
    }
    pthread_mutex_unlock(&s->host_lock);
    free(p);
}

int vdnn_ort_host_blocks_pinned(const VdnnOrtSession *s)
{
    return s->host_alloc != NULL;
}

const VdnnHostMemory *vdnn_ort_host_memory(const VdnnOrtSession *s)
{
    return (const VdnnHostMemory *)s->host_alloc;
}

void *vdnn_ort_host_memory_block(const VdnnHostMemory *mem, size_t bytes, void **handle)
{
    const HostBlock b = host_block_new((OrtAllocator *)mem, bytes);
    *handle = b.tensor;
    return b.data;
}

void vdnn_ort_host_memory_release(void *handle)
{
    if (handle)
        api()->ReleaseValue(handle);
}

const char *vdnn_ort_host_memory_name(const VdnnHostMemory *mem)
{
    const OrtApi *a = api();
    OrtAllocator *alloc = (OrtAllocator *)mem;
    const OrtMemoryInfo *info = alloc && alloc->Info ? alloc->Info(alloc) : NULL;
    const char *name = NULL;
    OrtStatus *st = info ? a->MemoryInfoGetName(info, &name) : NULL;
    if (st) {
        a->ReleaseStatus(st);
        name = NULL;
    }
    return name && *name ? name : "host-accessible";
}

/* Whether every input the run copies to the device (device I/O) comes from
 * the device's host-accessible memory, a block of vdnn_ort_host_alloc or a
 * caller's picture buffer in it (vdnn_picture_memory_holds), and at least
 * one does. */
static int fed_from_host_blocks(VdnnOrtSession *s, VdnnDeviceIo *io, const VdnnOrtFeed *feeds)
{
    if (!s->host_alloc)
        return 0;
    int copied = 0, inside = 1;
    pthread_mutex_lock(&s->host_lock);
    for (size_t i = 0; inside && i < s->n_inputs; i++) {
        if (!vdnn_device_io_copies_input(io, i))
            continue;
        const size_t bytes = feed_count(&feeds[i]) * element_size(feeds[i].type);
        const uintptr_t at = (uintptr_t)feeds[i].data;
        size_t k = 0;
        while (k < s->n_blocks && !(at >= (uintptr_t)s->blocks[k].data &&
                                    bytes <= s->blocks[k].bytes &&
                                    at - (uintptr_t)s->blocks[k].data <= s->blocks[k].bytes - bytes))
            k++;
        inside = k < s->n_blocks;
        if (!inside)
            inside = vdnn_picture_memory_holds(vdnn_ort_host_memory(s), feeds[i].data, bytes);
        copied = 1;
    }
    pthread_mutex_unlock(&s->host_lock);
    return copied && inside;
}

/* Whether some input is fed from a caller's picture buffer in the device's
 * host-accessible memory (vdnn_picture_memory_holds): sent from where the
 * caller put it, not copied on the host first. */
static int fed_from_pictures(const VdnnOrtSession *s, const VdnnOrtFeed *feeds)
{
    int from = 0;
    for (size_t i = 0; s->host_alloc && !from && i < s->n_inputs; i++) {
        const size_t bytes = feed_count(&feeds[i]) * element_size(feeds[i].type);
        from = vdnn_picture_memory_holds(vdnn_ort_host_memory(s), feeds[i].data, bytes);
    }
    return from;
}

int vdnn_ort_session_create(const void *model, size_t len, const char *model_path,
                            const char *model_dir, const VmafDnnConfig *cfg,
                            const VdnnOrtBudget *budget, VdnnOrtSession **out,
                            const char **attached_ep, char **fallback_reason)
{
    int rc = vdnn_ort_ensure_loaded();
    if (rc)
        return rc;
    const OrtApi *a = api();

    VdnnOrtSession *s = calloc(1, sizeof(*s));
    Account *acct = calloc(1, sizeof(*acct));
    if (!s || !acct) {
        free(s);
        free(acct);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    pthread_mutex_init(&s->stop_lock, NULL);
    pthread_mutex_init(&s->host_lock, NULL);
    acct->limit = budget->max_memory_bytes;
    atomic_init(&acct->refs, 1);
    acct->serial = atomic_fetch_add(&next_serial, 1) + 1;
    s->account = acct;
    vdnn_block_cache_session_opened();
    s->max_run_ms = budget->max_run_ms;
    s->watch.session = s;

    Log log = {NULL, 0};
    const char *attached = ep_kinds[EP_CPU].name, *ort_name = cpu_ep_name;
    if (account_charge(acct, len)) {
        rc = vdnn_fail(-EDQUOT, "model %s: its %zu bytes (which ONNX Runtime keeps for the "
                       "session) exceed the memory budget of %llu bytes (max_memory_bytes)",
                       model_path, len, (unsigned long long)acct->limit);
        vdnn_ort_session_destroy(s); /* frees acct */
        return rc;
    }
    current_account = acct;
    /* CUDA may be in the chain: no allocation while another session records */
    const int shared = share_capture_lock(cfg->device != VMAF_DNN_DEVICE_CPU);
    rc = create_with_fallback(model, len, model_path, model_dir, cfg, &s->session, &attached,
                              &ort_name, &s->kind, &log);
    unlock_capture(shared);
    current_account = NULL;
    s->attached = attached; /* from now on: see destroy */
    if (!rc)
        note_ep_nodes(s, attached, ort_name, &log);
    OrtStatus *st = NULL;
    if (!rc && (st = a->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault,
                                            &s->cpu_memory)))
        rc = status_error(st, -ENOMEM, "cannot create CPU memory info");
    if (!rc && (st = a->CreateRunOptions(&s->run_options)))
        rc = status_error(st, -ENOMEM, "cannot create ORT run options");
    if (!rc)
        rc = describe_session(s);
    if (!rc)
        rc = setup_static(s, model, len, model_path, model_dir, cfg, attached);
    if (!rc)
        s->host_alloc = host_accessible_allocator(s->session, s->n_inputs);
    if (!rc && !log.text && !(log.text = strdup("")))
        rc = vdnn_fail(-ENOMEM, "out of memory");
    if (rc) {
        free(log.text);
        vdnn_ort_session_destroy(s);
        return rc;
    }
    *attached_ep = attached;
    *fallback_reason = log.text;
    *out = s;
    return 0;
}

void vdnn_ort_release_outputs(VdnnOrtSession *s)
{
    for (size_t k = 0; k < s->n_held; k++) {
        api()->ReleaseValue(s->output_values[k]);
        s->output_values[k] = NULL;
    }
    s->n_held = 0;
}

void vdnn_ort_session_destroy(VdnnOrtSession *s)
{
    if (!s)
        return;
    const OrtApi *a = api();
    if (s->output_values)
        vdnn_ort_release_outputs(s);
    const int locked = lock_if_one_at_a_time(s->attached);
    const int shared = share_capture_lock(is_cuda(s->attached));
    if (s->session)
        a->ReleaseSession(s->session);
    for (size_t k = 0; k < s->n_fixed; k++) {
        vdnn_device_io_destroy(s->fixed[k].io); /* before the session it binds */
        a->ReleaseSession(s->fixed[k].session);
        free(s->fixed[k].dims);
    }
    unlock_capture(shared);
    unlock_if(locked);
    for (size_t k = 0; k < s->n_dims; k++)
        free(s->dim_names[k]);
    free(s->dim_names);
    free(s->run_dims);
    free(s->model);
    free(s->model8);
    for (size_t i = 0; s->widened && i < s->n_inputs; i++)
        free(s->widened[i]);
    free(s->widened);
    free(s->widened_cap);
    free(s->model_path);
    free(s->model_dir);
    drop_model_dir(s);
    for (size_t k = 0; k < s->n_whys; k++)
        free(s->whys[k]);
    free(s->whys);
    if (s->cpu_memory)
        a->ReleaseMemoryInfo(s->cpu_memory);
    if (s->run_options)
        a->ReleaseRunOptions(s->run_options);
    const uint64_t serial = s->account ? s->account->serial : 0;
    account_unref(s->account); /* blocks ORT still holds keep it alive */
    if (serial)
        vdnn_block_cache_session_closed(serial);
    pthread_mutex_destroy(&s->stop_lock);
    for (size_t k = 0; k < s->n_blocks; k++) /* the owner's contract: none is left */
        api()->ReleaseValue(s->blocks[k].tensor);
    free(s->blocks);
    pthread_mutex_destroy(&s->host_lock);
    for (size_t i = 0; s->inputs && i < s->n_inputs; i++)
        free(s->inputs[i].name);
    for (size_t i = 0; s->outputs && i < s->n_outputs; i++)
        free(s->outputs[i].name);
    free(s->inputs);
    free(s->outputs);
    free(s->input_names);
    free(s->output_names);
    free(s->input_values);
    free(s->output_values);
    free(s->run_output_names);
    free(s);
}

int vdnn_ort_library_ops_on_ep(const VdnnOrtSession *s, const char *ep,
                               const VmafDnnConfig *cfg, char *why, size_t size)
{
    const char *name = ep ? ep : s->attached;
    if (strcmp(name, ep_kinds[EP_CPU].name) == 0)
        return 1;
    /* ops_for_ep's answer, which the process keeps */
    if (strcmp(name, ep_kinds[EP_CUDA].name) == 0 && (ep || s->kind == EP_CUDA))
        return cuda_domain_if_ready(cfg, why, size) != NULL;
    snprintf(why, size, "the library's operators have no kernels for %s%s", name,
             !ep && s->kind == EP_POLICY ? " chosen by an EP selection policy" : "");
    return 0;
}

int vdnn_ort_ep_nodes(const VdnnOrtSession *s, size_t *on_ep, size_t *total)
{
    if (!s->ep_nodes_known)
        return -ENOTSUP;
    *on_ep = s->nodes_on_ep;
    *total = s->nodes_total;
    return 0;
}

size_t vdnn_ort_input_count(const VdnnOrtSession *s) { return s->n_inputs; }
size_t vdnn_ort_output_count(const VdnnOrtSession *s) { return s->n_outputs; }
const VdnnTensorMeta *vdnn_ort_input_meta(const VdnnOrtSession *s, size_t i) { return &s->inputs[i]; }
const VdnnTensorMeta *vdnn_ort_output_meta(const VdnnOrtSession *s, size_t i) { return &s->outputs[i]; }

static int describe_result(OrtValue *value, const char *name, VdnnOrtResult *r)
{
    const OrtApi *a = api();
    int is_tensor = 0;
    OrtStatus *st = a->IsTensor(value, &is_tensor);
    if (st)
        return status_error(st, -EIO, "cannot inspect an output");
    if (!is_tensor)
        return vdnn_fail(-ENOTSUP, "output \"%s\" is not a tensor", name);
    OrtTensorTypeAndShapeInfo *info = NULL;
    if ((st = a->GetTensorTypeAndShape(value, &info)))
        return status_error(st, -EIO, "cannot read an output's shape");
    int rc = read_shape(info, "output", name, &r->type, &r->rank, r->shape, NULL);
    a->ReleaseTensorTypeAndShapeInfo(info);
    if (rc)
        return rc;
    r->count = 1;
    for (size_t d = 0; d < r->rank; d++)
        r->count *= (size_t)r->shape[d];
    void *data = NULL;
    if (r->count && (st = a->GetTensorMutableData(value, &data)))
        return status_error(st, -EIO, "cannot read an output's data");
    r->data = data;
    return 0;
}

/* The result of an output ORT wrote into a caller's buffer: its shape is
 * the slot's fixed shape. */
static void describe_bound(const VdnnTensorMeta *m, void *data, VdnnOrtResult *r)
{
    r->data = data;
    r->type = m->type;
    r->rank = m->rank;
    r->count = 1;
    for (size_t d = 0; d < m->rank; d++) {
        r->shape[d] = m->shape[d];
        r->count *= (size_t)m->shape[d];
    }
}

/* Whether ORT left an output in the buffer it was bound to. ORT may instead
 * hand back a value of its own, e.g. the feed itself for an output that is
 * also a graph input; then the bound buffer was never written. */
static int holds(OrtValue *value, const void *buffer)
{
    void *data = NULL;
    OrtStatus *st = api()->GetTensorMutableData(value, &data);
    if (st) {
        api()->ReleaseStatus(st); /* describe_result reports it */
        return 0;
    }
    return data == buffer;
}

/* The specialised session in fixed[f], created with graph capture, cannot
 * go on with it (what happened, and why: ORT's or the device I/O's
 * message): made again without capture, for this run and the later ones,
 * and the reason kept for device_io_reason. Returns the session this run
 * goes on with and sets *io; the session as opened (and the slot dropped)
 * when none can be made. The failed run is not counted as captured. */
static OrtSession *uncapture(VdnnOrtSession *s, size_t f, const char *what, const char *why,
                             VdnnDeviceIo **io)
{
    atomic_fetch_sub(&s->runs_captured, 1);
    vdnn_device_io_destroy(s->fixed[f].io); /* before the session it binds */
    release_fixed(s, s->fixed[f].session);
    s->fixed[f].io = *io = NULL;
    s->fixed[f].captured = 0;
    memcpy(s->run_dims, s->fixed[f].dims, s->n_dims * sizeof(int64_t));
    s->run_narrow = s->fixed[f].narrow;
    OrtSession *made = NULL;
    /* Once specialising stopped (another shape's session could not be
     * made), the model is gone (give_up_static) and static_reason says why:
     * nothing is created again, and that reason stays. */
    if (s->model)
        make_fixed(s, 0, &made, NULL);
    if (!made) { /* give_up_static said why; the other shapes keep theirs */
        note_io(s, what, why);
        atomic_fetch_sub(&s->runs_device_io, 1);
        atomic_fetch_sub(&s->runs_fixed, 1);
        atomic_fetch_add(&s->runs_as_opened, 1);
        free(s->fixed[f].dims);
        memmove(&s->fixed[f], &s->fixed[f + 1], (s->n_fixed - f - 1) * sizeof(s->fixed[0]));
        atomic_store(&s->specialised, --s->n_fixed);
        return s->session;
    }
    s->fixed[f].session = made;
    if (s->cfg.device_io != VMAF_DNN_DEVICE_IO_OFF && bind_device_io(s, made, 0, io) < 0)
        note_io(s, "device I/O refused, ONNX Runtime copies", vmaf_dnn_last_error());
    else
        note_io(s, what, why);
    if (!(s->fixed[f].io = *io))
        atomic_fetch_sub(&s->runs_device_io, 1);
    return made;
}

/* Fault injection for the tests of uncapture, which no machine without a
 * GPU could reach otherwise (ORT's recording fails only on CUDA so far):
 * with VMAFDNN_TEST_SPOIL_RECORDING set, a run in which a captured session
 * records fails as a spoiled recording does, before its outputs are read. */
static OrtStatus *spoiled_recording(void)
{
    if (!getenv("VMAFDNN_TEST_SPOIL_RECORDING"))
        return NULL;
    return api()->CreateStatus(ORT_FAIL, "the recording was spoiled for a test "
                               "(VMAFDNN_TEST_SPOIL_RECORDING)");
}

/* One Run of `session`, through its device-resident I/O where io is set.
 * NULL, or ORT's failure of the run; *rc: a copy or binding that failed.
 * recording: the run in which a captured session records. */
static OrtStatus *run_once(VdnnOrtSession *s, OrtSession *session, VdnnDeviceIo *io,
                           int recording, const size_t *output_slots, size_t n_outputs, int *rc)
{
    const OrtApi *a = api();
    OrtStatus *st = NULL;
    *rc = 0;
    if (!io)
        st = a->Run(session, s->run_options, s->input_names,
                    (const OrtValue *const *)s->input_values, s->n_inputs, s->run_output_names,
                    n_outputs, s->output_values);
    else if (!(*rc = vdnn_device_io_stage(io, s->input_values, output_slots, n_outputs,
                                          s->output_values)) &&
             !(st = a->RunWithBinding(session, s->run_options, vdnn_device_io_binding(io))) &&
             !(st = recording ? spoiled_recording() : NULL))
        *rc = vdnn_device_io_collect(io, output_slots, n_outputs, s->output_values);
    if (io && (*rc || st))
        vdnn_device_io_unbind(io);
    return st;
}

/* Fits the run's input values to `session`: where it takes UINT16 pictures
 * and the run feeds 8-bit samples (UINT8), they are widened into scratch,
 * as the model as opened takes them. Returns 1 when it widened, 0 when
 * nothing needed it, or -errno. */
static int fit_feeds(VdnnOrtSession *s, OrtSession *session, size_t slot,
                     const VdnnOrtFeed *feeds)
{
    if (!feeds_narrow(s, feeds) ||
        (slot < s->n_fixed && session == s->fixed[slot].session && s->fixed[slot].narrow))
        return 0;
    const OrtApi *a = api();
    for (size_t i = 0; i < s->n_inputs; i++) {
        const VdnnOrtFeed *f = &feeds[i];
        if (f->type != VMAF_DNN_TYPE_UINT8 || s->inputs[i].type != VMAF_DNN_TYPE_UINT16)
            continue;
        const size_t count = feed_count(f);
        if (count > s->widened_cap[i]) {
            uint16_t *grown = realloc(s->widened[i], count * sizeof(uint16_t));
            if (!grown)
                return vdnn_fail(-ENOMEM, "out of memory for input \"%s\"", s->inputs[i].name);
            s->widened[i] = grown;
            s->widened_cap[i] = count;
        }
        const uint8_t *src = f->data;
        for (size_t k = 0; k < count; k++)
            s->widened[i][k] = src[k];
        OrtValue *value = NULL;
        OrtStatus *st = a->CreateTensorWithDataAsOrtValue(
            s->cpu_memory, s->widened[i], count * sizeof(uint16_t), f->shape, f->rank,
            ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, &value);
        if (st)
            return status_error(st, -EINVAL, "cannot wrap an input tensor");
        a->ReleaseValue(s->input_values[i]);
        s->input_values[i] = value;
    }
    return 1;
}

/* ORT's Run under the session's budgets, with its failure told apart: a stop
 * (cancel, time budget), a refused allocation (memory budget), or the model
 * failing on this data. The caller's arguments were checked before ORT saw
 * them, so no Run failure is the caller's: the rest is -ENOEXEC. */
static int run_guarded(VdnnOrtSession *s, const VdnnOrtFeed *feeds, const size_t *output_slots,
                       size_t n_outputs)
{
    const OrtApi *a = api();
    VdnnDeviceIo *io = NULL;
    begin_run(s); /* first: a cancel finds the run while it waits for the lock */
    /* before the specialised session is chosen: creating one, its device
     * tensors and their first copy are work on the EP too */
    const int locked = lock_if_one_at_a_time(s->attached);
    const int captures = share_capture_lock(is_cuda(s->attached));
    /* Chosen inside the run: a cancel that lands while a specialised session
     * is being created finds the run in flight and stops it before ORT's Run
     * starts. The time budget starts after the creation, as it does after
     * the open's. */
    size_t slot;
    OrtSession *session = session_for_run(s, feeds, &io, &slot);
    int widened = fit_feeds(s, session, slot, feeds);
    if (widened < 0) {
        end_run(s);
        unlock_capture(captures);
        unlock_if(locked);
        return widened;
    }
    const int recording = slot != NO_SLOT && s->fixed[slot].captured &&
                          s->fixed[slot].runs_done < CAPTURE_RUNS;
    if (captures && recording) { /* no upgrade in place: let the others' runs end */
        pthread_rwlock_unlock(&cuda_capture_lock);
        pthread_rwlock_wrlock(&cuda_capture_lock);
    }
    if (thread_flagged())
        stop_run(s, -ECANCELED);
    int rc = s->max_run_ms ? watch_add(s) : 0;
    if (rc) {
        end_run(s);
        unlock_capture(captures);
        unlock_if(locked);
        return rc;
    }
    atomic_store(&s->account->refused, 0);
    current_account = s->account;
    current_session = s;
    OrtStatus *st = run_once(s, session, io, recording, output_slots, n_outputs, &rc);
    char *why = NULL;
    const char *what = NULL;
    if (st && recording && !run_stopped(s) && !atomic_load(&s->account->refused)) {
        /* ORT's recording failed, not the model */
        why = strdup(a->GetErrorMessage(st));
        a->ReleaseStatus(st);
        st = NULL;
        what = "ONNX Runtime failed while recording the graph, so the session runs without";
    } else if (rc == -ESTALE) { /* a value the recorded graph keeps changed (ort_device_io.c) */
        why = strdup(vmaf_dnn_last_error());
        vdnn_clear_error();
        what = "the recorded graph cannot take the run's inputs, so the session runs without";
    }
    int watched = s->max_run_ms != 0;
    if (what) { /* run it again without capture, charged as any run (the creation's
                   refusal, if any, was the creation's) */
        /* The session is made again outside the time budget, as session_for_run makes
         * one before the budget starts: the run again has max_run_ms of its own (a stop
         * that came already stays, and stops it). */
        if (watched)
            watch_remove(s);
        session = uncapture(s, slot, what, why ? why : "out of memory", &io);
        free(why);
        atomic_store(&s->account->refused, 0);
        if (!widened && (widened = fit_feeds(s, session, slot, feeds)) < 0) {
            rc = widened; /* the session as opened after all, UINT16: no memory to widen */
            watched = 0;
        } else if (watched && (rc = watch_add(s)))
            watched = 0;
        else
            st = run_once(s, session, io, 0, output_slots, n_outputs, &rc);
    } else if (!st && !rc && recording) {
        s->fixed[slot].runs_done++;
    }
    /* counted on the binding the run ended on, as runs_device_io is (uncapture
     * takes back a device-I/O run whose session it makes without) */
    if (io && !widened && fed_from_host_blocks(s, io, feeds))
        atomic_fetch_add(&s->runs_pinned, 1);
    if (!widened && fed_from_pictures(s, feeds))
        atomic_fetch_add(&s->runs_pictures, 1);
    if (!widened && feeds_narrow(s, feeds))
        atomic_fetch_add(&s->runs_uint8, 1);
    unlock_capture(captures);
    unlock_if(locked);
    current_account = NULL;
    current_session = NULL;
    if (watched)
        watch_remove(s);
    int reason = end_run(s);
    if (!st)
        return rc; /* 0, or a copy or binding of device I/O that failed (not the model);
                      a stop that came too late to matter */
    uint64_t refused = atomic_load(&s->account->refused);
    if (reason == -ETIMEDOUT)
        rc = vdnn_fail(-ETIMEDOUT, "the model ran longer than max_run_ms (%u ms) and was stopped",
                       s->max_run_ms);
    else if (reason == -ECANCELED)
        rc = vdnn_fail(-ECANCELED, "the run was cancelled");
    else if (refused)
        rc = vdnn_fail(-EDQUOT, "the model needs more memory than max_memory_bytes (%llu "
                       "bytes): a block of %llu bytes was refused (%s)",
                       (unsigned long long)s->account->limit, (unsigned long long)refused,
                       a->GetErrorMessage(st));
    else
        rc = vdnn_fail(-ENOEXEC, "the model failed while running: %s", a->GetErrorMessage(st));
    a->ReleaseStatus(st);
    return rc;
}

int vdnn_ort_run(VdnnOrtSession *s, const VdnnOrtFeed *feeds, const size_t *output_slots,
                 size_t n_outputs, void *const *out_buffers, VdnnOrtResult *results)
{
    const OrtApi *a = api();
    vdnn_ort_release_outputs(s);

    int rc = 0;
    size_t made = 0;
    for (; made < s->n_inputs; made++) {
        const VdnnOrtFeed *f = &feeds[made];
        const size_t count = feed_count(f);
        /* ORT never writes to inputs; its API just lacks a const variant. */
        OrtStatus *st = a->CreateTensorWithDataAsOrtValue(
            s->cpu_memory, (void *)(uintptr_t)f->data, count * element_size(f->type), f->shape,
            f->rank, (ONNXTensorElementDataType)f->type, &s->input_values[made]);
        if (st) {
            rc = status_error(st, -EINVAL, "cannot wrap an input tensor");
            break;
        }
    }

    for (size_t k = 0; k < n_outputs; k++) {
        const VdnnTensorMeta *m = &s->outputs[output_slots[k]];
        s->run_output_names[k] = m->name;
        s->output_values[k] = NULL;
        if (rc || !out_buffers || !out_buffers[k] || m->aliases_input)
            continue;
        VdnnOrtResult bound;
        describe_bound(m, out_buffers[k], &bound);
        OrtStatus *st = a->CreateTensorWithDataAsOrtValue(
            s->cpu_memory, out_buffers[k], bound.count * sizeof(float), m->shape, m->rank,
            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &s->output_values[k]);
        if (st)
            rc = status_error(st, -EINVAL, "cannot wrap an output buffer");
    }
    s->n_held = n_outputs; /* bound or not, every value is released later */

    if (!rc)
        rc = run_guarded(s, feeds, output_slots, n_outputs);
    for (size_t i = 0; i < made; i++)
        a->ReleaseValue(s->input_values[i]);

    for (size_t k = 0; !rc && k < n_outputs; k++) {
        if (out_buffers && out_buffers[k] && !s->outputs[output_slots[k]].aliases_input &&
            holds(s->output_values[k], out_buffers[k]))
            describe_bound(&s->outputs[output_slots[k]], out_buffers[k], &results[k]);
        else /* ORT answered with a buffer of its own (a graph input, an initializer) */
            rc = describe_result(s->output_values[k], s->run_output_names[k], &results[k]);
    }
    if (rc)
        vdnn_ort_release_outputs(s);
    return rc;
}
