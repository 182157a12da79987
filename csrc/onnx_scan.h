/* Internal: the pre-flight check of ONNX model bytes before ONNX Runtime
 * sees them.
 *
 * The model file is read once; the scanner walks those bytes with its own
 * protobuf wire-format reader (no libprotobuf) and the very same buffer then
 * goes to ORT, so what was checked is what runs. The scan accepts a model only
 * when:
 *
 *   - the bytes are well-formed protobuf as far as the scanner walks them
 *     (ModelProto -> GraphProto -> NodeProto -> AttributeProto -> subgraphs,
 *     and every TensorProto / SparseTensorProto on that path); fields it does
 *     not interpret are skipped but still bounds-checked. Groups (wire types
 *     3/4), wire types 6/7, field number 0, varints longer than 10 bytes, and
 *     lengths running past the enclosing message are malformed. A field the
 *     scanner interprets that arrives with the wrong wire type is malformed too
 *     (a real protobuf parser would silently file it as an unknown field, which
 *     would let the scanner and ORT disagree about the model);
 *   - the model has a graph, no model-local functions (ModelProto.functions:
 *     a function body would be a second graph to check, and tiny models have
 *     no use for one) and no training_info;
 *   - the bytes do not carry the ORT-format identifier "ORTM" at offset 4 (ORT
 *     would load such bytes as a flatbuffer model and skip protobuf entirely);
 *   - every node is in the standard domain ("" or "ai.onnx") and its op_type
 *     is on the allow-list (the built-in one, or a caller's subset of it);
 *   - a Dropout node has no training_mode input (that input turns it random);
 *   - there are at most max_loop_nodes Loop nodes and at most max_nodes
 *     nodes across all graphs (ORT's session creation grows faster than
 *     linearly with the node count: docs/security.md has the measurements),
 *     and subgraphs (If / Loop bodies, any attribute g or graphs) nest at
 *     most max_graph_depth levels below the main graph;
 *   - every tensor with external data (data_location = EXTERNAL, or any
 *     external_data entry at all) names a file that passes the rules on
 *     vdnn_onnx_scan() below, and all of them together stay within
 *     max_external_bytes.
 *
 * Where protobuf lets a singular field appear twice, the scanner follows the
 * parser: the last op_type / domain of a node wins, and every occurrence of an
 * embedded message (a second ModelProto.graph, a second AttributeProto.g) is
 * walked, because a parser merges them.
 *
 * Deliberately not on the built-in allow-list: random operators (RandomNormal,
 * RandomUniform, Multinomial, Bernoulli, ...; a quality score must not depend
 * on a seed), string operators (StringNormalizer, RegexFullMatch, ...), Scan
 * and every operator outside the standard domain (ai.onnx.ml, com.microsoft).
 *
 * Not checked: the run-time cost of a model (a Loop's trip count,
 * ConstantOfShape / Expand / Tile / Range sizes come from tensors, not from the
 * graph's structure), operator set versions, and value types.
 */
#ifndef VMAFDNN_ONNX_SCAN_H
#define VMAFDNN_ONNX_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "vmafdnn/vmafdnn.h"

/* Built-in caps (the public ones are in vmafdnn.h: VMAF_DNN_MAX_LOOP_NODES,
 * VMAF_DNN_MAX_SUBGRAPH_DEPTH, VMAF_DNN_MAX_NODES; the default node cap is
 * VMAF_DNN_DEFAULT_MAX_NODES). */
#define VDNN_SCAN_MAX_EXTERNAL_BYTES ((uint64_t)50 * 1024 * 1024)

/* Size of VdnnScanReport.first_bad_op, terminating NUL included. */
#define VDNN_SCAN_OP_NAME_MAX 96

/* What the scan accepts. A caller may only tighten the built-in policy:
 * vdnn_scan_policy_check() rejects anything else. */
typedef struct VdnnScanPolicy {
    /* NULL: the built-in allow-list (n_allowed_ops ignored). Otherwise
     * n_allowed_ops op_type names, each on the built-in list; 0 names allows
     * no operator at all. Borrowed: the array and its strings must stay valid
     * for the duration of each vdnn_onnx_scan() call that uses the policy. */
    const char *const *allowed_ops;
    size_t n_allowed_ops;
    unsigned max_loop_nodes;     /* Loop nodes in all graphs together */
    unsigned max_graph_depth;    /* subgraph levels below the main graph; 0 = no subgraphs */
    unsigned max_nodes;          /* nodes in all graphs together, 1..VMAF_DNN_MAX_NODES */
    uint64_t max_external_bytes; /* total external tensor bytes; 0 = no external data */
} VdnnScanPolicy;

/* What the scan saw. On failure the counts describe the part of the model
 * walked before the failure. */
typedef struct VdnnScanReport {
    size_t n_nodes;          /* nodes in all graphs */
    size_t n_loops;          /* Loop nodes in all graphs */
    size_t n_library_nodes;  /* nodes of the library's own operators (custom_ops.h) */
    unsigned max_depth;      /* deepest subgraph level reached; 0 = main graph only */
    size_t n_external;       /* tensors with external data */
    uint64_t external_bytes; /* their data, summed */
    /* The op_type of the node that made the scan fail, as "domain:op_type"
     * when the domain is not standard; bytes outside printable ASCII become
     * '?', and a long name ends in "...". "" when no node was at fault. */
    char first_bad_op[VDNN_SCAN_OP_NAME_MAX];
} VdnnScanReport;

/* Fills *p with the built-in policy: the built-in allow-list, the hard caps
 * of vmafdnn.h, VMAF_DNN_DEFAULT_MAX_NODES and VDNN_SCAN_MAX_EXTERNAL_BYTES. */
void vdnn_scan_policy_default(VdnnScanPolicy *p);

/* The built-in allow-list of standard-domain op_type names, *n_out entries
 * (n_out may be NULL). Static storage; never free it. */
const char *const *vdnn_scan_builtin_ops(size_t *n_out);

/* Checks that p only tightens the built-in policy.
 * Returns 0, or -EINVAL (with a message) when p is NULL, allowed_ops is NULL
 * while n_allowed_ops > 0, an entry is NULL or not on the built-in list, a
 * cap is above its built-in value, or max_nodes is 0. */
int vdnn_scan_policy_check(const VdnnScanPolicy *p);

/*
 * Scans the ONNX model in bytes[0..len) against policy (NULL: the built-in
 * policy). Nothing is allocated and nothing outside bytes[0..len) is read;
 * bytes is borrowed for the call only.
 *
 * model_dir_fd is a descriptor of the directory the model file was read from
 * (VdnnModelFile.dir_fd; borrowed), or -1. Each external data file is opened
 * beneath it with the rules of model_file.h (vdnn_open_beneath: no absolute
 * link, no link or ".." that climbs out, checked on what was opened) and
 * fstat()ed, but not read: ORT opens the files itself when it builds the
 * session, by name, in the folder it is given (VdnnModelFile.dir, which names
 * this same descriptor through /proc/self/fd), so a file swapped inside that
 * directory between the scan and ORT's read is not caught (docs/security.md).
 * For each external tensor, the "location" entry must be present and
 * non-empty, relative (no leading '/'), free of '\\', NUL bytes and ".."
 * components, and not ORT's in-memory marker (the location that contains
 * _ORT_MEM_ADDR_, which makes ORT read "offset" as a pointer), and must open
 * as a regular file beneath model_dir_fd; "offset" and "length", when
 * present, must be plain decimal numbers that keep the data inside the file
 * (no "length" means up to the end of the file). When model_dir_fd is -1
 * any external data is refused.
 *
 * report may be NULL; otherwise it is zeroed and then filled in (see
 * VdnnScanReport), on success and on failure.
 *
 * Returns 0 when the model is acceptable, or (with a message naming the op,
 * node, tensor or file at fault):
 *   -EINVAL        bytes is NULL while len > 0, or policy fails
 *                  vdnn_scan_policy_check()
 *   -EBADMSG       "truncated or malformed ONNX at byte N"; no graph; the ORT
 *                  format identifier; an external tensor without a location,
 *                  with an unparsable or out-of-file offset/length, or with a
 *                  location/offset/length key given twice; an unknown
 *                  data_location value
 *   -EPERM         a node outside the standard domain or the allow-list, a
 *                  Dropout with training_mode, too many Loop nodes, more
 *                  than max_nodes nodes ("model has N nodes ...: the cap is
 *                  M"), subgraphs nested too deep, model-local functions,
 *                  training_info, external data that is not allowed (no
 *                  directory, absolute, "..", backslash, memory marker, a
 *                  link leading out of the directory, not a regular file)
 *   -ENOENT        an external data file does not exist
 *   -ENAMETOOLONG  an external data path is longer than PATH_MAX
 *   -E2BIG         external data adds up to more than max_external_bytes
 *   other -errno   opening an external data file failed (-EACCES, -ELOOP,
 *                  -ENOTDIR)
 *
 * Thread-safe: no global state (the message is per thread).
 */
int vdnn_onnx_scan(const uint8_t *bytes, size_t len, int model_dir_fd,
                   const VdnnScanPolicy *policy, VdnnScanReport *report);

/* One input or output of the main graph as the model declares it
 * (ValueInfoProto, read with protobuf's merge rules: the last name and
 * element type win, dims append). */
typedef struct VdnnOnnxValue {
    char *name;     /* owned, NUL-terminated ("" when none is given) */
    int elem_type;  /* TensorProto.DataType (ONNX Runtime's element types use
                       the same numbers); 0 when not a tensor or not given */
    int rank;       /* -1 when no shape is given */
    int64_t *dims;  /* rank entries (NULL when rank <= 0): dim_value, or -1 for a
                       dim_param or an unknown dim; owned */
} VdnnOnnxValue;

/* What a model declares it takes and gives: its graph's inputs that no
 * initializer names (the ones a Run must feed, as ONNX Runtime lists them)
 * and its graph's outputs, in order. */
typedef struct VdnnOnnxInterface {
    size_t n_inputs, n_outputs;
    VdnnOnnxValue *inputs, *outputs;
} VdnnOnnxInterface;

/* Reads the interface of the model in bytes[0..len) (bytes that
 * vdnn_onnx_scan() accepted; borrowed for the call) into a new *out, freed
 * with vdnn_onnx_interface_free(). Returns 0, or -EINVAL (NULL argument),
 * -EBADMSG (malformed, no graph), -E2BIG (more than
 * VDNN_ONNX_MAX_INTERFACE graph inputs or outputs; initializers are not
 * capped), -ENOMEM, each with a message. Thread-safe. */
#define VDNN_ONNX_MAX_INTERFACE 65536
int vdnn_onnx_interface(const uint8_t *bytes, size_t len, VdnnOnnxInterface **out);

/* NULL-safe. */
void vdnn_onnx_interface_free(VdnnOnnxInterface *iface);

/* Whether a and b declare the same inputs and outputs: names, element
 * types, ranks and dims (-1 matching -1 only), in the same order. */
int vdnn_onnx_interface_equal(const VdnnOnnxInterface *a, const VdnnOnnxInterface *b);

/* Whether `form` declares the interface of `model` as a form of it must
 * (sidecar "forms"): equal, except that a picture input (rank 4) the model
 * declares FLOAT or FLOAT16 may be UINT16 in the form, which then takes the
 * picture's own samples instead of normalised values, that the first
 * dim of a picture input or an output that the model declares 1 may be
 * symbolic in the form, which can then score several frames per Run, and
 * that the form may declare more inputs after the model's, each one number
 * (FLOAT or FLOAT16, every dim 1) for the model's sidecar to feed (a
 * samples form's "bpc"). */
int vdnn_onnx_form_fits(const VdnnOnnxInterface *model, const VdnnOnnxInterface *form);

/* The model in bytes[0..len) (bytes that vdnn_onnx_scan() accepted;
 * borrowed for the call) with its UINT16 inputs, the pictures of a samples
 * model, declared UINT8: what it becomes for a clip of 8-bit samples, which
 * then go to the EP at half the bytes. Only where that changes no value:
 * every node of the main graph that reads such an input (or what the
 * following nodes make of it) is a Cast, a Concat of such values only,
 * Slice, Reshape, Squeeze, Unsqueeze, Flatten, Transpose, Identity or
 * Split at their data input, or one of the library's ops that take planes
 * (VifInteger, AdmInteger, MotionInteger, Ssim, Psnr, FloatSsim,
 * custom_ops.h) reading such values as all of them, the model holds no
 * subgraph, and neither its
 * value_info nor its outputs declare the type of a value that changes.
 * The inputs' elem_type fields are rewritten in place of a copy of the
 * bytes, which keep their length and every other byte.
 *
 * Returns 0 with *out the copy (malloc'ed, len bytes; the caller frees it),
 * or, with *out NULL and a message: -ENOTSUP (the model takes no UINT16
 * input, or a rule above fails: "a Conv reads the samples \"x\" as
 * numbers"), -EINVAL (NULL argument), -EBADMSG (malformed, no graph),
 * -E2BIG, -ENOMEM. Thread-safe. */
int vdnn_onnx_narrow_samples(const uint8_t *bytes, size_t len, uint8_t **out);

#endif
