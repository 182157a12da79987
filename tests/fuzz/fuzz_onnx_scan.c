/* libFuzzer harness for vdnn_onnx_scan() (csrc/onnx_scan.h); built and run by
 * tools/fuzz.sh with ASan + UBSan.
 *
 * Input: one mode byte, then the model bytes. Bit 0 of the mode byte gives
 * the scan a model directory (so external-data locations are resolved, half
 * of all inputs); without it the scan gets NULL and must refuse any external
 * data. The directory is made once per process under $TMPDIR:
 *
 *   weights.bin   64 bytes    the one file a model may legitimately name
 *   sub/          a directory ("not a regular file")
 *   escape -> /   a link out of the directory ("outside the model's directory")
 *   loop -> loop  a link to itself (ELOOP)
 *
 * Besides memory errors and UB, the harness aborts when the scan breaks its
 * contract:
 *   - a result that is not 0 or one of the documented -errno values, or a
 *     failure without a message;
 *   - a report that is not NUL-terminated printable ASCII in first_bad_op,
 *     names a bad op on success, or exceeds the policy's caps on success;
 *   - a model that a tighter policy accepts but the built-in one refuses, or
 *     that is accepted without a directory but refused with one (a policy can
 *     only narrow what is accepted), or two accepting scans of the same bytes
 *     whose reports differ.
 */
/* The scan opens external data through model_file.c; tools/fuzz.sh links
 * only onnx_scan.c, so it is compiled in here (first: it sets _GNU_SOURCE). */
#include "model_file.c"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "onnx_scan.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char model_dir[512];
static int model_dir_fd = -1;

/* The operators the tight policy keeps: the ones seeds use, so both
 * accepting and refusing paths stay reachable. */
static const char *const tight_ops[] = { "Add", "Identity", "Conv", "Dropout", "If", "Loop" };

static const VdnnScanPolicy tight_policy = {
    .allowed_ops = tight_ops,
    .n_allowed_ops = sizeof(tight_ops) / sizeof(tight_ops[0]),
    .max_loop_nodes = 1,
    .max_graph_depth = 2,
    .max_nodes = 64,
    .max_external_bytes = 48, /* less than weights.bin: length/offset decide */
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz_onnx_scan: %s (last error: \"%s\")\n", what, vdnn_last_error());
    abort();
}

static void path_in(char *dst, size_t cap, const char *rel)
{
    if ((size_t)snprintf(dst, cap, "%s/%s", model_dir, rel) >= cap)
        die("model directory path too long");
}

static void remove_model_dir(void)
{
    static const char *const entries[] = { "weights.bin", "escape", "loop" };
    char p[600];
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        path_in(p, sizeof(p), entries[i]);
        unlink(p);
    }
    path_in(p, sizeof(p), "sub");
    rmdir(p);
    rmdir(model_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    char p[600];
    snprintf(model_dir, sizeof(model_dir), "%s/vdnn-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(model_dir))
        die("mkdtemp failed");

    path_in(p, sizeof(p), "weights.bin");
    FILE *f = fopen(p, "wb");
    if (!f)
        die("cannot create weights.bin");
    for (int i = 0; i < 64; i++)
        fputc(i, f);
    fclose(f);
    path_in(p, sizeof(p), "sub");
    if (mkdir(p, 0700) != 0)
        die("cannot create sub/");
    path_in(p, sizeof(p), "escape");
    if (symlink("/", p) != 0)
        die("cannot create the escape link");
    path_in(p, sizeof(p), "loop");
    if (symlink("loop", p) != 0)
        die("cannot create the loop link");
    model_dir_fd = open(model_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (model_dir_fd < 0)
        die("cannot open the model directory");
    atexit(remove_model_dir);
    return 0;
}

static int documented(int r, int with_dir)
{
    switch (-r) {
    case EBADMSG:
    case EPERM:
    case ENAMETOOLONG:
    case E2BIG:
        return 1;
    /* From opening a location: only reachable with a directory. */
    case ENOENT:
    case ENOTDIR:
    case ELOOP:
    case EACCES:
        return with_dir;
    default:
        return 0;
    }
}

/* Runs one scan and checks what it returns and reports. */
static int scan(const uint8_t *model, size_t len, int dir, const VdnnScanPolicy *policy,
                VdnnScanReport *rep)
{
    const VdnnScanPolicy *caps = policy ? policy : &(VdnnScanPolicy){
        .max_loop_nodes = VMAF_DNN_MAX_LOOP_NODES,
        .max_graph_depth = VMAF_DNN_MAX_SUBGRAPH_DEPTH,
        .max_nodes = VMAF_DNN_DEFAULT_MAX_NODES,
        .max_external_bytes = VDNN_SCAN_MAX_EXTERNAL_BYTES,
    };

    vdnn_clear_error();
    int r = vdnn_onnx_scan(model, len, dir, policy, rep);
    if (r > 0 || (r < 0 && !documented(r, dir >= 0)))
        die("undocumented return value");
    if (r < 0 && vdnn_last_error()[0] == '\0')
        die("failure without a message");

    const char *bad = rep->first_bad_op;
    size_t n = strnlen(bad, sizeof(rep->first_bad_op));
    if (n == sizeof(rep->first_bad_op))
        die("first_bad_op is not NUL-terminated");
    for (size_t i = 0; i < n; i++)
        if (bad[i] < 0x20 || bad[i] >= 0x7f)
            die("first_bad_op has a byte outside printable ASCII");
    if (rep->n_loops > rep->n_nodes)
        die("report counts more Loop nodes than nodes");
    if (rep->max_depth > caps->max_graph_depth)
        die("report depth above the policy cap");
    if (rep->external_bytes > caps->max_external_bytes)
        die("report external bytes above the policy cap");
    if (r == 0) {
        if (n)
            die("first_bad_op set on success");
        if (rep->n_loops > caps->max_loop_nodes)
            die("accepted more Loop nodes than the policy allows");
        if (rep->n_nodes > caps->max_nodes)
            die("accepted more nodes than the policy allows");
        if (dir < 0 && rep->n_external)
            die("accepted external data without a model directory");
    }
    return r;
}

static void same_report(const VdnnScanReport *a, const VdnnScanReport *b)
{
    if (a->n_nodes != b->n_nodes || a->n_loops != b->n_loops || a->max_depth != b->max_depth ||
        a->n_external != b->n_external || a->external_bytes != b->external_bytes)
        die("two accepting scans of the same bytes report differently");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int dir = (data[0] & 1) ? model_dir_fd : -1;
    const uint8_t *model = data + 1;
    size_t len = size - 1;
    VdnnScanReport builtin, tight, no_dir;

    int r_builtin = scan(model, len, dir, NULL, &builtin);
    int r_tight = scan(model, len, dir, &tight_policy, &tight);
    if (r_tight == 0) {
        if (r_builtin != 0)
            die("the tight policy accepts what the built-in policy refuses");
        same_report(&builtin, &tight);
    }
    if (dir >= 0) {
        int r_no_dir = scan(model, len, -1, NULL, &no_dir);
        if (r_no_dir == 0) {
            if (r_builtin != 0)
                die("accepted without a model directory but refused with one");
            same_report(&builtin, &no_dir);
        }
    }
    /* The declared interface of any bytes: documented codes, every name
     * NUL-terminated, equal to itself, nothing leaked (LSan). */
    VdnnOnnxInterface *iface = NULL;
    vdnn_clear_error();
    int r_if = vdnn_onnx_interface(model, len, &iface);
    if (r_if != 0 && r_if != -EBADMSG && r_if != -E2BIG && r_if != -ENOMEM)
        die("undocumented return value from vdnn_onnx_interface");
    if (r_if != 0 && (iface || vdnn_last_error()[0] == '\0'))
        die("interface failure with an output or without a message");
    if (r_if == 0 && r_builtin == 0 && !vdnn_onnx_interface_equal(iface, iface))
        die("an interface differs from itself");
    for (size_t i = 0; iface && i < iface->n_inputs + iface->n_outputs; i++) {
        const VdnnOnnxValue *v = i < iface->n_inputs ? &iface->inputs[i]
                                                     : &iface->outputs[i - iface->n_inputs];
        if (!v->name || v->rank < -1 || (v->rank > 0 && !v->dims))
            die("interface value malformed");
        (void)strlen(v->name);
    }
    vdnn_onnx_interface_free(iface);
    return 0;
}
