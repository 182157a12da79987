/*
 * libvmafdnn policy: the catalog of models, the names every front end shows,
 * the default model sets.
 *
 * A front end (the vmafdnn command line, the Python package, the FFmpeg
 * filter, a future binding) is meant to be a thin translation of this
 * header: it parses and prints device, resize, pool, report format, model
 * kind and EP names with the functions below, finds models by name through
 * the catalog, and runs vmaf_dnn_default_models() when the user names none.
 *
 * The conventions of vmafdnn.h hold: 0 or a negative errno, a readable
 * message in vmaf_dnn_last_error() after every failure, `**out` written only
 * on success, NULL-safe close.
 */
#ifndef VMAFDNN_CATALOG_H
#define VMAFDNN_CATALOG_H

#include <stddef.h>

#include "context.h"
#include "vmafdnn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Names                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Every enum a user sees has one spelling per value, defined here:
 *   device   auto, cpu, cuda, openvino, rocm, openvino-cpu, openvino-gpu
 *   resize   none, bilinear, nearest, bicubic  (VMAF_DNN_RESIZE_DEFAULT has
 *            no name: it means "not chosen")
 *   pool     min, max, mean, harmonic_mean
 *   format   json, xml, csv
 *   kind     fr, nr, features  (VMAF_DNN_MODEL_INVALID has no name)
 *   static shapes  auto, off, on  (VmafDnnStaticShapes)
 *   EP       CPU, CUDA, OpenVINO:GPU, OpenVINO:CPU, ROCm, OpenVINO:NPU,
 *            NvTensorRTRTX:GPU, MIGraphX:GPU, WebGpu:GPU, ORT-policy (the
 *            strings of vmaf_dnn_session_attached_ep; see VmafDnnEp)
 *
 * *_from_name() matches ASCII case-insensitively and takes '-' and '_' as
 * the same character ("OpenVINO_CPU", "harmonic-mean" are accepted). It
 * writes *out only on success and returns 0, or -EINVAL (NULL argument or
 * an unknown name: the message quotes the name, escaped, and lists the
 * valid ones).
 * *_name() returns the name of a value (static storage), NULL for a value
 * without one.
 * *_names() returns the valid names, in value order, separated by ", "
 * (static storage): for error messages and for splitting into a list of
 * choices.
 * All of them are thread-safe and need no ONNX Runtime.
 */
VMAF_DNN_API int vmaf_dnn_device_from_name(const char *name, VmafDnnDevice *out);
VMAF_DNN_API const char *vmaf_dnn_device_name(VmafDnnDevice device);
VMAF_DNN_API const char *vmaf_dnn_device_names(void);

VMAF_DNN_API int vmaf_dnn_resize_from_name(const char *name, VmafDnnResize *out);
VMAF_DNN_API const char *vmaf_dnn_resize_name(VmafDnnResize resize);
VMAF_DNN_API const char *vmaf_dnn_resize_names(void);

VMAF_DNN_API int vmaf_dnn_pool_from_name(const char *name, VmafDnnPoolMethod *out);
VMAF_DNN_API const char *vmaf_dnn_pool_name(VmafDnnPoolMethod method);
VMAF_DNN_API const char *vmaf_dnn_pool_names(void);

VMAF_DNN_API int vmaf_dnn_output_format_from_name(const char *name, VmafDnnOutputFormat *out);
VMAF_DNN_API const char *vmaf_dnn_output_format_name(VmafDnnOutputFormat fmt);
VMAF_DNN_API const char *vmaf_dnn_output_format_names(void);

VMAF_DNN_API int vmaf_dnn_model_kind_from_name(const char *name, VmafDnnModelKind *out);
VMAF_DNN_API const char *vmaf_dnn_model_kind_name(VmafDnnModelKind kind);
VMAF_DNN_API const char *vmaf_dnn_model_kind_names(void);

VMAF_DNN_API int vmaf_dnn_static_shapes_from_name(const char *name, VmafDnnStaticShapes *out);
VMAF_DNN_API const char *vmaf_dnn_static_shapes_name(VmafDnnStaticShapes setting);
VMAF_DNN_API const char *vmaf_dnn_static_shapes_names(void);

VMAF_DNN_API int vmaf_dnn_device_io_from_name(const char *name, VmafDnnDeviceIo *out);
VMAF_DNN_API const char *vmaf_dnn_device_io_name(VmafDnnDeviceIo setting);
VMAF_DNN_API const char *vmaf_dnn_device_io_names(void);

/* The execution providers a session can attach to: every string
 * vmaf_dnn_session_attached_ep returns for an EP this library knows (the
 * steps of every VmafDnnDevice chain, whether compiled into ORT or brought
 * by a plugin library) has a value here. The one exception is a plugin EP
 * the library has no step for, which ORT's selection policy
 * (VMAF_DNN_DEVICE_POLICY_*) may choose: attached_ep then says "<EP>:<CPU|
 * GPU|NPU>" as ORT names it, and vmaf_dnn_ep_from_name refuses that string.
 * Values are append-only. */
typedef enum VmafDnnEp {
    VMAF_DNN_EP_CPU = 0,
    VMAF_DNN_EP_CUDA = 1,
    VMAF_DNN_EP_OPENVINO_GPU = 2,
    VMAF_DNN_EP_OPENVINO_CPU = 3,
    VMAF_DNN_EP_ROCM = 4,
    VMAF_DNN_EP_OPENVINO_NPU = 5,
    VMAF_DNN_EP_TENSORRT_RTX = 6, /* "NvTensorRTRTX:GPU" */
    VMAF_DNN_EP_MIGRAPHX = 7,     /* "MIGraphX:GPU" */
    VMAF_DNN_EP_WEBGPU = 8,       /* "WebGpu:GPU" */
    VMAF_DNN_EP_ORT_POLICY = 9,   /* "ORT-policy": ORT's selection policy
                                     chose, and ORT (1.22) cannot say what */
} VmafDnnEp;

VMAF_DNN_API int vmaf_dnn_ep_from_name(const char *name, VmafDnnEp *out);
VMAF_DNN_API const char *vmaf_dnn_ep_name(VmafDnnEp ep);
VMAF_DNN_API const char *vmaf_dnn_ep_names(void);

/* ------------------------------------------------------------------------ */
/* Finding models by name                                                   */
/* ------------------------------------------------------------------------ */

/*
 * A model name is a file name without ".onnx": "psnr_y" names psnr_y.onnx
 * (and its sidecar psnr_y.json). A string that contains '/' or ends in
 * ".onnx" is a path, never a name, and is used as it is. Names are looked
 * up, first match wins, in:
 *   1. each entry of the environment variable VMAFDNN_MODEL_PATH
 *      (':'-separated directories; empty entries are skipped), read on
 *      every call;
 *   2. the data directory of the installed library: found relative to the
 *      library's own file (dladdr), so a moved installation still finds its
 *      models: <libdir>/../<datadir>/vmafdnn/models for a system install
 *      (with meson's libdir and datadir), <package>/models for the Python
 *      wheel (the library sits in the package directory); then, if that
 *      does not exist, the data directory compiled in at build time
 *      (<prefix>/<datadir>/vmafdnn/models; none in a wheel);
 *   3. the directories added with vmaf_dnn_model_path_add(), in order.
 * vmaf_dnn_model_search_path() says which directories these are.
 * A name resolves to a path only; opening it is subject to the model policy
 * like any path (a policy's model_dir refuses a built-in model outside it).
 */

/* Appends `dir` to the caller part of the search path (3. above); a
 * directory already on it is not added twice. The string is copied.
 * Thread-safe; lasts for the life of the process.
 * Returns 0, -EINVAL (dir NULL or empty), -ENAMETOOLONG (dir longer than
 * PATH_MAX), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_model_path_add(const char *dir);

/* Writes the search path, in lookup order, as directories separated by ':'
 * into buf (size bytes, NUL-terminated). Directories that do not exist are
 * listed too. Returns 0, -EINVAL (buf NULL or size 0), -ENAMETOOLONG (buf
 * too small: buf holds "" and the message says how many bytes are needed),
 * -ENOMEM. Thread-safe. */
VMAF_DNN_API int vmaf_dnn_model_search_path(char *buf, size_t size);

/*
 * Resolves `name` (a model name, or a path: see above) to the path of an
 * .onnx file, written into buf (size bytes, NUL-terminated). A path is
 * copied unchanged, whether or not it exists (opening it reports that); a
 * name is looked up on the search path.
 * Returns 0, -EINVAL (NULL argument, size 0, empty name),
 * -ENOENT (no model of that name on the search path: the message lists the
 * names that are there and the search path), -ENAMETOOLONG (the path does
 * not fit in buf, or is longer than PATH_MAX), -ENOMEM. Thread-safe.
 */
VMAF_DNN_API int vmaf_dnn_model_resolve(const char *name, char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* The catalog                                                              */
/* ------------------------------------------------------------------------ */

/* One model as its files describe it (the model itself is not opened and
 * ONNX Runtime is not needed; what a sidecar does not say is left empty).
 * Every pointer is owned by the catalog and valid until it is closed. */
typedef struct VmafDnnCatalogEntry {
    const char *name;        /* the name that resolves to it (file name
                                without ".onnx") */
    const char *path;        /* the .onnx file */
    VmafDnnModelKind kind;   /* sidecar "kind"; FEATURES when the sidecar
                                lists "features"; else FR / NR from the
                                number of "input_names" (2 / 1); else
                                VMAF_DNN_MODEL_INVALID: only attaching the
                                model tells */
    size_t n_inputs;
    const char *const *inputs;  /* sidecar "input_names": the image inputs,
                                   [reference, distorted] for FR */
    size_t n_outputs;
    const char *const *outputs; /* the scores it writes: sidecar
                                   "output_names", else "output_name", else
                                   "name" */
    const char *description; /* what the model computes; "" when unknown */
    const char *meaning;     /* how to read its score: what a higher value
                                says; "" when unknown */
    int has_range;
    double range[2];         /* [min, max] of the score, when has_range */
    int higher_is_better;    /* 1, 0, or -1 when the sidecar does not say */
    unsigned min_width;      /* the smallest frame the model can score (its */
    unsigned min_height;     /* receptive field); 0 when the sidecar does
                                not say */
} VmafDnnCatalogEntry;

typedef struct VmafDnnCatalog VmafDnnCatalog;

/*
 * Opens a snapshot of every model on the search path: each "<name>.onnx"
 * regular file (symbolic links followed) in each directory, in search order
 * and by name within a directory; a name found again later is shadowed and
 * left out, as with $PATH. Directories that do not exist are skipped.
 * With `name` non-NULL the catalog holds just that model (a name or a path,
 * resolved by vmaf_dnn_model_resolve); its sidecar must load.
 * Returns 0, -EINVAL (out NULL; a sidecar with a bad key or value: the
 * message names the file and key), the codes of vmaf_dnn_model_resolve
 * (with a name), -ENOENT (a path that does not exist), the sidecar codes of
 * vmaf_dnn_use_tiny_model (-EBADMSG, -E2BIG, -EISDIR, -EACCES, ...) for a
 * named model; a model on the search path whose sidecar does not load is
 * listed with its name and path only. -ENOMEM.
 */
VMAF_DNN_API int vmaf_dnn_catalog_open(VmafDnnCatalog **out, const char *name);

/* Number of entries; 0 for NULL. */
VMAF_DNN_API size_t vmaf_dnn_catalog_count(const VmafDnnCatalog *catalog);

/* Entry `index`, NULL when out of range. Owned by the catalog. */
VMAF_DNN_API const VmafDnnCatalogEntry *vmaf_dnn_catalog_entry(const VmafDnnCatalog *catalog,
                                                               size_t index);

/* Releases the catalog and its entries. NULL is a no-op. */
VMAF_DNN_API void vmaf_dnn_catalog_close(VmafDnnCatalog *catalog);

/*
 * The models that run when the user names none, as a NULL-terminated array
 * of names (static storage) to resolve through the catalog:
 *   VMAF_DNN_MODEL_FR: "psnr_y", "ssim_y", "vmaf" ("vmaf" only where that
 *                      name resolves, vmaf_dnn_model_resolve: the build
 *                      generates it from libvmaf's model files when it can
 *                      fetch them, see docs/vmaf.md)
 *   VMAF_DNN_MODEL_NR: "sharpness_nr"
 * NULL for any other kind. A front end given only distorted pictures runs
 * the NR set; given both, the FR set. On a CPU VMAF costs several times
 * psnr_y and ssim_y together (docs/vmaf.md, "Speed"): name those two for
 * the fast set. Thread-safe.
 */
VMAF_DNN_API const char *const *vmaf_dnn_default_models(VmafDnnModelKind kind);

#ifdef __cplusplus
}
#endif

#endif /* VMAFDNN_CATALOG_H */
