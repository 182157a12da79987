/* The ONNX pre-flight scanner: a protobuf wire-format walker over the model
 * bytes that ORT will be given, enforcing the policy described in
 * onnx_scan.h. It never allocates and never reads outside the buffer: every
 * length is checked against the enclosing message before it is used, and the
 * only recursion (graph -> node -> attribute -> graph) is bounded by the
 * depth cap, which is checked before descending. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "custom_ops.h"
#include "error.h"
#include "model_file.h"
#include "onnx_scan.h"

/* ------------------------------------------------------------------------ */
/* Policy                                                                   */
/* ------------------------------------------------------------------------ */

static const char *const builtin_ops[] = {
    /* arithmetic and activations */
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Abs", "Neg", "Exp", "Log",
    "Reciprocal", "Min", "Max", "Sum", "Mean", "Clip", "Floor", "Ceil", "Round",
    "Sign", "Erf", "Tanh", "Sigmoid", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu",
    "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Gelu", "Softmax",
    "LogSoftmax",
    /* comparison and logic */
    "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Not", "And",
    "Or", "Xor", "Where", "IsNaN", "IsInf",
    /* tensor manipulation */
    "Identity", "Cast", "CastLike", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
    "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "Pad",
    "Expand", "Tile", "Shape", "Size", "ConstantOfShape", "Constant", "Range",
    /* reductions */
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
    "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ArgMax",
    "ArgMin",
    /* neural network layers */
    "Conv", "ConvTranspose", "MatMul", "Gemm", "BatchNormalization",
    "InstanceNormalization", "LayerNormalization", "GroupNormalization",
    "AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool", "LpPool",
    "Dropout", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "Einsum",
    "TopK", "CumSum",
    /* control flow (Loop is counted against max_loop_nodes) */
    "If", "Loop",
};
#define N_BUILTIN_OPS (sizeof(builtin_ops) / sizeof(builtin_ops[0]))

/* The library's own operators (custom_ops.h), domain VDNN_CUSTOM_OP_DOMAIN. */
#define LIBRARY_OP_NAME(name, planes) #name,
static const char *const library_ops[] = {VDNN_CUSTOM_OPS(LIBRARY_OP_NAME)};
#define N_LIBRARY_OPS (sizeof(library_ops) / sizeof(library_ops[0]))

const char *const *vdnn_scan_builtin_ops(size_t *n_out)
{
    if (n_out)
        *n_out = N_BUILTIN_OPS;
    return builtin_ops;
}

void vdnn_scan_policy_default(VdnnScanPolicy *p)
{
    p->allowed_ops = NULL;
    p->n_allowed_ops = 0;
    p->max_loop_nodes = VMAF_DNN_MAX_LOOP_NODES;
    p->max_graph_depth = VMAF_DNN_MAX_SUBGRAPH_DEPTH;
    p->max_nodes = VMAF_DNN_DEFAULT_MAX_NODES;
    p->max_external_bytes = VDNN_SCAN_MAX_EXTERNAL_BYTES;
}

/* A run of bytes inside the model: a string field or an embedded message.
 * p may be NULL only when n is 0. */
typedef struct Span {
    const uint8_t *p;
    size_t n;
} Span;

static bool span_is(Span s, const char *c)
{
    size_t n = strlen(c);
    return s.n == n && (n == 0 || memcmp(s.p, c, n) == 0);
}

static bool on_list(const char *const *list, size_t n, Span op)
{
    for (size_t i = 0; i < n; i++)
        if (span_is(op, list[i]))
            return true;
    return false;
}

/* Whether the list names `op` as "<library domain>:op". */
static bool on_list_as_library_op(const char *const *list, size_t n, Span op)
{
    static const char prefix[] = VDNN_CUSTOM_OP_DOMAIN ":";
    for (size_t i = 0; i < n; i++)
        if (strncmp(list[i], prefix, sizeof(prefix) - 1) == 0 &&
            span_is(op, list[i] + sizeof(prefix) - 1))
            return true;
    return false;
}

int vdnn_scan_policy_check(const VdnnScanPolicy *p)
{
    if (!p)
        return vdnn_fail(-EINVAL, "scan policy is NULL");
    if (p->allowed_ops) {
        for (size_t i = 0; i < p->n_allowed_ops; i++) {
            const char *op = p->allowed_ops[i];
            if (!op)
                return vdnn_fail(-EINVAL, "scan policy allow-list entry %zu is NULL", i);
            Span s = { (const uint8_t *)op, strlen(op) };
            const char *const one[1] = {op};
            bool library_op = false;
            for (size_t k = 0; k < N_LIBRARY_OPS && !library_op; k++) {
                Span name = {(const uint8_t *)library_ops[k], strlen(library_ops[k])};
                library_op = on_list_as_library_op(one, 1, name);
            }
            if (!on_list(builtin_ops, N_BUILTIN_OPS, s) && !library_op)
                return vdnn_fail(-EINVAL,
                                 "scan policy allows operator \"%s\", which is not on the "
                                 "built-in allow-list nor one of the library's operators (\""
                                 VDNN_CUSTOM_OP_DOMAIN ":<op>\"); a policy may only narrow them",
                                 op);
        }
    } else if (p->n_allowed_ops) {
        return vdnn_fail(-EINVAL, "scan policy has n_allowed_ops = %zu but no allowed_ops",
                         p->n_allowed_ops);
    }
    if (p->max_loop_nodes > VMAF_DNN_MAX_LOOP_NODES)
        return vdnn_fail(-EINVAL, "scan policy raises max_loop_nodes to %u (the built-in cap is %u)",
                         p->max_loop_nodes, VMAF_DNN_MAX_LOOP_NODES);
    if (p->max_graph_depth > VMAF_DNN_MAX_SUBGRAPH_DEPTH)
        return vdnn_fail(-EINVAL, "scan policy raises max_subgraph_depth to %u (the built-in cap is %u)",
                         p->max_graph_depth, VMAF_DNN_MAX_SUBGRAPH_DEPTH);
    if (p->max_nodes < 1 || p->max_nodes > VMAF_DNN_MAX_NODES)
        return vdnn_fail(-EINVAL, "scan policy sets max_nodes to %u; it must be 1..%u", p->max_nodes,
                         VMAF_DNN_MAX_NODES);
    if (p->max_external_bytes > VDNN_SCAN_MAX_EXTERNAL_BYTES)
        return vdnn_fail(-EINVAL,
                         "scan policy raises max_external_bytes to %" PRIu64
                         " (the built-in cap is %" PRIu64 ")",
                         p->max_external_bytes, VDNN_SCAN_MAX_EXTERNAL_BYTES);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Wire format                                                              */
/* ------------------------------------------------------------------------ */

typedef struct Scan {
    const uint8_t *base; /* first byte of the model: error offsets count from here */
    const VdnnScanPolicy *policy;
    int dir_fd;              /* the model's directory, -1: none */
    VdnnScanReport *report;  /* never NULL (a local when the caller passed none) */
    /* The location being checked, NUL-terminated; kept here rather than on
     * the stack of the recursive walk. */
    char path[PATH_MAX];
} Scan;

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

typedef struct Field {
    uint32_t num;
    unsigned wt;
    uint64_t varint; /* WT_VARINT */
    Span len;        /* WT_LEN: the payload */
    const uint8_t *at;
} Field;

static int malformed(const Scan *s, const uint8_t *at)
{
    return vdnn_fail(-EBADMSG, "truncated or malformed ONNX at byte %zu", (size_t)(at - s->base));
}

/* At most 10 bytes, and the 10th may only carry the 64th bit. */
static bool read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned i = 0; i < 10 && p < end; i++) {
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return false;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return true;
        }
    }
    return false;
}

/* Reads the next field of *m and advances past it. Returns 1 with *f filled,
 * 0 at the end of the message, or -EBADMSG. */
static int next_field(const Scan *s, Span *m, Field *f)
{
    if (m->n == 0)
        return 0;
    const uint8_t *p = m->p, *end = m->p + m->n;
    uint64_t tag, len;
    f->at = p;
    f->varint = 0;
    f->len = (Span){ NULL, 0 };
    if (!read_varint(&p, end, &tag) || tag > UINT32_MAX || (tag >> 3) == 0)
        return malformed(s, f->at);
    f->num = (uint32_t)(tag >> 3);
    f->wt = (unsigned)(tag & 7);
    switch (f->wt) {
    case WT_VARINT:
        if (!read_varint(&p, end, &f->varint))
            return malformed(s, p);
        break;
    case WT_FIXED64:
    case WT_FIXED32: {
        size_t width = f->wt == WT_FIXED64 ? 8 : 4;
        if ((size_t)(end - p) < width)
            return malformed(s, p);
        p += width;
        break;
    }
    case WT_LEN: {
        const uint8_t *len_at = p;
        if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p))
            return malformed(s, len_at);
        f->len.p = p;
        f->len.n = (size_t)len;
        p += len;
        break;
    }
    default: /* groups (3, 4) and the undefined 6, 7 */
        return malformed(s, f->at);
    }
    m->n -= (size_t)(p - m->p);
    m->p = p;
    return 1;
}

/* An interpreted field must have the wire type its declaration implies. */
static int expect(const Scan *s, const Field *f, unsigned wt)
{
    return f->wt == wt ? 0 : malformed(s, f->at);
}

/* Copies s into dst[cap] (cap >= 4) for a message: non-printable bytes
 * become '?', and a name that does not fit ends in "...". */
static const char *printable(char *dst, size_t cap, Span s)
{
    size_t n = s.n < cap ? s.n : cap - 4;
    for (size_t i = 0; i < n; i++)
        dst[i] = (s.p[i] >= 0x20 && s.p[i] < 0x7f) ? (char)s.p[i] : '?';
    if (n < s.n) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
    return dst;
}

/* ------------------------------------------------------------------------ */
/* External data                                                            */
/* ------------------------------------------------------------------------ */

typedef struct ExternalRef {
    Span location, offset, length;
    bool has_location, has_offset, has_length;
} ExternalRef;

/* One StringStringEntryProto of TensorProto.external_data. ORT would take the
 * last of two "location" entries; a second one is refused instead so that the
 * file checked is beyond doubt the file ORT opens. */
static int read_external_entry(const Scan *s, const Field *ef, ExternalRef *ref)
{
    Span m = ef->len, key = { NULL, 0 }, value = { NULL, 0 };
    Field f = {0};
    int r;
    while ((r = next_field(s, &m, &f)) > 0) {
        if (f.num != 1 && f.num != 2)
            continue;
        if ((r = expect(s, &f, WT_LEN)) < 0)
            return r;
        *(f.num == 1 ? &key : &value) = f.len;
    }
    if (r < 0)
        return r;

    Span *slot;
    bool *seen;
    if (span_is(key, "location")) {
        slot = &ref->location, seen = &ref->has_location;
    } else if (span_is(key, "offset")) {
        slot = &ref->offset, seen = &ref->has_offset;
    } else if (span_is(key, "length")) {
        slot = &ref->length, seen = &ref->has_length;
    } else {
        return 0; /* "checksum", or a key ORT itself will judge */
    }
    if (*seen) {
        char k[16];
        return vdnn_fail(-EBADMSG, "external_data key \"%s\" appears twice in one tensor",
                         printable(k, sizeof(k), key));
    }
    *slot = value;
    *seen = true;
    return 0;
}

/* Decimal digits only: no sign, no space, no overflow. */
static bool parse_decimal(Span s, uint64_t *out)
{
    uint64_t v = 0;
    if (s.n == 0)
        return false;
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return false;
        unsigned d = (unsigned)(s.p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* The rules on the location text itself; copies it, NUL-terminated, into
 * s->path. */
static int check_location_text(Scan *s, Span loc, const char *shown, const char *tensor)
{
    if (loc.n == 0)
        return vdnn_fail(-EBADMSG, "tensor \"%s\" has an empty external data location", tensor);
    if (memchr(loc.p, '\0', loc.n))
        return vdnn_fail(-EPERM, "external data location \"%s\" (tensor \"%s\") contains a NUL byte",
                         shown, tensor);
    if (loc.n >= sizeof(s->path))
        return vdnn_fail(-ENAMETOOLONG, "external data location \"%s\" (tensor \"%s\") is too long",
                         shown, tensor);
    memcpy(s->path, loc.p, loc.n);
    s->path[loc.n] = '\0';

    if (strstr(s->path, "_ORT_MEM_ADDR_"))
        return vdnn_fail(-EPERM,
                         "external data location \"%s\" (tensor \"%s\") is ORT's in-memory "
                         "marker, which would make ORT read a memory address from the model",
                         shown, tensor);
    if (s->path[0] == '/')
        return vdnn_fail(-EPERM,
                         "external data location \"%s\" (tensor \"%s\") is an absolute path: it "
                         "must be relative to the model's directory",
                         shown, tensor);
    if (strchr(s->path, '\\'))
        return vdnn_fail(-EPERM, "external data location \"%s\" (tensor \"%s\") contains a backslash",
                         shown, tensor);
    for (const char *c = s->path; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return vdnn_fail(-EPERM,
                             "external data location \"%s\" (tensor \"%s\") has a \"..\" component",
                             shown, tensor);
        c += n + (c[n] == '/');
    }
    return 0;
}

/* Opens s->path beneath the model's directory (the rules of model_file.h: no
 * link or ".." out of it, no swap between this check and the open it is
 * made on) and checks that it is a regular file; *size gets its size. */
static int open_inside_dir(Scan *s, const char *shown, const char *tensor, uint64_t *size)
{
    int fd, r = vdnn_open_beneath(s->dir_fd, s->path, &fd);
    if (r == -EXDEV)
        return vdnn_fail(-EPERM,
                         "external data file \"%s\" (tensor \"%s\") leads outside the model's "
                         "directory (an absolute symbolic link, or one that climbs out of it)",
                         shown, tensor);
    if (r == -ENOENT)
        return vdnn_fail(r, "external data file \"%s\" (tensor \"%s\") does not exist in the "
                         "model's directory", shown, tensor);
    if (r)
        return vdnn_fail(r, "cannot open external data file \"%s\" (tensor \"%s\"): %s", shown,
                         tensor, strerror(-r));
    struct stat st;
    r = fstat(fd, &st) ? -errno : 0;
    close(fd);
    if (r)
        return vdnn_fail(r, "cannot stat external data file \"%s\" (tensor \"%s\")", shown, tensor);
    if (!S_ISREG(st.st_mode))
        return vdnn_fail(-EPERM, "external data file \"%s\" (tensor \"%s\") is not a regular file",
                         shown, tensor);
    *size = (uint64_t)st.st_size;
    return 0;
}

static int check_external(Scan *s, Span tensor_name, const ExternalRef *ref)
{
    char tensor[64], shown[160];
    uint64_t size = 0, offset = 0, length;
    int r;

    printable(tensor, sizeof(tensor), tensor_name);
    s->report->n_external++;
    if (!ref->has_location)
        return vdnn_fail(-EBADMSG, "tensor \"%s\" has external data but no location", tensor);
    printable(shown, sizeof(shown), ref->location);
    if (s->dir_fd < 0)
        return vdnn_fail(-EPERM,
                         "tensor \"%s\" keeps its data in external file \"%s\", but the model "
                         "came without a directory to check it against",
                         tensor, shown);
    if ((r = check_location_text(s, ref->location, shown, tensor)) < 0 ||
        (r = open_inside_dir(s, shown, tensor, &size)) < 0)
        return r;

    if (ref->has_offset && !parse_decimal(ref->offset, &offset))
        return vdnn_fail(-EBADMSG, "external data offset of tensor \"%s\" is not a decimal number",
                         tensor);
    if (offset > size)
        return vdnn_fail(-EBADMSG,
                         "external data offset %" PRIu64 " of tensor \"%s\" lies past the end of "
                         "\"%s\" (%" PRIu64 " bytes)",
                         offset, tensor, shown, size);
    length = size - offset;
    if (ref->has_length && !parse_decimal(ref->length, &length))
        return vdnn_fail(-EBADMSG, "external data length of tensor \"%s\" is not a decimal number",
                         tensor);
    if (length > size - offset)
        return vdnn_fail(-EBADMSG,
                         "external data of tensor \"%s\" (offset %" PRIu64 ", length %" PRIu64
                         ") runs past the end of \"%s\" (%" PRIu64 " bytes)",
                         tensor, offset, length, shown, size);

    uint64_t cap = s->policy->max_external_bytes;
    if (length > cap - s->report->external_bytes) /* total <= cap is an invariant */
        return vdnn_fail(-E2BIG,
                         "external data adds up to more than %" PRIu64 " bytes (tensor \"%s\" in "
                         "\"%s\" adds %" PRIu64 ")",
                         cap, tensor, shown, length);
    s->report->external_bytes += length;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The walk                                                                 */
/* ------------------------------------------------------------------------ */

static int walk_graph(Scan *s, Span g, unsigned depth);

/* TensorProto: only its external-data fields matter. */
static int walk_tensor(Scan *s, const Field *tf)
{
    Span m = tf->len, name = { NULL, 0 };
    ExternalRef ref = { 0 };
    bool external = false, has_entries = false;
    Field f = {0};
    int r;
    if ((r = expect(s, tf, WT_LEN)) < 0)
        return r;
    while ((r = next_field(s, &m, &f)) > 0) {
        if (f.num == 8) { /* name */
            if ((r = expect(s, &f, WT_LEN)) < 0)
                return r;
            name = f.len;
        } else if (f.num == 13) { /* external_data */
            has_entries = true;
            if ((r = expect(s, &f, WT_LEN)) < 0 || (r = read_external_entry(s, &f, &ref)) < 0)
                return r;
        } else if (f.num == 14) { /* data_location: a parser keeps the low 32 bits of an enum */
            if ((r = expect(s, &f, WT_VARINT)) < 0)
                return r;
            uint32_t loc = (uint32_t)f.varint;
            if (loc > 1)
                return vdnn_fail(-EBADMSG, "tensor has an unknown data_location %" PRIu32, loc);
            external = loc == 1;
        }
    }
    if (r < 0)
        return r;
    return external || has_entries ? check_external(s, name, &ref) : 0;
}

/* SparseTensorProto: values = 1 and indices = 2 are tensors. */
static int walk_sparse_tensor(Scan *s, const Field *sf)
{
    Span m = sf->len;
    Field f = {0};
    int r;
    if ((r = expect(s, sf, WT_LEN)) < 0)
        return r;
    while ((r = next_field(s, &m, &f)) > 0)
        if ((f.num == 1 || f.num == 2) && (r = walk_tensor(s, &f)) < 0)
            return r;
    return r;
}

static int walk_subgraph(Scan *s, const Field *gf, unsigned depth)
{
    int r;
    if ((r = expect(s, gf, WT_LEN)) < 0)
        return r;
    if (depth + 1 > s->policy->max_graph_depth)
        return vdnn_fail(-EPERM, "model nests subgraphs more than %u levels deep (the cap is %u)",
                         s->policy->max_graph_depth, s->policy->max_graph_depth);
    return walk_graph(s, gf->len, depth + 1);
}

typedef struct NodeInfo {
    Span op, domain, name, third_input;
    size_t index; /* within its graph */
    unsigned depth;
} NodeInfo;

/* Formats "node 3 \"conv1\" in a subgraph at depth 2" for messages. */
static const char *describe_node(char *dst, size_t cap, const NodeInfo *n)
{
    char name[64], where[40] = "";
    if (n->depth)
        snprintf(where, sizeof(where), " in a subgraph at depth %u", n->depth);
    if (n->name.n)
        snprintf(dst, cap, "node %zu \"%s\"%s", n->index, printable(name, sizeof(name), n->name), where);
    else
        snprintf(dst, cap, "node %zu%s", n->index, where);
    return dst;
}

/* The operator as messages and the report show it: "op_type", or
 * "domain:op_type" outside the standard domain. */
static const char *shown_op(char (*dst)[VDNN_SCAN_OP_NAME_MAX], const NodeInfo *n, bool standard)
{
    char domain[40], op[VDNN_SCAN_OP_NAME_MAX - sizeof(domain)];
    if (standard)
        return printable(*dst, sizeof(*dst), n->op);
    snprintf(*dst, sizeof(*dst), "%s:%s", printable(domain, sizeof(domain), n->domain),
             printable(op, sizeof(op), n->op));
    return *dst;
}

/* AttributeProto.type of a float attribute. */
#define ATTRIBUTE_FLOAT 1

/* An attribute of one of the library's operators: the only one they take is
 * VifInteger's and AdmInteger's enhn_gain_limit, a float. Anything else
 * (a typo, an int 1 where 1.0 was meant) would be ignored by the kernel and
 * score with the default limit, silently: refused here. */
static int check_library_attribute(const NodeInfo *n, Span name, uint64_t type)
{
    char op[VDNN_SCAN_OP_NAME_MAX], attr[64], where[160];
    const bool takes_limit = span_is(n->op, "VifInteger") || span_is(n->op, "AdmInteger");
    if (takes_limit && span_is(name, "enhn_gain_limit") && type == ATTRIBUTE_FLOAT)
        return 0;
    shown_op(&op, n, false);
    describe_node(where, sizeof(where), n);
    printable(attr, sizeof(attr), name);
    if (takes_limit && span_is(name, "enhn_gain_limit"))
        return vdnn_fail(-EPERM, "operator \"%s\" (%s): attribute enhn_gain_limit must be a "
                         "float (AttributeProto type %d), not type %llu", op, where,
                         ATTRIBUTE_FLOAT, (unsigned long long)type);
    return vdnn_fail(-EPERM, "operator \"%s\" (%s) takes no attribute \"%s\"%s", op, where,
                     attr, takes_limit ? " (only enhn_gain_limit, a float)" : "");
}

/* AttributeProto: every field that can hold a tensor or a graph is walked,
 * whatever the attribute's declared type. `library_node` is the node when it
 * is one of the library's operators (its attributes are checked), else NULL. */
static int walk_attribute(Scan *s, const Field *af, unsigned depth, const NodeInfo *library_node)
{
    Span m = af->len, name = {NULL, 0};
    uint64_t type = 0;
    Field f = {0};
    int r;
    if ((r = expect(s, af, WT_LEN)) < 0)
        return r;
    while ((r = next_field(s, &m, &f)) > 0) {
        if (f.num == 1 && f.wt == WT_LEN)
            name = f.len;
        else if (f.num == 20 && f.wt == WT_VARINT)
            type = f.varint;
        switch (f.num) {
        case 5:  /* t */
        case 10: /* tensors */
            r = walk_tensor(s, &f);
            break;
        case 6:  /* g */
        case 11: /* graphs */
            r = walk_subgraph(s, &f, depth);
            break;
        case 22: /* sparse_tensor */
        case 23: /* sparse_tensors */
            r = walk_sparse_tensor(s, &f);
            break;
        default:
            r = 0;
        }
        if (r < 0)
            return r;
    }
    if (r == 0 && library_node)
        r = check_library_attribute(library_node, name, type);
    return r;
}

static int check_node(Scan *s, const NodeInfo *n)
{
    const VdnnScanPolicy *p = s->policy;
    bool standard = n->domain.n == 0 || span_is(n->domain, "ai.onnx");
    char *op = s->report->first_bad_op, where[160];

    /* Written now, cleared again below if the node passes. */
    shown_op(&s->report->first_bad_op, n, standard);
    describe_node(where, sizeof(where), n);
    bool allowed;
    if (standard) {
        allowed = p->allowed_ops ? on_list(p->allowed_ops, p->n_allowed_ops, n->op)
                                 : on_list(builtin_ops, N_BUILTIN_OPS, n->op);
    } else if (span_is(n->domain, VDNN_CUSTOM_OP_DOMAIN)) {
        /* The library's own operators, and nothing else of their domain;
         * an allow-list of the caller's names them as "domain:op". */
        allowed = on_list(library_ops, N_LIBRARY_OPS, n->op) &&
                  (!p->allowed_ops || on_list_as_library_op(p->allowed_ops, p->n_allowed_ops, n->op));
    } else {
        return vdnn_fail(-EPERM,
                         "model uses operator \"%s\" (%s): only the standard ONNX domain and "
                         "the library's own operators (" VDNN_CUSTOM_OP_DOMAIN ") are allowed",
                         op, where);
    }
    if (!allowed)
        return vdnn_fail(-EPERM, "model uses operator \"%s\" (%s), which is not on the allow-list",
                         op, where);
    if (span_is(n->op, "Dropout") && n->third_input.n)
        return vdnn_fail(-EPERM,
                         "model has a Dropout with a training_mode input (%s), which makes its "
                         "output random",
                         where);
    if (span_is(n->op, "Loop") && ++s->report->n_loops > p->max_loop_nodes)
        return vdnn_fail(-EPERM, "model has more than %u Loop nodes (%s): the cap is %u",
                         p->max_loop_nodes, where, p->max_loop_nodes);
    op[0] = '\0';
    return 0;
}

/* NodeProto: the node itself is judged before its attributes are walked, so
 * the first offending operator reported is the outermost one. A parser keeps
 * the last of repeated singular strings (op_type, domain, name); so does this. */
static int walk_node(Scan *s, const Field *nf, unsigned depth, size_t index)
{
    NodeInfo n = { .index = index, .depth = depth };
    Span m = nf->len;
    size_t n_inputs = 0;
    Field f = {0};
    int r;
    if ((r = expect(s, nf, WT_LEN)) < 0)
        return r;
    while ((r = next_field(s, &m, &f)) > 0) {
        Span *slot;
        switch (f.num) {
        case 1: /* input */
            slot = n_inputs++ == 2 ? &n.third_input : NULL;
            break;
        case 3:
            slot = &n.name;
            break;
        case 4:
            slot = &n.op;
            break;
        case 7:
            slot = &n.domain;
            break;
        default:
            continue;
        }
        if ((r = expect(s, &f, WT_LEN)) < 0)
            return r;
        if (slot)
            *slot = f.len;
    }
    if (r < 0)
        return r;
    s->report->n_nodes++;
    if ((r = check_node(s, &n)) < 0)
        return r;

    const NodeInfo *library_node = span_is(n.domain, VDNN_CUSTOM_OP_DOMAIN) ? &n : NULL;
    if (library_node)
        s->report->n_library_nodes++;
    m = nf->len;
    while ((r = next_field(s, &m, &f)) > 0)
        if (f.num == 5 && (r = walk_attribute(s, &f, depth, library_node)) < 0) /* attribute */
            return r;
    return r;
}

/* GraphProto: nodes, initializers and sparse initializers. */
static int walk_graph(Scan *s, Span g, unsigned depth)
{
    size_t n_nodes = 0;
    Field f = {0};
    int r;
    if (depth > s->report->max_depth)
        s->report->max_depth = depth;
    while ((r = next_field(s, &g, &f)) > 0) {
        switch (f.num) {
        case 1: /* node */
            r = walk_node(s, &f, depth, n_nodes++);
            break;
        case 5: /* initializer */
            r = walk_tensor(s, &f);
            break;
        case 15: /* sparse_initializer */
            r = walk_sparse_tensor(s, &f);
            break;
        default:
            r = 0;
        }
        if (r < 0)
            return r;
    }
    return r;
}

/* ModelProto: every graph field is walked (a parser merges repeated ones). */
static int walk_model(Scan *s, Span m)
{
    bool has_graph = false;
    Field f = {0};
    int r;
    while ((r = next_field(s, &m, &f)) > 0) {
        if (f.num == 7) { /* graph */
            has_graph = true;
            if ((r = expect(s, &f, WT_LEN)) < 0 || (r = walk_graph(s, f.len, 0)) < 0)
                return r;
        } else if (f.num == 20) {
            return vdnn_fail(-EPERM, "model has training_info, which is not allowed");
        } else if (f.num == 25) {
            return vdnn_fail(-EPERM, "model-local functions are not allowed");
        }
    }
    if (r < 0)
        return r;
    if (!has_graph)
        return vdnn_fail(-EBADMSG, "ONNX model has no graph");
    /* Counted to the end, so the message gives the model's real size. */
    if (s->report->n_nodes > s->policy->max_nodes)
        return vdnn_fail(-EPERM, "model has %zu nodes (all graphs, subgraphs included): the cap "
                         "is %u", s->report->n_nodes, s->policy->max_nodes);
    return 0;
}

int vdnn_onnx_scan(const uint8_t *bytes, size_t len, int model_dir_fd,
                   const VdnnScanPolicy *policy, VdnnScanReport *report)
{
    static const uint8_t ort_format_id[4] = { 'O', 'R', 'T', 'M' };
    VdnnScanPolicy builtin;
    VdnnScanReport unused;
    Scan s;
    int r;

    if (!bytes && len)
        return vdnn_fail(-EINVAL, "model bytes are NULL");
    if (!policy) {
        vdnn_scan_policy_default(&builtin);
        policy = &builtin;
    } else if ((r = vdnn_scan_policy_check(policy)) < 0) {
        return r;
    }
    s.report = report ? report : &unused;
    memset(s.report, 0, sizeof(*s.report));

    /* ORT takes bytes with this flatbuffer identifier for an ORT-format model
     * and would never parse them as the protobuf checked here. */
    if (len >= 8 && memcmp(bytes + 4, ort_format_id, sizeof(ort_format_id)) == 0)
        return vdnn_fail(-EBADMSG,
                         "model bytes carry the ORT-format identifier \"ORTM\"; only ONNX "
                         "protobuf models are accepted");

    s.base = bytes;
    s.policy = policy;
    s.dir_fd = model_dir_fd;
    return walk_model(&s, (Span){ bytes, len });
}

/* ------------------------------------------------------------------------ */
/* The declared interface                                                   */
/* ------------------------------------------------------------------------ */

typedef struct ValueList {
    VdnnOnnxValue *v;
    size_t n, cap;
} ValueList;

typedef struct NameList {
    Span *v;
    size_t n, cap;
} NameList;

/* Room for entry n; `limit`: the most entries allowed (inputs and outputs
 * are capped, initializers only by the file's size). */
static int grow(void **v, size_t *cap, size_t n, size_t size, size_t limit)
{
    if (n < *cap)
        return 0;
    if (n >= limit)
        return vdnn_fail(-E2BIG, "model declares more than %zu graph inputs or outputs",
                         limit);
    const size_t cap2 = *cap ? 2 * *cap : 8;
    void *p = cap2 <= SIZE_MAX / size ? realloc(*v, cap2 * size) : NULL;
    if (!p)
        return vdnn_fail(-ENOMEM, "out of memory");
    *v = p;
    *cap = cap2;
    return 0;
}

/* TensorShapeProto.Dimension: dim_value (1) or dim_param (2), the last one
 * given winning (a oneof). */
static int read_dim(const Scan *s, Span d, int64_t *out)
{
    Field f = {0};
    int r;
    *out = -1;
    while ((r = next_field(s, &d, &f)) > 0) {
        if (f.num == 1) {
            if ((r = expect(s, &f, WT_VARINT)) < 0)
                return r;
            *out = (int64_t)f.varint >= 0 ? (int64_t)f.varint : -1;
        } else if (f.num == 2) {
            if ((r = expect(s, &f, WT_LEN)) < 0)
                return r;
            *out = -1;
        }
    }
    return r;
}

/* TypeProto.Tensor: elem_type (1), shape (2) whose dims (1) append. */
static int read_tensor_type(const Scan *s, Span t, VdnnOnnxValue *v)
{
    Field f = {0}, g = {0};
    int r;
    while ((r = next_field(s, &t, &f)) > 0) {
        if (f.num == 1) {
            if ((r = expect(s, &f, WT_VARINT)) < 0)
                return r;
            v->elem_type = f.varint <= INT32_MAX ? (int)f.varint : 0;
        } else if (f.num == 2) {
            if ((r = expect(s, &f, WT_LEN)) < 0)
                return r;
            if (v->rank < 0)
                v->rank = 0;
            Span shape = f.len;
            while ((r = next_field(s, &shape, &g)) > 0) {
                if (g.num != 1)
                    continue;
                size_t cap = (size_t)v->rank;
                if ((r = expect(s, &g, WT_LEN)) < 0 ||
                    (v->rank >= 1024 && (r = vdnn_fail(-E2BIG, "a graph input or output "
                                                       "declares more than 1024 dims")) < 0))
                    return r;
                int64_t *dims = realloc(v->dims, (cap + 1) * sizeof(*dims));
                if (!dims)
                    return vdnn_fail(-ENOMEM, "out of memory");
                v->dims = dims;
                if ((r = read_dim(s, g.len, &dims[v->rank])) < 0)
                    return r;
                v->rank++;
            }
            if (r < 0)
                return r;
        }
    }
    return r;
}

/* ValueInfoProto: name (1), type (2) -> TypeProto.tensor_type (1). */
static int read_value_info(const Scan *s, Span m, VdnnOnnxValue *v)
{
    Field f = {0}, g = {0};
    Span name = {NULL, 0};
    int r;
    while ((r = next_field(s, &m, &f)) > 0) {
        if (f.num == 1) {
            if ((r = expect(s, &f, WT_LEN)) < 0)
                return r;
            name = f.len;
        } else if (f.num == 2) {
            if ((r = expect(s, &f, WT_LEN)) < 0)
                return r;
            Span type = f.len;
            while ((r = next_field(s, &type, &g)) > 0)
                if (g.num == 1 && ((r = expect(s, &g, WT_LEN)) < 0 ||
                                   (r = read_tensor_type(s, g.len, v)) < 0))
                    return r;
            if (r < 0)
                return r;
        }
    }
    if (r < 0)
        return r;
    if (!(v->name = malloc(name.n + 1)))
        return vdnn_fail(-ENOMEM, "out of memory");
    if (name.n)
        memcpy(v->name, name.p, name.n);
    v->name[name.n] = '\0';
    return 0;
}

/* The string field `num` of message m (the last one given, as a parser
 * keeps): a TensorProto's name (8), a ValueInfoProto's (1). */
static int string_field(const Scan *s, Span m, uint32_t num, Span *out)
{
    Field f = {0};
    int r;
    while ((r = next_field(s, &m, &f)) > 0)
        if (f.num == num && (r = expect(s, &f, WT_LEN)) == 0)
            *out = f.len;
        else if (r < 0)
            return r;
    return r;
}

/* Appends name to l. */
static int add_name(NameList *l, Span name)
{
    int r = grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), SIZE_MAX);
    if (!r)
        l->v[l->n++] = name;
    return r;
}

static int add_value(const Scan *s, Span m, ValueList *list)
{
    int r = grow((void **)&list->v, &list->cap, list->n, sizeof(*list->v),
                 VDNN_ONNX_MAX_INTERFACE);
    if (r)
        return r;
    VdnnOnnxValue *v = &list->v[list->n++];
    *v = (VdnnOnnxValue){NULL, 0, -1, NULL};
    return read_value_info(s, m, v);
}

/* GraphProto: input (11), output (12), initializer (5), sparse_initializer
 * (15, its values' name). */
static int read_graph_interface(const Scan *s, Span g, ValueList *in, ValueList *out,
                                NameList *init)
{
    Field f = {0}, h = {0};
    int r;
    while ((r = next_field(s, &g, &f)) > 0) {
        if (f.num != 11 && f.num != 12 && f.num != 5 && f.num != 15)
            continue;
        if ((r = expect(s, &f, WT_LEN)) < 0)
            return r;
        if (f.num == 11 || f.num == 12) {
            r = add_value(s, f.len, f.num == 11 ? in : out);
        } else {
            Span name = {NULL, 0}, t = f.len;
            if (f.num == 5) {
                r = string_field(s, t, 8, &name);
            } else {
                while ((r = next_field(s, &t, &h)) > 0)
                    if (h.num == 1 && ((r = expect(s, &h, WT_LEN)) < 0 ||
                                       (r = string_field(s, h.len, 8, &name)) < 0))
                        break;
            }
            if (r >= 0)
                r = add_name(init, name);
        }
        if (r < 0)
            return r;
    }
    return r;
}

/* Spans ordered by length, then bytes (qsort / bsearch). */
static int span_order(const void *pa, const void *pb)
{
    const Span *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return a->n ? memcmp(a->p, b->p, a->n) : 0;
}

static void free_values(VdnnOnnxValue *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].name);
        free(v[i].dims);
    }
    free(v);
}

void vdnn_onnx_interface_free(VdnnOnnxInterface *iface)
{
    if (!iface)
        return;
    free_values(iface->inputs, iface->n_inputs);
    free_values(iface->outputs, iface->n_outputs);
    free(iface);
}

int vdnn_onnx_interface(const uint8_t *bytes, size_t len, VdnnOnnxInterface **out)
{
    if (!bytes || !out)
        return vdnn_fail(-EINVAL, "onnx_interface: %s is NULL", !bytes ? "bytes" : "out");
    *out = NULL;
    Scan s = {.base = bytes};
    ValueList in = {0}, outs = {0};
    NameList init = {0};
    Span m = {bytes, len};
    Field f = {0};
    bool has_graph = false;
    int r;
    /* Every graph field, in order: a parser merges them, appending their
     * repeated fields. */
    while ((r = next_field(&s, &m, &f)) > 0)
        if (f.num == 7 && ((r = expect(&s, &f, WT_LEN)) < 0 ||
                           (has_graph = true,
                            r = read_graph_interface(&s, f.len, &in, &outs, &init)) < 0))
            break;
    if (r >= 0 && !has_graph)
        r = vdnn_fail(-EBADMSG, "ONNX model has no graph");
    VdnnOnnxInterface *iface = r >= 0 ? calloc(1, sizeof(*iface)) : NULL;
    if (r >= 0 && !iface)
        r = vdnn_fail(-ENOMEM, "out of memory");
    if (r < 0) {
        free_values(in.v, in.n);
        free_values(outs.v, outs.n);
        free(init.v);
        return r;
    }
    /* The inputs a Run feeds: those no initializer gives a value (names
     * sorted once and searched: a model may have many of both). */
    if (init.n)
        qsort(init.v, init.n, sizeof(*init.v), span_order);
    size_t kept = 0;
    for (size_t i = 0; i < in.n; i++) {
        const Span name = {(const uint8_t *)in.v[i].name, strlen(in.v[i].name)};
        if (init.n && bsearch(&name, init.v, init.n, sizeof(*init.v), span_order)) {
            free(in.v[i].name);
            free(in.v[i].dims);
        } else {
            in.v[kept++] = in.v[i];
        }
    }
    free(init.v);
    *iface = (VdnnOnnxInterface){kept, outs.n, in.v, outs.v};
    *out = iface;
    return 0;
}

/* TensorProto.DataType values. */
enum { ONNX_FLOAT = 1, ONNX_UINT16 = 4, ONNX_FLOAT16 = 10 };

/* Element types a and b match; with `samples`, a picture input (rank 4)
 * that a declares FLOAT or FLOAT16 may be UINT16 in b. */
static bool same_type(const VdnnOnnxValue *a, const VdnnOnnxValue *b, bool samples)
{
    if (a->elem_type == b->elem_type)
        return true;
    return samples && a->rank == 4 && b->elem_type == ONNX_UINT16 &&
           (a->elem_type == ONNX_FLOAT || a->elem_type == ONNX_FLOAT16);
}

/* Dims of a and b match; with `batch`, b's first dim may be symbolic where
 * a declares 1 (a form that takes several frames per Run). */
static bool same_dims(const VdnnOnnxValue *a, const VdnnOnnxValue *b, bool batch)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] && !(batch && d == 0 && a->dims[0] == 1 && b->dims[0] < 0))
            return false;
    return true;
}

/* `form`: b is a form of a: sample pictures (same_type) and a batch dim on
 * pictures (rank 4) and outputs. */
static bool same_values(const VdnnOnnxValue *a, const VdnnOnnxValue *b, size_t n, bool form,
                        bool outputs)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i].name, b[i].name) != 0 || !same_type(&a[i], &b[i], form && !outputs) ||
            !same_dims(&a[i], &b[i], form && (outputs || a[i].rank == 4)))
            return false;
    return true;
}

/* An input a form may declare beyond its model's: one number (FLOAT or
 * FLOAT16, rank 0..4, every dim 1), which the model's sidecar feeds
 * ("input_sources" "value": a samples form's bpc). */
static bool value_input(const VdnnOnnxValue *v)
{
    if ((v->elem_type != ONNX_FLOAT && v->elem_type != ONNX_FLOAT16) || v->rank < 0 || v->rank > 4)
        return false;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] != 1)
            return false;
    return true;
}

static int interfaces_match(const VdnnOnnxInterface *a, const VdnnOnnxInterface *b, bool form)
{
    if (!a || !b || a->n_outputs != b->n_outputs || b->n_inputs < a->n_inputs ||
        (!form && b->n_inputs != a->n_inputs))
        return false;
    for (size_t i = a->n_inputs; i < b->n_inputs; i++)
        if (!value_input(&b->inputs[i]))
            return false;
    return same_values(a->inputs, b->inputs, a->n_inputs, form, false) &&
           same_values(a->outputs, b->outputs, a->n_outputs, form, true);
}

int vdnn_onnx_interface_equal(const VdnnOnnxInterface *a, const VdnnOnnxInterface *b)
{
    return interfaces_match(a, b, false);
}

int vdnn_onnx_form_fits(const VdnnOnnxInterface *model, const VdnnOnnxInterface *form)
{
    return interfaces_match(model, form, true);
}

/* ------------------------------------------------------------------------ */
/* 8-bit samples: a samples model's pictures retyped UINT8                  */
/* ------------------------------------------------------------------------ */

enum { ONNX_UINT8 = 2 };

/* Operators that move their data input without reading its values, so
 * that they take UINT8 as they take UINT16: Concat (every input), and the
 * others at input 0 only (their other inputs are shapes and indices). */
static const char *const moving_ops[] = {"Slice",   "Reshape",   "Squeeze", "Unsqueeze",
                                         "Flatten", "Transpose", "Identity", "Split"};

/* A node of the main graph as the narrowing follows values through it. */
typedef struct FlowNode {
    Span op, domain;
    size_t first_in, n_in, first_out, n_out; /* into Flow.names */
} FlowNode;

typedef struct Flow {
    FlowNode *node;
    size_t n_nodes, cap_nodes;
    NameList names;    /* every node's inputs and outputs, in order */
    NameList declared; /* value_info and graph outputs: their types are declared */
    NameList narrow;   /* the values that become UINT8 */
} Flow;

static bool listed(const NameList *l, Span name)
{
    for (size_t i = 0; i < l->n; i++)
        if (span_order(&l->v[i], &name) == 0)
            return true;
    return false;
}

/* NodeProto: op_type (4), domain (7), inputs (1), outputs (2); -ENOTSUP
 * for an attribute holding a graph (AttributeProto g 6, graphs 11): a
 * subgraph may read any value of the graph around it. */
static int read_flow_node(const Scan *s, Span m, Flow *flow)
{
    int r = grow((void **)&flow->node, &flow->cap_nodes, flow->n_nodes, sizeof(*flow->node),
                 SIZE_MAX);
    if (r)
        return r;
    FlowNode *n = &flow->node[flow->n_nodes++];
    *n = (FlowNode){.first_in = flow->names.n};
    Field f = {0}, g = {0};
    /* inputs first, then outputs: two walks keep each run of names whole */
    for (unsigned want = 1; want <= 2; want++) {
        Span node = m;
        if (want == 2)
            n->first_out = flow->names.n;
        while ((r = next_field(s, &node, &f)) > 0) {
            if (f.num == want) {
                if ((r = expect(s, &f, WT_LEN)) < 0 || (r = add_name(&flow->names, f.len)))
                    return r;
                *(want == 1 ? &n->n_in : &n->n_out) += 1;
            } else if (want == 1 && (f.num == 4 || f.num == 7)) {
                if ((r = expect(s, &f, WT_LEN)) < 0)
                    return r;
                *(f.num == 4 ? &n->op : &n->domain) = f.len;
            } else if (want == 1 && f.num == 5 && f.wt == WT_LEN) {
                Span a = f.len;
                while ((r = next_field(s, &a, &g)) > 0)
                    if (g.num == 6 || g.num == 11)
                        return vdnn_fail(-ENOTSUP, "the model has a subgraph");
                if (r < 0)
                    return r;
            }
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* GraphProto: nodes (1), outputs (12) and value_info (13); -ENOTSUP for an
 * input (11) whose name holds a NUL byte (the interface reads names as C
 * strings, which would end there: the rule would follow another name). */
static int read_flow(const Scan *s, Span g, Flow *flow)
{
    Field f = {0};
    int r;
    while ((r = next_field(s, &g, &f)) > 0) {
        if (f.num != 1 && f.num != 11 && f.num != 12 && f.num != 13)
            continue;
        if ((r = expect(s, &f, WT_LEN)) < 0)
            return r;
        Span name = {NULL, 0};
        if (f.num == 1)
            r = read_flow_node(s, f.len, flow);
        else if ((r = string_field(s, f.len, 1, &name)) >= 0 && f.num == 11)
            r = name.n && memchr(name.p, 0, name.n)
                    ? vdnn_fail(-ENOTSUP, "an input's name holds a NUL byte")
                    : 0;
        else if (r >= 0)
            r = add_name(&flow->declared, name);
        if (r < 0)
            return r;
    }
    return r;
}

static const char *shown(char (*dst)[VDNN_SCAN_OP_NAME_MAX], Span s)
{
    return printable(*dst, sizeof(*dst), s);
}

/* The library's ops with their planes of samples (custom_ops.h). */
#define LIBRARY_OP_PLANES(name, planes) {#name, planes},
static const struct {
    const char *op;
    size_t planes;
} plane_ops[] = {VDNN_CUSTOM_OPS(LIBRARY_OP_PLANES)};

/* Whether n (of the library's domain) is one of its ops that take planes of
 * samples reading narrowed values as all its planes and as nothing else. */
static bool reads_planes(const Flow *flow, const FlowNode *n)
{
    const Span *in = &flow->names.v[n->first_in];
    for (size_t k = 0; k < sizeof(plane_ops) / sizeof(plane_ops[0]); k++) {
        if (!span_is(n->op, plane_ops[k].op) || !plane_ops[k].planes ||
            n->n_in != plane_ops[k].planes + 1)
            continue;
        for (size_t i = 0; i + 1 < n->n_in; i++)
            if (!listed(&flow->narrow, in[i]))
                return false;
        return !listed(&flow->narrow, in[n->n_in - 1]);
    }
    return false;
}

/* Follows the narrowed values through the nodes that read them until none
 * is added (nodes may be listed out of order). -ENOTSUP when a node would
 * read UINT8 in a way it cannot. */
static int follow_narrow(Flow *flow)
{
    char op[VDNN_SCAN_OP_NAME_MAX], value[VDNN_SCAN_OP_NAME_MAX];
    for (size_t added = 1; added;) {
        added = 0;
        for (size_t k = 0; k < flow->n_nodes; k++) {
            const FlowNode *n = &flow->node[k];
            const Span *in = &flow->names.v[n->first_in];
            size_t reads = 0, at = 0;
            for (size_t i = 0; i < n->n_in; i++)
                if (listed(&flow->narrow, in[i]) && !reads++)
                    at = i;
            if (!reads)
                continue;
            const bool standard = n->domain.n == 0 || span_is(n->domain, "ai.onnx");
            if (standard && span_is(n->op, "Cast"))
                continue;
            /* the library's ops read their planes as samples of either width
             * (custom_ops.h), their outputs are scores */
            if (span_is(n->domain, VDNN_CUSTOM_OP_DOMAIN) && reads_planes(flow, n))
                continue;
            const bool moves =
                standard && (span_is(n->op, "Concat")
                                 ? reads == n->n_in
                                 : reads == 1 && at == 0 &&
                                       on_list(moving_ops, sizeof(moving_ops) /
                                                               sizeof(moving_ops[0]), n->op));
            if (!moves)
                return vdnn_fail(-ENOTSUP, "a %s reads the samples \"%s\" as numbers",
                                 shown(&op, n->op), shown(&value, in[at]));
            const Span *out = &flow->names.v[n->first_out];
            for (size_t o = 0; o < n->n_out; o++) {
                if (!out[o].n || listed(&flow->narrow, out[o]))
                    continue;
                int r = add_name(&flow->narrow, out[o]);
                if (r)
                    return r;
                added++;
            }
        }
    }
    for (size_t i = 0; i < flow->narrow.n; i++)
        if (listed(&flow->declared, flow->narrow.v[i]))
            return vdnn_fail(-ENOTSUP, "the model declares the type of \"%s\"",
                             shown(&value, flow->narrow.v[i]));
    return 0;
}

/* The byte after the tag of field f. */
static const uint8_t *field_value(const Field *f)
{
    const uint8_t *p = f->at;
    uint64_t tag;
    read_varint(&p, p + 10, &tag); /* read once already: well formed */
    return p;
}

/* In copy (bytes' twin), turns the elem_type of the graph inputs (11) named
 * in narrow from UINT16 into UINT8: ValueInfoProto type (2) -> TypeProto
 * tensor_type (1) -> elem_type (1). Every occurrence that says UINT16 is
 * rewritten (a parser keeps the last); the varint keeps its length, as the
 * value 4 and the value 2 differ in their first byte only. */
static int retype_inputs(const Scan *s, Span g, const NameList *narrow, uint8_t *copy)
{
    Field f = {0}, t = {0}, tt = {0}, e = {0};
    int r;
    while ((r = next_field(s, &g, &f)) > 0) {
        Span name = {NULL, 0};
        if (f.num != 11 || f.wt != WT_LEN || (r = string_field(s, f.len, 1, &name)) < 0 ||
            !listed(narrow, name)) {
            if (r < 0)
                return r;
            continue;
        }
        Span vi = f.len;
        while ((r = next_field(s, &vi, &t)) > 0) {
            if (t.num != 2 || t.wt != WT_LEN)
                continue;
            Span type = t.len;
            while ((r = next_field(s, &type, &tt)) > 0) {
                if (tt.num != 1 || tt.wt != WT_LEN)
                    continue;
                Span tensor = tt.len;
                while ((r = next_field(s, &tensor, &e)) > 0)
                    if (e.num == 1 && e.wt == WT_VARINT && e.varint == ONNX_UINT16) {
                        uint8_t *b = copy + (field_value(&e) - s->base);
                        *b = (uint8_t)((*b & 0x80) | ONNX_UINT8);
                    }
                if (r < 0)
                    return r;
            }
            if (r < 0)
                return r;
        }
        if (r < 0)
            return r;
    }
    return r;
}

int vdnn_onnx_narrow_samples(const uint8_t *bytes, size_t len, uint8_t **out)
{
    if (!bytes || !out)
        return vdnn_fail(-EINVAL, "onnx_narrow_samples: %s is NULL", !bytes ? "bytes" : "out");
    *out = NULL;
    VdnnOnnxInterface *iface = NULL;
    int r = vdnn_onnx_interface(bytes, len, &iface);
    if (r)
        return r;
    Scan s = {.base = bytes};
    Flow flow = {0};
    for (size_t i = 0; !r && i < iface->n_inputs; i++)
        if (iface->inputs[i].elem_type == ONNX_UINT16)
            r = add_name(&flow.narrow, (Span){(const uint8_t *)iface->inputs[i].name,
                                              strlen(iface->inputs[i].name)});
    if (!r && !flow.narrow.n)
        r = vdnn_fail(-ENOTSUP, "the model takes no UINT16 input");
    Span m = {bytes, len};
    Field f = {0};
    while (!r && (r = next_field(&s, &m, &f)) > 0)
        r = f.num == 7 ? read_flow(&s, f.len, &flow) : 0; /* a graph: well formed, scanned */
    if (!r)
        r = follow_narrow(&flow);
    uint8_t *copy = NULL;
    if (!r && !(copy = malloc(len ? len : 1)))
        r = vdnn_fail(-ENOMEM, "out of memory");
    if (!r) {
        memcpy(copy, bytes, len);
        m = (Span){bytes, len};
        while ((r = next_field(&s, &m, &f)) > 0)
            if (f.num == 7 && f.wt == WT_LEN && (r = retype_inputs(&s, f.len, &flow.narrow, copy)) < 0)
                break;
    }
    if (r) {
        free(copy);
    } else {
        *out = copy;
    }
    free(flow.node);
    free(flow.names.v);
    free(flow.declared.v);
    free(flow.narrow.v);
    vdnn_onnx_interface_free(iface);
    return r;
}
