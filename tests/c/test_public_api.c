/* The public C API as a consumer sees it: linked against the shared library,
 * only <vmafdnn/vmafdnn.h> included.
 *
 * usage: test_public_api MODEL_DIR [ITERATIONS [cycles]]
 *   MODEL_DIR holds the models of tests/models/factory.py.
 *   ITERATIONS (default 20) open -> run -> close cycles for the leak check;
 *   "cycles" runs only those (tools/leak_check.sh runs 1000 under valgrind).
 * ORT is found the documented way (VMAFDNN_ORT_LIBRARY, then the loader).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <vmafdnn/vmafdnn.h>

#include "check.h"

static const char *model_dir;
static char tmp_dir[] = "/tmp/vmafdnn-test-XXXXXX";

static const char *model(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s.onnx", model_dir, name);
    return path;
}

static const char *tmp_file(const char *name, const void *bytes, size_t len)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        if (len)
            fwrite(bytes, 1, len, f);
        fclose(f);
    }
    return path;
}

static VmafDnnSession *open_ok(const char *name, const VmafDnnConfig *cfg)
{
    VmafDnnSession *s = NULL;
    int rc = vmaf_dnn_session_open(&s, model(name), cfg);
    if (rc)
        fprintf(stderr, "open %s: %d %s\n", name, rc, vmaf_dnn_last_error());
    CHECK_EQ_INT(rc, 0);
    return s;
}

static void test_loading(void)
{
    CHECK(vmaf_dnn_available());
    CHECK(vmaf_dnn_ort_version() != NULL);
    CHECK(vmaf_dnn_ort_api_version() >= 20);
    CHECK(vmaf_dnn_ort_library_path() != NULL);
    /* Loading the same library again is fine; another one is refused. */
    CHECK_EQ_INT(vmaf_dnn_load_ort(vmaf_dnn_ort_library_path()), 0);
    CHECK_EQ_INT(vmaf_dnn_load_ort("/nonexistent/libonnxruntime.so"), -EBUSY);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "already loaded");
    CHECK_EQ_INT(vmaf_dnn_load_ort(NULL), -EINVAL);
    CHECK(strcmp(vmaf_dnn_version(), "0.1.0") == 0);
    const char *digest = vmaf_dnn_source_digest();
    CHECK(digest != NULL && strlen(digest) == 16 &&
          strspn(digest, "0123456789abcdef") == 16);
    const char *kernels = vmaf_dnn_cpu_kernels();
    CHECK(kernels != NULL && (strcmp(kernels, "x86-64-v4") == 0 || strcmp(kernels, "avx2") == 0 ||
                              strcmp(kernels, "baseline") == 0));
    CHECK(vmaf_dnn_cpu_kernels() == kernels);
}

static void test_open_errors(void)
{
    VmafDnnSession *s = (VmafDnnSession *)&s; /* a sentinel that must stay untouched */
    VmafDnnSession *const sentinel = s;
    VmafDnnConfig cfg;

    CHECK_EQ_INT(vmaf_dnn_session_open(NULL, model("identity"), NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, NULL, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, "/nonexistent/m.onnx", NULL), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "/nonexistent/m.onnx");
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, tmp_dir, NULL), -EISDIR);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, tmp_file("empty.onnx", "", 0), NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "is empty");
    const char garbage[] = "this is not a protobuf at all \xff\xff\xff\xff";
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, tmp_file("garbage.onnx", garbage, sizeof(garbage)),
                                       NULL), -EBADMSG);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "garbage.onnx");

    /* Over the 50 MiB cap: a sparse file costs no disk. */
    const char *big = tmp_file("big.onnx", "", 0);
    CHECK_EQ_INT(truncate(big, (50 << 20) + 1), 0);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, big, NULL), -E2BIG);

    char fifo[4096];
    snprintf(fifo, sizeof(fifo), "%s/fifo.onnx", tmp_dir);
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, fifo, NULL), -EISDIR);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "not a regular file");

    vmaf_dnn_default_config(&cfg);
    cfg.device = (VmafDnnDevice)99;
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, model("identity"), &cfg), -EINVAL);
    vmaf_dnn_default_config(&cfg);
    cfg.threads = -1;
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, model("identity"), &cfg), -EINVAL);
    vmaf_dnn_default_config(&cfg);
    cfg.device_index = -1;
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, model("identity"), &cfg), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, model("int64_input"), NULL), -ENOTSUP);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "INT64");

    CHECK(s == sentinel);
}

static void test_devices(void)
{
    const VmafDnnDevice devices[] = {
        VMAF_DNN_DEVICE_AUTO, VMAF_DNN_DEVICE_CPU, VMAF_DNN_DEVICE_CUDA,
        VMAF_DNN_DEVICE_OPENVINO, VMAF_DNN_DEVICE_ROCM, VMAF_DNN_DEVICE_OPENVINO_CPU,
        VMAF_DNN_DEVICE_OPENVINO_GPU,
    };
    for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
        VmafDnnConfig cfg;
        vmaf_dnn_default_config(&cfg);
        cfg.device = devices[i];
        cfg.threads = 1;
        VmafDnnSession *s = open_ok("identity", &cfg);
        if (!s)
            continue;
        /* Whatever bound is reported by its stable name; on a CPU-only ORT
         * everything lands on "CPU" with a reason for each EP tried. */
        const char *ep = vmaf_dnn_session_attached_ep(s);
        CHECK(ep != NULL);
        if (strcmp(ep, "CPU") == 0 && devices[i] != VMAF_DNN_DEVICE_CPU)
            CHECK(strlen(vmaf_dnn_session_fallback_reason(s)) > 0);
        if (devices[i] == VMAF_DNN_DEVICE_CPU)
            CHECK(strcmp(vmaf_dnn_session_fallback_reason(s), "") == 0);
        CHECK_EQ_INT(vmaf_dnn_session_config(s)->threads, 1);
        CHECK_EQ_INT(vmaf_dnn_session_config(s)->device, devices[i]);
        vmaf_dnn_session_close(s);
    }
    CHECK(vmaf_dnn_session_attached_ep(NULL) == NULL);
    vmaf_dnn_session_close(NULL);
}

/* Which nodes the attached EP runs: on the CPU EP, all of them; ORT before
 * 1.24 cannot tell and says -ENOTSUP without writing. */
static void test_ep_nodes(void)
{
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.device = VMAF_DNN_DEVICE_CPU;
    cfg.threads = 1;
    const char *names[] = {"two_outputs", "conv_mean"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        VmafDnnSession *s = open_ok(names[i], &cfg);
        if (!s)
            continue;
        size_t on_ep = 12345, total = 67890;
        int rc = vmaf_dnn_session_ep_nodes(s, &on_ep, &total);
        if (vmaf_dnn_ort_api_version() >= 24) {
            CHECK_EQ_INT(rc, 0);
            CHECK(total > 0);
            CHECK(on_ep == total);
        } else {
            CHECK_EQ_INT(rc, -ENOTSUP);
            CHECK(on_ep == 12345 && total == 67890);
            CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "1.24");
        }
        CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "CPU") == 0);
        CHECK(strcmp(vmaf_dnn_session_fallback_reason(s), "") == 0);
        CHECK_EQ_INT(vmaf_dnn_session_ep_nodes(s, NULL, &total), -EINVAL);
        CHECK_EQ_INT(vmaf_dnn_session_ep_nodes(s, &on_ep, NULL), -EINVAL);
        vmaf_dnn_session_close(s);
    }
    size_t a = 0, b = 0;
    CHECK_EQ_INT(vmaf_dnn_session_ep_nodes(NULL, &a, &b), -EINVAL);
}

static void test_introspection(void)
{
    VmafDnnSession *s = open_ok("two_outputs", NULL);
    if (!s)
        return;
    VmafDnnTensorInfo info;
    CHECK_EQ_INT(vmaf_dnn_session_input_count(s), 1);
    CHECK_EQ_INT(vmaf_dnn_session_output_count(s), 2);
    CHECK_EQ_INT(vmaf_dnn_session_input_info(s, 0, &info), 0);
    CHECK(strcmp(info.name, "x") == 0);
    CHECK_EQ_INT(info.type, VMAF_DNN_TYPE_FLOAT);
    CHECK_EQ_INT(info.rank, 1);
    CHECK_EQ_INT(info.shape[0], 4);
    CHECK_EQ_INT(vmaf_dnn_session_output_info(s, 1, &info), 0);
    CHECK(strcmp(info.name, "double") == 0);
    CHECK_EQ_INT(vmaf_dnn_session_output_info(s, 2, &info), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_input_info(s, 0, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_input_info(NULL, 0, &info), -EINVAL);
    vmaf_dnn_session_close(s);

    s = open_ok("symbolic_batch", NULL);
    if (!s)
        return;
    CHECK_EQ_INT(vmaf_dnn_session_input_info(s, 0, &info), 0);
    CHECK_EQ_INT(info.shape[0], -1);
    CHECK_EQ_INT(info.shape[1], 3);
    vmaf_dnn_session_close(s);
}

static void test_run(void)
{
    VmafDnnSession *s = open_ok("two_inputs", NULL);
    if (!s)
        return;
    const float a[4] = {5, 5, 5, 5}, b[4] = {1, 2, 3, 4};
    const int64_t shape[1] = {4};
    float diff[4] = {0};
    /* By name, in the opposite order to the model's. */
    VmafDnnInput in[2] = {{"b", b, shape, 1}, {"a", a, shape, 1}};
    VmafDnnOutput out = {.name = "diff", .data = diff, .capacity = 4};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, in, 2, &out, 1), 0);
    CHECK(diff[0] == 4 && diff[3] == 1);
    CHECK_EQ_INT(out.count, 4);
    CHECK_EQ_INT(out.rank, 1);
    CHECK_EQ_INT(out.shape[0], 4);

    /* Errors name what is wrong. */
    VmafDnnInput twice[2] = {{"a", a, shape, 1}, {"a", b, shape, 1}};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, twice, 2, &out, 1), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"a\" is given twice");
    CHECK_EQ_INT(vmaf_dnn_session_run(s, in, 1, &out, 1), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"a\" is missing");
    VmafDnnInput unknown[2] = {{"zz", a, shape, 1}, {"b", b, shape, 1}};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, unknown, 2, &out, 1), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "no input named \"zz\"");
    const int64_t wrong[1] = {3};
    VmafDnnInput bad_dim[2] = {{"a", a, wrong, 1}, {"b", b, shape, 1}};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, bad_dim, 2, &out, 1), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "fixes it to 4");
    VmafDnnOutput no_such = {.name = "nope", .data = diff, .capacity = 4};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, in, 2, &no_such, 1), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_run(s, in, 2, &out, 0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_run(NULL, in, 2, &out, 1), -EINVAL);

    /* Too small: -ENOSPC and the count needed. */
    VmafDnnOutput small = {.name = NULL, .data = diff, .capacity = 2};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, in, 2, &small, 1), -ENOSPC);
    CHECK_EQ_INT(small.count, 4);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"diff\" has 4 elements");
    vmaf_dnn_session_close(s);

    /* FLOAT16 slots: refused without fp16_io, cast with it. */
    s = open_ok("identity_fp16", NULL);
    if (!s)
        return;
    const float x[8] = {0.1f, 1.0f / 3, 65504.0f, 70000.0f, -0.0f, 1e-8f, INFINITY, 2.5f};
    const int64_t shape8[1] = {8};
    float y[8];
    VmafDnnInput xin = {NULL, x, shape8, 1};
    VmafDnnOutput yout = {NULL, y, 8, 0, 0, {0}};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, &xin, 1, &yout, 1), -ENOTSUP);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "input \"x\" is FLOAT16");
    vmaf_dnn_session_close(s);
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.fp16_io = 1;
    s = open_ok("identity_fp16", &cfg);
    if (!s)
        return;
    CHECK_EQ_INT(vmaf_dnn_session_run(s, &xin, 1, &yout, 1), 0);
    uint16_t h[8];
    float expect[8];
    vmaf_dnn_fp32_to_fp16(x, h, 8);
    vmaf_dnn_fp16_to_fp32(h, expect, 8);
    CHECK(memcmp(y, expect, sizeof(y)) == 0);
    CHECK(isinf(y[3]) && y[2] == 65504.0f);
    vmaf_dnn_session_close(s);
}

static void test_planes(void)
{
    VmafDnnSession *s = open_ok("image_invert", NULL);
    if (!s)
        return;
    enum { W = 5, H = 3, STRIDE = 8 };
    uint8_t src[H * STRIDE], dst[H * STRIDE];
    for (int i = 0; i < H * STRIDE; i++)
        src[i] = (uint8_t)(i * 11);
    memset(dst, 0xAA, sizeof(dst));
    CHECK_EQ_INT(vmaf_dnn_session_run_luma8(s, src, STRIDE, dst, STRIDE, W, H), 0);
    int exact = 1;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < STRIDE; x++)
            exact &= x < W ? dst[y * STRIDE + x] == 255 - src[y * STRIDE + x]
                           : dst[y * STRIDE + x] == 0xAA; /* padding untouched */
    CHECK(exact);

    uint16_t src16[H * STRIDE], dst16[H * STRIDE];
    for (int i = 0; i < H * STRIDE; i++)
        src16[i] = (uint16_t)(i * 37 % 1024);
    CHECK_EQ_INT(vmaf_dnn_session_run_plane16(s, src16, STRIDE * 2, dst16, STRIDE * 2, W, H, 10),
                 0);
    exact = 1;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            exact &= dst16[y * STRIDE + x] == 1023 - src16[y * STRIDE + x];
    CHECK(exact);

    CHECK_EQ_INT(vmaf_dnn_session_run_plane16(s, src16, STRIDE * 2, dst16, STRIDE * 2, W, H, 8),
                 -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_run_luma8(s, src, W - 1, dst, STRIDE, W, H), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_run_luma8(s, src, STRIDE, dst, STRIDE, 0, H), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_session_run_luma8(s, NULL, STRIDE, dst, STRIDE, W, H), -EINVAL);
    vmaf_dnn_session_close(s);

    /* A model that is not image-to-image is refused with the reason. */
    s = open_ok("conv_mean", NULL);
    if (!s)
        return;
    CHECK_EQ_INT(vmaf_dnn_session_run_luma8(s, src, STRIDE, dst, STRIDE, W, H), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "the height is 16 in the model");
    vmaf_dnn_session_close(s);

    /* A model that takes samples (UINT16) opens, but these helpers feed
     * normalised fp32: refused before running, naming the input. */
    s = open_ok("image_u16", NULL);
    if (!s)
        return;
    CHECK_EQ_INT(vmaf_dnn_session_run_luma8(s, src, STRIDE, dst, STRIDE, 4, 4), -ENOTSUP);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"x\" is UINT16");
    vmaf_dnn_session_close(s);
}

/* One session, two threads: the second caller gets -EBUSY while a run is in
 * progress; nothing is corrupted. */
typedef struct BusyArgs {
    VmafDnnSession *s;
    /* Atomics: the main thread polls busy_seen while the hammers count. */
    _Atomic int stop;
    _Atomic int busy_seen;
    _Atomic int other_errors;
} BusyArgs;

static void *hammer(void *p)
{
    BusyArgs *a = p;
    enum { N = 512 * 512 };
    static float in[N], out[N];
    const int64_t shape[4] = {1, 1, 512, 512};
    while (!a->stop) {
        VmafDnnInput x = {NULL, in, shape, 4};
        VmafDnnOutput y = {NULL, out, N, 0, 0, {0}};
        int rc = vmaf_dnn_session_run(a->s, &x, 1, &y, 1);
        if (rc == -EBUSY)
            a->busy_seen++;
        else if (rc)
            a->other_errors++;
    }
    return NULL;
}

static void test_busy(void)
{
    VmafDnnSession *s = open_ok("image_identity", NULL);
    if (!s)
        return;
    BusyArgs a = {s, 0, 0, 0};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, hammer, &a);
    pthread_create(&t2, NULL, hammer, &a);
    /* Until one thread's run met the other's: usually at once, but on a
     * loaded machine both hammers can wait in the run queue, and the two
     * seconds this waited were not always enough to see the overlap. */
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 6000 && !a.busy_seen; i++)
        nanosleep(&tick, NULL);
    a.stop = 1;
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(a.busy_seen > 0);
    CHECK_EQ_INT(a.other_errors, 0);
    vmaf_dnn_session_close(s);
}

static void test_open_run_close_cycles(int iterations)
{
    /* Includes the CUDA path (append fails or CreateSession falls back) and
     * error paths, so leak checkers see them all. */
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int64_t shape[1] = {8};
    for (int i = 0; i < iterations; i++) {
        VmafDnnConfig cfg;
        vmaf_dnn_default_config(&cfg);
        cfg.device = i % 2 ? VMAF_DNN_DEVICE_CUDA : VMAF_DNN_DEVICE_AUTO;
        cfg.threads = 1;
        VmafDnnSession *s = NULL;
        if (vmaf_dnn_session_open(&s, model("identity"), &cfg)) {
            CHECK(0);
            return;
        }
        float y[8];
        VmafDnnInput in = {"x", x, shape, 1};
        VmafDnnOutput out = {"y", y, 8, 0, 0, {0}};
        int ok = vmaf_dnn_session_run(s, &in, 1, &out, 1) == 0 && y[7] == 8;
        VmafDnnOutput small = {"y", y, 1, 0, 0, {0}};
        ok &= vmaf_dnn_session_run(s, &in, 1, &small, 1) == -ENOSPC;
        vmaf_dnn_session_close(s);
        ok &= vmaf_dnn_session_open(&s, "/nonexistent.onnx", &cfg) == -ENOENT;
        if (!ok) {
            CHECK(ok);
            return;
        }
    }
    CHECK(1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [ITERATIONS]\n", argv[0]);
        return 2;
    }
    model_dir = argv[1];
    int iterations = argc > 2 ? atoi(argv[2]) : 20;
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 2;
    }
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "ONNX Runtime unavailable: %s\n", vmaf_dnn_last_error());
        return 1;
    }
    if (argc > 3 && strcmp(argv[3], "cycles") == 0) {
        test_open_run_close_cycles(iterations);
    } else {
        test_loading();
        test_open_errors();
        test_devices();
        test_ep_nodes();
        test_introspection();
        test_run();
        test_planes();
        test_busy();
        test_open_run_close_cycles(iterations);
    }

    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return check_report();
}
