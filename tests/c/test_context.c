/* The scoring context (vmafdnn/context.h) end to end: attaching tiny models
 * and every shape diagnostic, which plane each model kind sees, bit depths,
 * resizing, feature routing and naming, feature-vector models, reports after
 * a failed frame, and NULL/error handling of every public function. The
 * resize module is also checked directly against hand-computed values.
 *
 * usage: test_context MODEL_DIR [BUILTIN_DIR]
 *   MODEL_DIR holds the models of tests/models/factory.py. Sidecars are
 *   written by this test into a temporary directory beside copies of them.
 *   BUILTIN_DIR, when given, holds the built-in models of
 *   tools/gen_builtin_models.py, which are then run with their own sidecars.
 * ORT is found the documented way (VMAFDNN_ORT_LIBRARY, then the loader).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "block_cache.h"
#include "check.h"
#include "ort_backend.h"
#include "context_internal.h"
#include "json.h"
#include "resize.h"
#include "vectorize.h" /* VDNN_TSAN */

static char model_dir[PATH_MAX];
static const char *builtin_dir;
static char tmp_dir[] = "/tmp/vmafdnn-context-XXXXXX";

/* ------------------------------------------------------------------------ */
/* Fixtures                                                                 */
/* ------------------------------------------------------------------------ */

/* Copies src to dst (a copy, not a link: the sidecar is read beside the
 * model file actually opened, so a link would find the one in MODEL_DIR). */
static void copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    char buf[1 << 16];
    size_t n;
    while (out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            break;
    if (!out || ferror(in) || fclose(out))
        perror(dst);
    if (in)
        fclose(in);
}

/* Copies model `model` from MODEL_DIR to <tmp>/<as>.onnx and writes
 * `sidecar` (or removes any) as <tmp>/<as>.json. Returns the .onnx path (one
 * of a few rotating buffers). */
static const char *stage(const char *model, const char *as, const char *sidecar)
{
    static char ring[8][PATH_MAX + 64];
    static unsigned next;
    char *path = ring[next++ % 8], src[PATH_MAX + 64], json[PATH_MAX + 64];
    snprintf(src, sizeof(src), "%s/%s.onnx", model_dir, model);
    snprintf(path, sizeof(ring[0]), "%s/%s.onnx", tmp_dir, as);
    snprintf(json, sizeof(json), "%s/%s.json", tmp_dir, as);
    unlink(path);
    unlink(json);
    copy_file(src, path);
    if (sidecar) {
        FILE *f = fopen(json, "w");
        if (f) {
            fputs(sidecar, f);
            fclose(f);
        }
    }
    return path;
}

static void remove_tmp_dir(void)
{
    DIR *d = opendir(tmp_dir);
    struct dirent *e;
    char path[PATH_MAX + 300];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof(path), "%s/%s", tmp_dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(tmp_dir);
}

/* A picture with its own storage; stride is padded past the row. */
typedef struct TestPic {
    VmafDnnPicture pic;
    unsigned char *buf;
} TestPic;

static TestPic pic_new(unsigned w, unsigned h, unsigned bpc)
{
    TestPic t;
    memset(&t, 0, sizeof(t));
    unsigned bytes = bpc > 8 ? 2 : 1;
    t.pic.stride[0] = (ptrdiff_t)(w + 3) * bytes;
    t.buf = calloc((size_t)t.pic.stride[0] * h, 1);
    t.pic.data[0] = t.buf;
    t.pic.w[0] = w;
    t.pic.h[0] = h;
    t.pic.bpc = bpc;
    return t;
}

static void pic_set(TestPic *t, unsigned x, unsigned y, unsigned v)
{
    unsigned char *row = t->buf + (size_t)y * (size_t)t->pic.stride[0];
    if (t->pic.bpc > 8)
        ((uint16_t *)(void *)row)[x] = (uint16_t)v;
    else
        row[x] = (unsigned char)v;
}

static void pic_fill(TestPic *t, unsigned v)
{
    for (unsigned y = 0; y < t->pic.h[0]; y++)
        for (unsigned x = 0; x < t->pic.w[0]; x++)
            pic_set(t, x, y, v);
}

static TestPic pic_const(unsigned w, unsigned h, unsigned bpc, unsigned v)
{
    TestPic t = pic_new(w, h, bpc);
    pic_fill(&t, v);
    return t;
}

static void pic_free(TestPic *t)
{
    free(t->buf);
    t->buf = NULL;
}

static VmafDnnContext *ctx_new(VmafDnnResize resize)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device = VMAF_DNN_DEVICE_CPU;
    cfg.session.threads = 1;
    cfg.resize = resize;
    cfg.fps = 25.0;
    VmafDnnContext *ctx = NULL;
    int rc = vmaf_dnn_context_open(&ctx, &cfg);
    CHECK_EQ_INT(rc, 0);
    return ctx;
}

static int attach(VmafDnnContext *ctx, const char *path, const char *name)
{
    VmafDnnModelConfig m = {0};
    m.name = name;
    return vmaf_dnn_use_tiny_model(ctx, path, &m);
}

static int attach_ok(VmafDnnContext *ctx, const char *path, const char *name)
{
    int rc = attach(ctx, path, name);
    if (rc)
        fprintf(stderr, "attach %s: %d %s\n", path, rc, vmaf_dnn_last_error());
    CHECK_EQ_INT(rc, 0);
    return rc;
}

/* Attaching `model` (with `sidecar`) fails with `code` and a message
 * containing `fragment`. */
static void attach_fails(const char *model, const char *sidecar, int code, const char *fragment)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    const char *path = stage(model, model, sidecar);
    int rc = attach(ctx, path, NULL);
    CHECK_EQ_INT(rc, code);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), fragment);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 0);
    vmaf_dnn_context_close(ctx);
}

static double get(const VmafDnnContext *ctx, const char *name, unsigned index)
{
    double v = NAN;
    int rc = vmaf_dnn_feature_get(ctx, name, index, &v);
    if (rc)
        fprintf(stderr, "feature_get %s[%u]: %d %s\n", name, index, rc, vmaf_dnn_last_error());
    return v;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = calloc(1, 1 << 16);
    *len = text ? fread(text, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    return text;
}

/* ------------------------------------------------------------------------ */
/* resize.h, directly                                                       */
/* ------------------------------------------------------------------------ */

static void test_normalise(void)
{
    uint8_t p8[2][3] = {{0, 128, 255}, {1, 2, 3}};
    float out[6];
    vdnn_plane_normalise(p8, 3, 3, 2, 8, out);
    CHECK(out[0] == 0.0f && out[2] == 1.0f);
    CHECK(out[1] == 128.0f / 255.0f && out[5] == 3.0f / 255.0f);

    for (unsigned bpc = 9; bpc <= 16; bpc++) {
        uint16_t p16[4] = {0, (uint16_t)((1u << bpc) - 1), 77, 0xdead};
        vdnn_plane_normalise(p16, 2 * sizeof(uint16_t), 1, 2, bpc, out); /* column 0 only */
        CHECK(out[0] == 0.0f && out[1] == 77.0f / (float)((1u << bpc) - 1));
        vdnn_plane_normalise(p16, sizeof(p16), 2, 1, bpc, out);
        CHECK(out[1] == 1.0f);
    }
}

static void resize_run(VmafDnnResize mode, const float *src, unsigned sw, unsigned sh,
                       float *dst, unsigned dw, unsigned dh)
{
    VdnnResizer r = {0};
    CHECK_EQ_INT(vdnn_resizer_prepare(&r, mode, sw, sh, dw, dh), 0);
    CHECK_EQ_INT(vdnn_resizer_prepare(&r, mode, sw, sh, dw, dh), 0); /* same: kept */
    vdnn_resizer_run(&r, src, dst);
    vdnn_resizer_release(&r);
}

static void test_resize_filters(void)
{
    static const VmafDnnResize modes[3] = {VMAF_DNN_RESIZE_NEAREST, VMAF_DNN_RESIZE_BILINEAR,
                                           VMAF_DNN_RESIZE_BICUBIC};
    float src[16 * 16], dst[24 * 24];

    /* A constant plane stays constant, shrinking and growing, in every mode. */
    for (size_t i = 0; i < 16 * 16; i++)
        src[i] = 0.3f;
    for (int m = 0; m < 3; m++) {
        resize_run(modes[m], src, 16, 16, dst, 5, 7);
        int ok = 1;
        for (size_t i = 0; i < 5 * 7; i++)
            ok &= fabsf(dst[i] - 0.3f) < 1e-6f;
        resize_run(modes[m], src, 16, 16, dst, 24, 23);
        for (size_t i = 0; i < 24 * 23; i++)
            ok &= fabsf(dst[i] - 0.3f) < 1e-6f;
        CHECK(ok);
    }

    /* A 2x downsample of the ramp v = x + 100 y (16 x 16 -> 8 x 8). */
    for (unsigned y = 0; y < 16; y++)
        for (unsigned x = 0; x < 16; x++)
            src[y * 16 + x] = (float)x + 100.0f * (float)y;
    resize_run(VMAF_DNN_RESIZE_BILINEAR, src, 16, 16, dst, 8, 8);
    int ok = 1; /* half-pixel centres: the mean of each 2x2 block */
    for (unsigned y = 0; y < 8; y++)
        for (unsigned x = 0; x < 8; x++)
            ok &= fabsf(dst[y * 8 + x] - ((2.0f * x + 0.5f) + 100.0f * (2.0f * y + 0.5f))) < 1e-3f;
    CHECK(ok);
    resize_run(VMAF_DNN_RESIZE_NEAREST, src, 16, 16, dst, 8, 8);
    ok = 1; /* floor((x + 0.5) * 2) = 2x + 1 */
    for (unsigned y = 0; y < 8; y++)
        for (unsigned x = 0; x < 8; x++)
            ok &= dst[y * 8 + x] == (float)(2 * x + 1) + 100.0f * (float)(2 * y + 1);
    CHECK(ok);
    resize_run(VMAF_DNN_RESIZE_BICUBIC, src, 16, 16, dst, 8, 8);
    ok = 1; /* away from the edges, Keys' kernel reproduces a linear ramp */
    for (unsigned y = 1; y < 7; y++)
        for (unsigned x = 1; x < 7; x++)
            ok &= fabsf(dst[y * 8 + x] - ((2.0f * x + 0.5f) + 100.0f * (2.0f * y + 0.5f))) < 1e-3f;
    CHECK(ok);
    /* At the edge the replicated sample pulls it: x = 0 reads taps
     * {v0, v0, v1, v2} with weights {-1/16, 9/16, 9/16, -1/16}: 0.4375. */
    CHECK_NEAR(dst[1 * 8 + 0] - 100.0f * 2.5f, 0.4375, 1e-3);

    /* Growing 2 -> 4 with bilinear: positions -0.25, 0.25, 0.75, 1.25. */
    const float two[2] = {0.0f, 1.0f};
    float four[4];
    resize_run(VMAF_DNN_RESIZE_BILINEAR, two, 2, 1, four, 4, 1);
    CHECK(four[0] == 0.0f && four[1] == 0.25f && four[2] == 0.75f && four[3] == 1.0f);
    /* Nearest 2 -> 3: floor((x + 0.5) * 2 / 3) = 0, 1, 1. */
    float three[3];
    resize_run(VMAF_DNN_RESIZE_NEAREST, two, 2, 1, three, 3, 1);
    CHECK(three[0] == 0.0f && three[1] == 1.0f && three[2] == 1.0f);

    /* A tall column to a wide row: the scratch between the passes is what
     * the smaller order needs (1 float, not 16384 x 16384: 1 GiB), and the
     * result is the transposed resize's. */
    CHECK_EQ_INT(vdnn_resize_scratch(1, 16384, 16384, 1), 1);
    CHECK_EQ_INT(vdnn_resize_scratch(16384, 1, 1, 16384), 1);
    CHECK_EQ_INT(vdnn_resize_scratch(320, 180, 640, 360), 180 * 640); /* rows first */
    static float column[16384], row[16384];
    for (unsigned i = 0; i < 16384; i++)
        column[i] = (float)(i % 97) / 96.0f;
    /* The column collapses to its middle sample(s) (nearest: row 8192;
     * bilinear: the mean of rows 8191 and 8192), spread along the row. */
    const float want[2] = {column[8192], 0.5f * column[8191] + 0.5f * column[8192]};
    for (int m = 0; m < 2; m++) {
        resize_run(modes[m], column, 1, 16384, row, 16384, 1);
        int same = 1;
        for (unsigned i = 0; i < 16384; i++)
            same &= fabsf(row[i] - want[m]) < 1e-6f;
        CHECK(same);
    }
    resize_run(VMAF_DNN_RESIZE_BILINEAR, two, 1, 2, four, 1, 4); /* the transposed 2 -> 4 */
    CHECK(four[0] == 0.0f && four[1] == 0.25f && four[2] == 0.75f && four[3] == 1.0f);

    VdnnResizer r = {0};
    CHECK_EQ_INT(vdnn_resizer_prepare(&r, VMAF_DNN_RESIZE_NONE, 2, 2, 1, 1), -EINVAL);
    CHECK_EQ_INT(vdnn_resizer_prepare(&r, VMAF_DNN_RESIZE_NEAREST, 0, 2, 1, 1), -EINVAL);
    CHECK_EQ_INT(vdnn_resizer_prepare(&r, VMAF_DNN_RESIZE_NEAREST, 2, 2, 40000, 1), -EINVAL);
    vdnn_resizer_release(&r);
    vdnn_resizer_release(NULL);
}

/* ------------------------------------------------------------------------ */
/* NULL arguments and configs                                               */
/* ------------------------------------------------------------------------ */

static void test_null_safety(void)
{
    VmafDnnContext *ctx = (VmafDnnContext *)&ctx;
    VmafDnnContext *const sentinel = ctx;
    VmafDnnContextConfig cfg;
    double v = 0.0;
    TestPic p = pic_const(8, 8, 8, 1);

    vmaf_dnn_default_context_config(NULL);
    vmaf_dnn_context_close(NULL);
    CHECK_EQ_INT(vmaf_dnn_context_open(NULL, NULL), -EINVAL);
    vmaf_dnn_default_context_config(&cfg);
    CHECK_EQ_INT(cfg.resize, VMAF_DNN_RESIZE_NONE);
    CHECK(cfg.fps == 0.0 && cfg.session.device == VMAF_DNN_DEVICE_AUTO);
    cfg.resize = (VmafDnnResize)99;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "resize");
    vmaf_dnn_default_context_config(&cfg);
    cfg.fps = -1.0;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    cfg.fps = NAN;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "fps");
    CHECK(ctx == sentinel);

    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(NULL, stage("nr_mean", "nr_mean", NULL), NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(NULL, NULL, &p.pic, 0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_flush(NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_append(NULL, "x", 0, 1.0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_get(NULL, "x", 0, &v), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(NULL, "x", VMAF_DNN_POOL_MEAN, 0, 1, &v), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output(NULL, "/tmp/x.json", VMAF_DNN_OUTPUT_JSON), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_file(NULL, stdout, VMAF_DNN_OUTPUT_JSON), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(NULL), 0);
    CHECK(vmaf_dnn_tiny_model_path(NULL, 0) == NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(NULL, 0), VMAF_DNN_MODEL_INVALID);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_feature_count(NULL, 0), 0);
    CHECK(vmaf_dnn_tiny_model_feature_name(NULL, 0, 0) == NULL);
    CHECK(vmaf_dnn_tiny_model_attached_ep(NULL, 0) == NULL);
    CHECK(vmaf_dnn_tiny_model_session(NULL, 0) == NULL);
    CHECK_EQ_INT(vmaf_dnn_feature_count(NULL), 0);
    CHECK(vmaf_dnn_feature_name(NULL, 0) == NULL);
    CHECK_EQ_INT(vmaf_dnn_frame_count(NULL), 0);

    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, NULL, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 0), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "no model");
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, NULL, 0, 1.0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "", 0, 1.0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "x", 1u << 24, 1.0), -ERANGE);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, NULL, 0, &v), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "x", 0, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "x", 0, &v), -ENOENT);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, NULL, VMAF_DNN_POOL_MEAN, 0, 1, &v), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "x", VMAF_DNN_POOL_MEAN, 0, 1, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output(ctx, NULL, VMAF_DNN_OUTPUT_JSON), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output(ctx, "", VMAF_DNN_OUTPUT_JSON), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_file(ctx, NULL, VMAF_DNN_OUTPUT_JSON), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_file(ctx, stdout, (VmafDnnOutputFormat)7), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "format");
    CHECK(vmaf_dnn_tiny_model_path(ctx, 0) == NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 0), VMAF_DNN_MODEL_INVALID);

    /* Bad model configs. */
    VmafDnnModelConfig m = {0};
    m.resize = (VmafDnnResize)-3;
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("nr_mean", "nr_mean", NULL), &m), -EINVAL);
    VmafDnnConfig bad;
    vmaf_dnn_default_config(&bad);
    bad.threads = -1;
    m.resize = VMAF_DNN_RESIZE_DEFAULT;
    m.session = &bad;
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("nr_mean", "nr_mean", NULL), &m), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "threads");
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, "/nonexistent/m.onnx", NULL), -ENOENT);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("nr_mean", "bad_json", "{\"name\": "), NULL),
                 -EBADMSG);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("nr_mean", "bad_key", "{\"name\": 3}"), NULL),
                 -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"name\"");
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 0);
    vmaf_dnn_context_close(ctx);
    pic_free(&p);
}

static void test_picture_checks(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("fr_diff", "fr_diff", NULL), NULL);
    TestPic ref = pic_const(8, 8, 8, 10), dist = pic_const(8, 8, 8, 20);
    VmafDnnPicture bad;

#define READ_FAILS(r, d, fragment)                                            \
    do {                                                                      \
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, (r), (d), 0), -EINVAL);      \
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), fragment);                  \
    } while (0)

    READ_FAILS(NULL, &dist.pic, "ref is NULL");
    READ_FAILS(&ref.pic, NULL, "dist is NULL");
    bad = dist.pic;
    bad.bpc = 7;
    READ_FAILS(&ref.pic, &bad, "bpc is 7");
    bad.bpc = 17;
    READ_FAILS(&ref.pic, &bad, "8..16");
    bad = dist.pic;
    bad.data[0] = NULL;
    READ_FAILS(&ref.pic, &bad, "plane Y data is NULL");
    bad = dist.pic;
    bad.w[0] = 0;
    READ_FAILS(&ref.pic, &bad, "is 0x8");
    bad.w[0] = 40000;
    READ_FAILS(&ref.pic, &bad, "1..32768");
    bad = dist.pic;
    bad.stride[0] = 7;
    READ_FAILS(&ref.pic, &bad, "stride 7");
    bad = ref.pic;
    bad.data[1] = ref.buf; /* U set: checked like Y */
    bad.w[1] = bad.h[1] = 4;
    bad.stride[1] = 2;
    READ_FAILS(&bad, &dist.pic, "reference picture: plane U stride 2");
    TestPic small = pic_const(4, 8, 8, 0), deep = pic_const(8, 8, 10, 0);
    READ_FAILS(&small.pic, &dist.pic, "must match");
    READ_FAILS(&deep.pic, &dist.pic, "must match");
    bad = deep.pic;
    bad.data[0] = deep.buf + 1;
    READ_FAILS(&ref.pic, &bad, "odd");
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 0);
    /* A valid U/V pair is accepted and ignored. */
    bad = ref.pic;
    bad.data[1] = bad.data[2] = ref.buf;
    bad.w[1] = bad.w[2] = bad.h[1] = bad.h[2] = 4;
    bad.stride[1] = bad.stride[2] = 4;
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &bad, &dist.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, 1u << 24), -ERANGE);
#undef READ_FAILS
    pic_free(&ref);
    pic_free(&dist);
    pic_free(&small);
    pic_free(&deep);
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* Which plane each kind sees; bit depths                                   */
/* ------------------------------------------------------------------------ */

static void test_planes(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    TestPic ref = pic_const(8, 8, 8, 100), dist = pic_const(8, 8, 8, 50);

    /* Positional FR binding: [0] = reference, [1] = distorted. NR: distorted. */
    attach_ok(ctx, stage("fr_diff", "fr_pos", NULL), NULL);
    attach_ok(ctx, stage("nr_mean", "nr", NULL), NULL);
    /* input_names reversed: the model's second input is the reference. */
    attach_ok(ctx, stage("fr_diff", "fr_named", "{\"input_names\": [\"second\", \"first\"]}"),
              NULL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, 0), 0);
    CHECK_NEAR(get(ctx, "fr_pos", 0), 50.0 / 255.0, 1e-6);
    CHECK_NEAR(get(ctx, "nr", 0), 50.0 / 255.0, 1e-6);
    CHECK_NEAR(get(ctx, "fr_named", 0), -50.0 / 255.0, 1e-6);

    /* Introspection. */
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 3);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 0), VMAF_DNN_MODEL_FR);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 1), VMAF_DNN_MODEL_NR);
    CHECK_STR_CONTAINS(vmaf_dnn_tiny_model_path(ctx, 1), "/nr.onnx");
    CHECK_EQ_INT(vmaf_dnn_tiny_model_feature_count(ctx, 1), 1);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 1, 0), "nr") == 0);
    CHECK(vmaf_dnn_tiny_model_feature_name(ctx, 1, 1) == NULL);
    CHECK(strcmp(vmaf_dnn_tiny_model_attached_ep(ctx, 0), "CPU") == 0);
    CHECK_EQ_INT(vmaf_dnn_session_input_count(vmaf_dnn_tiny_model_session(ctx, 0)), 2);
    CHECK(vmaf_dnn_tiny_model_session(ctx, 3) == NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_feature_count(ctx, 3), 0);

    /* Sidecar input_names of an NR model name its one image input. */
    attach_ok(ctx, stage("nr_mean", "nr_named", "{\"kind\": \"nr\", \"input_names\": [\"x\"]}"),
              NULL);

    /* An NR-only context takes distorted pictures alone. */
    VmafDnnContext *nr = ctx_new(VMAF_DNN_RESIZE_NONE);
    VmafDnnModelConfig m = {0};
    m.no_reference = 1;
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(nr, stage("fr_diff", "fr_diff", NULL), &m), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "no_reference");
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(nr, stage("nr_mean", "nr_mean", NULL), &m), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(nr, NULL, &dist.pic, 0), 0);
    CHECK_NEAR(get(nr, "nr_mean", 0), 50.0 / 255.0, 1e-6);
    /* A reference given to NR models is checked and not read. */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(nr, &ref.pic, &dist.pic, 1), 0);
    CHECK_NEAR(get(nr, "nr_mean", 1), 50.0 / 255.0, 1e-6);
    vmaf_dnn_context_close(nr);

    pic_free(&ref);
    pic_free(&dist);
    vmaf_dnn_context_close(ctx);
}

static void test_bit_depths(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean", "nr_mean", NULL), NULL);
    static const struct { unsigned bpc, value; } cases[] = {
        {8, 255}, {8, 17}, {10, 1023}, {10, 512}, {12, 4095}, {16, 65535}, {16, 1000}, {9, 3},
    };
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TestPic p = pic_const(8, 8, cases[i].bpc, cases[i].value);
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, i), 0);
        CHECK_NEAR(get(ctx, "nr_mean", i), cases[i].value / (double)((1u << cases[i].bpc) - 1),
                   1e-6);
        pic_free(&p);
    }
    vmaf_dnn_context_close(ctx);
}

/* A sample above the bit depth is refused however the picture came in,
 * naming the plane, value and position; 16-bit samples cannot exceed. */
static void test_samples_above_the_depth(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean", "nr_mean", NULL), NULL);
    TestPic p = pic_const(8, 8, 10, 1023);
    pic_set(&p, 5, 6, 1024);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 0), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "plane Y has sample value 1024 at (5, 6), above "
                       "the 10-bit maximum 1023");
    p.pic.bpc = 11; /* the same samples are fine at 11 bits */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 0), 0);
    pic_set(&p, 7, 7, 65535);
    p.pic.bpc = 16;
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 1), 0);
    pic_free(&p);
    vmaf_dnn_context_close(ctx);
}

typedef struct Flipper {
    uint16_t *sample;
    atomic_int stop;
} Flipper;

static void *flip_sample(void *arg)
{
    Flipper *f = arg;
    while (!atomic_load(&f->stop)) {
        *(volatile uint16_t *)f->sample = 1024;
        *(volatile uint16_t *)f->sample = 0;
    }
    return NULL;
}

/* A caller that writes a picture while the library checks it (its own race)
 * gets the picture taken or refused, never a read past the plane: the check
 * found a sample above the depth in a row, then looked for it again, and an
 * unbounded second look at a row whose sample had changed back ran off the
 * row's end (an ASan heap overflow past the plane's last row here). */
static void test_a_sample_changed_while_checked(void)
{
#ifndef VDNN_TSAN /* the race is the test's own, on purpose */
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean", "nr_mean", NULL), NULL);
    enum { W = 8, H = 8 };
    uint16_t *plane = calloc(W * H, sizeof(uint16_t)); /* nothing past the last sample */
    VmafDnnPicture pic;
    memset(&pic, 0, sizeof(pic));
    pic.data[0] = plane;
    pic.stride[0] = W * sizeof(uint16_t);
    pic.w[0] = W;
    pic.h[0] = H;
    pic.bpc = 10;
    Flipper f = {plane + W * H - 1, 0};
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, flip_sample, &f), 0);
    unsigned refused = 0;
    for (unsigned i = 0; i < 3000; i++) {
        const int rc = vmaf_dnn_read_pictures(ctx, NULL, &pic, i);
        CHECK(rc == 0 || rc == -EINVAL);
        if (rc == -EINVAL) {
            CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "sample value 1024 at (7, 7)");
            refused++;
        }
    }
    atomic_store(&f.stop, 1);
    pthread_join(t, NULL);
    printf("  a sample flipped while checked: %u of 3000 frames refused\n", refused);
    free(plane);
    vmaf_dnn_context_close(ctx);
#endif
}

static const char *builtin(const char *name);

/* Rows stored bottom-up (a negative stride, data at the top row: FFmpeg's
 * negative linesizes) score as the same picture stored top-down. */
static void test_negative_strides(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, builtin("psnr_y"), NULL);
    for (unsigned bpc = 8; bpc <= 10; bpc += 2) {
        TestPic ref = pic_const(40, 36, bpc, 0), dist = pic_const(40, 36, bpc, 0);
        TestPic flipped = pic_const(40, 36, bpc, 0);
        uint32_t seed = 7 + bpc;
        for (unsigned y = 0; y < 36; y++)
            for (unsigned x = 0; x < 40; x++) {
                seed = seed * 1664525u + 1013904223u;
                unsigned v = (seed >> 16) & ((1u << bpc) - 1);
                pic_set(&ref, x, y, v);
                pic_set(&dist, x, y, v ^ (x & 3));
                pic_set(&flipped, x, 35 - y, v ^ (x & 3)); /* dist, rows upside down */
            }
        VmafDnnPicture up = flipped.pic;
        up.data[0] = flipped.buf + (size_t)35 * (size_t)flipped.pic.stride[0];
        up.stride[0] = -flipped.pic.stride[0];
        const unsigned i = bpc;
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, 2 * i), 0);
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &up, 2 * i + 1), 0);
        CHECK(get(ctx, "psnr_y", 2 * i) == get(ctx, "psnr_y", 2 * i + 1));
        VmafDnnPicture short_row = up;
        short_row.stride[0] = -(ptrdiff_t)(bpc > 8 ? 2 : 1) * 39;
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &short_row, 99), -EINVAL);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "smaller than a row");
        pic_free(&ref);
        pic_free(&dist);
        pic_free(&flipped);
    }
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* Output naming and routing                                                */
/* ------------------------------------------------------------------------ */

static void test_output_keys(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    /* ONNX names "p.0", "p-1", "p 2", "p3", sanitised. */
    attach_ok(ctx, stage("pixels", "pixels", NULL), "px");
    static const char *const px[4] = {"px_p_0", "px_p_1", "px_p_2", "px_p3"};
    CHECK_EQ_INT(vmaf_dnn_tiny_model_feature_count(ctx, 0), 4);
    for (size_t i = 0; i < 4; i++)
        CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 0, i), px[i]) == 0);
    /* Sidecar output_names with one entry per output win ... */
    attach_ok(ctx, stage("pixels", "pixels_named",
                         "{\"name\": \"q\", \"output_names\": [\"tl\", \"t r\", \"bl\", \"br\"]}"),
              NULL);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 1, 1), "q_t_r") == 0);
    /* ... a list of another length is ignored; the override beats "name". */
    attach_ok(ctx, stage("pixels", "pixels_short",
                         "{\"name\": \"q\", \"output_names\": [\"a\", \"b\"]}"), "r");
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 2, 0), "r_p_0") == 0);

    /* All three outputs sanitise to "d_a_b": fallbacks, in slot order. */
    attach_ok(ctx, stage("dup_outputs", "dup", NULL), "d");
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 3, 0), "d_a_b") == 0);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 3, 1), "d_output1_1") == 0);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 3, 2), "d_output2_1") == 0);
    /* The same again: every first choice is taken by the model above. */
    attach_ok(ctx, stage("dup_outputs", "dup2", NULL), "d");
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 4, 0), "d_output0_1") == 0);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 4, 1), "d_output1_2") == 0);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 4, 2), "d_output2_2") == 0);

    /* A single-output key that is taken. */
    attach_ok(ctx, stage("nr_mean_4x4", "mean", NULL), NULL);
    CHECK_EQ_INT(attach(ctx, stage("nr_mean_4x4", "mean", NULL), NULL), -EEXIST);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"mean\" is already taken");
    CHECK_EQ_INT(attach(ctx, stage("nr_mean_4x4", "other", NULL), "px_p3"), -EEXIST);
    /* The legacy "output_name" attaches that output only, under the name. */
    attach_ok(ctx, stage("dup_outputs", "legacy", "{\"output_name\": \"a_b\"}"), NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_feature_count(ctx, 6), 1);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 6, 0), "legacy") == 0);
    CHECK_EQ_INT(attach(ctx, stage("dup_outputs", "legacy2", "{\"output_name\": \"zz\"}"), NULL),
                 -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"zz\" is not an output");
    /* Model keys belong to their model. */
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "d_output1_1", 0, 1.0), -EEXIST);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "dup.onnx");
    /* A key that is no feature name. */
    char long_name[300];
    memset(long_name, 'k', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    CHECK_EQ_INT(attach(ctx, stage("nr_mean_4x4", "long", NULL), long_name), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "longer than 255");
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 7);

    /* Routing: each value lands under its own key. A 2x2 ramp, and 4x4
     * constants for the others. */
    TestPic p2 = pic_new(2, 2, 8), p4 = pic_const(4, 4, 8, 51);
    pic_set(&p2, 0, 0, 10);
    pic_set(&p2, 1, 0, 20);
    pic_set(&p2, 0, 1, 30);
    pic_set(&p2, 1, 1, 40);
    VmafDnnContext *r = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(r, stage("pixels", "pixels", NULL), "px");
    CHECK_EQ_INT(vmaf_dnn_read_pictures(r, NULL, &p2.pic, 0), 0);
    for (unsigned i = 0; i < 4; i++)
        CHECK_NEAR(get(r, px[i], 0), 10.0 * (i + 1) / 255.0, 1e-6);
    vmaf_dnn_context_close(r);
    r = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(r, stage("dup_outputs", "dup", NULL), "d");
    attach_ok(r, stage("dup_outputs", "legacy", "{\"output_name\": \"a-b\"}"), NULL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(r, NULL, &p4.pic, 0), 0);
    CHECK_NEAR(get(r, "d_a_b", 0), 0.2, 1e-6);
    CHECK_NEAR(get(r, "d_output1_1", 0), 0.4, 1e-6);
    CHECK_NEAR(get(r, "d_output2_1", 0), 0.6, 1e-6);
    CHECK_NEAR(get(r, "legacy", 0), 0.6, 1e-6);
    /* The same frame again. */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(r, NULL, &p4.pic, 0), -EEXIST);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 0 was already read");
    vmaf_dnn_context_close(r);
    pic_free(&p2);
    pic_free(&p4);
    vmaf_dnn_context_close(ctx);

    /* Running out of fallbacks is -EEXIST (never -ENOMEM); stored features
     * count as taken. */
    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    char key[64];
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "e_a_b", 0, 0.0), 0);
    for (unsigned n = 1; n <= 99; n++) {
        snprintf(key, sizeof(key), "e_output0_%u", n);
        CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, key, 0, 0.0), 0);
    }
    attach_ok(ctx, stage("dup_outputs", "dup", NULL), "e");
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 0, 0), "e_output0_100") == 0);
    CHECK_EQ_INT(attach(ctx, stage("dup_outputs", "dup", NULL), "e"), -EEXIST);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "no free feature key");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "e_output0_100");
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 1);
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* Shape rules                                                              */
/* ------------------------------------------------------------------------ */

static void test_shape_rules(void)
{
    attach_fails("fixed_batch2", NULL, -ENOTSUP, "fixed batch of 2");
    attach_fails("rank3_input", NULL, -ENOTSUP,
                 "input \"x\" has rank 3; tiny models take NCHW images (rank 4) or feature "
                 "vectors (rank 2)");
    attach_fails("two_channel", NULL, -ENOTSUP,
                 "has 2 channels; a single-input image model takes one luma plane (C = 1)");
    attach_fails("symbolic_hw_mean", NULL, -ENOTSUP, "re-export the model at a fixed resolution");
    attach_fails("huge_hw", NULL, -ENOTSUP, "height of 40000");
    attach_fails("output_1x4", NULL, -ENOTSUP,
                 "output \"cols\" has shape [1,4]: attached tiny models must output scalars; use "
                 "the session API for tensors");
    attach_fails("symbolic_output", NULL, -ENOTSUP,
                 "output \"idx\" has shape [?] with a symbolic dim");
    /* ORT before 1.24 reports an undeclared shape as rank 0, which nobody can
     * tell from a scalar: there the model attaches and its one value scores. */
    if (vmaf_dnn_ort_api_version() >= 24) {
        attach_fails("score_unknown_rank", NULL, -ENOTSUP,
                     "output \"score\" has no known rank (the model declares no shape for it)");
    } else {
        VmafDnnContext *old = ctx_new(VMAF_DNN_RESIZE_NONE);
        CHECK_EQ_INT(attach(old, stage("score_unknown_rank", "unknown_rank", NULL), NULL), 0);
        vmaf_dnn_context_close(old);
    }
    attach_fails("three_images", NULL, -ENOTSUP, "more than two image");
    attach_fails("fr_mismatched", NULL, -ENOTSUP, "differ in size");
    attach_fails("fp16_image", NULL, -ENOTSUP, "FLOAT16");
    attach_fails("identity", NULL, -ENOTSUP, "has rank 1");
    attach_fails("nr_mean", "{\"kind\": \"fr\"}", -ENOTSUP, "kind \"fr\"");
    attach_fails("fr_diff", "{\"kind\": \"nr\"}", -ENOTSUP, "kind \"nr\"");
    attach_fails("fr_diff", "{\"input_names\": [\"first\", \"bogus\"]}", -EINVAL,
                 "\"bogus\" is not an input");
    attach_fails("fr_diff", "{\"input_names\": [\"first\"]}", -EINVAL, "lists 1 of");
    attach_fails("fr_diff", "{\"input_names\": [\"first\", \"first\"]}", -EINVAL, "twice");
    attach_fails("fv_weighted", NULL, -ENOTSUP, "lists no \"features\"");
    attach_fails("fv_weighted", "{\"features\": [\"a\", \"b\"], \"input_names\": [\"y\"]}",
                 -EINVAL, "entry \"y\" is not an input");
    attach_fails("fv_weighted", "{\"features\": [\"a\", \"b\", \"c\"]}", -ENOTSUP,
                 "takes 2 features; the sidecar lists 3");
    attach_fails("nr_mean", "{\"features\": [\"a\"]}", -EINVAL, "no feature-vector");
    attach_fails("fv_weighted", "{\"features\": [\"a\", \"b\"], \"cap_db_per_bpc\": [6, 12]}",
                 -ENOTSUP, "cap_db_per_bpc");

    /* A symbolic batch is fed as 1, and a symbolic first output dim with it. */
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("symbolic_batch_image", "sb", NULL), NULL);
    TestPic p = pic_const(4, 4, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 0), 0);
    CHECK_NEAR(get(ctx, "sb", 0), 0.2, 1e-6);
    /* FLOAT16 slots work with fp16_io. */
    VmafDnnConfig half;
    vmaf_dnn_default_config(&half);
    half.device = VMAF_DNN_DEVICE_CPU;
    half.fp16_io = 1;
    VmafDnnModelConfig m = {0};
    m.session = &half;
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("fp16_image", "half", NULL), &m), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 1), 0);
    CHECK_NEAR(get(ctx, "half", 1), 0.2, 1e-3);
    pic_free(&p);
    vmaf_dnn_context_close(ctx);
}

static void test_native_resolution(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_BILINEAR);
    attach_ok(ctx, stage("symbolic_hw_mean", "native", "{\"native_resolution\": true}"), NULL);
    TestPic a = pic_const(8, 6, 8, 51), b = pic_const(16, 6, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &a.pic, 0), 0);
    CHECK_NEAR(get(ctx, "native", 0), 0.2, 1e-6);
    /* Another size later is -ERANGE, resize mode or not. */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &b.pic, 1), -ERANGE);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 1 is 16x6");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "native resolution");
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &a.pic, 2), 0);
    CHECK_NEAR(get(ctx, "native", 2), 0.2, 1e-6);
    pic_free(&a);
    pic_free(&b);
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* Memory budget of per-frame buffers (policy max_memory_bytes)             */
/* ------------------------------------------------------------------------ */

/* A context whose models get `budget` as max_memory_bytes. */
static VmafDnnContext *ctx_budget(VmafDnnModelPolicy *policy, uint64_t budget,
                                  VmafDnnResize resize)
{
    vmaf_dnn_default_model_policy(policy);
    policy->max_memory_bytes = budget;
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device = VMAF_DNN_DEVICE_CPU;
    cfg.session.threads = 1;
    cfg.resize = resize;
    cfg.policy = policy;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    return ctx;
}

static void test_memory_budget(void)
{
    /* 32768 x 32768 fp32 is 4 GiB for the input plane alone: refused at
     * attach under the default 2 GiB, before any frame allocates it. */
    attach_fails("huge_input", "{\"resize\": \"bilinear\"}", -EDQUOT,
                 "input \"x\" of 32768x32768 needs 4294967296 bytes of per-frame buffers");
    attach_fails("huge_input", NULL, -EDQUOT, "above the policy's max_memory_bytes of 2147483648");
    VmafDnnModelPolicy policy;
    /* 0 is no limit: the same model attaches (nothing is allocated yet). */
    VmafDnnContext *ctx = ctx_budget(&policy, 0, VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("huge_input", "huge", NULL), NULL);
    vmaf_dnn_context_close(ctx);

    /* A 1080p model is far inside the default budget, and scores. */
    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("hd_mean", "hd", NULL), NULL);
    TestPic hd = pic_const(1920, 1080, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &hd.pic, 0), 0);
    CHECK_NEAR(get(ctx, "hd", 0), 0.2, 1e-3); /* ORT's fp32 sum of 2M samples */
    pic_free(&hd);
    vmaf_dnn_context_close(ctx);

    /* Native resolution: the first frame fixes the size, and is checked. A
     * refused frame stores nothing and fixes nothing. */
    const uint64_t mib4 = 4u << 20;
    ctx = ctx_budget(&policy, mib4, VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("symbolic_hw_mean", "native_b", "{\"native_resolution\": true}"), NULL);
    TestPic big = pic_const(1100, 1000, 8, 51), small = pic_const(512, 512, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 0), -EDQUOT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "input \"x\" at 1100x1000 for a 1100x1000 frame "
                       "needs 4400000 bytes");
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &small.pic, 0), 0);
    CHECK_NEAR(get(ctx, "native_b", 0), 0.2, 1e-3);
    vmaf_dnn_context_close(ctx);

    /* Resize scratch counts: a 4x4 model fed a 1024x1024 frame needs the
     * frame's plane (4 MiB), the resized plane and the row pass. */
    ctx = ctx_budget(&policy, mib4, VMAF_DNN_RESIZE_BILINEAR);
    attach_ok(ctx, stage("nr_mean_4x4", "small_b", NULL), NULL);
    TestPic mib = pic_const(1024, 1024, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &mib.pic, 0), -EDQUOT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "at 4x4 for a 1024x1024 frame needs 4210752 bytes "
                       "of per-frame buffers (fp32 planes and resize scratch)");
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &small.pic, 0), 0);
    CHECK_NEAR(get(ctx, "small_b", 0), 0.2, 1e-6);
    pic_free(&mib);
    pic_free(&big);
    pic_free(&small);
    vmaf_dnn_context_close(ctx);
}

/* The process's resident memory in bytes (/proc/self/statm), -1 when it
 * cannot be read: the current figure, not ru_maxrss's peak, which earlier
 * tests (a 1080p frame, ORT's sessions) have already raised. */
static long long resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, resident = -1;
    if (f && fscanf(f, "%lld %lld", &size, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* Appends one value at the last frame a context holds under names
 * "<prefix>0", "<prefix>1", ... until one is refused or `max` are stored,
 * or the process's resident memory has grown by more than `rss_cap` (the
 * dense store grew it by 16 MiB a name: stop there rather than take the
 * machine). Returns how many were stored; *rc is the refusal's code. */
static unsigned append_high(VmafDnnContext *ctx, const char *prefix, unsigned max,
                            long long rss_cap, int *rc, long long *rss_growth)
{
    const long long rss0 = resident_bytes();
    unsigned n = 0;
    *rc = 0;
    *rss_growth = 0;
    while (n < max) {
        char name[32];
        snprintf(name, sizeof(name), "%s%u", prefix, n);
        if ((*rc = vmaf_dnn_feature_append(ctx, name, (1u << 24) - 1, (double)n)))
            break;
        n++;
        const long long rss = resident_bytes();
        if (rss0 >= 0 && rss >= 0 && rss - rss0 > *rss_growth)
            *rss_growth = rss - rss0;
        if (*rss_growth > rss_cap)
            break;
    }
    return n;
}

/* The feature store is bounded by the policy's max_memory_bytes, and sparse:
 * a value at frame 2^24 - 1 used to allocate a dense array of 2^24 frames
 * (151 MB, 16 MiB of it touched) per name, so a caller could take the
 * machine with feature_append alone. */
/* Resident growth the store checks allow: ThreadSanitizer maps shadow and
 * meta memory for every byte the program touches (several times the byte),
 * so its runs get a proportionally larger cap; the old dense store still
 * passed it within the first few dozen names. */
#if defined(__SANITIZE_THREAD__)
#define RSS_CAP_MIB 2048
#else
#define RSS_CAP_MIB 256
#endif

static void test_store_budget(void)
{
    const long long mib = 1 << 20;
    const long long rss_cap = RSS_CAP_MIB * mib;
    const unsigned last = (1u << 24) - 1;
    int rc;
    long long grew;
    double v;

    /* Default policy (2 GiB): 1000 names at the last frame are stored, in
     * about 68 KiB each, and the process barely grows. */
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    unsigned n = append_high(ctx, "hi", 1000, rss_cap, &rc, &grew);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(n, 1000);
    CHECK(grew <= rss_cap);
    const size_t held = vdnn_context_feature_bytes(ctx);
    CHECK(held > 1000 * (size_t)32768 && held < 1000 * (size_t)80 * 1024);
    fprintf(stderr, "store: 1000 names at frame %u hold %zu bytes; resident grew %lld bytes\n",
            last, held, grew);
    CHECK(vmaf_dnn_feature_get(ctx, "hi999", last, &v) == 0 && v == 999.0);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 1u << 24);
    vmaf_dnn_context_close(ctx);

    /* A 4 MiB budget: refused with -EDQUOT once the store would pass it,
     * nothing allocated for the refused name, and the store within it. */
    VmafDnnModelPolicy policy;
    ctx = ctx_budget(&policy, 4 * mib, VMAF_DNN_RESIZE_NONE);
    n = append_high(ctx, "b", 1000, rss_cap, &rc, &grew);
    CHECK_EQ_INT(rc, -EDQUOT);
    CHECK(n > 10 && n < 100);
    fprintf(stderr, "store: a 4 MiB budget took %u names at frame %u\n", n, last);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "feature \"b");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "-byte budget (the policy's max_memory_bytes)");
    CHECK(vdnn_context_feature_bytes(ctx) <= (size_t)4 * mib);
    CHECK_EQ_INT(vmaf_dnn_feature_count(ctx), n);
    CHECK(vmaf_dnn_feature_get(ctx, "b0", last, &v) == 0 && v == 0.0);
    /* Frames beside a stored one cost nothing more (its leaf holds them). */
    const size_t full = vdnn_context_feature_bytes(ctx);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "b0", last - 4095, 1.0), 0);
    CHECK_EQ_INT(vdnn_context_feature_bytes(ctx), full);
    /* reset empties the store and keeps its budget. */
    CHECK_EQ_INT(vmaf_dnn_context_reset(ctx), 0);
    CHECK(vdnn_context_feature_bytes(ctx) < 4096);
    const unsigned again = append_high(ctx, "b", 1000, rss_cap, &rc, &grew);
    CHECK_EQ_INT(rc, -EDQUOT);
    CHECK_EQ_INT(again, n);
    vmaf_dnn_context_close(ctx);

    /* 0 is no limit, as for sessions: sparse storage still keeps it small. */
    ctx = ctx_budget(&policy, 0, VMAF_DNN_RESIZE_NONE);
    n = append_high(ctx, "z", 200, rss_cap, &rc, &grew);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(n, 200);
    vmaf_dnn_context_close(ctx);

    /* Models' outputs go through the same store: frames read at indexes a
     * leaf apart each cost a leaf, until read_pictures is refused. */
    ctx = ctx_budget(&policy, 512 * 1024, VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean", "nr_far", NULL), NULL);
    TestPic p = pic_const(8, 8, 8, 51);
    rc = 0;
    unsigned frames = 0;
    for (unsigned k = 0; k < 64 && !rc; k++) {
        rc = vmaf_dnn_read_pictures(ctx, NULL, &p.pic, k * 4096 + 4095);
        frames += rc == 0;
    }
    CHECK_EQ_INT(rc, -EDQUOT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "feature \"nr_far\"");
    CHECK(frames >= 4 && frames < 32);
    fprintf(stderr, "store: a 512 KiB budget took %u frames a leaf apart\n", frames);
    CHECK(vdnn_context_feature_bytes(ctx) <= 512 * 1024);
    CHECK_NEAR(get(ctx, "nr_far", 4095), 0.2, 1e-6);
    pic_free(&p);
    vmaf_dnn_context_close(ctx);
}

/* A context's session config and policy are checked at open, with the
 * field named, not at the first attach. */
static void test_config_at_open(void)
{
    VmafDnnContext *ctx = (VmafDnnContext *)&ctx;
    VmafDnnContext *const sentinel = ctx;
    VmafDnnContextConfig cfg;
    VmafDnnModelPolicy policy;

    vmaf_dnn_default_context_config(&cfg);
    cfg.session.threads = VMAF_DNN_MAX_THREADS + 1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "context config: session.threads must be 0..256 "
                       "(got 257)");
    cfg.session.threads = -1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "session.threads");
    /* threads replaces the sessions' threads, but a bad value is still one. */
    cfg.threads = 2;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);

    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device_index = -1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "context config: session.device_index must be "
                       ">= 0 (got -1)");
    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device = (VmafDnnDevice)99;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "context config: session.device 99 is unknown");
    cfg.session.device = (VmafDnnDevice)-1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "session.device -1");

    vmaf_dnn_default_context_config(&cfg);
    cfg.policy = &policy;
    vmaf_dnn_default_model_policy(&policy);
    policy.max_nodes = 0;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "context config: policy: ");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "max_nodes to 0");
    vmaf_dnn_default_model_policy(&policy);
    policy.max_model_bytes = 0;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "max_model_bytes");
    vmaf_dnn_default_model_policy(&policy);
    policy.max_loop_nodes = VMAF_DNN_MAX_LOOP_NODES + 1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "max_loop_nodes");
    vmaf_dnn_default_model_policy(&policy);
    policy.max_subgraph_depth = VMAF_DNN_MAX_SUBGRAPH_DEPTH + 1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "max_subgraph_depth");
    const char *const evil[] = {"Add", "com.evil:Exec"};
    vmaf_dnn_default_model_policy(&policy);
    policy.allowed_ops = evil;
    policy.n_allowed_ops = 2;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "com.evil:Exec");
    policy.allowed_ops = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "n_allowed_ops");
    CHECK(ctx == sentinel);

    /* What a session accepts, a context accepts; a narrowed policy is fine. */
    vmaf_dnn_default_model_policy(&policy);
    policy.allowed_ops = evil;
    policy.n_allowed_ops = 1;
    policy.max_nodes = 1;
    policy.max_loop_nodes = 0;
    cfg.session.device = VMAF_DNN_DEVICE_POLICY_MIN_POWER;
    cfg.session.device_index = 3;
    cfg.session.threads = VMAF_DNN_MAX_THREADS;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    CHECK(ctx != sentinel);
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* Resize modes through the context                                         */
/* ------------------------------------------------------------------------ */

static void test_resize_modes(void)
{
    TestPic big = pic_const(8, 8, 8, 51);
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean_4x4", "m4", NULL), NULL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 0), -ERANGE);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 0 is 8x8, model ");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "m4.onnx takes 4x4; choose a resize mode");
    vmaf_dnn_context_close(ctx);

    /* Precedence: model config > sidecar > context. */
    ctx = ctx_new(VMAF_DNN_RESIZE_BILINEAR);
    VmafDnnModelConfig m = {0};
    attach_ok(ctx, stage("nr_mean_4x4", "ctx_default", NULL), NULL);
    attach_ok(ctx, stage("nr_mean_4x4", "sidecar", "{\"resize\": \"nearest\"}"), NULL);
    m.resize = VMAF_DNN_RESIZE_BICUBIC;
    m.name = "override";
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("nr_mean_4x4", "ov", "{\"resize\": \"none\"}"),
                                         &m), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 0), 0);
    CHECK_NEAR(get(ctx, "ctx_default", 0), 0.2, 1e-6); /* constant stays constant */
    CHECK_NEAR(get(ctx, "sidecar", 0), 0.2, 1e-6);
    CHECK_NEAR(get(ctx, "override", 0), 0.2, 1e-6);
    m.resize = VMAF_DNN_RESIZE_NONE;
    m.name = "strict";
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("nr_mean_4x4", "strict", NULL), &m), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 1), -ERANGE);
    /* The models before the failing one kept their scores of frame 1. */
    CHECK_NEAR(get(ctx, "override", 1), 0.2, 1e-6);
    vmaf_dnn_context_close(ctx);

    /* A 4x4 ramp v = 10x + 40y into the 2x2 pixel model. */
    TestPic ramp = pic_new(4, 4, 8);
    for (unsigned y = 0; y < 4; y++)
        for (unsigned x = 0; x < 4; x++)
            pic_set(&ramp, x, y, 10 * x + 40 * y);
    static const char *const px[4] = {"px_p_0", "px_p_1", "px_p_2", "px_p3"};
    static const double bilinear[4] = {25, 45, 105, 125}; /* the 2x2 block means */
    static const double nearest[4] = {50, 70, 130, 150};  /* samples (2x+1, 2y+1) */
    for (int mode = 0; mode < 2; mode++) {
        ctx = ctx_new(mode ? VMAF_DNN_RESIZE_NEAREST : VMAF_DNN_RESIZE_BILINEAR);
        attach_ok(ctx, stage("pixels", "pixels", NULL), "px");
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &ramp.pic, 0), 0);
        for (unsigned i = 0; i < 4; i++)
            CHECK_NEAR(get(ctx, px[i], 0), (mode ? nearest : bilinear)[i] / 255.0, 1e-6);
        vmaf_dnn_context_close(ctx);
    }
    pic_free(&ramp);
    pic_free(&big);
}

/* ------------------------------------------------------------------------ */
/* Feature-vector models                                                    */
/* ------------------------------------------------------------------------ */

static void check_reports(VmafDnnContext *ctx)
{
    char path[PATH_MAX + 32];
    size_t len = 0;
    char *text;

    snprintf(path, sizeof(path), "%s/report.json", tmp_dir);
    CHECK_EQ_INT(vmaf_dnn_write_output(ctx, path, VMAF_DNN_OUTPUT_JSON), 0);
    text = slurp(path, &len);
    VdnnJson *doc = NULL;
    CHECK_EQ_INT(vdnn_json_parse(text, len, len, "report", &doc), 0);
    const VdnnJson *frames = vdnn_json_member(doc, "frames");
    CHECK_EQ_INT(vdnn_json_count(frames), 2);
    const VdnnJson *m0 = vdnn_json_member(vdnn_json_at(frames, 0), "metrics");
    const VdnnJson *m1 = vdnn_json_member(vdnn_json_at(frames, 1), "metrics");
    CHECK_NEAR(vdnn_json_number(vdnn_json_member(m0, "fv")), 21.0, 1e-6);
    CHECK(vdnn_json_member(m1, "fv") == NULL);   /* failed: absent, not 0 */
    CHECK(vdnn_json_member(m1, "f0") != NULL);
    CHECK_NEAR(vdnn_json_number(vdnn_json_member(doc, "fps")), 25.0, 1e-9);
    CHECK(vdnn_json_member(vdnn_json_member(doc, "pooled_metrics"), "fv") != NULL);
    vdnn_json_free(doc);
    free(text);

    snprintf(path, sizeof(path), "%s/report.xml", tmp_dir);
    CHECK_EQ_INT(vmaf_dnn_write_output(ctx, path, VMAF_DNN_OUTPUT_XML), 0);
    text = slurp(path, &len);
    CHECK_STR_CONTAINS(text, "<frame frameNum=\"1\" f0=\"5.000000\" />");
    CHECK(text && len > 8 && strcmp(text + len - 8, "</VMAF>\n") == 0);
    free(text);

    snprintf(path, sizeof(path), "%s/report.csv", tmp_dir);
    CHECK_EQ_INT(vmaf_dnn_write_output(ctx, path, VMAF_DNN_OUTPUT_CSV), 0);
    text = slurp(path, &len);
    static const char csv[] = "Frame,f0,f1,fv,\n0,1.000000,2.000000,21.000000,\n1,5.000000,,,\n";
    CHECK(text && strcmp(text, csv) == 0);
    if (text && strcmp(text, csv))
        fprintf(stderr, "csv: %s", text);
    free(text);

    FILE *f = tmpfile();
    CHECK_EQ_INT(vmaf_dnn_write_output_file(ctx, f, VMAF_DNN_OUTPUT_CSV), 0);
    CHECK(f && ftell(f) > 0);
    if (f)
        fclose(f);
}

static void test_feature_vectors(void)
{
    /* Caller-pushed features; a missing one fails the frame. */
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("fv_weighted", "fv", "{\"features\": [\"f0\", \"f1\"]}"), NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 0), VMAF_DNN_MODEL_FEATURES);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f0", 0, 1.0), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f1", 0, 2.0), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f1", 0, 2.0), -EEXIST);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, NULL, 0), 0); /* no picture needed */
    CHECK_NEAR(get(ctx, "fv", 0), 21.0, 1e-5);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f0", 1, 5.0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, NULL, 1), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "needs feature \"f1\" at frame 1, which nobody "
                                              "produced");
    double v = 123.0;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "fv", 1, &v), -ENOENT);
    CHECK(v == 123.0);
    /* Feature enumeration, then the reports of what is stored. */
    CHECK_EQ_INT(vmaf_dnn_feature_count(ctx), 3);
    CHECK(strcmp(vmaf_dnn_feature_name(ctx, 2), "fv") == 0);
    CHECK(vmaf_dnn_feature_name(ctx, 3) == NULL);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 2);
    check_reports(ctx);
    vmaf_dnn_context_close(ctx);

    /* (x - mean) / std scaling. */
    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("fv_weighted", "fvs",
                         "{\"features\": [\"f0\", \"f1\"], \"feature_mean\": [1, 2], "
                         "\"feature_std\": [2, 4]}"), NULL);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f0", 0, 5.0), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f1", 0, 10.0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, NULL, 0), 0);
    CHECK_NEAR(get(ctx, "fvs", 0), 2.0 + 10.0 * 2.0, 1e-5);
    vmaf_dnn_context_close(ctx);

    /* A feature produced by an earlier model in the same frame; an image
     * model with a codec block. */
    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    TestPic p = pic_const(8, 8, 8, 255), q = pic_const(4, 4, 8, 0);
    attach_ok(ctx, stage("nr_mean", "nr_mean", NULL), "f0");
    attach_ok(ctx, stage("fv_weighted", "fv", "{\"features\": [\"f0\", \"f1\"]}"), NULL);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "f1", 0, 3.0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, NULL, 0), -EINVAL); /* nr_mean needs one */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 0), 0);
    CHECK_NEAR(get(ctx, "fv", 0), 1.0 + 30.0, 1e-5);
    vmaf_dnn_context_close(ctx);

    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("image_codec", "codec", "{\"features\": [\"c0\", \"c1\", \"c2\"]}"),
              NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 0), VMAF_DNN_MODEL_NR);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "c0", 0, 1.0), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "c1", 0, 0.0), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "c2", 0, 1.0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &q.pic, 0), 0);
    CHECK_NEAR(get(ctx, "codec", 0), 101.0, 1e-5);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &q.pic, 1), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"c0\" at frame 1");
    pic_free(&p);
    pic_free(&q);
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* Score cap, pooling, flush                                                */
/* ------------------------------------------------------------------------ */

static void test_cap(void)
{
    /* cap = 0.01 * bpc: 0.08 at 8 bits, 0.10 at 10 bits; every output. */
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("fr_diff", "capped", "{\"cap_db_per_bpc\": [0.01, 0]}"), NULL);
    TestPic white = pic_const(8, 8, 8, 255), black = pic_const(8, 8, 8, 0),
            grey = pic_const(8, 8, 8, 10);
    TestPic white10 = pic_const(8, 8, 10, 1023), black10 = pic_const(8, 8, 10, 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &white.pic, &black.pic, 0), 0);
    CHECK_NEAR(get(ctx, "capped", 0), 0.08, 1e-12);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &white10.pic, &black10.pic, 1), 0);
    CHECK_NEAR(get(ctx, "capped", 1), 0.10, 1e-12);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &grey.pic, &black.pic, 2), 0);
    CHECK_NEAR(get(ctx, "capped", 2), 10.0 / 255.0, 1e-6); /* under the cap: unchanged */
    vmaf_dnn_context_close(ctx);

    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("dup_outputs", "dup", "{\"cap_db_per_bpc\": [0, 0.5]}"), "d");
    TestPic p = pic_const(4, 4, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 0), 0);
    CHECK_NEAR(get(ctx, "d_a_b", 0), 0.2, 1e-6);
    CHECK_NEAR(get(ctx, "d_output1_1", 0), 0.4, 1e-6);
    CHECK_NEAR(get(ctx, "d_output2_1", 0), 0.5, 1e-12);
    vmaf_dnn_context_close(ctx);
    pic_free(&p);
    pic_free(&white);
    pic_free(&black);
    pic_free(&grey);
    pic_free(&white10);
    pic_free(&black10);
}

static void test_pool_and_flush(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean", "nr_mean", NULL), NULL);
    static const unsigned values[3] = {0, 255, 51};
    for (unsigned i = 0; i < 3; i++) {
        TestPic p = pic_const(8, 8, 8, values[i]);
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 2 * i), 0); /* gaps: 1, 3 */
        pic_free(&p);
    }
    double v;
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_MIN, 0, 100, &v), 0);
    CHECK_NEAR(v, 0.0, 1e-9);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_MAX, 0, 100, &v), 0);
    CHECK_NEAR(v, 1.0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_MEAN, 0, 100, &v), 0);
    CHECK_NEAR(v, 1.2 / 3.0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_HARMONIC_MEAN, 0, 100, &v),
                 0);
    CHECK_NEAR(v, 3.0 / (1.0 + 1.0 / 2.0 + 1.0 / 1.2) - 1.0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_MEAN, 2, 2, &v), 0);
    CHECK_NEAR(v, 1.0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", (VmafDnnPoolMethod)9, 0, 1, &v), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_MEAN, 3, 1, &v), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nr_mean", VMAF_DNN_POOL_MEAN, 1, 1, &v), -ENOENT);
    CHECK_EQ_INT(vmaf_dnn_feature_pool(ctx, "nope", VMAF_DNN_POOL_MEAN, 0, 1, &v), -ENOENT);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 5);

    TestPic p = pic_const(8, 8, 8, 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &p.pic, 9), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "flushed");
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "late", 9, 1.0), -EINVAL);
    CHECK_EQ_INT(attach(ctx, stage("nr_mean_4x4", "late", NULL), NULL), -EINVAL);
    CHECK_NEAR(get(ctx, "nr_mean", 2), 1.0, 1e-6);
    FILE *f = tmpfile();
    CHECK_EQ_INT(vmaf_dnn_write_output_file(ctx, f, VMAF_DNN_OUTPUT_XML), 0);
    if (f)
        fclose(f);
    pic_free(&p);
    vmaf_dnn_context_close(ctx);
}

/* ------------------------------------------------------------------------ */
/* The built-in models, with their real sidecars                            */
/* ------------------------------------------------------------------------ */

static const char *builtin(const char *name)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s.onnx", builtin_dir, name);
    return path;
}

static void test_builtin_models(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, builtin("psnr_y"), NULL);
    attach_ok(ctx, builtin("ssim_y"), NULL);
    attach_ok(ctx, builtin("sharpness_nr"), NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 2), VMAF_DNN_MODEL_NR);

    /* One step of 1 everywhere: MSE = 1 / 255^2, PSNR = 20 log10(255). */
    TestPic ref = pic_const(64, 48, 8, 100), dist = pic_const(64, 48, 8, 101);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, 0), 0);
    CHECK_NEAR(get(ctx, "psnr_y", 0), 20.0 * log10(255.0), 1e-4);
    CHECK_NEAR(get(ctx, "sharpness_nr", 0), 0.0, 1e-12);
    /* Identical frames: 200 dB from the model, capped at 6 * bpc + 12. */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &ref.pic, 1), 0);
    CHECK_NEAR(get(ctx, "psnr_y", 1), 60.0, 1e-12);
    CHECK_NEAR(get(ctx, "ssim_y", 1), 1.0, 1e-6);
    TestPic ref10 = pic_const(64, 48, 10, 700), ref16 = pic_const(64, 48, 16, 700);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref10.pic, &ref10.pic, 2), 0);
    CHECK_NEAR(get(ctx, "psnr_y", 2), 72.0, 1e-12);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref16.pic, &ref16.pic, 3), 0);
    CHECK_NEAR(get(ctx, "psnr_y", 3), 108.0, 1e-12);
    /* A pseudo-random frame against a reference computed here. */
    uint32_t seed = 12345;
    double sse = 0.0;
    for (unsigned y = 0; y < 48; y++)
        for (unsigned x = 0; x < 64; x++) {
            seed = seed * 1664525u + 1013904223u;
            unsigned v = seed >> 24, d = v ^ ((seed >> 8) & 7u);
            pic_set(&ref, x, y, v);
            pic_set(&dist, x, y, d);
            sse += ((double)v - d) * ((double)v - d);
        }
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, 4), 0);
    CHECK_NEAR(get(ctx, "psnr_y", 4), 10.0 * log10(255.0 * 255.0 / (sse / (64.0 * 48.0))), 1e-4);
    CHECK(get(ctx, "sharpness_nr", 4) > 0.0);
    /* Native resolution: the first frame set 64x48. */
    TestPic other = pic_const(32, 48, 8, 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &other.pic, &other.pic, 5), -ERANGE);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "native resolution");
    pic_free(&ref);
    pic_free(&dist);
    pic_free(&ref10);
    pic_free(&ref16);
    pic_free(&other);
    vmaf_dnn_context_close(ctx);
}

/* Borrows plane 0 of `u` and `v` as the U and V planes of `y`. */
static void pic_set_chroma(TestPic *y, const TestPic *u, const TestPic *v)
{
    const TestPic *c[2] = {u, v};
    for (int i = 1; i < 3; i++) {
        y->pic.data[i] = c[i - 1]->pic.data[0];
        y->pic.stride[i] = c[i - 1]->pic.stride[0];
        y->pic.w[i] = c[i - 1]->pic.w[0];
        y->pic.h[i] = c[i - 1]->pic.h[0];
    }
}

/* psnr reads U and V at their own (4:2:0) size; frames below a model's
 * min_width x min_height get NaN from it and the others still score. */
static void test_builtin_chroma_and_small_frames(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, builtin("psnr"), NULL);
    attach_ok(ctx, builtin("ssim_y"), NULL);
    CHECK_EQ_INT((int)vmaf_dnn_tiny_model_count(ctx), 4); /* psnr_y, psnr_cb, psnr (cr), ssim_y */
    TestPic ry = pic_const(64, 48, 8, 100), dy = pic_const(64, 48, 8, 101);
    TestPic ru = pic_const(32, 24, 8, 50), du = pic_const(32, 24, 8, 52);
    TestPic rv = pic_const(32, 24, 8, 200), dv = pic_const(32, 24, 8, 204);
    /* Without U and V the chroma models say what they miss. */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ry.pic, &dy.pic, 0), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "plane U of the distorted picture");
    pic_set_chroma(&ry, &ru, &rv);
    pic_set_chroma(&dy, &du, &dv);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ry.pic, &dy.pic, 0), 0);
    CHECK_NEAR(get(ctx, "psnr_y", 0), 20.0 * log10(255.0 / 1.0), 1e-4);
    CHECK_NEAR(get(ctx, "psnr_cb", 0), 20.0 * log10(255.0 / 2.0), 1e-4);
    CHECK_NEAR(get(ctx, "psnr_cr", 0), 20.0 * log10(255.0 / 4.0), 1e-4);
    /* Chroma planes of other sizes in the two pictures are refused. */
    TestPic su = pic_const(30, 24, 8, 50);
    pic_set_chroma(&ry, &su, &rv);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ry.pic, &dy.pic, 1), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "plane U is 30x24 in the reference");
    pic_free(&ry);
    pic_free(&dy);
    vmaf_dnn_context_close(ctx);

    /* 10x10: psnr scores, ssim_y (11x11 window) gets NaN, the run goes on. */
    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, builtin("ssim_y"), NULL);
    attach_ok(ctx, builtin("psnr_y"), NULL);
    TestPic sr = pic_const(10, 10, 8, 100), sd = pic_const(10, 10, 8, 101);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &sr.pic, &sd.pic, 0), 0);
    CHECK(isnan(get(ctx, "ssim_y", 0)));
    CHECK_NEAR(get(ctx, "psnr_y", 0), 20.0 * log10(255.0), 1e-4);
    /* A native-resolution model did not lock onto the frame it skipped. */
    TestPic br = pic_const(16, 16, 8, 100);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &br.pic, &br.pic, 1), -ERANGE); /* psnr_y: 10x10 */
    VmafDnnContext *ssim = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ssim, builtin("ssim_y"), NULL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ssim, &sr.pic, &sd.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ssim, &br.pic, &br.pic, 1), 0);
    CHECK_NEAR(get(ssim, "ssim_y", 1), 1.0, 1e-6);
    unsigned mw = 0, mh = 0;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_min_size(ssim, 0, &mw, &mh), 0);
    CHECK_EQ_INT((int)mw, 11);
    CHECK_EQ_INT((int)mh, 11);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_min_size(ssim, 1, &mw, &mh), -EINVAL);
    vmaf_dnn_context_close(ssim);
    TestPic *all[] = {&ru, &du, &rv, &dv, &su, &sr, &sd, &br};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        pic_free(all[i]);
    vmaf_dnn_context_close(ctx);
}

/* {"value": "device_type"}: the hardware of the model's session, from its
 * attached_ep (the EP table's entries, plugin names by their suffix). On this
 * machine's CPU EP the model reads 0, where its "bpc" source would read 8;
 * the value needs no picture. */
static void test_device_type(void)
{
    static const struct { const char *attached; int type; } names[] = {
        {"CPU", 0}, {"CUDA", 1}, {"ROCm", 1}, {"OpenVINO:CPU", 0}, {"OpenVINO:GPU", 1},
        {"OpenVINO:NPU", 2}, {"WebGpu:GPU", 1}, {"NvTensorRTRTX:GPU", 1}, {"MIGraphX:GPU", 1},
        {"ORT-policy", 0}, {"SomeVendor:GPU", 1}, {"SomeVendor:NPU", 2}, {":GPU", 0},
        {"GPU", 0}, {"", 0}, {NULL, 0},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK_EQ_INT(vdnn_ort_device_type(names[i].attached), names[i].type);

    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    const char *path = stage("temporal_diff", "device",
                             "{\"native_resolution\": true, \"output_keys\": [\"m\", \"kind\"],"
                             " \"input_sources\": {\"prev\": {\"picture\": \"distorted\","
                             " \"offset\": -1}, \"bpc\": {\"value\": \"device_type\"}}}");
    attach_ok(ctx, path, NULL);
    CHECK(strcmp(vmaf_dnn_tiny_model_attached_ep(ctx, 0), "CPU") == 0);
    TestPic d = pic_const(16, 16, 8, 40);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0), 0);
    CHECK(get(ctx, "kind", 0) == 0.0);
    pic_free(&d);
    vmaf_dnn_context_close(ctx);

    /* Any other "value" is refused, naming the four. */
    attach_fails("temporal_diff", "{\"input_sources\": {\"bpc\": {\"value\": \"device\"}}}",
                 -EINVAL, "\"device_type\"");
}

/* Large blocks ORT frees are kept for reuse while a session lives
 * (csrc/block_cache.h: a model asks for the same ones every run) and all
 * freed when the last session closes. image_invert's output is a new
 * 512x512 plane each run; the first run's is freed by the second. */
static void test_freed_blocks_kept_while_sessions_live(void)
{
    CHECK(vdnn_block_cache_bytes() == 0); /* earlier tests' sessions took theirs */
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.device = VMAF_DNN_DEVICE_CPU;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/image_invert.onnx", model_dir);
    VmafDnnSession *s = NULL;
    CHECK_EQ_INT(vmaf_dnn_session_open(&s, path, &cfg), 0);
    if (!s)
        return;
    static float x[512 * 512], y[512 * 512];
    const int64_t shape[4] = {1, 1, 512, 512};
    const VmafDnnInput in = {NULL, x, shape, 4};
    size_t after_second = 0;
    for (int run = 0; run < 4; run++) {
        VmafDnnOutput o = {.name = NULL, .data = y, .capacity = 512 * 512};
        CHECK_EQ_INT(vmaf_dnn_session_run(s, &in, 1, &o, 1), 0);
        CHECK(y[0] == 1.0f);
        if (run == 1)
            after_second = vdnn_block_cache_bytes();
    }
    CHECK(after_second >= sizeof(x));
    /* Reused, not piled up: each run takes back what the one before freed. */
    CHECK(vdnn_block_cache_bytes() == after_second);
    vmaf_dnn_session_close(s);
    CHECK(vdnn_block_cache_bytes() == 0);
}

/* vmaf_dnn_check_output sees the attached models' keys before any frame
 * (test_output.c checks stored features): a model keyed "Frame", or two
 * keyed "=x" and "'=x", cannot go into one CSV report; before, that was
 * found only when the report was written, after every frame was scored. */
static void test_check_output_before_scoring(void)
{
    VmafDnnContext *ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean_4x4", "frame_model", NULL), "Frame");
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_CSV, NULL, 0), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "feature name \"Frame\" clashes with the CSV");
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, NULL, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_XML, NULL, 0), 0);
    vmaf_dnn_context_close(ctx);
    ctx = ctx_new(VMAF_DNN_RESIZE_NONE);
    attach_ok(ctx, stage("nr_mean_4x4", "q1", NULL), "=x");
    attach_ok(ctx, stage("nr_mean_4x4", "q2", NULL), "'=x");
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_CSV, NULL, 0), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "would be the same CSV column");
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_XML, NULL, 0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, NULL, 0), 0);
    vmaf_dnn_context_close(ctx);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [BUILTIN_DIR]\n", argv[0]);
        return 2;
    }
    if (!vmaf_dnn_available()) { /* every test below needs it: say why once */
        fprintf(stderr, "%s\n", vmaf_dnn_last_error());
        return 1;
    }
    if (!realpath(argv[1], model_dir) || !mkdtemp(tmp_dir)) {
        perror(argv[1]);
        return 2;
    }
    test_normalise();
    test_resize_filters();
    test_null_safety();
    test_picture_checks();
    test_planes();
    test_bit_depths();
    test_output_keys();
    test_shape_rules();
    test_native_resolution();
    test_memory_budget();
    test_freed_blocks_kept_while_sessions_live();
    test_store_budget();
    test_config_at_open();
    test_resize_modes();
    test_feature_vectors();
    test_cap();
    test_pool_and_flush();
    test_device_type();
    test_samples_above_the_depth();
    test_a_sample_changed_while_checked();
    test_check_output_before_scoring();
    if (argc > 2) {
        builtin_dir = argv[2];
        test_builtin_models();
        test_builtin_chroma_and_small_frames();
        test_negative_strides();
    }
    remove_tmp_dir();
    return check_report();
}
