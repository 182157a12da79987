/* The catalog of models, the name tables, the default sets and the version
 * (include/vmafdnn/catalog.h), and the sidecar keys the catalog reads.
 * Usage: test_catalog BUILTIN_DIR VERSION
 *   BUILTIN_DIR holds the generated built-in models (models/meson.build);
 *   VERSION is meson's project version. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmafdnn/catalog.h"
#include "vmafdnn/context.h"
#include "vmafdnn/vmafdnn.h"

#include "check.h"
#include "sidecar.h"

static const char *builtin_dir;
static char tmp_dir[] = "/tmp/vmafdnn-catalog-XXXXXX";

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- helpers ------------------------------------------------------------- */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void make_dir(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmp_dir, name);
    CHECK(mkdir(out, 0700) == 0);
}

static int remove_entry(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return remove(path);
}

/* ---- names --------------------------------------------------------------- */

static void test_device_names(void)
{
    static const struct {
        const char *name;
        VmafDnnDevice value;
    } devices[] = {
        {"auto", VMAF_DNN_DEVICE_AUTO},          {"cpu", VMAF_DNN_DEVICE_CPU},
        {"cuda", VMAF_DNN_DEVICE_CUDA},          {"openvino", VMAF_DNN_DEVICE_OPENVINO},
        {"rocm", VMAF_DNN_DEVICE_ROCM},          {"openvino-cpu", VMAF_DNN_DEVICE_OPENVINO_CPU},
        {"openvino-gpu", VMAF_DNN_DEVICE_OPENVINO_GPU},
    };
    for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
        VmafDnnDevice d = (VmafDnnDevice)-1;
        CHECK_EQ_INT(vmaf_dnn_device_from_name(devices[i].name, &d), 0);
        CHECK_EQ_INT(d, devices[i].value);
        CHECK(vmaf_dnn_device_name(devices[i].value) &&
              strcmp(vmaf_dnn_device_name(devices[i].value), devices[i].name) == 0);
    }
    /* The spellings the command line has always accepted: any case, '_'. */
    VmafDnnDevice d = VMAF_DNN_DEVICE_AUTO;
    CHECK_EQ_INT(vmaf_dnn_device_from_name("OpenVINO_CPU", &d), 0);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_OPENVINO_CPU);
    CHECK_EQ_INT(vmaf_dnn_device_from_name("CUDA", &d), 0);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_CUDA);

    d = VMAF_DNN_DEVICE_ROCM;
    CHECK_EQ_INT(vmaf_dnn_device_from_name("gpu", &d), -EINVAL);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_ROCM); /* untouched on failure */
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "unknown device \"gpu\"");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(),
                       "auto, cpu, cuda, openvino, rocm, openvino-cpu, openvino-gpu");
    CHECK_EQ_INT(vmaf_dnn_device_from_name("cpux", &d), -EINVAL); /* no prefix match */
    CHECK_EQ_INT(vmaf_dnn_device_from_name("cp", &d), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_device_from_name("", &d), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_device_from_name(NULL, &d), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_device_from_name("cpu", NULL), -EINVAL);
    /* A hostile name reaches the message escaped, never raw. */
    CHECK_EQ_INT(vmaf_dnn_device_from_name("\x1b[31mred", &d), -EINVAL);
    CHECK(strchr(vmaf_dnn_last_error(), '\x1b') == NULL);
    CHECK(vmaf_dnn_device_name((VmafDnnDevice)1000) == NULL);
    CHECK(vmaf_dnn_device_name((VmafDnnDevice)-1) == NULL);
    /* In value order; values are append-only, so these stay the first. */
    const char *first = "auto, cpu, cuda, openvino, rocm, openvino-cpu, openvino-gpu";
    CHECK(strncmp(vmaf_dnn_device_names(), first, strlen(first)) == 0);
}

/* Every other table: names in value order, round trips, '-' == '_'. */
static void test_other_names(void)
{
    CHECK(strcmp(vmaf_dnn_resize_names(), "none, bilinear, nearest, bicubic") == 0);
    CHECK(vmaf_dnn_resize_name(VMAF_DNN_RESIZE_DEFAULT) == NULL);
    CHECK(strcmp(vmaf_dnn_resize_name(VMAF_DNN_RESIZE_BICUBIC), "bicubic") == 0);
    VmafDnnResize r = VMAF_DNN_RESIZE_DEFAULT;
    CHECK_EQ_INT(vmaf_dnn_resize_from_name("Nearest", &r), 0);
    CHECK_EQ_INT(r, VMAF_DNN_RESIZE_NEAREST);
    CHECK_EQ_INT(vmaf_dnn_resize_from_name("default", &r), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "resize mode");

    CHECK(strcmp(vmaf_dnn_pool_names(), "min, max, mean, harmonic_mean") == 0);
    VmafDnnPoolMethod p = VMAF_DNN_POOL_MIN;
    CHECK_EQ_INT(vmaf_dnn_pool_from_name("harmonic-mean", &p), 0);
    CHECK_EQ_INT(p, VMAF_DNN_POOL_HARMONIC_MEAN);
    CHECK(strcmp(vmaf_dnn_pool_name(VMAF_DNN_POOL_MEAN), "mean") == 0);
    CHECK(vmaf_dnn_pool_name((VmafDnnPoolMethod)4) == NULL);

    CHECK(strcmp(vmaf_dnn_output_format_names(), "json, xml, csv") == 0);
    VmafDnnOutputFormat f = VMAF_DNN_OUTPUT_JSON;
    CHECK_EQ_INT(vmaf_dnn_output_format_from_name("CSV", &f), 0);
    CHECK_EQ_INT(f, VMAF_DNN_OUTPUT_CSV);
    CHECK_EQ_INT(vmaf_dnn_output_format_from_name("yaml", &f), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "unknown report format \"yaml\"; valid names: "
                                              "json, xml, csv");

    CHECK(strcmp(vmaf_dnn_model_kind_names(), "fr, nr, features") == 0);
    CHECK(vmaf_dnn_model_kind_name(VMAF_DNN_MODEL_INVALID) == NULL);
    VmafDnnModelKind k = VMAF_DNN_MODEL_INVALID;
    CHECK_EQ_INT(vmaf_dnn_model_kind_from_name("features", &k), 0);
    CHECK_EQ_INT(k, VMAF_DNN_MODEL_FEATURES);
    CHECK(strcmp(vmaf_dnn_model_kind_name(VMAF_DNN_MODEL_NR), "nr") == 0);

    const char *eps = "CPU, CUDA, OpenVINO:GPU, OpenVINO:CPU, ROCm";
    CHECK(strncmp(vmaf_dnn_ep_names(), eps, strlen(eps)) == 0);
    VmafDnnEp e = VMAF_DNN_EP_CPU;
    CHECK_EQ_INT(vmaf_dnn_ep_from_name("openvino:gpu", &e), 0);
    CHECK_EQ_INT(e, VMAF_DNN_EP_OPENVINO_GPU);
    CHECK(strcmp(vmaf_dnn_ep_name(VMAF_DNN_EP_ROCM), "ROCm") == 0);

    /* Every string vmaf_dnn_session_attached_ep documents has a value (the
     * first five only had, before: "OpenVINO:NPU" from an NPU, say, could
     * not be parsed back). */
    static const struct {
        const char *name;
        VmafDnnEp ep;
    } attached[] = {
        {"CPU", VMAF_DNN_EP_CPU},
        {"CUDA", VMAF_DNN_EP_CUDA},
        {"OpenVINO:GPU", VMAF_DNN_EP_OPENVINO_GPU},
        {"OpenVINO:CPU", VMAF_DNN_EP_OPENVINO_CPU},
        {"ROCm", VMAF_DNN_EP_ROCM},
        {"OpenVINO:NPU", VMAF_DNN_EP_OPENVINO_NPU},
        {"NvTensorRTRTX:GPU", VMAF_DNN_EP_TENSORRT_RTX},
        {"MIGraphX:GPU", VMAF_DNN_EP_MIGRAPHX},
        {"WebGpu:GPU", VMAF_DNN_EP_WEBGPU},
        {"ORT-policy", VMAF_DNN_EP_ORT_POLICY},
    };
    const size_t n = sizeof(attached) / sizeof(attached[0]);
    for (size_t i = 0; i < n; i++) {
        e = (VmafDnnEp)-1;
        CHECK_EQ_INT(vmaf_dnn_ep_from_name(attached[i].name, &e), 0);
        CHECK_EQ_INT(e, attached[i].ep);
        CHECK(vmaf_dnn_ep_name(attached[i].ep) != NULL &&
              strcmp(vmaf_dnn_ep_name(attached[i].ep), attached[i].name) == 0);
    }
    CHECK(vmaf_dnn_ep_name((VmafDnnEp)n) == NULL);
    CHECK(strcmp(vmaf_dnn_ep_names(), "CPU, CUDA, OpenVINO:GPU, OpenVINO:CPU, ROCm, "
                 "OpenVINO:NPU, NvTensorRTRTX:GPU, MIGraphX:GPU, WebGpu:GPU, ORT-policy") == 0);
    CHECK_EQ_INT(vmaf_dnn_ep_from_name("nvtensorrtrtx:gpu", &e), 0);
    CHECK_EQ_INT(e, VMAF_DNN_EP_TENSORRT_RTX);
    CHECK_EQ_INT(vmaf_dnn_ep_from_name("ort_policy", &e), 0);
    CHECK_EQ_INT(e, VMAF_DNN_EP_ORT_POLICY);
}

/* The names the backend can attach (`[EP_X] = {"name", ...}` in the
 * ep_kinds table of csrc/ort_backend.c, read from the source so that a step
 * added there without a name here fails this test) all parse, and back. */
static void test_backend_ep_names(const char *ort_backend_c)
{
    FILE *f = fopen(ort_backend_c, "r");
    if (!f) {
        perror(ort_backend_c);
        CHECK(f != NULL);
        return;
    }
    char line[512];
    int in_table = 0;
    unsigned seen = 0;
    while (fgets(line, sizeof(line), f)) {
        if (!in_table) {
            in_table = strstr(line, "} ep_kinds[] = {") != NULL;
            continue;
        }
        if (strncmp(line, "};", 2) == 0)
            break;
        const char *open = strstr(line, "] = {\""), *close = NULL;
        if (!open || !(close = strchr(open + 6, '"')))
            continue;
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(close - (open + 6)), open + 6);
        VmafDnnEp e = (VmafDnnEp)-1;
        int rc = vmaf_dnn_ep_from_name(name, &e);
        if (rc)
            fprintf(stderr, "ort_backend.c attaches \"%s\", which VmafDnnEp lacks\n", name);
        CHECK_EQ_INT(rc, 0);
        CHECK(!rc && strcmp(vmaf_dnn_ep_name(e), name) == 0);
        seen++;
    }
    fclose(f);
    CHECK(seen >= 10); /* the table was found and read */
}

/* The attached EP of a real session is one of the EP table's names. */
static void test_ep_of_session(void)
{
    char path[PATH_MAX];
    VmafDnnSession *s = NULL;
    snprintf(path, sizeof(path), "%s/psnr_y.onnx", builtin_dir);
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, path, NULL), 0);
    VmafDnnEp ep = VMAF_DNN_EP_ROCM;
    CHECK_EQ_INT(vmaf_dnn_ep_from_name(vmaf_dnn_session_attached_ep(s), &ep), 0);
    CHECK(strcmp(vmaf_dnn_ep_name(ep), vmaf_dnn_session_attached_ep(s)) == 0);
    VmafDnnDevice d = (VmafDnnDevice)-1;
    CHECK_EQ_INT(vmaf_dnn_device_from_name(
                     vmaf_dnn_device_name(vmaf_dnn_session_config(s)->device), &d), 0);
    CHECK_EQ_INT(d, VMAF_DNN_DEVICE_AUTO);
    vmaf_dnn_session_close(s);
}

/* ---- defaults and version ------------------------------------------------ */

static void test_defaults(void)
{
    const char *const *fr = vmaf_dnn_default_models(VMAF_DNN_MODEL_FR);
    const char *const *nr = vmaf_dnn_default_models(VMAF_DNN_MODEL_NR);
    /* vmaf is in the FR set exactly when the build generated it. */
    char vmaf[PATH_MAX];
    const int have_vmaf = vmaf_dnn_model_resolve("vmaf", vmaf, sizeof(vmaf)) == 0;
    CHECK(fr && fr[0] && strcmp(fr[0], "psnr_y") == 0 && fr[1] &&
          strcmp(fr[1], "ssim_y") == 0 &&
          (have_vmaf ? fr[2] && strcmp(fr[2], "vmaf") == 0 && !fr[3] : !fr[2]));
    CHECK(nr && nr[0] && strcmp(nr[0], "sharpness_nr") == 0 && !nr[1]);
    CHECK(vmaf_dnn_default_models(VMAF_DNN_MODEL_FEATURES) == NULL);
    CHECK(vmaf_dnn_default_models(VMAF_DNN_MODEL_INVALID) == NULL);
    /* Every default model is a built-in: it resolves from the built-in dir. */
    char path[PATH_MAX];
    const char *const *sets[] = {fr, nr};
    for (size_t s = 0; s < 2; s++)
        for (const char *const *n = sets[s]; n && *n; n++)
            CHECK_EQ_INT(vmaf_dnn_model_resolve(*n, path, sizeof(path)), 0);
}

static void test_version(const char *meson_version)
{
    CHECK(strcmp(vmaf_dnn_version(), meson_version) == 0);
    CHECK(strcmp(STR(VMAF_DNN_VERSION_MAJOR) "." STR(VMAF_DNN_VERSION_MINOR) "." STR(
                     VMAF_DNN_VERSION_PATCH),
                 meson_version) == 0);
}

/* ---- sidecar keys -------------------------------------------------------- */

static void test_sidecar_keys(void)
{
    VdnnSidecar *sc = NULL;
    const char *good = "{\"meaning\": \"higher is sharper\", \"min_width\": 11, "
                       "\"min_height\": 3}";
    CHECK_EQ_INT(vdnn_sidecar_parse(good, strlen(good), "t", &sc), 0);
    if (sc) {
        CHECK(sc->meaning && strcmp(sc->meaning, "higher is sharper") == 0);
        CHECK(sc->has_min_width && sc->min_width == 11);
        CHECK(sc->has_min_height && sc->min_height == 3);
        vdnn_sidecar_free(sc);
    }
    static const struct {
        const char *text, *message;
    } bad[] = {
        {"{\"meaning\": 1}", "\"meaning\""},
        {"{\"min_width\": 0}", "\"min_width\" must be an integer in [1, 32768], not 0"},
        {"{\"min_height\": 32769}", "\"min_height\" must be an integer in [1, 32768]"},
        {"{\"min_width\": 2.5}", "not 2.5"},
        {"{\"min_height\": \"3\"}", "got string"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sc = NULL;
        CHECK_EQ_INT(vdnn_sidecar_parse(bad[i].text, strlen(bad[i].text), "t", &sc), -EINVAL);
        CHECK(sc == NULL);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), bad[i].message);
    }
}

/* ---- the search path and resolution -------------------------------------- */

static char dir_a[PATH_MAX], dir_b[PATH_MAX], dir_added[PATH_MAX];

static void set_model_path(const char *value)
{
    if (value)
        setenv("VMAFDNN_MODEL_PATH", value, 1);
    else
        unsetenv("VMAFDNN_MODEL_PATH");
}

static void test_resolve(void)
{
    char buf[PATH_MAX], want[PATH_MAX + 32];

    /* Paths are never looked up, existing or not. */
    CHECK_EQ_INT(vmaf_dnn_model_resolve("dir/psnr_y", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, "dir/psnr_y") == 0);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("psnr_y.onnx", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, "psnr_y.onnx") == 0);

    /* VMAFDNN_MODEL_PATH first, in its order, empty entries skipped. */
    write_file(dir_a, "m.onnx", "a");
    write_file(dir_b, "m.onnx", "b");
    write_file(dir_b, "only_b.onnx", "b");
    char path[3 * PATH_MAX];
    snprintf(path, sizeof(path), "::%s::%s:", dir_a, dir_b);
    set_model_path(path);
    snprintf(want, sizeof(want), "%s/m.onnx", dir_a);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("m", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, want) == 0);
    snprintf(want, sizeof(want), "%s/only_b.onnx", dir_b);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("only_b", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, want) == 0);

    /* A directory named "x.onnx" is not a model. */
    char sub[PATH_MAX + 32];
    snprintf(sub, sizeof(sub), "%s/d.onnx", dir_a);
    CHECK(mkdir(sub, 0700) == 0);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("d", buf, sizeof(buf)), -ENOENT);

    /* An unknown name: the message lists what is there and where it looked. */
    CHECK_EQ_INT(vmaf_dnn_model_resolve("nosuch", buf, sizeof(buf)), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "no model named \"nosuch\"");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "known models: m, only_b");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), dir_b);

    /* Buffers and arguments. */
    CHECK_EQ_INT(vmaf_dnn_model_resolve("m", buf, 4), -ENAMETOOLONG);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "needs");
    CHECK_EQ_INT(vmaf_dnn_model_resolve("", buf, sizeof(buf)), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_model_resolve(NULL, buf, sizeof(buf)), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("m", NULL, 10), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("m", buf, 0), -EINVAL);
    char *huge = malloc(PATH_MAX + 10);
    if (huge) {
        memset(huge, 'a', PATH_MAX + 9);
        huge[PATH_MAX + 9] = '\0';
        CHECK_EQ_INT(vmaf_dnn_model_resolve(huge, buf, sizeof(buf)), -ENAMETOOLONG);
        free(huge);
    }

    /* Caller-added directories come last: found only when nothing before
     * has the name. */
    write_file(dir_added, "m.onnx", "added");
    write_file(dir_added, "only_added.onnx", "added");
    CHECK_EQ_INT(vmaf_dnn_model_path_add(dir_added), 0);
    CHECK_EQ_INT(vmaf_dnn_model_path_add(dir_added), 0); /* not twice */
    CHECK_EQ_INT(vmaf_dnn_model_path_add(""), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_model_path_add(NULL), -EINVAL);
    snprintf(want, sizeof(want), "%s/m.onnx", dir_a);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("m", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, want) == 0);
    snprintf(want, sizeof(want), "%s/only_added.onnx", dir_added);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("only_added", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, want) == 0);

    /* The search path, in order: the environment, the data directory, the
     * added ones (once). */
    char sp[4 * PATH_MAX];
    CHECK_EQ_INT(vmaf_dnn_model_search_path(sp, sizeof(sp)), 0);
    CHECK(strncmp(sp, dir_a, strlen(dir_a)) == 0);
    const char *added_at = strstr(sp, dir_added);
    CHECK(added_at && strstr(sp, dir_b) < added_at && strstr(added_at + 1, dir_added) == NULL);
    CHECK(strcmp(sp + strlen(sp) - strlen(dir_added), dir_added) == 0);
    CHECK_EQ_INT(vmaf_dnn_model_search_path(sp, 3), -ENAMETOOLONG);
    CHECK(sp[0] == '\0');

    set_model_path(NULL);
    snprintf(want, sizeof(want), "%s/m.onnx", dir_added);
    CHECK_EQ_INT(vmaf_dnn_model_resolve("m", buf, sizeof(buf)), 0);
    CHECK(strcmp(buf, want) == 0);
}

/* Directories added from several threads while others resolve: every add
 * lands once, every resolve sees a consistent list. */
#define ADDERS 4
#define ADDS 50

static void *adder(void *arg)
{
    int t = (int)(intptr_t)arg;
    char dir[64], buf[PATH_MAX];
    for (int i = 0; i < ADDS; i++) {
        snprintf(dir, sizeof(dir), "/nonexistent/vmafdnn-%d-%d", t, i % 10);
        if (vmaf_dnn_model_path_add(dir) != 0)
            return (void *)1;
        if (vmaf_dnn_model_resolve("only_added", buf, sizeof(buf)) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[ADDERS];
    for (int t = 0; t < ADDERS; t++)
        CHECK_EQ_INT(pthread_create(&th[t], NULL, adder, (void *)(intptr_t)t), 0);
    for (int t = 0; t < ADDERS; t++) {
        void *ret = (void *)1;
        pthread_join(th[t], &ret);
        CHECK(ret == NULL);
    }
    static char sp[64 * PATH_MAX];
    CHECK_EQ_INT(vmaf_dnn_model_search_path(sp, sizeof(sp)), 0);
    size_t n = 0;
    for (const char *p = sp; (p = strstr(p, "/nonexistent/vmafdnn-")); p++)
        n++;
    CHECK_EQ_INT(n, ADDERS * 10);
}

/* ---- the catalog --------------------------------------------------------- */

static const VmafDnnCatalogEntry *find(const VmafDnnCatalog *c, const char *name)
{
    for (size_t i = 0; i < vmaf_dnn_catalog_count(c); i++)
        if (strcmp(vmaf_dnn_catalog_entry(c, i)->name, name) == 0)
            return vmaf_dnn_catalog_entry(c, i);
    return NULL;
}

static void test_catalog_listing(void)
{
    char cat_dir[PATH_MAX], shadow_dir[PATH_MAX], path[2 * PATH_MAX + 2];
    make_dir(cat_dir, sizeof(cat_dir), "cat");
    make_dir(shadow_dir, sizeof(shadow_dir), "shadow");
    write_file(cat_dir, "fr.onnx", "x");
    write_file(cat_dir, "fr.json",
               "{\"kind\": \"fr\", \"input_names\": [\"ref\", \"dis\"], \"name\": \"score\","
               " \"description\": \"d\", \"meaning\": \"m\", \"range\": [0, 1],"
               " \"higher_is_better\": false, \"min_width\": 7, \"min_height\": 5}");
    write_file(cat_dir, "feat.onnx", "x");
    write_file(cat_dir, "feat.json",
               "{\"features\": [\"a\"], \"output_names\": [\"p\", \"q\"]}");
    write_file(cat_dir, "bare.onnx", "x");                         /* no sidecar */
    write_file(cat_dir, "broken.onnx", "x");
    write_file(cat_dir, "broken.json", "{\"kind\": 3}");           /* bad sidecar */
    write_file(cat_dir, "notes.txt", "x");                          /* not a model */
    write_file(shadow_dir, "fr.onnx", "later");                    /* shadowed */
    write_file(shadow_dir, "zzz.onnx", "x");
    snprintf(path, sizeof(path), "%s:%s", cat_dir, shadow_dir);
    set_model_path(path);

    VmafDnnCatalog *c = NULL;
    CHECK_EQ_INT(vmaf_dnn_catalog_open(&c, NULL), 0);
    /* Search order, by name within a directory; fr from cat_dir only. */
    const char *order[] = {"bare", "broken", "feat", "fr", "zzz"};
    CHECK(vmaf_dnn_catalog_count(c) >= 5);
    for (size_t i = 0; i < 5 && i < vmaf_dnn_catalog_count(c); i++)
        CHECK(strcmp(vmaf_dnn_catalog_entry(c, i)->name, order[i]) == 0);
    CHECK(vmaf_dnn_catalog_entry(c, vmaf_dnn_catalog_count(c)) == NULL);
    size_t frs = 0;
    for (size_t i = 0; i < vmaf_dnn_catalog_count(c); i++)
        frs += strcmp(vmaf_dnn_catalog_entry(c, i)->name, "fr") == 0;
    CHECK_EQ_INT(frs, 1);

    const VmafDnnCatalogEntry *e = find(c, "fr");
    char want[PATH_MAX + 16];
    snprintf(want, sizeof(want), "%s/fr.onnx", cat_dir);
    CHECK(e && strcmp(e->path, want) == 0);
    if (e) {
        CHECK_EQ_INT(e->kind, VMAF_DNN_MODEL_FR);
        CHECK(e->n_inputs == 2 && strcmp(e->inputs[0], "ref") == 0 &&
              strcmp(e->inputs[1], "dis") == 0);
        CHECK(e->n_outputs == 1 && strcmp(e->outputs[0], "score") == 0);
        CHECK(strcmp(e->description, "d") == 0 && strcmp(e->meaning, "m") == 0);
        CHECK(e->has_range && e->range[0] == 0 && e->range[1] == 1);
        CHECK_EQ_INT(e->higher_is_better, 0);
        CHECK(e->min_width == 7 && e->min_height == 5);
    }
    e = find(c, "feat");
    CHECK(e && e->kind == VMAF_DNN_MODEL_FEATURES && e->n_outputs == 2 &&
          strcmp(e->outputs[1], "q") == 0 && e->n_inputs == 0);
    e = find(c, "bare");
    CHECK(e && e->kind == VMAF_DNN_MODEL_INVALID && e->n_outputs == 0 &&
          strcmp(e->description, "") == 0 && e->higher_is_better == -1 && e->min_width == 0);
    e = find(c, "broken"); /* listed; attaching it reports the sidecar */
    CHECK(e && e->kind == VMAF_DNN_MODEL_INVALID);
    CHECK(strcmp(vmaf_dnn_last_error(), "") == 0);
    vmaf_dnn_catalog_close(c);

    /* One named model: its sidecar must load. */
    c = NULL;
    CHECK_EQ_INT(vmaf_dnn_catalog_open(&c, "broken"), -EINVAL);
    CHECK(c == NULL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"kind\"");
    CHECK_EQ_INT(vmaf_dnn_catalog_open(&c, "nosuch"), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "known models: bare, broken, feat, fr, zzz");
    snprintf(want, sizeof(want), "%s/nosuch.onnx", cat_dir);
    CHECK_EQ_INT(vmaf_dnn_catalog_open(&c, want), -ENOENT);
    snprintf(want, sizeof(want), "%s/fr.onnx", shadow_dir); /* a path reaches a shadowed one */
    CHECK_EQ_INT(vmaf_dnn_catalog_open(&c, want), 0);
    CHECK(vmaf_dnn_catalog_count(c) == 1 && strcmp(vmaf_dnn_catalog_entry(c, 0)->name, "fr") == 0 &&
          vmaf_dnn_catalog_entry(c, 0)->kind == VMAF_DNN_MODEL_INVALID);
    vmaf_dnn_catalog_close(c);
    CHECK_EQ_INT(vmaf_dnn_catalog_open(NULL, NULL), -EINVAL);
    vmaf_dnn_catalog_close(NULL);
    CHECK(vmaf_dnn_catalog_count(NULL) == 0 && vmaf_dnn_catalog_entry(NULL, 0) == NULL);
    set_model_path(NULL);

    const char *names[] = {"fr.onnx", "fr.json", "feat.onnx", "feat.json", "bare.onnx",
                           "broken.onnx", "broken.json", "notes.txt"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK(remove_entry(cat_dir, names[i]) == 0);
    CHECK(remove_entry(shadow_dir, "fr.onnx") == 0 && remove_entry(shadow_dir, "zzz.onnx") == 0);
    CHECK(rmdir(cat_dir) == 0 && rmdir(shadow_dir) == 0);
}

/* The built-in models describe themselves, minimum sizes included. */
static void test_builtin_entries(void)
{
    set_model_path(builtin_dir);
    VmafDnnCatalog *c = NULL;
    CHECK_EQ_INT(vmaf_dnn_catalog_open(&c, NULL), 0);
    const VmafDnnCatalogEntry *psnr = find(c, "psnr_y"), *ssim = find(c, "ssim_y"),
                              *sharp = find(c, "sharpness_nr");
    CHECK(psnr && ssim && sharp);
    if (psnr && ssim && sharp) {
        CHECK_EQ_INT(psnr->kind, VMAF_DNN_MODEL_FR);
        CHECK(psnr->n_inputs == 2 && strcmp(psnr->inputs[0], "reference") == 0);
        CHECK(psnr->n_outputs == 1 && strcmp(psnr->outputs[0], "psnr_y") == 0);
        CHECK(psnr->min_width == 1 && psnr->min_height == 1 && psnr->higher_is_better == 1);
        CHECK_STR_CONTAINS(psnr->meaning, "dB");
        CHECK(ssim->min_width == 11 && ssim->min_height == 11);
        CHECK(ssim->has_range && ssim->range[0] == -1 && ssim->range[1] == 1);
        CHECK_EQ_INT(sharp->kind, VMAF_DNN_MODEL_NR);
        CHECK(sharp->min_width == 3 && sharp->min_height == 3);
        CHECK_STR_CONTAINS(sharp->meaning, "Variance of the Laplacian of the luma");
        CHECK_STR_CONTAINS(sharp->meaning, "Higher means sharper");
        CHECK_STR_CONTAINS(sharp->description, "Laplacian");
    }
    vmaf_dnn_catalog_close(c);
    set_model_path(NULL);
}

/* A context attaches a model by name and scores with it. */
static void test_attach_by_name(void)
{
    set_model_path(builtin_dir);
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, "psnr_y", NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, "nosuch_model", NULL), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "known models:");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "psnr_y");
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 1);
    CHECK_STR_CONTAINS(vmaf_dnn_tiny_model_path(ctx, 0), "/psnr_y.onnx");

    enum { W = 16, H = 16 };
    uint8_t ref[W * H], dis[W * H];
    for (int i = 0; i < W * H; i++) {
        ref[i] = (uint8_t)(i * 7);
        dis[i] = (uint8_t)(ref[i] ^ 1);
    }
    VmafDnnPicture r = {.bpc = 8, .w = {W}, .h = {H}, .stride = {W}, .data = {ref}};
    VmafDnnPicture d = {.bpc = 8, .w = {W}, .h = {H}, .stride = {W}, .data = {dis}};
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &r, &d, 0), 0);
    double v = 0;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "psnr_y", 0, &v), 0);
    /* every sample off by exactly 1: MSE 1, PSNR 10*log10(255^2) */
    CHECK(fabs(v - 20.0 * log10(255.0)) < 1e-4);
    vmaf_dnn_context_close(ctx);
    set_model_path(NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s BUILTIN_DIR VERSION [ORT_BACKEND_C]\n", argv[0]);
        return 2;
    }
    builtin_dir = argv[1];
    if (!mkdtemp(tmp_dir)) {
        perror(tmp_dir);
        return 2;
    }
    make_dir(dir_a, sizeof(dir_a), "a");
    make_dir(dir_b, sizeof(dir_b), "b");
    make_dir(dir_added, sizeof(dir_added), "added");

    test_device_names();
    test_other_names();
    if (argc > 3)
        test_backend_ep_names(argv[3]);
    test_version(argv[2]);
    test_sidecar_keys();
    test_catalog_listing();
    test_builtin_entries();
    test_resolve();
    test_threads();
    set_model_path(builtin_dir);
    test_defaults();
    set_model_path(NULL);
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "%s\n", vmaf_dnn_last_error());
        return 1;
    }
    test_attach_by_name();
    test_ep_of_session();

    remove_entry(dir_a, "d.onnx");
    const char *a[] = {"m.onnx"}, *b[] = {"m.onnx", "only_b.onnx"},
               *ad[] = {"m.onnx", "only_added.onnx"};
    for (size_t i = 0; i < 1; i++)
        remove_entry(dir_a, a[i]);
    for (size_t i = 0; i < 2; i++) {
        remove_entry(dir_b, b[i]);
        remove_entry(dir_added, ad[i]);
    }
    rmdir(dir_a);
    rmdir(dir_b);
    rmdir(dir_added);
    rmdir(tmp_dir);
    return check_report();
}
