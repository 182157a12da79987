/* Internal: the model sidecar, `foo.json` beside `foo.onnx`, which says how
 * to attach a tiny model (its kind, feature names, input bindings, ...).
 *
 * The sidecar is one JSON object (parsed strictly by json.h: no duplicate
 * keys, no comments, at most VDNN_SIDECAR_MAX_BYTES). Only its top-level
 * members are read; unknown keys are ignored so newer sidecars still load.
 * Each known key must have the type below, or loading fails with -EINVAL and
 * a message naming the file and the key:
 *
 *   "kind"              "fr" | "nr"
 *   "name"              non-empty string: feature name of the model's output
 *   "input_names"       array of non-empty strings: FR inputs, in the order
 *                       [reference, distorted]
 *   "output_name"       non-empty string (legacy single output name)
 *   "output_names"      array of non-empty strings: suffixes of the features
 *                       of a multi-output model
 *   "features"          non-empty array of non-empty strings: the inputs of
 *                       a feature-vector model, read from the feature
 *                       collector
 *   "feature_mean"      array of numbers, one per entry of "features" (which
 *                       must be present)
 *   "feature_std"       array of finite numbers > 0, one per entry of
 *                       "features" (which must be present)
 *   "native_resolution" boolean: size buffers from the first frame
 *   "resize"            "none" | "bilinear" | "nearest" | "bicubic"
 *   "opset"             integer in [0, INT_MAX]
 *   "description"       string (may be empty): what the model computes
 *   "meaning"           string (may be empty): how to read its score (what
 *                       a higher value says, typical values)
 *   "min_width"         integer in [1, VMAF_DNN_MAX_DIMENSION]: the
 *   "min_height"        smallest frame the model can score (its receptive
 *                       field, e.g. 11 for an 11x11 SSIM window)
 *   "higher_is_better"  boolean
 *   "range"             array of two numbers [min, max] with min < max
 *   "cap_db_per_bpc"    array of two numbers [slope, intercept]: every score
 *                       of the model is capped at slope * bpc + intercept
 *                       (the built-in psnr_y: [6, 12], libvmaf's PSNR cap)
 *   "input_sources"     object: model input name -> where that input is fed
 *                       from, one of (no other members; see context.h)
 *                         {"picture": "reference"|"distorted",
 *                          "plane": "y"|"u"|"v",
 *                          "offset": integer in [-VMAF_DNN_MAX_FRAME_OFFSET, 0]}
 *                         {"value": "bpc"|"width"|"height"|"device_type"}
 *                         {"feature": non-empty string,
 *                          "offset": integer in [-VMAF_DNN_MAX_FRAME_OFFSET,
 *                                                VMAF_DNN_MAX_FRAME_OFFSET]}
 *                       ("offset" defaults to 0, "plane" to "y")
 *   "output_keys"       array of non-empty strings: the exact feature key of
 *                       each attached output, in slot order
 *   "requires"          array of non-empty strings: model files, relative to
 *                       this model's directory, attached before it
 *   "forms"             object: attached EP (as vmaf_dnn_session_attached_ep
 *                       names it, any case: "CPU", "CUDA", "OpenVINO:CPU"; one
 *                       EP named twice in any spellings is refused) -> a
 *                       model file, relative to this model's directory,
 *                       that computes the same outputs from the same inputs
 *                       in a form made for that EP (the VMAF features'
 *                       fused CPU kernels), or a list of 1..4 such files in
 *                       order of preference; at most 16 entries. The key "*"
 *                       names the form for every EP other than ORT's CPU EP
 *                       ("CPU") that has no key of its own (the built-ins'
 *                       accelerator forms: static, Loop-free graphs), and
 *                       an EP's last choices (all of a "*" list, in
 *                       order). A form whose library operators
 *                       would run on ORT's CPU EP on that EP is passed over
 *                       for the next choice (the built-ins' kernels forms
 *                       under "CUDA" where the GPU kernels are not ready:
 *                       their samples forms, then "*")
 * Model files named by "requires" and "forms" must be paths inside the
 * model's directory (vdnn_sidecar_path_inside).
 *
 * Strings are at most VDNN_SIDECAR_MAX_STRING bytes of UTF-8 and may not
 * contain NUL (\u0000); arrays hold at most VDNN_SIDECAR_MAX_ENTRIES entries.
 * Enumerated values are matched case-sensitively.
 */
#ifndef VMAFDNN_SIDECAR_H
#define VMAFDNN_SIDECAR_H

#include <stddef.h>

#include "vmafdnn/context.h"

#define VDNN_SIDECAR_MAX_BYTES ((size_t)1 << 20)
#define VDNN_SIDECAR_MAX_STRING 4096
#define VDNN_SIDECAR_MAX_ENTRIES 256

typedef enum VdnnSidecarKind {
    VDNN_SIDECAR_KIND_UNSET, /* absent: decided from the model's inputs */
    VDNN_SIDECAR_KIND_FR,
    VDNN_SIDECAR_KIND_NR,
} VdnnSidecarKind;

typedef enum VdnnSidecarResize {
    VDNN_SIDECAR_RESIZE_UNSET, /* absent: the caller's default */
    VDNN_SIDECAR_RESIZE_NONE,
    VDNN_SIDECAR_RESIZE_BILINEAR,
    VDNN_SIDECAR_RESIZE_NEAREST,
    VDNN_SIDECAR_RESIZE_BICUBIC,
} VdnnSidecarResize;

/* Where an "input_sources" input is fed from. */
typedef enum VdnnSourceKind {
    VDNN_SOURCE_PICTURE = 1, /* a plane, this frame's or a past one's */
    VDNN_SOURCE_VALUE,       /* a number describing the frame */
    VDNN_SOURCE_FEATURE,     /* a stored feature, this frame's or a neighbour's */
} VdnnSourceKind;

typedef enum VdnnSourcePicture {
    VDNN_PICTURE_REFERENCE = 0,
    VDNN_PICTURE_DISTORTED = 1,
} VdnnSourcePicture;

/* A picture's plane, as VmafDnnPicture numbers them. */
typedef enum VdnnSourcePlane {
    VDNN_PLANE_Y = 0,
    VDNN_PLANE_U = 1,
    VDNN_PLANE_V = 2,
} VdnnSourcePlane;

typedef enum VdnnSourceValue {
    VDNN_VALUE_BPC = 0,
    VDNN_VALUE_WIDTH,  /* of the plane as fed to the model */
    VDNN_VALUE_HEIGHT,
    VDNN_VALUE_DEVICE_TYPE, /* of the model's session: 0 CPU, 1 GPU, 2 NPU */
} VdnnSourceValue;

typedef struct VdnnSidecarSource {
    char *input;            /* the model input's name */
    VdnnSourceKind kind;
    VdnnSourcePicture picture; /* PICTURE */
    VdnnSourcePlane plane;     /* PICTURE */
    VdnnSourceValue value;     /* VALUE */
    char *feature;          /* FEATURE; NULL otherwise */
    int offset;             /* PICTURE and FEATURE: frame offset */
} VdnnSidecarSource;

/* A list of strings. present is 1 when the key was in the file (an empty
 * array included); items and every items[i] are owned by the sidecar. */
typedef struct VdnnSidecarStrings {
    int present;
    size_t count;
    char **items; /* count NUL-terminated strings; NULL when count is 0 */
} VdnnSidecarStrings;

/* Everything here is owned by the VdnnSidecar and released by
 * vdnn_sidecar_free(); callers only read it. A string member is NULL when
 * its key was absent; has_* is 1 when the matching key was present. */
typedef struct VdnnSidecar {
    int present; /* 0: no sidecar file, every field holds its default */
    char *path;  /* the sidecar's path (or the origin given to
                  * vdnn_sidecar_parse), for messages; never NULL */

    VdnnSidecarKind kind;
    char *name;
    VdnnSidecarStrings input_names;
    char *output_name;
    VdnnSidecarStrings output_names;
    VdnnSidecarStrings features;
    double *feature_mean; /* features.count values, or NULL when absent */
    double *feature_std;  /* features.count values > 0, or NULL when absent */
    int has_native_resolution, native_resolution;
    VdnnSidecarResize resize;
    int has_opset, opset;
    char *description;
    char *meaning;
    int has_min_width, min_width;   /* when has_min_width */
    int has_min_height, min_height; /* when has_min_height */
    int has_higher_is_better, higher_is_better;
    int has_range;
    double range[2]; /* [min, max], min < max, when has_range */
    int has_cap_db_per_bpc;
    double cap_db_per_bpc[2]; /* [slope, intercept], when has_cap_db_per_bpc */
    size_t n_sources;
    VdnnSidecarSource *sources; /* n_sources, in file order; NULL when none */
    VdnnSidecarStrings output_keys;
    VdnnSidecarStrings requires;
    /* "forms": a key per file (a key listing several files repeats, in the
     * list's order), and */
    VdnnSidecarStrings form_eps;
    VdnnSidecarStrings form_files; /* the files (form_eps.count of each) */
} VdnnSidecar;

/*
 * Stores in *out the sidecar path of a model: onnx_path with its final
 * ".onnx" replaced by ".json", or with ".json" appended when the file name
 * does not end in ".onnx" (matched case-sensitively; a file named just
 * ".onnx" gets ".onnx.json"). The caller frees *out with free().
 * Returns 0, -EINVAL (NULL argument) or -ENOMEM.
 */
int vdnn_sidecar_path(const char *onnx_path, char **out);

/*
 * Loads the sidecar of the model file `model_name` in the directory open on
 * dir_fd (VdnnModelFile.dir_fd and .name: the file actually opened, symbolic
 * links followed) into a new VdnnSidecar stored in *out, which the caller
 * releases with vdnn_sidecar_free(). The sidecar is the file named by
 * vdnn_sidecar_path(model_name) in that directory, opened beneath it with the
 * rules of model_file.h (a symbolic link may lead elsewhere in the directory,
 * never out of it), read once through that descriptor. `shown` names it in
 * messages (copied into ->path). Messages never quote more of the file than
 * a 40-character excerpt with everything outside printable ASCII escaped
 * (vdnn_json_excerpt). *out is written only on success.
 *
 * Returns:
 *   0         success; when no sidecar exists, *out holds defaults with
 *             present == 0
 *   -EINVAL   a NULL argument, or a known key with a wrong type or value
 *   -EACCES   the sidecar is a symbolic link that leads out of the model's
 *             directory (absolute, or climbing out), or is unreadable
 *   -EISDIR   the sidecar exists but is not a regular file (a FIFO is
 *             refused without blocking)
 *   -E2BIG    the file is larger than VDNN_SIDECAR_MAX_BYTES
 *   -EBADMSG  the file is not valid JSON, or its top level is not an object
 *   -EIO      the file changed size while it was read
 *   -ENOMEM   an allocation failed
 *   other     -errno of a failed open or read (-ELOOP, -ENOTDIR,
 *             -ENAMETOOLONG, -EIO, ...)
 */
int vdnn_sidecar_load_at(int dir_fd, const char *model_name, const char *shown,
                         VdnnSidecar **out);

/*
 * Loads the sidecar of the model at onnx_path opened under the `jail`
 * directory (a policy's model_dir; NULL: none): the model is opened again by
 * the rules of model_file.h, jail included (its errors are
 * vdnn_model_file_read()'s), and its sidecar loaded beside the file that
 * open reached, as vdnn_sidecar_load_at() does. A caller that already holds
 * the model's VdnnModelFile should call vdnn_sidecar_load_at() on it instead:
 * this second open can reach another file than the first if the directory
 * changes in between (never one outside the jail).
 */
int vdnn_sidecar_load(const char *onnx_path, const char *jail, VdnnSidecar **out);

/*
 * Parses a sidecar held in memory, text[0, len) (no NUL needed), into a new
 * VdnnSidecar with present == 1, stored in *out as for vdnn_sidecar_load().
 * origin names the text in messages and is copied into ->path; NULL means
 * "(memory)". Returns 0, -EINVAL, -E2BIG, -EBADMSG or -ENOMEM as
 * vdnn_sidecar_load() does.
 */
int vdnn_sidecar_parse(const char *text, size_t len, const char *origin, VdnnSidecar **out);

/* Whether `file` names a path inside a model's directory: relative, with no
 * ".." component (a sidecar may not reach models elsewhere). */
int vdnn_sidecar_path_inside(const char *file);

/* The path of `file` (a "requires" or "forms" entry) beside the model at
 * onnx_path: onnx_path's directory part followed by file. malloc'ed (the
 * caller frees), NULL when out of memory. */
char *vdnn_sidecar_beside(const char *onnx_path, const char *file);

/* The file of sidecar's form for the EP `attached_ep` (names compared
 * without case: "cpu" is "CPU"): the EP's own key (its first choice), else
 * the "*" key when attached_ep is not "CPU", else NULL (also for a NULL,
 * empty or "*" attached_ep). */
const char *vdnn_sidecar_form(const VdnnSidecar *sidecar, const char *attached_ep);

/* The index-th of the forms EP `ep` may score with, in order: the files its
 * own key lists (a string is a list of one), then, for an EP other than
 * "CPU" and "*", the files "*" lists; NULL past the last. What a form is
 * passed over for (csrc/tiny_model.c). */
const char *vdnn_sidecar_form_choice(const VdnnSidecar *sidecar, const char *ep, size_t index);

/* Releases a sidecar and everything it owns. NULL-safe. */
void vdnn_sidecar_free(VdnnSidecar *sidecar);

#endif
