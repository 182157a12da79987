/* Plugin execution providers: registration (API and VMAFDNN_EP_LIBRARIES),
 * EP device listing, the chains binding a plugin's EP device, attached_ep,
 * the explain query, the ORT selection-policy devices, and the CreateSession
 * fallback of a plugin that appends and then fails.
 *
 *   test_ep_plugins MODELS_DIR STUB_PLUGIN [failcreate]
 *
 * STUB_PLUGIN is tests/c/stub_ep_plugin.c built as a shared module: an EP
 * that offers the CPU device under the EP name its registration name gives
 * and claims no node (so results are the CPU EP's). Registration and the
 * environment variable are once per process, hence the second mode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmafdnn/catalog.h"
#include "vmafdnn/context.h"
#include "vmafdnn/vmafdnn.h"

static const char *models_dir;
static char garbage_path[512];

static const char *model(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof(path), "%s/%s.onnx", models_dir, name);
    return path;
}

static int ep_abi(void)
{
    return vmaf_dnn_ort_api_version() >= 22;
}

static VmafDnnSession *open_on(VmafDnnDevice device, const char *name, int fp16_io, int threads)
{
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.device = device;
    cfg.fp16_io = fp16_io;
    cfg.threads = threads;
    VmafDnnSession *s = NULL;
    int rc = vmaf_dnn_session_open(&s, model(name), &cfg);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "open %s: %s\n", name, vmaf_dnn_last_error());
    return s;
}

/* Runs identity (fp32 or fp16 slots) and checks the values come back. */
static void check_identity_runs(VmafDnnSession *s)
{
    float x[8] = {0.5f, -1, 2, 0.25f, 3, -0.125f, 8, 1}, y[8] = {0};
    int64_t shape[1] = {8};
    VmafDnnInput in = {NULL, x, shape, 1};
    VmafDnnOutput out = {NULL, y, 8, 0, 0, {0}};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, &in, 1, &out, 1), 0);
    CHECK(memcmp(x, y, sizeof(x)) == 0);
}

static float conv_mean_score(VmafDnnDevice device, const char **attached)
{
    VmafDnnSession *s = open_on(device, "conv_mean", 0, 1);
    if (!s)
        return -1;
    float img[16 * 16], score = -1;
    for (int i = 0; i < 16 * 16; i++)
        img[i] = (float)((i * 37) % 101) / 100.0f;
    int64_t shape[4] = {1, 1, 16, 16};
    VmafDnnInput in = {NULL, img, shape, 4};
    VmafDnnOutput out = {NULL, &score, 1, 0, 0, {0}};
    CHECK_EQ_INT(vmaf_dnn_session_run(s, &in, 1, &out, 1), 0);
    *attached = vmaf_dnn_session_attached_ep(s);
    vmaf_dnn_session_close(s);
    return score;
}

static const char *explain(VmafDnnDevice device)
{
    static char text[8192];
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.device = device;
    size_t needed = 0;
    CHECK_EQ_INT(vmaf_dnn_device_explain(&cfg, text, sizeof(text), &needed), 0);
    CHECK_EQ_INT(needed, strlen(text));
    return text;
}

/* The last line of a text of lines ending in '\n'. */
static const char *last_line(const char *text)
{
    size_t len = strlen(text);
    if (len && text[len - 1] == '\n')
        len--;
    while (len && text[len - 1] != '\n')
        len--;
    return text + len;
}

static int find_library(const char *name, VmafDnnEpLibraryInfo *info)
{
    size_t n = vmaf_dnn_ep_library_count();
    for (size_t i = 0; i < n; i++)
        if (vmaf_dnn_ep_library_info(i, info) == 0 && strcmp(info->name, name) == 0)
            return 1;
    return 0;
}

static int find_device(const char *ep_name, VmafDnnEpDeviceInfo *info)
{
    size_t n = vmaf_dnn_ep_device_count();
    for (size_t i = 0; i < n; i++)
        if (vmaf_dnn_ep_device_info(i, info) == 0 && strcmp(info->ep_name, ep_name) == 0)
            return 1;
    return 0;
}

static void test_device_names(void)
{
    VmafDnnDevice d = VMAF_DNN_DEVICE_AUTO;
    CHECK_EQ_INT(vmaf_dnn_device_from_name("policy:prefer-gpu", &d), 0);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_POLICY_PREFER_GPU);
    CHECK_EQ_INT(vmaf_dnn_device_from_name("WebGPU", &d), 0);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_WEBGPU);
    CHECK_EQ_INT(vmaf_dnn_device_from_name("tensorrt_rtx", &d), 0);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_TENSORRT_RTX);
    CHECK(strcmp(vmaf_dnn_device_name(VMAF_DNN_DEVICE_MIGRAPHX), "migraphx") == 0);
    CHECK(strcmp(vmaf_dnn_device_name(VMAF_DNN_DEVICE_POLICY_MIN_POWER), "policy:min-power") == 0);
    CHECK(vmaf_dnn_device_name((VmafDnnDevice)(VMAF_DNN_DEVICE_POLICY_MIN_POWER + 1)) == NULL);

    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.device = (VmafDnnDevice)(VMAF_DNN_DEVICE_POLICY_MIN_POWER + 1);
    VmafDnnSession *s = NULL;
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, model("identity"), &cfg), -EINVAL);
}

/* VMAFDNN_EP_LIBRARIES was set by main before the first call. */
static void test_env_libraries(void)
{
    VmafDnnEpLibraryInfo lib;
    CHECK(find_library("missing", &lib));
    CHECK_EQ_INT(lib.status, ep_abi() ? -ENOENT : -ENOTSUP);
    CHECK(strcmp(lib.source, "env") == 0);
    CHECK_STR_CONTAINS(lib.reason, "/nonexistent/libnothing.so");
    /* A bare path is named after its file. */
    CHECK(find_library("garbage_ep", &lib));
    CHECK_EQ_INT(lib.status, ep_abi() ? -EIO : -ENOTSUP);
    CHECK_STR_CONTAINS(lib.reason, ep_abi() ? "ONNX Runtime refused plugin EP library"
                                            : "needs 1.22 or newer");
    CHECK_STR_CONTAINS(lib.reason, garbage_path);
    CHECK_EQ_INT(vmaf_dnn_ep_library_info(99, &lib), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_ep_library_info(0, NULL), -EINVAL);
}

static void test_before_plugin(void)
{
    VmafDnnEpDeviceInfo dev;
    if (ep_abi()) {
        CHECK(find_device("CPUExecutionProvider", &dev));
        CHECK(dev.library == NULL);
        CHECK(strcmp(dev.device_type, "CPU") == 0);
        CHECK(strcmp(dev.attached_name, "CPU") == 0);
        CHECK_EQ_INT(dev.device_index, 0);
    } else {
        CHECK_EQ_INT(vmaf_dnn_ep_device_count(), 0);
    }
    CHECK(!find_device("OpenVINOExecutionProvider", &dev));
    CHECK_EQ_INT(vmaf_dnn_ep_device_info(999, &dev), -EINVAL);

    /* The garbage library refused, the CPU still works. */
    VmafDnnSession *s = open_on(VMAF_DNN_DEVICE_AUTO, "identity", 0, 0);
    if (s) {
        CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "CPU") == 0);
        const char *why = vmaf_dnn_session_fallback_reason(s);
        CHECK_STR_CONTAINS(why, "CUDA: not available: ");
        CHECK_STR_CONTAINS(why, "OpenVINO:CPU: not available: ");
        if (ep_abi())
            CHECK_STR_CONTAINS(why, "no plugin EP library offers a CPU device of "
                                    "OpenVINOExecutionProvider");
        check_identity_runs(s);
        vmaf_dnn_session_close(s);
    }

    const char *text = explain(VMAF_DNN_DEVICE_AUTO);
    CHECK_STR_CONTAINS(text, "CUDA: not available: ");
    CHECK_STR_CONTAINS(text, "WebGpu:GPU: not available: ");
    CHECK(strcmp(last_line(text), "CPU: selected (built into ORT)\n") == 0);
    /* Too small a buffer: cut, terminated, and the size needed is told. */
    char small[8];
    size_t needed = 0;
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    CHECK_EQ_INT(vmaf_dnn_device_explain(&cfg, small, sizeof(small), &needed), -ENOSPC);
    CHECK_EQ_INT(needed, strlen(text));
    CHECK_EQ_INT(strlen(small), sizeof(small) - 1);
    CHECK_EQ_INT(vmaf_dnn_device_explain(&cfg, NULL, 4, &needed), -EINVAL);

    /* The selection policy with no plugin: ORT picks its CPU EP. */
    s = open_on(VMAF_DNN_DEVICE_POLICY_PREFER_GPU, "identity", 0, 0);
    if (s) {
        CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "CPU") == 0);
        if (!ep_abi())
            CHECK_STR_CONTAINS(vmaf_dnn_session_fallback_reason(s),
                               "no EP selection policy; using the AUTO chain");
        check_identity_runs(s);
        vmaf_dnn_session_close(s);
    }
}

static void test_registration_errors(const char *stub)
{
    CHECK_EQ_INT(vmaf_dnn_register_ep_library(NULL, stub), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("x", ""), -EINVAL);
    char long_name[200];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    CHECK_EQ_INT(vmaf_dnn_register_ep_library(long_name, stub), -EINVAL);
    if (!ep_abi()) {
        CHECK_EQ_INT(vmaf_dnn_register_ep_library("stub", stub), -ENOTSUP);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "1.22 or newer");
        return;
    }
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("dir", models_dir), -EISDIR);
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("none", "/nonexistent/lib.so"), -ENOENT);
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("garbage", garbage_path), -EIO);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), garbage_path);
    /* Once per process: the same again gives the first outcome, unrecorded. */
    size_t n = vmaf_dnn_ep_library_count();
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("garbage", garbage_path), -EIO);
    CHECK_EQ_INT(vmaf_dnn_ep_library_count(), n);
}

static void test_plugin_binds(const char *stub)
{
    if (!ep_abi())
        return;
    const char *name = "OpenVINOExecutionProvider@stub";
    CHECK_EQ_INT(vmaf_dnn_register_ep_library(name, stub), 0);
    size_t n = vmaf_dnn_ep_library_count();
    CHECK_EQ_INT(vmaf_dnn_register_ep_library(name, stub), 0);
    CHECK_EQ_INT(vmaf_dnn_ep_library_count(), n);
    CHECK_EQ_INT(vmaf_dnn_register_ep_library(name, garbage_path), -EEXIST);
    VmafDnnEpLibraryInfo lib;
    CHECK(find_library(name, &lib));
    CHECK_EQ_INT(lib.status, 0);
    CHECK(strcmp(lib.reason, "") == 0);
    CHECK(strcmp(lib.source, "api") == 0);

    VmafDnnEpDeviceInfo dev;
    CHECK(find_device("OpenVINOExecutionProvider", &dev));
    CHECK(dev.library && strcmp(dev.library, name) == 0);
    CHECK(strcmp(dev.device_type, "CPU") == 0);
    CHECK(strcmp(dev.ep_vendor, "vmafdnn-tests") == 0);
    CHECK(strcmp(dev.attached_name, "OpenVINO:CPU") == 0);
    CHECK_EQ_INT(dev.device_index, 0);

    /* AUTO and the explicit OpenVINO devices bind the plugin's device. */
    const VmafDnnDevice binds[] = {VMAF_DNN_DEVICE_AUTO, VMAF_DNN_DEVICE_OPENVINO,
                                   VMAF_DNN_DEVICE_OPENVINO_CPU};
    for (size_t i = 0; i < sizeof(binds) / sizeof(binds[0]); i++) {
        VmafDnnSession *s = open_on(binds[i], "identity", 0, 0);
        if (!s)
            continue;
        CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "OpenVINO:CPU") == 0);
        check_identity_runs(s);
        vmaf_dnn_session_close(s);
    }
    /* A GPU-only request does not take a CPU device. */
    VmafDnnSession *s = open_on(VMAF_DNN_DEVICE_OPENVINO_GPU, "identity", 0, 0);
    if (s) {
        CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "CPU") == 0);
        CHECK_STR_CONTAINS(vmaf_dnn_session_fallback_reason(s),
                           "no plugin EP library offers a GPU device of OpenVINOExecutionProvider");
        vmaf_dnn_session_close(s);
    }
    /* fp16_io and threads work on a plugin EP as on a compiled-in one. */
    s = open_on(VMAF_DNN_DEVICE_OPENVINO, "identity_fp16", 1, 2);
    if (s) {
        CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "OpenVINO:CPU") == 0);
        CHECK_EQ_INT(vmaf_dnn_session_config(s)->threads, 2);
        check_identity_runs(s);
        vmaf_dnn_session_close(s);
    }
    /* Scores equal the CPU EP's (the stub claims no node). */
    const char *on_plugin = NULL, *on_cpu = NULL;
    float a = conv_mean_score(VMAF_DNN_DEVICE_AUTO, &on_plugin);
    float b = conv_mean_score(VMAF_DNN_DEVICE_CPU, &on_cpu);
    CHECK(on_plugin && strcmp(on_plugin, "OpenVINO:CPU") == 0);
    CHECK(on_cpu && strcmp(on_cpu, "CPU") == 0);
    CHECK(a == b && a > 0);

    const char *text = explain(VMAF_DNN_DEVICE_OPENVINO);
    CHECK_STR_CONTAINS(text, "OpenVINO:GPU: not available: ");
    CHECK(strcmp(last_line(text), "OpenVINO:CPU: selected (EP device of OpenVINOExecutionProvider "
                                  "from plugin library OpenVINOExecutionProvider@stub)\n") == 0);
    text = explain(VMAF_DNN_DEVICE_POLICY_MAX_PERFORMANCE);
    CHECK(strcmp(last_line(text), "ORT-policy: selected (ORT's EP selection policy)\n") == 0);

    /* ORT's policy chooses among the devices offered; what it chose is
     * reported as a device's attached name. */
    s = open_on(VMAF_DNN_DEVICE_POLICY_PREFER_CPU, "identity", 0, 0);
    if (s) {
        const char *chose = vmaf_dnn_session_attached_ep(s);
        CHECK(strcmp(chose, "CPU") == 0 || strcmp(chose, "OpenVINO:CPU") == 0 ||
              (vmaf_dnn_ort_api_version() < 23 && strcmp(chose, "ORT-policy") == 0));
        check_identity_runs(s);
        vmaf_dnn_session_close(s);
    }
}

/* A context's models on OpenVINO (here the stub's device under its name)
 * score one frame at a time with threads > 1, each session on all the
 * context's threads: OpenVINO runs the sessions of a process one at a time,
 * so frame workers' copies would only wait for each other. Seen from
 * outside: a frame the model refuses fails the very call that reads it
 * (in flight it would be reported by a later call), and the session keeps
 * the context's thread count. */
static void test_openvino_context_one_frame_at_a_time(void)
{
    if (!ep_abi())
        return;
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device = VMAF_DNN_DEVICE_OPENVINO;
    cfg.threads = 2;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    if (!ctx)
        return;
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
    const VmafDnnSession *s = vmaf_dnn_tiny_model_session(ctx, 0);
    CHECK(s && strcmp(vmaf_dnn_session_attached_ep(s), "OpenVINO:CPU") == 0);
    CHECK(s && vmaf_dnn_session_config(s)->threads == 2);
    static unsigned char y[8 * 8];
    VmafDnnPicture pic = {.data = {y}, .stride = {8}, .w = {8}, .h = {8}, .bpc = 8};
    for (unsigned t = 0; t < 3; t++)
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &pic, t), 0);
    pic.w[0] = pic.h[0] = 7; /* nr_mean takes 8x8 only, no resize */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &pic, 3), -ERANGE);
    CHECK(strstr(vmaf_dnn_last_error(), "scored in flight") == NULL);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    vmaf_dnn_context_close(ctx);

    /* Attached in the middle of a clip scored in flight: a frame that
     * failed in flight is still reported by the next read (context.h), not
     * left for flush, and that read takes no frame. */
    cfg.session.device = VMAF_DNN_DEVICE_CPU;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    if (!ctx)
        return;
    const VmafDnnModelConfig a = {.name = "a"};
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), &a), 0);
    pic.w[0] = pic.h[0] = 8;
    for (unsigned t = 0; t < 5; t++) {
        pic.w[0] = pic.h[0] = t == 3 ? 7 : 8;
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &pic, t), 0); /* 3 fails in flight */
    }
    VmafDnnConfig on_openvino;
    vmaf_dnn_default_config(&on_openvino);
    on_openvino.device = VMAF_DNN_DEVICE_OPENVINO;
    const VmafDnnModelConfig b = {.name = "b", .session = &on_openvino};
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), &b), 0);
    pic.w[0] = pic.h[0] = 8;
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &pic, 5), -ERANGE);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 3 (scored in flight)");
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &pic, 5), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 6);
    vmaf_dnn_context_close(ctx);
}

/* A plugin that appends and cannot create the session: one retry on the CPU
 * EP, with the reason. */
static void test_failcreate(const char *stub)
{
    if (!ep_abi())
        return;
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("OpenVINOExecutionProvider@failcreate", stub), 0);
    VmafDnnSession *s = open_on(VMAF_DNN_DEVICE_OPENVINO_CPU, "identity", 0, 2);
    if (!s)
        return;
    CHECK(strcmp(vmaf_dnn_session_attached_ep(s), "CPU") == 0);
    const char *why = vmaf_dnn_session_fallback_reason(s);
    CHECK_STR_CONTAINS(why, "OpenVINO:CPU: session creation failed, retrying on CPU: ");
    CHECK_STR_CONTAINS(why, "stub EP: no such device here");
    CHECK_EQ_INT(vmaf_dnn_session_config(s)->threads, 2);
    check_identity_runs(s);
    vmaf_dnn_session_close(s);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODELS_DIR STUB_PLUGIN [failcreate]\n", argv[0]);
        return 2;
    }
    models_dir = argv[1];
    const char *stub = argv[2];
    if (argc > 3 && strcmp(argv[3], "failcreate") == 0) {
        unsetenv("VMAFDNN_EP_LIBRARIES");
        if (!vmaf_dnn_available()) {
            fprintf(stderr, "ORT not available: %s\n", vmaf_dnn_last_error());
            return 1;
        }
        test_failcreate(stub);
        return check_report();
    }

    /* A file that is no shared library, given as an EP library. */
    snprintf(garbage_path, sizeof(garbage_path), "%s/libgarbage_ep.so.1", models_dir);
    FILE *f = fopen(garbage_path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("this is not an ELF file\n", f);
        fclose(f);
    }
    char list[1200];
    snprintf(list, sizeof(list), "missing=/nonexistent/libnothing.so::%s", garbage_path);
    setenv("VMAFDNN_EP_LIBRARIES", list, 1);
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "ORT not available: %s\n", vmaf_dnn_last_error());
        return 1;
    }
    test_device_names();
    test_env_libraries();
    test_before_plugin();
    test_registration_errors(stub);
    test_plugin_binds(stub);
    test_openvino_context_one_frame_at_a_time();
    return check_report();
}
