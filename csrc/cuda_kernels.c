/* The GPU kernels on CUDA (cuda_kernels.h): the driver API and NVRTC through
 * dlopen, declared here by the library itself (no CUDA header is needed).
 *
 * The launch geometry: blocks of 32 x 8 threads over the kernel's w x h, one
 * grid layer per z; a kernel returns for indices past its extent (dialect.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda_kernels.h"
#include "error.h"
#include "gpu/self_check.h"
#include "loadable.h"

extern const char vdnn_gpu_source[];
extern const size_t vdnn_gpu_source_size;

/* --- the driver API and NVRTC, as far as used ------------------------------ */

typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef unsigned long long CUdeviceptr;
typedef struct _nvrtcProgram *nvrtcProgram;

enum {
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CUDA_ERROR_NO_DEVICE = 100,
    CU_STREAM_NON_BLOCKING = 1,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* CUmemPoolProps (88 bytes since CUDA 11.2: later members took reserved
 * bytes, zero meaning their default). */
typedef struct CUmemPoolProps {
    int allocType;
    int handleTypes;
    struct {
        int type;
        int id;
    } location;
    void *win32SecurityAttributes;
    unsigned char reserved[64];
} CUmemPoolProps;
_Static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps is 88 bytes");

typedef struct Driver {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxPushCurrent)(CUcontext);
    CUresult (*cuCtxPopCurrent)(CUcontext *);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*cuMemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void *);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
} Driver;

typedef struct Nvrtc {
    int (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int,
                              const char *const *, const char *const *);
    int (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
    int (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
    int (*nvrtcGetProgramLog)(nvrtcProgram, char *);
    int (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
    int (*nvrtcGetPTX)(nvrtcProgram, char *);
    int (*nvrtcDestroyProgram)(nvrtcProgram *);
    const char *(*nvrtcGetErrorString)(int);
    int (*nvrtcVersion)(int *, int *);
} Nvrtc;

/* NVRTC's entry points that older releases lack (NULL there): CUBIN since
 * 11.1, the list of architectures since 11.2. */
typedef struct NvrtcOptional {
    int (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *);
    int (*nvrtcGetCUBIN)(nvrtcProgram, char *);
    int (*nvrtcGetNumSupportedArchs)(int *);
    int (*nvrtcGetSupportedArchs)(int *);
} NvrtcOptional;

/* Symbols looked up by name into a struct of function pointers, in order. */
static int load_symbols(void *lib, const char *const *names, size_t n, void *table,
                        const char *what)
{
    for (size_t i = 0; i < n; i++) {
        void *sym = dlsym(lib, names[i]);
        if (!sym)
            return vdnn_fail(-ENOENT, "%s has no %s", what, names[i]);
        memcpy((char *)table + i * sizeof(void (*)(void)), &sym, sizeof(sym));
    }
    return 0;
}

static const char *const driver_names[] = {
    "cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2", "cuCtxGetCurrent", "cuModuleLoadDataEx", "cuModuleGetFunction", "cuLaunchKernel",
    "cuMemFreeAsync", "cuMemsetD8Async", "cuMemAllocFromPoolAsync", "cuMemPoolCreate",
    "cuMemPoolSetAttribute", "cuGetErrorString", "cuStreamCreate", "cuStreamDestroy_v2",
    "cuStreamSynchronize", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2"};
static const char *const nvrtc_names[] = {
    "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",
    "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcDestroyProgram", "nvrtcGetErrorString",
    "nvrtcVersion"};
static const char *const nvrtc_optional_names[] = {
    "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcGetNumSupportedArchs", "nvrtcGetSupportedArchs"};
_Static_assert(sizeof(Driver) == sizeof(driver_names) / sizeof(driver_names[0]) *
                                     sizeof(void (*)(void)), "driver_names and Driver differ");
_Static_assert(sizeof(Nvrtc) == sizeof(nvrtc_names) / sizeof(nvrtc_names[0]) *
                                    sizeof(void (*)(void)), "nvrtc_names and Nvrtc differ");
_Static_assert(sizeof(NvrtcOptional) == sizeof(nvrtc_optional_names) /
                                            sizeof(nvrtc_optional_names[0]) *
                                            sizeof(void (*)(void)),
               "nvrtc_optional_names and NvrtcOptional differ");

#define MAX_DEVICES 64
#define MAX_KERNELS 64

/* A device's entry: tried, rc, why, dev, ctx and module are written once,
 * under `lock`, before `ready` is set (release); a reader that sees ready
 * (acquire) reads them without the lock. functions[i] and names[i] are
 * written, under `functions_lock`, before n_functions counts them (release):
 * a launch finds a kernel already looked up without a lock. */
typedef struct Device {
    int ready;
    int tried, rc;
    char why[512];
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUmemoryPool pool; /* the backend's scratch */
    const char *names[MAX_KERNELS];
    CUfunction functions[MAX_KERNELS];
    size_t n_functions;
} Device;

/* The driver, NVRTC and the devices' opening (an NVRTC compile takes
 * seconds: nothing on a launch's path waits for it). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t functions_lock = PTHREAD_MUTEX_INITIALIZER;
static int driver_tried, driver_rc, nvrtc_tried, nvrtc_rc;
static char driver_why[512], nvrtc_why[512];
static Driver cu;
static Nvrtc nv;
static NvrtcOptional nvo;
static Device devices[MAX_DEVICES];

static const char *cu_error(CUresult r)
{
    const char *s = NULL;
    if (cu.cuGetErrorString && cu.cuGetErrorString(r, &s) == 0 && s)
        return s;
    return "unknown CUDA error";
}

/* Records the outcome of a once-only step: its rc and message. */
static int remember(int rc, char *why, size_t size)
{
    snprintf(why, size, "%s", rc ? vdnn_last_error() : "");
    return rc;
}

static int load_driver_locked(void)
{
    if (driver_tried)
        return driver_rc ? vdnn_fail(driver_rc, "%s", driver_why) : 0;
    driver_tried = 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int rc;
    if (!lib)
        rc = vdnn_fail(-ENOENT, "no CUDA driver (libcuda.so.1: %s)", dlerror());
    else if (!(rc = load_symbols(lib, driver_names, sizeof(driver_names) / sizeof(*driver_names),
                                 &cu, "the CUDA driver (libcuda.so.1)"))) {
        const CUresult r = cu.cuInit(0);
        if (r == CUDA_ERROR_NO_DEVICE) /* a driver, no GPU (or none visible) */
            rc = vdnn_fail(-ENODEV, "CUDA has no device: %s", cu_error(r));
        else if (r)
            rc = vdnn_fail(-EIO, "CUDA: cuInit failed: %s", cu_error(r));
    }
    driver_rc = remember(rc, driver_why, sizeof(driver_why));
    return rc;
}

static int load_nvrtc_locked(void)
{
    if (nvrtc_tried)
        return nvrtc_rc ? vdnn_fail(nvrtc_rc, "%s", nvrtc_why) : 0;
    nvrtc_tried = 1;
    char names[4][4096];
    size_t n = 0;
    const char *env = getenv("VMAFDNN_NVRTC_LIBRARY");
    int version = 0;
    if (env && env[0])
        snprintf(names[n++], sizeof(names[0]), "%s", env);
    else {
        if (cu.cuDriverGetVersion && cu.cuDriverGetVersion(&version) == 0 && version >= 1000)
            snprintf(names[n++], sizeof(names[0]), "libnvrtc.so.%d", version / 1000);
        static const char *const known[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                            "libnvrtc.so.11.2"};
        for (size_t i = 0; i < 3; i++)
            snprintf(names[n++], sizeof(names[0]), "%s", known[i]);
    }
    void *lib = NULL;
    char tried[1024] = "";
    for (size_t i = 0; i < n && !lib; i++) {
        struct stat sb;
        const char *refused = NULL; /* a path dlopen must not open (loadable.h) */
        if (strchr(names[i], '/') && vdnn_loadable_file(names[i], &sb) != 0)
            refused = errno == EINVAL || errno == EISDIR ? "not a regular file" : strerror(errno);
        else
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s%s%s%s",
                     tried[0] ? ", " : "", names[i], refused ? " (" : "", refused ? refused : "",
                     refused ? ")" : "");
    }
    int rc;
    if (!lib)
        rc = vdnn_fail(-ENOENT, "no NVRTC library (tried %s; VMAFDNN_NVRTC_LIBRARY names one)",
                       tried);
    else if (!(rc = load_symbols(lib, nvrtc_names, sizeof(nvrtc_names) / sizeof(*nvrtc_names),
                                 &nv, "the NVRTC library")))
        for (size_t i = 0; i < sizeof(nvrtc_optional_names) / sizeof(*nvrtc_optional_names); i++) {
            void *sym = dlsym(lib, nvrtc_optional_names[i]);
            memcpy((char *)&nvo + i * sizeof(void (*)(void)), &sym, sizeof(sym));
        }
    nvrtc_rc = remember(rc, nvrtc_why, sizeof(nvrtc_why));
    return rc;
}

/* "compute_XY": PTX (NUL-terminated); "sm_XY": a CUBIN. */
static int compile_locked(const char *arch, char **image, size_t *image_size)
{
    int rc = load_nvrtc_locked();
    if (rc)
        return rc;
    const int cubin = strncmp(arch, "sm_", 3) == 0;
    if (cubin && !(nvo.nvrtcGetCUBINSize && nvo.nvrtcGetCUBIN))
        return vdnn_fail(-EIO, "NVRTC gives no CUBIN (before CUDA 11.1) for %s", arch);
    int (*get_size)(nvrtcProgram, size_t *) = cubin ? nvo.nvrtcGetCUBINSize : nv.nvrtcGetPTXSize;
    int (*get)(nvrtcProgram, char *) = cubin ? nvo.nvrtcGetCUBIN : nv.nvrtcGetPTX;
    const char *what = cubin ? "CUBIN" : "PTX";
    nvrtcProgram prog = NULL;
    int r = nv.nvrtcCreateProgram(&prog, vdnn_gpu_source, "vmafdnn_gpu_kernels.cu", 0, NULL,
                                  NULL);
    if (r)
        return vdnn_fail(-EIO, "NVRTC: cannot create the program: %s", nv.nvrtcGetErrorString(r));
    char arch_opt[64];
    snprintf(arch_opt, sizeof(arch_opt), "--gpu-architecture=%s", arch);
    const char *opts[] = {arch_opt, "--fmad=false", "--std=c++14"};
    r = nv.nvrtcCompileProgram(prog, 3, opts);
    size_t log_size = 0;
    char *log = NULL;
    if (nv.nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1 &&
        (log = malloc(log_size)) && nv.nvrtcGetProgramLog(prog, log) != 0)
        log[0] = 0;
    size_t size = 0;
    if (r)
        rc = vdnn_fail(-EIO, "NVRTC cannot compile the kernels for %s: %s: %.300s", arch,
                       nv.nvrtcGetErrorString(r), log ? log : "");
    else if (get_size(prog, &size) || !size || !(*image = malloc(size)))
        rc = vdnn_fail(-EIO, "NVRTC gave no %s for %s", what, arch);
    else if (get(prog, *image)) {
        free(*image);
        *image = NULL;
        rc = vdnn_fail(-EIO, "NVRTC gave no %s for %s", what, arch);
    } else
        *image_size = size;
    free(log);
    nv.nvrtcDestroyProgram(&prog);
    return rc;
}

int vdnn_nvrtc_compile(const char *arch, char **image, size_t *size)
{
    if (!arch || !image || !size)
        return vdnn_fail(-EINVAL, "vdnn_nvrtc_compile: NULL argument");
    *image = NULL;
    *size = 0;
    pthread_mutex_lock(&lock);
    const int rc = compile_locked(arch, image, size);
    pthread_mutex_unlock(&lock);
    return rc;
}

/* What to compile for a device of compute capability cc (major * 10 +
 * minor): its own SASS ("sm_XY", a CUBIN) where NVRTC knows the
 * architecture. A CUBIN loads on any driver of NVRTC's major release (CUDA's
 * minor version compatibility), where PTX needs a driver at least as new as
 * NVRTC (PTX ISA 8.8 from the CUDA 12.9 wheels: CUDA_ERROR_UNSUPPORTED_PTX_
 * VERSION under a 535 or 550 driver). A device newer than NVRTC knows: PTX
 * for the newest architecture below it, which the driver (as new as the
 * device) compiles. */
static int target_locked(int cc, char *arch, size_t size)
{
    int rc = load_nvrtc_locked();
    if (rc)
        return rc;
    int n = 0, best = 0;
    int *archs = NULL;
    if (nvo.nvrtcGetNumSupportedArchs && nvo.nvrtcGetSupportedArchs &&
        !nvo.nvrtcGetNumSupportedArchs(&n) && n > 0 && (archs = calloc((size_t)n, sizeof(int))) &&
        !nvo.nvrtcGetSupportedArchs(archs)) {
        for (int i = 0; i < n; i++)
            if (archs[i] <= cc && archs[i] > best)
                best = archs[i];
        free(archs);
        if (!best)
            return vdnn_fail(-ENODEV, "NVRTC compiles for no architecture up to sm_%d", cc);
    } else {
        free(archs);
        best = cc; /* NVRTC before 11.2: try the device's own */
    }
    if (best == cc && nvo.nvrtcGetCUBIN)
        snprintf(arch, size, "sm_%d", cc);
    else
        snprintf(arch, size, "compute_%d", best);
    return 0;
}

int vdnn_nvrtc_target(int major, int minor, char *arch, size_t size)
{
    if (major < 1 || minor < 0 || minor > 9 || !arch || size < 16)
        return vdnn_fail(-EINVAL, "vdnn_nvrtc_target: bad argument");
    pthread_mutex_lock(&lock);
    const int rc = target_locked(major * 10 + minor, arch, size);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int load_module_locked(Device *d, int device, int major, int minor);
static int self_check_locked(Device *d, int device);

static int open_device_locked(Device *d, int device)
{
    int rc, count = 0, major = 0, minor = 0, pools = 0;
    CUresult r;
    if ((rc = load_driver_locked()))
        return rc;
    if ((r = cu.cuDeviceGetCount(&count)))
        return vdnn_fail(-EIO, "CUDA: cuDeviceGetCount failed: %s", cu_error(r));
    if (device >= count)
        return vdnn_fail(-ENODEV, "CUDA has no device %d (%d devices)", device, count);
    if ((r = cu.cuDeviceGet(&d->dev, device)) ||
        (r = cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     d->dev)) ||
        (r = cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     d->dev)) ||
        (r = cu.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d->dev)))
        return vdnn_fail(-EIO, "CUDA device %d: %s", device, cu_error(r));
    /* the backend's scratch is stream-ordered (cuMemAllocFromPoolAsync):
     * refused at open, rather than every frame failing */
    if (!pools)
        return vdnn_fail(-ENODEV, "CUDA device %d has no stream-ordered memory pools "
                         "(cuMemAllocFromPoolAsync)", device);
    if ((r = cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev)))
        return vdnn_fail(-EIO, "CUDA device %d: %s", device, cu_error(r));
    if ((rc = load_module_locked(d, device, major, minor)) ||
        (rc = self_check_locked(d, device))) {
        /* the retain above: nothing of ours runs there (the module is the
         * context's, unloaded with it) */
        cu.cuDevicePrimaryCtxRelease(d->dev);
        d->ctx = NULL;
    }
    return rc;
}

static int load_module_locked(Device *d, int device, int major, int minor)
{
    int rc;
    CUresult r;
    char arch[32], *ptx = NULL;
    size_t ptx_size = 0;
    if ((rc = target_locked(major * 10 + minor, arch, sizeof(arch))))
        return rc;
    if ((rc = compile_locked(arch, &ptx, &ptx_size)) && strncmp(arch, "sm_", 3) == 0) {
        /* no CUBIN: PTX, for a driver at least as new as NVRTC */
        snprintf(arch, sizeof(arch), "compute_%d%d", major, minor);
        rc = compile_locked(arch, &ptx, &ptx_size);
    }
    if (rc)
        return rc;
    char jit_log[1024] = "";
    int keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {jit_log, (void *)(uintptr_t)sizeof(jit_log)};
    if ((r = cu.cuCtxPushCurrent(d->ctx))) {
        free(ptx);
        return vdnn_fail(-EIO, "CUDA device %d: %s", device, cu_error(r));
    }
    r = cu.cuModuleLoadDataEx(&d->module, ptx, 2, keys, values);
    free(ptx);
    CUresult rp = 0;
    if (!r) {
        /* the scratch's own pool, which keeps what it took between frames
         * (a pool gives memory back to the device at every synchronisation
         * otherwise); the device's default pool, which ORT or the
         * application may use, keeps its own release threshold */
        CUmemPoolProps props;
        memset(&props, 0, sizeof(props));
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = device; /* the ordinal */
        unsigned long long keep = UINT64_MAX;
        if (!(rp = cu.cuMemPoolCreate(&d->pool, &props)))
            rp = cu.cuMemPoolSetAttribute(d->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    }
    CUcontext popped;
    cu.cuCtxPopCurrent(&popped);
    if (r) {
        int driver = 0, nv_major = 0, nv_minor = 0;
        cu.cuDriverGetVersion(&driver);
        nv.nvrtcVersion(&nv_major, &nv_minor);
        return vdnn_fail(-EIO, "CUDA device %d cannot load the kernels (%s from NVRTC %d.%d, "
                         "driver %d.%d): %s %.300s", device, arch, nv_major, nv_minor,
                         driver / 1000, driver % 1000 / 10, cu_error(r), jit_log);
    }
    if (rp) /* the module stays: the context's, unloaded with it */
        return vdnn_fail(-EIO, "CUDA device %d: no memory pool for the kernels: %s", device,
                         cu_error(rp));
    return 0;
}

int vdnn_cuda_kernels_open(int device)
{
    if (device < 0 || device >= MAX_DEVICES)
        return vdnn_fail(device < 0 ? -EINVAL : -ENODEV, "CUDA device %d is out of range",
                         device);
    Device *d = &devices[device];
    if (__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE)) /* every frame: no lock */
        return d->rc ? vdnn_fail(d->rc, "%s", d->why) : 0;
    pthread_mutex_lock(&lock);
    int rc;
    if (d->tried)
        rc = d->rc ? vdnn_fail(d->rc, "%s", d->why) : 0;
    else {
        d->tried = 1;
        d->rc = rc = remember(open_device_locked(d, device), d->why, sizeof(d->why));
        __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* --- the backend ------------------------------------------------------------ */

/* The kernels looked up so far: entries 0..n-1 of d (see Device). */
static int known_function(Device *d, size_t n, const char *name, CUfunction *f)
{
    for (size_t i = 0; i < n; i++)
        if (d->names[i] == name || strcmp(d->names[i], name) == 0) {
            *f = d->functions[i];
            return 1;
        }
    return 0;
}

static int function_of(Device *d, const char *name, CUfunction *f)
{
    if (known_function(d, __atomic_load_n(&d->n_functions, __ATOMIC_ACQUIRE), name, f))
        return 0;
    pthread_mutex_lock(&functions_lock);
    int rc = 0;
    const size_t n = d->n_functions;
    if (known_function(d, n, name, f))
        ;
    else if (n == MAX_KERNELS)
        rc = vdnn_fail(-EIO, "CUDA: more than %d kernels", MAX_KERNELS);
    else {
        const CUresult r = cu.cuModuleGetFunction(f, d->module, name);
        if (r)
            rc = vdnn_fail(-EIO, "CUDA: no kernel %s in the module: %s", name, cu_error(r));
        else {
            d->names[n] = name;
            d->functions[n] = *f;
            __atomic_store_n(&d->n_functions, n + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&functions_lock);
    return rc;
}

/* Runs one driver call with the device's context current on this thread:
 * pushed and popped around it, unless it is current already (ORT's threads
 * have the primary context current, as the runtime API makes it: two driver
 * calls saved a launch and an allocation). */
#define IN_CONTEXT(d, call)                                                    \
    do {                                                                       \
        CUcontext current_ = NULL, popped_;                                    \
        if (cu.cuCtxGetCurrent(&current_) == 0 && current_ == (d)->ctx) {      \
            r = (call);                                                        \
            break;                                                             \
        }                                                                      \
        r = cu.cuCtxPushCurrent((d)->ctx);                                     \
        if (!r) {                                                              \
            r = (call);                                                        \
            cu.cuCtxPopCurrent(&popped_);                                      \
        }                                                                      \
    } while (0)

static int cuda_launch(void *self, const VkKernelRef *k, unsigned w, unsigned h, unsigned dz,
                       void *const *args)
{
    const VdnnCudaStream *s = self;
    Device *d = &devices[s->device];
    if (!k || !w || !h || !dz)
        return vdnn_fail(-EINVAL, "CUDA: empty launch");
    CUfunction f;
    int rc = function_of(d, k->name, &f);
    if (rc)
        return rc;
    const unsigned bx = 32, by = 8;
    CUresult r;
    IN_CONTEXT(d, cu.cuLaunchKernel(f, (w + bx - 1) / bx, (h + by - 1) / by, dz, bx, by, 1, 0,
                                    (CUstream)s->stream, (void **)(uintptr_t)args, NULL));
    return r ? vdnn_fail(-EIO, "CUDA: launching %s (%ux%ux%u) failed: %s", k->name, w, h, dz,
                         cu_error(r))
             : 0;
}

static int cuda_alloc(void *self, size_t bytes, void **out)
{
    const VdnnCudaStream *s = self;
    Device *d = &devices[s->device];
    CUdeviceptr p = 0;
    CUresult r;
    *out = NULL;
    IN_CONTEXT(d, cu.cuMemAllocFromPoolAsync(&p, bytes ? bytes : 1, d->pool,
                                             (CUstream)s->stream));
    if (r)
        return vdnn_fail(-ENOMEM, "CUDA: cannot allocate %zu bytes on device %d: %s", bytes,
                         s->device, cu_error(r));
    IN_CONTEXT(d, cu.cuMemsetD8Async(p, 0, bytes, (CUstream)s->stream));
    if (r) {
        IN_CONTEXT(d, cu.cuMemFreeAsync(p, (CUstream)s->stream));
        return vdnn_fail(-EIO, "CUDA: cannot clear %zu bytes on device %d", bytes, s->device);
    }
    *out = (void *)(uintptr_t)p;
    return 0;
}

static void cuda_release(void *self, void *block)
{
    const VdnnCudaStream *s = self;
    if (!block)
        return;
    CUresult r;
    IN_CONTEXT(&devices[s->device], cu.cuMemFreeAsync((CUdeviceptr)(uintptr_t)block,
                                                      (CUstream)s->stream));
    (void)r; /* nothing to do about it: the pool keeps the block */
}

static int cuda_upload(void *self, void *dst, const void *src, size_t bytes)
{
    const VdnnCudaStream *s = self;
    CUresult r;
    IN_CONTEXT(&devices[s->device],
               cu.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, bytes, (CUstream)s->stream));
    return r ? vdnn_fail(-EIO, "CUDA: copying %zu bytes to device %d failed: %s", bytes,
                         s->device, cu_error(r))
             : 0;
}

static int cuda_download(void *self, void *dst, const void *src, size_t bytes)
{
    const VdnnCudaStream *s = self;
    CUresult r;
    IN_CONTEXT(&devices[s->device],
               cu.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)s->stream));
    if (!r)
        IN_CONTEXT(&devices[s->device], cu.cuStreamSynchronize((CUstream)s->stream));
    return r ? vdnn_fail(-EIO, "CUDA: copying %zu bytes from device %d failed: %s", bytes,
                         s->device, cu_error(r))
             : 0;
}

static void stream_backend(VdnnCudaStream *holder, int device, void *stream)
{
    holder->device = device;
    holder->stream = stream;
    holder->backend.launch = cuda_launch;
    holder->backend.alloc = cuda_alloc;
    holder->backend.release = cuda_release;
    holder->backend.upload = cuda_upload;
    holder->backend.download = cuda_download;
    holder->backend.self = holder;
}

int vdnn_cuda_stream_init(VdnnCudaStream *holder, int device, void *stream)
{
    if (!holder)
        return vdnn_fail(-EINVAL, "vdnn_cuda_stream_init: NULL holder");
    int rc = vdnn_cuda_kernels_open(device);
    if (rc)
        return rc;
    stream_backend(holder, device, stream);
    return 0;
}

/* The frames a device's kernels are held to before they score anything
 * (self_check.h): the common size at 10 bits, an odd one at 8 bits with
 * vmaf_v0.6.1neg's gain limit, a small one at 16 bits. About 70 ms of the
 * CPU kernels, once per device and process. */
static const struct {
    int w, h, bpc;
    double gain_limit;
} self_checks[] = {{1920, 1080, 10, 100.0}, {353, 199, 8, 1.0}, {64, 36, 16, 100.0}};

static int self_check_locked(Device *d, int device)
{
    CUstream stream = NULL;
    CUresult r;
    IN_CONTEXT(d, cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    if (r)
        return vdnn_fail(-EIO, "CUDA device %d: no stream for the self-check: %s", device,
                         cu_error(r));
    VdnnCudaStream holder;
    stream_backend(&holder, device, stream);
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof(self_checks) / sizeof(self_checks[0]); i++)
        rc = vk_self_check(&holder.backend, self_checks[i].w, self_checks[i].h,
                           self_checks[i].bpc, self_checks[i].gain_limit);
    IN_CONTEXT(d, cu.cuStreamSynchronize(stream));
    IN_CONTEXT(d, cu.cuStreamDestroy(stream));
    if (rc) {
        char why[400];
        snprintf(why, sizeof(why), "%s", vdnn_last_error());
        return vdnn_fail(rc == -ENOMEM ? -ENOMEM : -EIO, "CUDA device %d failed the kernels' "
                         "self-check: %s", device, why);
    }
    return 0;
}
