/* The one table of user-visible names for every public enum (catalog.h).
 * Each table lists its names in value order from its first value, and the
 * "valid names" string is made from the same list, so the two cannot
 * drift. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "vmafdnn/catalog.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The valid-names string of a list: X-macro lists expand twice, once into
 * the array and once into ", a, b, c", whose leading ", " is skipped. */
#define NAME_ITEM(s) s,
#define NAME_JOIN(s) ", " s

#define DEVICES(X)                                                                         \
    X("auto") X("cpu") X("cuda") X("openvino") X("rocm") X("openvino-cpu") X("openvino-gpu")  \
    X("webgpu") X("tensorrt-rtx") X("migraphx") X("policy:prefer-cpu") X("policy:prefer-gpu") \
    X("policy:prefer-npu") X("policy:max-performance") X("policy:max-efficiency")            \
    X("policy:min-power")
#define RESIZES(X) X("none") X("bilinear") X("nearest") X("bicubic")
#define POOLS(X) X("min") X("max") X("mean") X("harmonic_mean")
#define FORMATS(X) X("json") X("xml") X("csv")
#define KINDS(X) X("fr") X("nr") X("features")
#define STATIC_SHAPES(X) X("auto") X("off") X("on")
#define DEVICE_IO(X) X("auto") X("off") X("on")
/* Every name ort_backend.c's ep_kinds can attach (test_catalog reads that
 * table and checks it against this one). */
#define EPS(X)                                                                               \
    X("CPU") X("CUDA") X("OpenVINO:GPU") X("OpenVINO:CPU") X("ROCm") X("OpenVINO:NPU")       \
    X("NvTensorRTRTX:GPU") X("MIGraphX:GPU") X("WebGpu:GPU") X("ORT-policy")

typedef struct NameTable {
    const char *what;         /* for messages: "device", ... */
    const char *const *names; /* names[i] is the name of value first + i */
    size_t count;
    int first;
    const char *valid; /* ", "-separated, with 2 leading bytes to skip */
} NameTable;

#define TABLE(what, list, first_value)                                            \
    static const char *const list##_names[] = {list(NAME_ITEM)};                   \
    static const NameTable list##_table = {what, list##_names, COUNT(list##_names), \
                                           first_value, "" list(NAME_JOIN)}

TABLE("device", DEVICES, VMAF_DNN_DEVICE_AUTO);
TABLE("resize mode", RESIZES, VMAF_DNN_RESIZE_NONE);
TABLE("pool method", POOLS, VMAF_DNN_POOL_MIN);
TABLE("report format", FORMATS, VMAF_DNN_OUTPUT_JSON);
TABLE("model kind", KINDS, VMAF_DNN_MODEL_FR);
TABLE("static_shapes setting", STATIC_SHAPES, VMAF_DNN_STATIC_SHAPES_AUTO);
TABLE("device_io setting", DEVICE_IO, VMAF_DNN_DEVICE_IO_AUTO);
TABLE("execution provider", EPS, VMAF_DNN_EP_CPU);

static int fold(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 'a';
    return c == '-' ? '_' : c;
}

static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (fold((unsigned char)*a) != fold((unsigned char)*b))
            return 0;
    return *a == *b;
}

static int from_name(const NameTable *t, const char *name, int *value)
{
    if (!name)
        return vdnn_fail(-EINVAL, "%s name is NULL; valid names: %s", t->what, t->valid + 2);
    for (size_t i = 0; i < t->count; i++) {
        if (same_name(name, t->names[i])) {
            *value = t->first + (int)i;
            return 0;
        }
    }
    /* The name comes from a user or a file: quote an escaped excerpt only. */
    char shown[VDNN_JSON_EXCERPT_SIZE];
    return vdnn_fail(-EINVAL, "unknown %s %s; valid names: %s", t->what,
                     vdnn_json_excerpt(name, strlen(name), &shown), t->valid + 2);
}

static const char *to_name(const NameTable *t, int value)
{
    if (value < t->first || (size_t)(value - t->first) >= t->count)
        return NULL;
    return t->names[value - t->first];
}

/* One set of the three public functions per enum. */
#define NAME_FUNCTIONS(prefix, type, list)                                     \
    int prefix##_from_name(const char *name, type *out)                        \
    {                                                                          \
        vdnn_clear_error();                                                    \
        int value = 0;                                                         \
        if (!out)                                                              \
            return vdnn_fail(-EINVAL, #prefix "_from_name: out is NULL");      \
        int rc = from_name(&list##_table, name, &value);                       \
        if (!rc)                                                               \
            *out = (type)value;                                                \
        return rc;                                                             \
    }                                                                          \
    const char *prefix##_name(type value) { return to_name(&list##_table, (int)value); } \
    const char *prefix##_names(void) { return list##_table.valid + 2; }

NAME_FUNCTIONS(vmaf_dnn_device, VmafDnnDevice, DEVICES)
NAME_FUNCTIONS(vmaf_dnn_resize, VmafDnnResize, RESIZES)
NAME_FUNCTIONS(vmaf_dnn_pool, VmafDnnPoolMethod, POOLS)
NAME_FUNCTIONS(vmaf_dnn_output_format, VmafDnnOutputFormat, FORMATS)
NAME_FUNCTIONS(vmaf_dnn_model_kind, VmafDnnModelKind, KINDS)
NAME_FUNCTIONS(vmaf_dnn_static_shapes, VmafDnnStaticShapes, STATIC_SHAPES)
NAME_FUNCTIONS(vmaf_dnn_device_io, VmafDnnDeviceIo, DEVICE_IO)
NAME_FUNCTIONS(vmaf_dnn_ep, VmafDnnEp, EPS)
