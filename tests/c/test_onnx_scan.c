/* Tests for csrc/onnx_scan.c. Models are built here with a small protobuf
 * encoder (field numbers from onnx.proto), so every case states exactly which
 * bytes it feeds the scanner; no generated blobs. External-data cases build
 * their directory tree under a fresh mkdtemp() directory and remove it. */
#define _GNU_SOURCE /* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "error.h"
#include "model_file.h"
#include "onnx_scan.h"

/* ------------------------------------------------------------------------ */
/* Protobuf encoder                                                         */
/* ------------------------------------------------------------------------ */

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
} Buf;

static void put(Buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_byte(Buf *b, uint8_t v)
{
    put(b, &v, 1);
}

static void put_varint(Buf *b, uint64_t v)
{
    do {
        put_byte(b, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
}

static void put_tag(Buf *b, unsigned field, unsigned wt)
{
    put_varint(b, (uint64_t)field << 3 | wt);
}

static void add_int(Buf *b, unsigned field, uint64_t v)
{
    put_tag(b, field, 0);
    put_varint(b, v);
}

static void add_bytes(Buf *b, unsigned field, const void *data, size_t n)
{
    put_tag(b, field, 2);
    put_varint(b, n);
    put(b, data, n);
}

static void add_str(Buf *b, unsigned field, const char *s)
{
    add_bytes(b, field, s, strlen(s));
}

/* Appends sub as an embedded message and frees it. */
static void add_msg(Buf *b, unsigned field, Buf sub)
{
    add_bytes(b, field, sub.p, sub.n);
    free(sub.p);
}

/* ------------------------------------------------------------------------ */
/* ONNX builders                                                            */
/* ------------------------------------------------------------------------ */

/* NodeProto fields */
enum { N_INPUT = 1, N_OUTPUT = 2, N_NAME = 3, N_OP = 4, N_ATTR = 5, N_DOMAIN = 7 };
/* AttributeProto fields and types */
enum { A_NAME = 1, A_I = 3, A_T = 5, A_G = 6, A_TENSORS = 10, A_GRAPHS = 11, A_TYPE = 20,
       A_SPARSE = 22 };
enum { AT_INT = 2, AT_TENSOR = 4, AT_GRAPH = 5, AT_GRAPHS = 10, AT_SPARSE = 11 };
/* GraphProto fields */
enum { G_NODE = 1, G_NAME = 2, G_INIT = 5, G_INPUT = 11, G_OUTPUT = 12, G_SPARSE_INIT = 15 };
/* ModelProto fields */
enum { M_IR = 1, M_PRODUCER = 2, M_GRAPH = 7, M_OPSET = 8, M_TRAINING = 20, M_FUNCTIONS = 25 };

static Buf node(const char *domain, const char *op)
{
    Buf n = { 0 };
    add_str(&n, N_INPUT, "x");
    add_str(&n, N_OUTPUT, "y");
    add_str(&n, N_NAME, "n0");
    add_str(&n, N_OP, op);
    if (domain)
        add_str(&n, N_DOMAIN, domain);
    return n;
}

/* Adds an attribute holding graph g (field A_G) or the list {g} (A_GRAPHS). */
static Buf with_graph(Buf n, unsigned field, const char *attr_name, Buf g)
{
    Buf a = { 0 };
    add_str(&a, A_NAME, attr_name);
    add_int(&a, A_TYPE, field == A_G ? AT_GRAPH : AT_GRAPHS);
    add_msg(&a, field, g);
    add_msg(&n, N_ATTR, a);
    return n;
}

/* A float ValueInfoProto of shape [1, 1, 8, 8]. */
/* A tensor value: elem_type (TensorProto.DataType), the last `rank` of
 * the dims [1, 1, 8, 8]. */
static Buf typed_value_info(const char *name, int elem_type, int rank)
{
    Buf shape = { 0 }, tensor_type = { 0 }, type = { 0 }, vi = { 0 };
    static const int dims[4] = { 1, 1, 8, 8 };
    for (int i = 4 - rank; i < 4; i++) {
        Buf d = { 0 };
        add_int(&d, 1, (uint64_t)dims[i]); /* dim_value */
        add_msg(&shape, 1, d);
    }
    add_int(&tensor_type, 1, (uint64_t)elem_type);
    add_msg(&tensor_type, 2, shape);
    add_msg(&type, 1, tensor_type);
    add_str(&vi, 1, name);
    add_msg(&vi, 2, type);
    return vi;
}

static Buf value_info(const char *name)
{
    return typed_value_info(name, 1, 4); /* FLOAT [1,1,8,8] */
}

static Buf graph_of(Buf n)
{
    Buf g = { 0 };
    add_msg(&g, G_NODE, n);
    add_str(&g, G_NAME, "g");
    return g;
}

static Buf model_of(Buf g)
{
    Buf m = { 0 }, opset = { 0 };
    add_int(&m, M_IR, 8);
    add_str(&m, M_PRODUCER, "test_onnx_scan");
    add_msg(&m, M_GRAPH, g);
    add_str(&opset, 1, "");
    add_int(&opset, 2, 17);
    add_msg(&m, M_OPSET, opset);
    return m;
}

static Buf model_with_node(const char *domain, const char *op)
{
    return model_of(graph_of(node(domain, op)));
}

/* Conv(x, w) -> ReduceMean(keepdims = 0) with w an inline 1x1x3x3
 * initializer, the shape of a tiny quality model. */
static Buf conv_mean_model(void)
{
    Buf conv = { 0 }, mean = { 0 }, keep = { 0 }, w = { 0 }, g = { 0 };
    float weights[9] = { 0 };

    add_str(&conv, N_INPUT, "x");
    add_str(&conv, N_INPUT, "w");
    add_str(&conv, N_OUTPUT, "c");
    add_str(&conv, N_NAME, "conv");
    add_str(&conv, N_OP, "Conv");

    add_str(&keep, A_NAME, "keepdims");
    add_int(&keep, A_I, 0);
    add_int(&keep, A_TYPE, AT_INT);
    add_str(&mean, N_INPUT, "c");
    add_str(&mean, N_OUTPUT, "y");
    add_str(&mean, N_NAME, "mean");
    add_str(&mean, N_OP, "ReduceMean");
    add_msg(&mean, N_ATTR, keep);

    for (int i = 0; i < 4; i++)
        add_int(&w, 1, i < 2 ? 1 : 3); /* dims */
    add_int(&w, 2, 1);                 /* data_type FLOAT */
    add_str(&w, 8, "w");
    add_bytes(&w, 9, weights, sizeof(weights)); /* raw_data */

    add_msg(&g, G_NODE, conv);
    add_msg(&g, G_NODE, mean);
    add_str(&g, G_NAME, "conv_mean");
    add_msg(&g, G_INIT, w);
    add_msg(&g, G_INPUT, value_info("x"));
    add_msg(&g, G_OUTPUT, value_info("y"));
    return model_of(g);
}

/* Relu wrapped in `levels` nested If nodes (then_branch), so the Relu's graph
 * sits `levels` subgraph levels below the main graph. */
static Buf nested_if_graph(unsigned levels, const char *inner_op)
{
    Buf g = graph_of(node(NULL, inner_op));
    for (unsigned i = 0; i < levels; i++)
        g = graph_of(with_graph(node(NULL, "If"), A_G, "then_branch", g));
    return g;
}

static Buf loop_node(void)
{
    return with_graph(node(NULL, "Loop"), A_G, "body", graph_of(node(NULL, "Add")));
}

static Buf graph_with_loops(unsigned n_loops)
{
    Buf g = { 0 };
    for (unsigned i = 0; i < n_loops; i++)
        add_msg(&g, G_NODE, loop_node());
    return g;
}

static void add_entry(Buf *t, const char *key, const void *value, size_t n)
{
    Buf e = { 0 };
    add_str(&e, 1, key);
    add_bytes(&e, 2, value, n);
    add_msg(t, 13, e); /* external_data */
}

/* A float TensorProto whose data lives in `location`; offset and length are
 * left out when NULL. */
static Buf ext_tensor(const char *name, const char *location, const char *offset, const char *length)
{
    Buf t = { 0 };
    add_int(&t, 1, 16); /* dims */
    add_int(&t, 2, 1);  /* data_type FLOAT */
    add_str(&t, 8, name);
    if (location)
        add_entry(&t, "location", location, strlen(location));
    if (offset)
        add_entry(&t, "offset", offset, strlen(offset));
    if (length)
        add_entry(&t, "length", length, strlen(length));
    add_int(&t, 14, 1); /* data_location EXTERNAL */
    return t;
}

/* Identity over an initializer with external data. */
static Buf ext_model_of(Buf tensor)
{
    Buf g = graph_of(node(NULL, "Identity"));
    add_msg(&g, G_INIT, tensor);
    return model_of(g);
}

static Buf ext_model(const char *location, const char *offset, const char *length)
{
    return ext_model_of(ext_tensor("w", location, offset, length));
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static VdnnScanReport rep;

/* Scans m (then frees it) into the global report. */
static int scan(Buf m, int dir, const VdnnScanPolicy *policy)
{
    int r = vdnn_onnx_scan(m.p, m.n, dir, policy, &rep);
    free(m.p);
    return r;
}

static Buf raw(const uint8_t *bytes, size_t n)
{
    Buf b = { 0 };
    put(&b, bytes, n);
    return b;
}

/* ------------------------------------------------------------------------ */
/* Operators                                                                */
/* ------------------------------------------------------------------------ */

static void test_allowed_model(void)
{
    CHECK_EQ_INT(scan(conv_mean_model(), -1, NULL), 0);
    CHECK_EQ_INT(rep.n_nodes, 2);
    CHECK_EQ_INT(rep.n_loops, 0);
    CHECK_EQ_INT(rep.max_depth, 0);
    CHECK_EQ_INT(rep.n_external, 0);
    CHECK_EQ_INT(rep.external_bytes, 0);
    CHECK_EQ_INT(rep.first_bad_op[0], '\0');

    /* No report wanted. */
    Buf m = conv_mean_model();
    CHECK_EQ_INT(vdnn_onnx_scan(m.p, m.n, -1, NULL, NULL), 0);
    free(m.p);

    /* "ai.onnx" is the standard domain spelled out. */
    CHECK_EQ_INT(scan(model_with_node("ai.onnx", "Relu"), -1, NULL), 0);
}

static void test_custom_domain(void)
{
    CHECK_EQ_INT(scan(model_with_node("com.evil", "Exec"), -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"com.evil:Exec\" (node 0 \"n0\")");
    CHECK_STR_CONTAINS(vdnn_last_error(), "only the standard ONNX domain and the library's own "
                       "operators (org.vmafdnn) are allowed");
    CHECK(strcmp(rep.first_bad_op, "com.evil:Exec") == 0);

    /* The library's own operators, and nothing else of their domain. */
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "VifInteger"), -1, NULL), 0);
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "Samples"), -1, NULL), 0);
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "Exec"), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "org.vmafdnn:Exec") == 0);
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "Relu"), -1, NULL), -EPERM);
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn.x", "VifInteger"), -1, NULL), -EPERM);
    CHECK_EQ_INT(scan(model_with_node("com.evil", "VifInteger"), -1, NULL), -EPERM);

    /* Standard op names do not help outside the standard domain. */
    CHECK_EQ_INT(scan(model_with_node("com.microsoft", "Relu"), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "com.microsoft:Relu") == 0);
    CHECK_EQ_INT(scan(model_with_node("ai.onnx.ml", "Relu"), -1, NULL), -EPERM);

    /* Non-printable bytes never reach the message raw. */
    CHECK_EQ_INT(scan(model_with_node("a\nb", "E\x01x"), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "a?b:E?x") == 0);

    /* A very long name is cut, with a marker. */
    char longop[300];
    memset(longop, 'A', sizeof(longop) - 1);
    longop[sizeof(longop) - 1] = '\0';
    CHECK_EQ_INT(scan(model_with_node(NULL, longop), -1, NULL), -EPERM);
    CHECK_EQ_INT(strlen(rep.first_bad_op), VDNN_SCAN_OP_NAME_MAX - 1);
    CHECK_STR_CONTAINS(rep.first_bad_op, "AAA...");
}

static void test_disallowed_ops(void)
{
    static const char *const bad[] = { "RandomNormal", "RandomUniformLike", "Multinomial",
                                       "Bernoulli", "StringNormalizer", "Scan", "" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(scan(model_with_node(NULL, bad[i]), -1, NULL), -EPERM);
        CHECK_STR_CONTAINS(vdnn_last_error(), "which is not on the allow-list");
        CHECK(strcmp(rep.first_bad_op, bad[i]) == 0);
    }
    /* Case and embedded NUL bytes count. */
    CHECK_EQ_INT(scan(model_with_node(NULL, "relu"), -1, NULL), -EPERM);
    Buf n = { 0 };
    add_bytes(&n, N_OP, "Relu\0x", 6);
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "Relu?x") == 0);
}

/* A parser keeps the last of repeated singular fields; so must the scanner. */
static void test_repeated_fields(void)
{
    Buf n = node("", "Relu");
    add_str(&n, N_DOMAIN, "com.evil");
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "com.evil:Relu") == 0);

    n = node("com.evil", "Relu");
    add_str(&n, N_DOMAIN, "");
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), 0);

    n = node(NULL, "Relu");
    add_str(&n, N_OP, "RandomNormal");
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "RandomNormal") == 0);

    /* A second graph field is merged by a parser: it is walked too. */
    Buf m = model_with_node(NULL, "Relu");
    add_msg(&m, M_GRAPH, graph_of(node(NULL, "Multinomial")));
    CHECK_EQ_INT(scan(m, -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "Multinomial") == 0);
}

static void test_subgraph_ops(void)
{
    /* Found through AttributeProto.g ... */
    Buf g = graph_of(with_graph(node(NULL, "If"), A_G, "then_branch",
                                graph_of(node(NULL, "RandomNormal"))));
    CHECK_EQ_INT(scan(model_of(g), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "RandomNormal") == 0);
    CHECK_STR_CONTAINS(vdnn_last_error(), "in a subgraph at depth 1");
    CHECK_EQ_INT(rep.max_depth, 1);
    CHECK_EQ_INT(rep.n_nodes, 2);

    /* ... through AttributeProto.graphs, whatever the attribute claims to be ... */
    g = graph_of(with_graph(node(NULL, "If"), A_GRAPHS, "else_branch",
                            graph_of(node("com.evil", "Exec"))));
    CHECK_EQ_INT(scan(model_of(g), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "com.evil:Exec") == 0);

    /* ... and the outer node is judged before its subgraphs. */
    g = graph_of(with_graph(node(NULL, "Scan"), A_G, "body", graph_of(node(NULL, "Bernoulli"))));
    CHECK_EQ_INT(scan(model_of(g), -1, NULL), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "Scan") == 0);

    g = graph_of(with_graph(node(NULL, "If"), A_G, "then_branch", graph_of(node(NULL, "Relu"))));
    CHECK_EQ_INT(scan(model_of(g), -1, NULL), 0);
    CHECK_EQ_INT(rep.n_nodes, 2);
    CHECK_EQ_INT(rep.max_depth, 1);
}

static void test_dropout(void)
{
    Buf n = { 0 };
    add_str(&n, N_INPUT, "x");
    add_str(&n, N_INPUT, "ratio");
    add_str(&n, N_OP, "Dropout");
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), 0);

    n = (Buf){ 0 };
    add_str(&n, N_INPUT, "x");
    add_str(&n, N_INPUT, "");
    add_str(&n, N_INPUT, ""); /* an empty name is an absent input */
    add_str(&n, N_OP, "Dropout");
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), 0);

    n = (Buf){ 0 };
    add_str(&n, N_INPUT, "x");
    add_str(&n, N_INPUT, "ratio");
    add_str(&n, N_INPUT, "training_mode");
    add_str(&n, N_OP, "Dropout");
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "training_mode");
    CHECK(strcmp(rep.first_bad_op, "Dropout") == 0);
}

static void test_loops(void)
{
    CHECK_EQ_INT(scan(model_of(graph_with_loops(1)), -1, NULL), 0);
    CHECK_EQ_INT(rep.n_loops, 1);
    CHECK_EQ_INT(rep.n_nodes, 2);
    CHECK_EQ_INT(rep.max_depth, 1);

    CHECK_EQ_INT(scan(model_of(graph_with_loops(VMAF_DNN_MAX_LOOP_NODES)), -1, NULL), 0);
    CHECK_EQ_INT(scan(model_of(graph_with_loops(VMAF_DNN_MAX_LOOP_NODES + 1)), -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "more than 4 Loop nodes");
    CHECK_STR_CONTAINS(vdnn_last_error(), "the cap is 4");
    CHECK(strcmp(rep.first_bad_op, "Loop") == 0);

    /* Loops count across graphs: 4 at the top plus one inside a Loop body. */
    Buf g = graph_with_loops(VMAF_DNN_MAX_LOOP_NODES);
    add_msg(&g, G_NODE, with_graph(node(NULL, "If"), A_G, "then_branch", graph_of(loop_node())));
    CHECK_EQ_INT(scan(model_of(g), -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "in a subgraph at depth 1");

    VdnnScanPolicy p;
    vdnn_scan_policy_default(&p);
    p.max_loop_nodes = 0;
    CHECK_EQ_INT(scan(model_of(graph_with_loops(1)), -1, &p), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "the cap is 0");
}

static void test_depth(void)
{
    CHECK_EQ_INT(scan(model_of(nested_if_graph(VMAF_DNN_MAX_SUBGRAPH_DEPTH, "Relu")), -1, NULL), 0);
    CHECK_EQ_INT(rep.max_depth, VMAF_DNN_MAX_SUBGRAPH_DEPTH);
    CHECK_EQ_INT(rep.n_nodes, VMAF_DNN_MAX_SUBGRAPH_DEPTH + 1);

    CHECK_EQ_INT(scan(model_of(nested_if_graph(VMAF_DNN_MAX_SUBGRAPH_DEPTH + 1, "Relu")), -1, NULL),
                 -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "more than 8 levels deep (the cap is 8)");
    CHECK_EQ_INT(rep.max_depth, VMAF_DNN_MAX_SUBGRAPH_DEPTH);

    /* Deep nesting is refused at the cap, not walked. */
    CHECK_EQ_INT(scan(model_of(nested_if_graph(2000, "Relu")), -1, NULL), -EPERM);
    CHECK_EQ_INT(rep.n_nodes, VMAF_DNN_MAX_SUBGRAPH_DEPTH + 1);

    VdnnScanPolicy p;
    vdnn_scan_policy_default(&p);
    p.max_graph_depth = 0;
    CHECK_EQ_INT(scan(model_of(nested_if_graph(0, "Relu")), -1, &p), 0);
    CHECK_EQ_INT(scan(model_of(nested_if_graph(1, "Relu")), -1, &p), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "the cap is 0");
}

static Buf graph_with_nodes(size_t n)
{
    Buf g = { 0 };
    for (size_t i = 0; i < n; i++)
        add_msg(&g, G_NODE, node(NULL, "Relu"));
    return g;
}

/* The node cap counts every graph, subgraphs included, and the message gives
 * the whole count. */
static void test_node_count(void)
{
    char want[128];
    CHECK_EQ_INT(scan(model_of(graph_with_nodes(VMAF_DNN_DEFAULT_MAX_NODES)), -1, NULL), 0);
    CHECK_EQ_INT(rep.n_nodes, VMAF_DNN_DEFAULT_MAX_NODES);
    CHECK_EQ_INT(scan(model_of(graph_with_nodes(VMAF_DNN_DEFAULT_MAX_NODES + 5)), -1, NULL),
                 -EPERM);
    snprintf(want, sizeof(want), "model has %u nodes (all graphs, subgraphs included): the cap is %u",
             VMAF_DNN_DEFAULT_MAX_NODES + 5, VMAF_DNN_DEFAULT_MAX_NODES);
    CHECK_STR_CONTAINS(vdnn_last_error(), want);

    VdnnScanPolicy p;
    vdnn_scan_policy_default(&p);
    p.max_nodes = 6; /* 3 Loops with a 1-node body each */
    CHECK_EQ_INT(scan(model_of(graph_with_loops(3)), -1, &p), 0);
    p.max_nodes = 5;
    CHECK_EQ_INT(scan(model_of(graph_with_loops(3)), -1, &p), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "model has 6 nodes");
    p.max_nodes = 1;
    CHECK_EQ_INT(scan(model_of(graph_with_nodes(1)), -1, &p), 0);
}

static void test_model_level_rules(void)
{
    Buf m = model_with_node(NULL, "Relu"), f = { 0 };
    add_str(&f, 1, "helper");
    add_msg(&f, 7, node(NULL, "Relu"));
    add_msg(&m, M_FUNCTIONS, f);
    CHECK_EQ_INT(scan(m, -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "model-local functions are not allowed");

    m = model_with_node(NULL, "Relu");
    add_msg(&m, M_TRAINING, graph_of(node(NULL, "Relu")));
    CHECK_EQ_INT(scan(m, -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "training_info");

    /* Bytes 4..7 = "ORTM": ORT would load them as an ORT-format model. */
    m = (Buf){ 0 };
    add_str(&m, M_PRODUCER, "abORTM");
    add_msg(&m, M_GRAPH, graph_of(node(NULL, "Relu")));
    CHECK_EQ_INT(scan(m, -1, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "ORTM");
    m = (Buf){ 0 };
    add_str(&m, M_PRODUCER, "abORTm");
    add_msg(&m, M_GRAPH, graph_of(node(NULL, "Relu")));
    CHECK_EQ_INT(scan(m, -1, NULL), 0);

    /* No graph, or nothing at all. */
    m = (Buf){ 0 };
    add_int(&m, M_IR, 8);
    CHECK_EQ_INT(scan(m, -1, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "no graph");
    CHECK_EQ_INT(vdnn_onnx_scan(NULL, 0, -1, NULL, &rep), -EBADMSG);
    CHECK_EQ_INT(vdnn_onnx_scan(NULL, 1, -1, NULL, &rep), -EINVAL);
}

/* ------------------------------------------------------------------------ */
/* Wire format                                                              */
/* ------------------------------------------------------------------------ */

static void test_malformed(void)
{
    /* ir_version with an 11-byte varint. */
    static const uint8_t overlong[] = { 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x80, 0x80, 0x80, 0x80, 0x00 };
    CHECK_EQ_INT(scan(raw(overlong, sizeof(overlong)), -1, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "truncated or malformed ONNX at byte 1");

    /* A 10-byte varint may only carry bit 63 in its last byte. */
    static const uint8_t tenth2[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
    CHECK_EQ_INT(scan(raw(tenth2, sizeof(tenth2)), -1, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "at byte 1");
    Buf m = raw(tenth2, sizeof(tenth2));
    m.p[10] = 0x01; /* UINT64_MAX: valid */
    Buf rest = model_with_node(NULL, "Relu");
    put(&m, rest.p, rest.n);
    free(rest.p);
    CHECK_EQ_INT(scan(m, -1, NULL), 0);

    /* Truncated varint, length past the end, nested length past its parent. */
    static const uint8_t trunc_varint[] = { 0x08, 0x80 };
    CHECK_EQ_INT(scan(raw(trunc_varint, sizeof(trunc_varint)), -1, NULL), -EBADMSG);
    static const uint8_t past_end[] = { 0x3a, 0x05, 0x0a, 0x00 };
    CHECK_EQ_INT(scan(raw(past_end, sizeof(past_end)), -1, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "at byte 1");
    static const uint8_t nested_past[] = { 0x3a, 0x03, 0x0a, 0x05, 0x22, 0x00, 0x00, 0x00, 0x00 };
    CHECK_EQ_INT(scan(raw(nested_past, sizeof(nested_past)), -1, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "at byte 3");
    static const uint8_t huge_len[] = { 0x3a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    CHECK_EQ_INT(scan(raw(huge_len, sizeof(huge_len)), -1, NULL), -EBADMSG);

    /* Wire types 3, 4 (groups), 6 and 7, at the top and inside a graph. */
    for (uint8_t wt = 3; wt <= 7; wt++) {
        if (wt == 5)
            continue;
        uint8_t top[] = { (uint8_t)(20 << 3 | wt), 0x00 };
        CHECK_EQ_INT(scan(raw(top, sizeof(top)), -1, NULL), -EBADMSG);
        CHECK_STR_CONTAINS(vdnn_last_error(), "at byte 0");
        uint8_t inner[] = { 0x3a, 0x02, (uint8_t)(20 << 3 | wt), 0x00 };
        CHECK_EQ_INT(scan(raw(inner, sizeof(inner)), -1, NULL), -EBADMSG);
        CHECK_STR_CONTAINS(vdnn_last_error(), "at byte 2");
    }
    /* Fixed-width fields are skipped, and checked for length. */
    static const uint8_t fixed_short[] = { 0x09, 0x00, 0x00, 0x00 };
    CHECK_EQ_INT(scan(raw(fixed_short, sizeof(fixed_short)), -1, NULL), -EBADMSG);
    m = (Buf){ 0 };
    static const uint8_t fixed_ok[] = { 0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x15, 1, 2, 3, 4 };
    put(&m, fixed_ok, sizeof(fixed_ok));
    rest = model_with_node(NULL, "Relu");
    put(&m, rest.p, rest.n);
    free(rest.p);
    CHECK_EQ_INT(scan(m, -1, NULL), 0);

    /* Field number 0, and a tag beyond 32 bits. */
    static const uint8_t field0[] = { 0x02, 0x00 };
    CHECK_EQ_INT(scan(raw(field0, sizeof(field0)), -1, NULL), -EBADMSG);
    static const uint8_t bigtag[] = { 0x80, 0x80, 0x80, 0x80, 0x10, 0x00 };
    CHECK_EQ_INT(scan(raw(bigtag, sizeof(bigtag)), -1, NULL), -EBADMSG);

    /* An interpreted field with the wrong wire type: graph as a varint, and
     * op_type as a varint. */
    static const uint8_t graph_varint[] = { 0x38, 0x01 };
    CHECK_EQ_INT(scan(raw(graph_varint, sizeof(graph_varint)), -1, NULL), -EBADMSG);
    Buf n = { 0 };
    add_int(&n, N_OP, 1);
    CHECK_EQ_INT(scan(model_of(graph_of(n)), -1, NULL), -EBADMSG);
}

/* Every prefix of a valid model is either malformed or (at a field boundary)
 * a smaller valid model; never a crash or an out-of-bounds read (run this
 * under ASan / valgrind). */
static void test_prefixes(void)
{
    Buf m = conv_mean_model();
    int bad = 0;
    for (size_t n = 0; n <= m.n; n++) {
        /* A copy of exactly n bytes, so any over-read hits a heap boundary. */
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, m.p, n);
        int r = vdnn_onnx_scan(copy, n, -1, NULL, &rep);
        free(copy);
        if (r != 0 && r != -EBADMSG)
            bad++;
        if (n == m.n)
            CHECK_EQ_INT(r, 0);
    }
    CHECK_EQ_INT(bad, 0);
    free(m.p);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* Single-byte substitutions at every offset, then random multi-byte
 * mutations: any result code, but only ones the API documents. */
static void test_mutations(void)
{
    Buf models[2] = { conv_mean_model(), model_of(nested_if_graph(3, "Relu")) };
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        Buf m = models[k];
        uint8_t *copy = malloc(m.n);
        for (size_t i = 0; i < m.n; i++) {
            static const uint8_t subst[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
            for (size_t j = 0; j < sizeof(subst) + 1; j++) {
                memcpy(copy, m.p, m.n);
                copy[i] = j < sizeof(subst) ? subst[j] : (uint8_t)(m.p[i] ^ 0x08);
                int r = vdnn_onnx_scan(copy, m.n, -1, NULL, &rep);
                if (r != 0 && r != -EBADMSG && r != -EPERM)
                    bad++;
            }
        }
        for (int iter = 0; iter < 20000; iter++) {
            memcpy(copy, m.p, m.n);
            int flips = 1 + (int)(rng() % 4);
            for (int f = 0; f < flips; f++)
                copy[rng() % m.n] = (uint8_t)rng();
            size_t n = m.n - rng() % 4;
            int r = vdnn_onnx_scan(copy, n, -1, NULL, &rep);
            if (r != 0 && r != -EBADMSG && r != -EPERM)
                bad++;
        }
        free(copy);
        free(m.p);
    }
    CHECK_EQ_INT(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* External data                                                            */
/* ------------------------------------------------------------------------ */

/* The tree every external-data case runs in:
 *   root/secret.bin            outside the model directory
 *   root/model2/w.bin          a sibling whose name extends "model"
 *   root/model/w.bin           64 bytes
 *   root/model/sub/v.bin       16 bytes
 *   root/model/big.bin         sparse, 60 MiB (over the default cap)
 *   root/model/fifo            a FIFO
 *   root/model/escape.bin ->   ../secret.bin
 *   root/model/evil ->         ../model2
 *   root/model/alias.bin ->    sub/v.bin (stays inside) */
static char root[64], model_dir[128];
static int dir_fd = -1; /* O_PATH descriptor of model_dir, as VdnnModelFile keeps one */

static void path_in(char *dst, size_t cap, const char *rel)
{
    snprintf(dst, cap, "%s/%s", root, rel);
}

static void write_file(const char *rel, size_t size)
{
    char p[256];
    path_in(p, sizeof(p), rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ_INT(ftruncate(fd, (off_t)size), 0);
        close(fd);
    }
}

static void make_tree(void)
{
    char p[256];
    strcpy(root, "/tmp/test_onnx_scan_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(model_dir, sizeof(model_dir), "%s/model", root);
    static const char *const dirs[] = { "model", "model/sub", "model2" };
    for (size_t i = 0; i < 3; i++) {
        path_in(p, sizeof(p), dirs[i]);
        CHECK_EQ_INT(mkdir(p, 0700), 0);
    }
    write_file("secret.bin", 64);
    write_file("model2/w.bin", 64);
    write_file("model/w.bin", 64);
    write_file("model/sub/v.bin", 16);
    write_file("model/big.bin", (size_t)60 << 20);
    path_in(p, sizeof(p), "model/fifo");
    CHECK_EQ_INT(mkfifo(p, 0600), 0);
    path_in(p, sizeof(p), "model/escape.bin");
    CHECK_EQ_INT(symlink("../secret.bin", p), 0);
    path_in(p, sizeof(p), "model/evil");
    CHECK_EQ_INT(symlink("../model2", p), 0);
    path_in(p, sizeof(p), "model/alias.bin");
    CHECK_EQ_INT(symlink("sub/v.bin", p), 0);
    path_in(p, sizeof(p), "model/sub/up.bin");
    CHECK_EQ_INT(symlink("../w.bin", p), 0);
    path_in(p, sizeof(p), "model/abs.bin");
    CHECK_EQ_INT(symlink(p, p), 0); /* absolute (to itself): refused before it loops */
    dir_fd = open(model_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(dir_fd >= 0);
}

static void remove_tree(void)
{
    close(dir_fd);
    static const char *const files[] = { "model/sub/up.bin", "model/abs.bin",
                                         "model/alias.bin", "model/evil", "model/escape.bin",
                                         "model/fifo", "model/big.bin", "model/sub/v.bin",
                                         "model/w.bin", "model2/w.bin", "secret.bin" };
    static const char *const dirs[] = { "model/sub", "model", "model2", "" };
    char p[256];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        path_in(p, sizeof(p), files[i]);
        CHECK_EQ_INT(unlink(p), 0);
    }
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        path_in(p, sizeof(p), dirs[i]);
        CHECK_EQ_INT(rmdir(p), 0);
    }
}

static void test_external_inside(void)
{
    CHECK_EQ_INT(scan(ext_model("w.bin", NULL, NULL), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.n_external, 1);
    CHECK_EQ_INT(rep.external_bytes, 64);

    CHECK_EQ_INT(scan(ext_model("w.bin", "16", "32"), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.external_bytes, 32);
    CHECK_EQ_INT(scan(ext_model("w.bin", "16", NULL), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.external_bytes, 48);
    CHECK_EQ_INT(scan(ext_model("w.bin", "64", NULL), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.external_bytes, 0);
    CHECK_EQ_INT(scan(ext_model("./sub/v.bin", NULL, "16"), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.external_bytes, 16);
    /* Links that stay inside the directory are fine, climbing ones too. */
    CHECK_EQ_INT(scan(ext_model("alias.bin", NULL, NULL), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.external_bytes, 16);
    CHECK_EQ_INT(scan(ext_model("sub/up.bin", NULL, NULL), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.external_bytes, 64);

    /* external_data entries without data_location count too. */
    Buf t = { 0 };
    add_str(&t, 8, "w");
    add_entry(&t, "location", "w.bin", 5);
    add_entry(&t, "checksum", "abc", 3);
    CHECK_EQ_INT(scan(ext_model_of(t), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.n_external, 1);
    CHECK_EQ_INT(rep.external_bytes, 64);

    /* Two tensors sum up. */
    Buf g = graph_of(node(NULL, "Identity"));
    add_msg(&g, G_INIT, ext_tensor("a", "w.bin", NULL, NULL));
    add_msg(&g, G_INIT, ext_tensor("b", "sub/v.bin", NULL, NULL));
    CHECK_EQ_INT(scan(model_of(g), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.n_external, 2);
    CHECK_EQ_INT(rep.external_bytes, 80);
}

static void test_external_escapes(void)
{
    CHECK_EQ_INT(scan(ext_model("../secret.bin", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"../secret.bin\" (tensor \"w\") has a \"..\" component");
    CHECK_EQ_INT(scan(ext_model("sub/../w.bin", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_EQ_INT(scan(ext_model("sub/..", NULL, NULL), dir_fd, NULL), -EPERM);

    char abs[256];
    path_in(abs, sizeof(abs), "model/w.bin");
    CHECK_EQ_INT(scan(ext_model(abs, NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "is an absolute path");
    CHECK_EQ_INT(scan(ext_model("/etc/passwd", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"/etc/passwd\"");

    CHECK_EQ_INT(scan(ext_model("..\\secret.bin", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "backslash");

    /* Symbolic links that leave the directory, or are absolute. */
    CHECK_EQ_INT(scan(ext_model("escape.bin", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"escape.bin\" (tensor \"w\") leads outside");
    CHECK_STR_CONTAINS(vdnn_last_error(), "outside the model's directory");
    CHECK_EQ_INT(scan(ext_model("evil/w.bin", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"evil/w.bin\" (tensor \"w\") leads outside");
    CHECK_EQ_INT(scan(ext_model("abs.bin", NULL, NULL), dir_fd, NULL), -EPERM);

    CHECK_EQ_INT(scan(ext_model("*/_ORT_MEM_ADDR_/*", "140000000", "64"), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "in-memory marker");

    Buf t = { 0 };
    add_str(&t, 8, "w");
    add_entry(&t, "location", "w.bin\0../../secret.bin", 22);
    CHECK_EQ_INT(scan(ext_model_of(t), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"w.bin?../../secret.bin\" (tensor \"w\") contains a NUL byte");

    /* No directory to check against: refused. */
    CHECK_EQ_INT(scan(ext_model("w.bin", NULL, NULL), -1, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "without a directory");
}

static void test_external_files(void)
{
    CHECK_EQ_INT(scan(ext_model("missing.bin", NULL, NULL), dir_fd, NULL), -ENOENT);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"missing.bin\" (tensor \"w\") does not exist");
    CHECK_EQ_INT(scan(ext_model("w.bin/x", NULL, NULL), dir_fd, NULL), -ENOTDIR);

    CHECK_EQ_INT(scan(ext_model("sub", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "is not a regular file");
    CHECK_EQ_INT(scan(ext_model("fifo", NULL, NULL), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"fifo\" (tensor \"w\") is not a regular file");

    char longloc[5000];
    memset(longloc, 'a', sizeof(longloc) - 1);
    longloc[sizeof(longloc) - 1] = '\0';
    CHECK_EQ_INT(scan(ext_model(longloc, NULL, NULL), dir_fd, NULL), -ENAMETOOLONG);
}

static void test_external_ranges(void)
{
    static const char *const bad_numbers[] = { "", "-1", "+1", " 1", "1 ", "12abc", "0x10",
                                               "99999999999999999999" };
    for (size_t i = 0; i < sizeof(bad_numbers) / sizeof(bad_numbers[0]); i++) {
        CHECK_EQ_INT(scan(ext_model("w.bin", bad_numbers[i], NULL), dir_fd, NULL), -EBADMSG);
        CHECK_STR_CONTAINS(vdnn_last_error(), "offset of tensor \"w\" is not a decimal number");
        CHECK_EQ_INT(scan(ext_model("w.bin", NULL, bad_numbers[i]), dir_fd, NULL), -EBADMSG);
        CHECK_STR_CONTAINS(vdnn_last_error(), "length of tensor \"w\" is not a decimal number");
    }
    CHECK_EQ_INT(scan(ext_model("w.bin", "65", NULL), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "offset 65 of tensor \"w\" lies past the end of \"w.bin\" (64 bytes)");
    CHECK_EQ_INT(scan(ext_model("w.bin", "32", "33"), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "(offset 32, length 33) runs past the end");
    CHECK_EQ_INT(scan(ext_model("w.bin", "18446744073709551615", "1"), dir_fd, NULL), -EBADMSG);
    CHECK_EQ_INT(scan(ext_model("w.bin", "1", "18446744073709551615"), dir_fd, NULL), -EBADMSG);

    /* The total cap: the built-in one, and a tighter policy. */
    CHECK_EQ_INT(scan(ext_model("big.bin", NULL, NULL), dir_fd, NULL), -E2BIG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "more than 52428800 bytes");
    CHECK_EQ_INT(scan(ext_model("big.bin", "0", "1024"), dir_fd, NULL), 0);

    VdnnScanPolicy p;
    vdnn_scan_policy_default(&p);
    p.max_external_bytes = 100;
    CHECK_EQ_INT(scan(ext_model("w.bin", NULL, NULL), dir_fd, &p), 0);
    Buf g = graph_of(node(NULL, "Identity"));
    add_msg(&g, G_INIT, ext_tensor("a", "w.bin", NULL, NULL));
    add_msg(&g, G_INIT, ext_tensor("b", "w.bin", NULL, NULL));
    CHECK_EQ_INT(scan(model_of(g), dir_fd, &p), -E2BIG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "tensor \"b\" in \"w.bin\" adds 64");
    CHECK_EQ_INT(rep.external_bytes, 64);
    p.max_external_bytes = 0;
    CHECK_EQ_INT(scan(ext_model("w.bin", "64", NULL), dir_fd, &p), 0);
    CHECK_EQ_INT(scan(ext_model("w.bin", "63", NULL), dir_fd, &p), -E2BIG);
}

static void test_external_structure(void)
{
    /* EXTERNAL without a location, or a key twice. */
    CHECK_EQ_INT(scan(ext_model(NULL, "0", "4"), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "tensor \"w\" has external data but no location");
    CHECK_EQ_INT(scan(ext_model("", NULL, NULL), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "empty external data location");

    Buf t = ext_tensor("w", "w.bin", NULL, NULL);
    add_entry(&t, "location", "../secret.bin", 13);
    CHECK_EQ_INT(scan(ext_model_of(t), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "key \"location\" appears twice");
    t = ext_tensor("w", "w.bin", "0", NULL);
    add_entry(&t, "offset", "8", 1);
    CHECK_EQ_INT(scan(ext_model_of(t), dir_fd, NULL), -EBADMSG);

    /* data_location is an enum: a parser keeps its low 32 bits. */
    t = (Buf){ 0 };
    add_str(&t, 8, "w");
    add_int(&t, 14, 1 | (uint64_t)1 << 32);
    CHECK_EQ_INT(scan(ext_model_of(t), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "no location");
    t = (Buf){ 0 };
    add_int(&t, 14, 2);
    CHECK_EQ_INT(scan(ext_model_of(t), dir_fd, NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "unknown data_location 2");
    t = (Buf){ 0 };
    add_int(&t, 14, 0);
    CHECK_EQ_INT(scan(ext_model_of(t), -1, NULL), 0);
    CHECK_EQ_INT(rep.n_external, 0);
}

/* External data hides in tensors outside GraphProto.initializer too. */
static void test_external_everywhere(void)
{
    /* A Constant's value (AttributeProto.t) inside an If branch. */
    Buf a = { 0 }, c = node(NULL, "Constant");
    add_str(&a, A_NAME, "value");
    add_int(&a, A_TYPE, AT_TENSOR);
    add_msg(&a, A_T, ext_tensor("k", "escape.bin", NULL, NULL));
    add_msg(&c, N_ATTR, a);
    Buf g = graph_of(with_graph(node(NULL, "If"), A_G, "then_branch", graph_of(c)));
    CHECK_EQ_INT(scan(model_of(g), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "(tensor \"k\") leads outside");

    /* AttributeProto.tensors. */
    a = (Buf){ 0 };
    c = node(NULL, "Constant");
    add_msg(&a, A_TENSORS, ext_tensor("k", "../secret.bin", NULL, NULL));
    add_msg(&c, N_ATTR, a);
    CHECK_EQ_INT(scan(model_of(graph_of(c)), dir_fd, NULL), -EPERM);

    /* AttributeProto.sparse_tensor values and GraphProto.sparse_initializer
     * indices. */
    Buf sp = { 0 };
    add_msg(&sp, 1, ext_tensor("vals", "/etc/passwd", NULL, NULL));
    a = (Buf){ 0 };
    c = node(NULL, "Constant");
    add_int(&a, A_TYPE, AT_SPARSE);
    add_msg(&a, A_SPARSE, sp);
    add_msg(&c, N_ATTR, a);
    CHECK_EQ_INT(scan(model_of(graph_of(c)), dir_fd, NULL), -EPERM);
    CHECK_STR_CONTAINS(vdnn_last_error(), "(tensor \"vals\") is an absolute path");

    sp = (Buf){ 0 };
    add_msg(&sp, 2, ext_tensor("idx", "sub/v.bin", NULL, NULL));
    g = graph_of(node(NULL, "Identity"));
    add_msg(&g, G_SPARSE_INIT, sp);
    CHECK_EQ_INT(scan(model_of(g), dir_fd, NULL), 0);
    CHECK_EQ_INT(rep.n_external, 1);
    CHECK_EQ_INT(rep.external_bytes, 16);
}

/* ------------------------------------------------------------------------ */
/* Policy                                                                   */
/* ------------------------------------------------------------------------ */

static void test_builtin_list(void)
{
    size_t n = 0;
    const char *const *ops = vdnn_scan_builtin_ops(&n);
    CHECK(vdnn_scan_builtin_ops(NULL) == ops);
    CHECK_EQ_INT(n, 102);
    int dups = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            dups += strcmp(ops[i], ops[j]) == 0;
    CHECK_EQ_INT(dups, 0);

    static const char *const present[] = { "Conv", "ReduceMean", "If", "Loop", "Gelu", "CumSum",
                                           "Constant", "Resize", "Dropout" };
    static const char *const absent[] = { "RandomNormal", "RandomUniform", "RandomNormalLike",
                                          "RandomUniformLike", "Multinomial", "Bernoulli",
                                          "StringNormalizer", "RegexFullMatch", "Scan" };
    for (size_t k = 0; k < sizeof(present) / sizeof(present[0]); k++) {
        bool found = false;
        for (size_t i = 0; i < n; i++)
            found |= strcmp(ops[i], present[k]) == 0;
        CHECK(found);
    }
    for (size_t k = 0; k < sizeof(absent) / sizeof(absent[0]); k++) {
        bool found = false;
        for (size_t i = 0; i < n; i++)
            found |= strcmp(ops[i], absent[k]) == 0;
        CHECK(!found);
    }
    /* Every built-in op passes a scan on its own. */
    int rejected = 0;
    for (size_t i = 0; i < n; i++)
        rejected += scan(model_with_node(NULL, ops[i]), -1, NULL) != 0;
    CHECK_EQ_INT(rejected, 0);
}

static void test_policy(void)
{
    VdnnScanPolicy p;
    vdnn_scan_policy_default(&p);
    CHECK(p.allowed_ops == NULL);
    CHECK_EQ_INT(p.max_loop_nodes, 4);
    CHECK_EQ_INT(p.max_graph_depth, 8);
    CHECK_EQ_INT(p.max_nodes, VMAF_DNN_DEFAULT_MAX_NODES);
    CHECK_EQ_INT(p.max_external_bytes, 50 * 1024 * 1024);
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), 0);
    CHECK_EQ_INT(vdnn_scan_policy_check(NULL), -EINVAL);

    /* A narrower allow-list applies... */
    static const char *const narrow[] = { "Conv", "ReduceMean" };
    p.allowed_ops = narrow;
    p.n_allowed_ops = 2;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), 0);
    CHECK_EQ_INT(scan(conv_mean_model(), -1, &p), 0);
    CHECK_EQ_INT(scan(model_with_node(NULL, "Relu"), -1, &p), -EPERM);
    CHECK(strcmp(rep.first_bad_op, "Relu") == 0);
    p.n_allowed_ops = 0; /* an empty list allows nothing */
    CHECK_EQ_INT(scan(model_with_node(NULL, "Conv"), -1, &p), -EPERM);
    /* ... it takes the library's operators only when it names them. */
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "AdmInteger"), -1, &p), -EPERM);
    static const char *const ours[] = { "Conv", "org.vmafdnn:AdmInteger" };
    p.allowed_ops = ours;
    p.n_allowed_ops = 2;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), 0);
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "AdmInteger"), -1, &p), 0);
    CHECK_EQ_INT(scan(model_with_node("org.vmafdnn", "VifInteger"), -1, &p), -EPERM);
    static const char *const not_ours[] = { "org.vmafdnn:Exec" };
    p.allowed_ops = not_ours;
    p.n_allowed_ops = 1;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);

    /* ... a wider one is refused, by the check and by the scan. */
    static const char *const wider[] = { "Conv", "RandomNormal" };
    p.allowed_ops = wider;
    p.n_allowed_ops = 2;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"RandomNormal\", which is not on the built-in allow-list");
    CHECK_EQ_INT(scan(model_with_node(NULL, "RandomNormal"), -1, &p), -EINVAL);

    static const char *const with_null[] = { "Conv", NULL };
    p.allowed_ops = with_null;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "entry 1 is NULL");
    p.allowed_ops = NULL;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "n_allowed_ops = 2 but no allowed_ops");

    vdnn_scan_policy_default(&p);
    p.max_loop_nodes = VMAF_DNN_MAX_LOOP_NODES + 1;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "raises max_loop_nodes to 5 (the built-in cap is 4)");
    vdnn_scan_policy_default(&p);
    p.max_graph_depth = VMAF_DNN_MAX_SUBGRAPH_DEPTH + 1;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    vdnn_scan_policy_default(&p);
    p.max_nodes = 0;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    p.max_nodes = VMAF_DNN_MAX_NODES + 1;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "max_nodes");
    p.max_nodes = VMAF_DNN_MAX_NODES;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), 0);
    vdnn_scan_policy_default(&p);
    p.max_external_bytes = VDNN_SCAN_MAX_EXTERNAL_BYTES + 1;
    CHECK_EQ_INT(vdnn_scan_policy_check(&p), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "max_external_bytes");
}

/* The declared interface: graph inputs an initializer names are left out
 * (ORT does not ask for them), symbolic dims read -1, two graph fields and
 * two shapes merge as a parser merges them; equality compares everything. */
static void test_interface(void)
{
    VdnnOnnxInterface *a = NULL, *b = NULL;
    Buf m = conv_mean_model();
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &a), 0);
    CHECK(a && a->n_inputs == 1 && a->n_outputs == 1);
    if (a && a->n_inputs == 1 && a->n_outputs == 1) {
        CHECK(strcmp(a->inputs[0].name, "x") == 0 && strcmp(a->outputs[0].name, "y") == 0);
        CHECK_EQ_INT(a->inputs[0].elem_type, 1);
        CHECK_EQ_INT(a->inputs[0].rank, 4);
        CHECK(a->inputs[0].rank == 4 && a->inputs[0].dims[2] == 8);
    }
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), 0);
    CHECK(vdnn_onnx_interface_equal(a, b));
    vdnn_onnx_interface_free(b);
    free(m.p);

    /* The initializer w listed as an input too (IR < 4 style): not fed. */
    Buf g = { 0 };
    add_msg(&g, G_NODE, node(NULL, "Relu"));
    add_msg(&g, G_INPUT, value_info("w"));
    add_msg(&g, G_INPUT, value_info("x"));
    Buf w = { 0 };
    add_str(&w, 8, "w");
    add_msg(&g, G_INIT, w);
    add_msg(&g, G_OUTPUT, value_info("y"));
    m = model_of(g);
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), 0);
    CHECK(b && b->n_inputs == 1 && strcmp(b->inputs[0].name, "x") == 0);
    CHECK(vdnn_onnx_interface_equal(a, b));
    vdnn_onnx_interface_free(b);
    free(m.p);

    /* Another output name, another element type, a symbolic dim, an input
     * more: each differs. A dim_param reads -1. */
    static const char *const variants[] = {"name", "type", "dim", "extra"};
    for (int v = 0; v < 4; v++) {
        Buf g2 = { 0 }, vi = { 0 }, type = { 0 }, tt = { 0 }, shape = { 0 };
        add_msg(&g2, G_NODE, node(NULL, "Relu"));
        add_msg(&g2, G_INPUT, value_info("x"));
        if (v == 3)
            add_msg(&g2, G_INPUT, value_info("x2"));
        for (int i = 0; i < 4; i++) {
            Buf d = { 0 };
            if (v == 2 && i == 3)
                add_str(&d, 2, "W"); /* dim_param */
            else
                add_int(&d, 1, i < 2 ? 1 : 8);
            add_msg(&shape, 1, d);
        }
        add_int(&tt, 1, v == 1 ? 10 : 1);
        add_msg(&tt, 2, shape);
        add_msg(&type, 1, tt);
        add_str(&vi, 1, v == 0 ? "z" : "y");
        add_msg(&vi, 2, type);
        add_msg(&g2, G_OUTPUT, vi);
        m = model_of(g2);
        CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), 0);
        if (!vdnn_onnx_interface_equal(a, b) == 0)
            fprintf(stderr, "interface variant %s compares equal\n", variants[v]);
        CHECK(!vdnn_onnx_interface_equal(a, b));
        if (v == 2)
            CHECK(b && b->n_outputs == 1 && b->outputs[0].rank == 4 &&
                  b->outputs[0].dims[3] == -1);
        vdnn_onnx_interface_free(b);
        free(m.p);
    }

    /* Two graph fields: a parser appends the second's inputs and outputs. */
    Buf g3 = { 0 }, g4 = { 0 };
    add_msg(&g3, G_NODE, node(NULL, "Relu"));
    add_msg(&g3, G_INPUT, value_info("x"));
    add_msg(&g4, G_OUTPUT, value_info("y"));
    m = model_of(g3);
    add_msg(&m, M_GRAPH, g4);
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), 0);
    CHECK(vdnn_onnx_interface_equal(a, b));
    vdnn_onnx_interface_free(b);
    free(m.p);

    /* Initializers are not capped (a model may have many: they are matched
     * by a sorted search); graph inputs and outputs are. */
    Buf g5 = { 0 };
    add_msg(&g5, G_NODE, node(NULL, "Relu"));
    add_msg(&g5, G_INPUT, value_info("w70000"));
    add_msg(&g5, G_INPUT, value_info("x"));
    for (int i = 0; i < 70001; i++) {
        char name[16];
        snprintf(name, sizeof(name), "w%d", i);
        Buf t = { 0 };
        add_str(&t, 8, name);
        add_msg(&g5, G_INIT, t);
    }
    add_msg(&g5, G_OUTPUT, value_info("y"));
    m = model_of(g5);
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), 0);
    CHECK(vdnn_onnx_interface_equal(a, b));
    vdnn_onnx_interface_free(b);
    free(m.p);
    Buf g6 = { 0 };
    add_msg(&g6, G_NODE, node(NULL, "Relu"));
    for (int i = 0; i <= VDNN_ONNX_MAX_INTERFACE; i++) {
        Buf vi = { 0 };
        add_str(&vi, 1, "x");
        add_msg(&g6, G_INPUT, vi);
    }
    m = model_of(g6);
    b = a;
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), -E2BIG);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "graph inputs or outputs");
    free(m.p);

    /* No graph; truncated bytes; NULL arguments. */
    m = (Buf){ 0 };
    add_int(&m, M_IR, 8);
    b = a; /* must be reset */
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &b), -EBADMSG);
    CHECK(b == NULL);
    free(m.p);
    m = conv_mean_model();
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n - 3, &b), -EBADMSG);
    CHECK_EQ_INT(vdnn_onnx_interface(NULL, 0, &b), -EINVAL);
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, NULL), -EINVAL);
    free(m.p);
    CHECK(!vdnn_onnx_interface_equal(a, NULL));
    vdnn_onnx_interface_free(a);
    vdnn_onnx_interface_free(NULL);
}

/* Relu(x) -> y with x and y of the given element types and ranks. */
static VdnnOnnxInterface *relu_interface(int x_type, int x_rank, int y_type)
{
    Buf g = { 0 };
    add_msg(&g, G_NODE, node(NULL, "Relu"));
    add_msg(&g, G_INPUT, typed_value_info("x", x_type, x_rank));
    add_msg(&g, G_OUTPUT, typed_value_info("y", y_type, 4));
    Buf m = model_of(g);
    VdnnOnnxInterface *iface = NULL;
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &iface), 0);
    free(m.p);
    return iface;
}

/* relu_interface's with a second input "bpc" of `type` and shape [dim]
 * (rank 1), or a rank-0 one when dim is 0. */
static VdnnOnnxInterface *with_value_input(int type, int dim)
{
    Buf g = { 0 }, shape = { 0 }, tensor_type = { 0 }, vtype = { 0 }, vi = { 0 };
    add_msg(&g, G_NODE, node(NULL, "Relu"));
    add_msg(&g, G_INPUT, typed_value_info("x", 4, 4)); /* UINT16 samples */
    if (dim) {
        Buf d = { 0 };
        add_int(&d, 1, (uint64_t)dim);
        add_msg(&shape, 1, d);
    }
    add_int(&tensor_type, 1, (uint64_t)type);
    add_msg(&tensor_type, 2, shape);
    add_msg(&vtype, 1, tensor_type);
    add_str(&vi, 1, "bpc");
    add_msg(&vi, 2, vtype);
    add_msg(&g, G_INPUT, vi);
    add_msg(&g, G_OUTPUT, typed_value_info("y", 1, 4));
    Buf m = model_of(g);
    VdnnOnnxInterface *iface = NULL;
    CHECK_EQ_INT(vdnn_onnx_interface(m.p, m.n, &iface), 0);
    free(m.p);
    return iface;
}

/* A form fits its model when it declares the same interface, except that a
 * FLOAT or FLOAT16 picture input (rank 4) may take samples (UINT16) in the
 * form: not the other way round, not for other ranks, not for outputs; and
 * a form may add inputs after the model's that each hold one number (FLOAT
 * or FLOAT16, every dim 1), which a model may not. */
static void test_form_fits(void)
{
    enum { FLOAT = 1, UINT16 = 4, FLOAT16 = 10 };
    VdnnOnnxInterface *model = relu_interface(FLOAT, 4, FLOAT);
    VdnnOnnxInterface *half = relu_interface(FLOAT16, 4, FLOAT);
    VdnnOnnxInterface *samples = relu_interface(UINT16, 4, FLOAT);
    VdnnOnnxInterface *out16 = relu_interface(FLOAT, 4, UINT16);
    VdnnOnnxInterface *vec = relu_interface(FLOAT, 2, FLOAT);
    VdnnOnnxInterface *vec16 = relu_interface(UINT16, 2, FLOAT);
    CHECK(vdnn_onnx_form_fits(model, model));
    CHECK(vdnn_onnx_form_fits(model, samples));
    CHECK(vdnn_onnx_form_fits(half, samples));
    CHECK(!vdnn_onnx_interface_equal(model, samples));
    CHECK(!vdnn_onnx_form_fits(samples, model));
    CHECK(!vdnn_onnx_form_fits(model, half));
    CHECK(!vdnn_onnx_form_fits(model, out16));
    CHECK(!vdnn_onnx_form_fits(vec, vec16));
    CHECK(!vdnn_onnx_form_fits(model, NULL));
    VdnnOnnxInterface *bpc = with_value_input(FLOAT, 1), *bpc0 = with_value_input(FLOAT16, 0);
    VdnnOnnxInterface *wide = with_value_input(FLOAT, 2), *int_bpc = with_value_input(UINT16, 1);
    CHECK(vdnn_onnx_form_fits(model, bpc));
    CHECK(vdnn_onnx_form_fits(model, bpc0));
    CHECK(!vdnn_onnx_interface_equal(samples, bpc));
    CHECK(!vdnn_onnx_form_fits(bpc, samples)); /* the model's inputs stay */
    CHECK(!vdnn_onnx_form_fits(model, wide));  /* two numbers */
    CHECK(!vdnn_onnx_form_fits(model, int_bpc));
    CHECK(!vdnn_onnx_form_fits(vec, bpc));     /* "x" is another input */
    VdnnOnnxInterface *all[] = { model, half, samples, out16, vec, vec16, bpc, bpc0, wide,
                                 int_bpc };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        vdnn_onnx_interface_free(all[i]);
}


/* A node op(in...) -> out. */
static Buf flow_node(const char *op, const char *in0, const char *in1, const char *out)
{
    Buf n = { 0 };
    add_str(&n, N_INPUT, in0);
    if (in1)
        add_str(&n, N_INPUT, in1);
    add_str(&n, N_OUTPUT, out);
    add_str(&n, N_OP, op);
    return n;
}

/* A samples model: UINT16 pictures "a" and "b" and a FLOAT "s" ([1,8,8]),
 * the nodes given, output "y" (FLOAT), and a value_info for `declared`
 * when not NULL. */
static Buf samples_model(const Buf *nodes, size_t n, const char *declared)
{
    Buf g = { 0 };
    for (size_t i = 0; i < n; i++)
        add_msg(&g, G_NODE, nodes[i]);
    add_msg(&g, G_INPUT, typed_value_info("a", 4, 4));
    add_msg(&g, G_INPUT, typed_value_info("b", 4, 4));
    add_msg(&g, G_INPUT, typed_value_info("s", 1, 3));
    add_msg(&g, G_OUTPUT, typed_value_info("y", 1, 4));
    if (declared)
        add_msg(&g, 13, typed_value_info(declared, 4, 4)); /* value_info */
    return model_of(g);
}

/* The element types the model's inputs a, b and s declare. */
static void input_types(const uint8_t *m, size_t n, int *types)
{
    VdnnOnnxInterface *iface = NULL;
    CHECK_EQ_INT(vdnn_onnx_interface(m, n, &iface), 0);
    CHECK_EQ_INT((int)iface->n_inputs, 3);
    for (size_t i = 0; i < 3; i++)
        types[i] = iface->inputs[i].elem_type;
    vdnn_onnx_interface_free(iface);
}

/* Narrowed: the copy has the same length, declares a and b UINT8 and s
 * still FLOAT, and differs from the model in two bytes only. Refused:
 * -ENOTSUP naming what stops it, no copy. */
static void check_narrowed(Buf m)
{
    uint8_t *copy = (uint8_t *)"untouched";
    CHECK_EQ_INT(vdnn_onnx_narrow_samples(m.p, m.n, &copy), 0);
    CHECK(copy != NULL);
    int types[3];
    input_types(copy, m.n, types);
    CHECK_EQ_INT(types[0], 2);
    CHECK_EQ_INT(types[1], 2);
    CHECK_EQ_INT(types[2], 1);
    size_t differ = 0;
    for (size_t i = 0; i < m.n; i++)
        differ += copy[i] != m.p[i];
    CHECK_EQ_INT((int)differ, 2);
    CHECK_EQ_INT(vdnn_onnx_scan(copy, m.n, -1, NULL, NULL), 0);
    free(copy);
    free(m.p);
}

static void check_refused(Buf m, const char *why)
{
    uint8_t *copy = (uint8_t *)"untouched";
    CHECK_EQ_INT(vdnn_onnx_narrow_samples(m.p, m.n, &copy), -ENOTSUP);
    CHECK(copy == NULL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), why);
    free(m.p);
}

/* A samples model's pictures become UINT8 where the graph only casts and
 * moves them (vdnn_onnx_narrow_samples). */
static void test_narrow_samples(void)
{
    Buf cast[] = { flow_node("Cast", "a", NULL, "ca"), flow_node("Cast", "b", NULL, "cb"),
                   flow_node("Sub", "ca", "cb", "y") };
    check_narrowed(samples_model(cast, 3, NULL));
    /* as VMAF's accelerator form: stacked and sliced before the cast, the
     * nodes listed out of order */
    Buf moved[] = { flow_node("Cast", "sl", NULL, "y"), flow_node("Slice", "ab", "s", "sl"),
                    flow_node("Concat", "a", "b", "ab") };
    check_narrowed(samples_model(moved, 3, NULL));

    Buf read[] = { flow_node("Sub", "a", "b", "y") };
    check_refused(samples_model(read, 1, NULL), "a Sub reads the samples \"a\"");
    Buf mixed[] = { flow_node("Concat", "a", "s", "as"), flow_node("Cast", "as", NULL, "y") };
    check_refused(samples_model(mixed, 2, NULL), "a Concat reads");
    Buf as_index[] = { flow_node("Cast", "a", NULL, "ca"), flow_node("Slice", "s", "b", "y") };
    check_refused(samples_model(as_index, 2, NULL), "a Slice reads the samples \"b\"");
    Buf later[] = { flow_node("Concat", "a", "b", "ab"), flow_node("Mul", "ab", "s", "y") };
    check_refused(samples_model(later, 2, NULL), "a Mul reads the samples \"ab\"");
    Buf declared[] = { flow_node("Concat", "a", "b", "ab"), flow_node("Cast", "ab", NULL, "y") };
    check_refused(samples_model(declared, 2, "ab"), "declares the type of \"ab\"");
    Buf passed[] = { flow_node("Identity", "a", NULL, "y"), flow_node("Cast", "b", NULL, "cb") };
    check_refused(samples_model(passed, 2, NULL), "declares the type of \"y\"");
    Buf sub[] = { with_graph(flow_node("Cast", "a", NULL, "y"), A_G, "body",
                             graph_of(node(NULL, "Relu"))) };
    check_refused(samples_model(sub, 1, NULL), "subgraph");
    check_refused(model_with_node(NULL, "Relu"), "no UINT16 input");
    /* "a\0x": the interface reads "a"; no node reads that name, so the rule
     * would pass a model whose input it cannot retype */
    Buf g = { 0 };
    add_msg(&g, G_NODE, flow_node("Mul", "a", "a", "y"));
    add_msg(&g, G_INPUT, typed_value_info("a", 4, 4));
    Buf nul = { 0 }, v = typed_value_info("a", 4, 4);
    add_bytes(&nul, 1, "b\0x", 3); /* the name field first, then the type */
    put(&nul, v.p + 3, v.n - 3);    /* v: name "a" (3 bytes), then its type */
    free(v.p);
    add_msg(&g, G_INPUT, nul);
    add_msg(&g, G_OUTPUT, typed_value_info("y", 1, 4));
    check_refused(model_of(g), "NUL byte");

    /* the model's bytes cut anywhere: an error and no copy, or (cut after
     * its graph) a copy; never a read past the cut (ASan) */
    Buf again[] = { flow_node("Cast", "a", NULL, "ca"), flow_node("Cast", "b", NULL, "cb"),
                    flow_node("Sub", "ca", "cb", "y") };
    Buf m = samples_model(again, 3, NULL);
    for (size_t cut = 0; cut < m.n; cut++) {
        uint8_t *copy = NULL;
        uint8_t *bytes = malloc(cut ? cut : 1);
        memcpy(bytes, m.p, cut);
        int rc = vdnn_onnx_narrow_samples(bytes, cut, &copy);
        CHECK(rc == 0 ? copy != NULL : rc < 0 && copy == NULL);
        free(copy);
        free(bytes);
    }
    free(m.p);
    uint8_t *copy = NULL;
    CHECK_EQ_INT(vdnn_onnx_narrow_samples(NULL, 0, &copy), -EINVAL);
}

int main(void)
{
    test_interface();
    test_form_fits();
    test_narrow_samples();
    test_allowed_model();
    test_custom_domain();
    test_disallowed_ops();
    test_repeated_fields();
    test_subgraph_ops();
    test_dropout();
    test_loops();
    test_depth();
    test_node_count();
    test_model_level_rules();
    test_malformed();
    test_prefixes();
    test_mutations();

    make_tree();
    /* The same answers from openat2 and from the openat() walk. */
    for (int mode = VDNN_WALK_OPENAT2; mode <= VDNN_WALK_FALLBACK; mode++) {
        vdnn_model_file_walk_mode(mode);
        test_external_inside();
        test_external_escapes();
        test_external_files();
        test_external_ranges();
        test_external_structure();
        test_external_everywhere();
    }
    vdnn_model_file_walk_mode(VDNN_WALK_AUTO);
    remove_tree();

    test_builtin_list();
    test_policy();
    return check_report();
}
