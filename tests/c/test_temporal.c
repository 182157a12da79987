/* Models that read other frames than the one they score (vmafdnn/context.h,
 * "Frame offsets"): past pictures from a model's history, a bit-depth value
 * input, features ahead of the frame with delayed emission and flush, frame
 * order, failures in the middle of a sequence, "output_keys" and "requires".
 *
 * usage: test_temporal MODEL_DIR (the models of tests/models/factory.py;
 * sidecars are written by this test beside copies in a temporary directory).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"
#include "frame_fixture.h"

static char tmp_dir[] = "/tmp/vmafdnn-temporal-XXXXXX";

static const char *stage(const char *name, const char *as, const char *sidecar)
{
    return stage_model(tmp_dir, name, as, sidecar);
}

/* A w x h 8-bit picture with every sample `v`. */
typedef struct Pic {
    VmafDnnPicture pic;
    unsigned char buf[64 * 64];
} Pic;

static void pic_set(Pic *p, unsigned w, unsigned h, unsigned v)
{
    memset(p, 0, sizeof(*p));
    memset(p->buf, (int)v, sizeof(p->buf));
    p->pic.data[0] = p->buf;
    p->pic.stride[0] = (ptrdiff_t)w;
    p->pic.w[0] = w;
    p->pic.h[0] = h;
    p->pic.bpc = 8;
}

static int read_level(VmafDnnContext *ctx, unsigned v, unsigned index)
{
    Pic p;
    pic_set(&p, 8, 8, v);
    return vmaf_dnn_read_pictures(ctx, NULL, &p.pic, index);
}

/* VmafDnnContextConfig.threads of the contexts the tests open: the tests
 * that do not look at when a failure is reported run with frames in flight
 * too, where they must observe the very same scores. */
static int frame_threads;

static VmafDnnContext *ctx_new(void)
{
    return open_context(frame_threads);
}

static double get(const VmafDnnContext *ctx, const char *name, unsigned index)
{
    double v = NAN;
    if (vmaf_dnn_feature_get(ctx, name, index, &v))
        return NAN;
    return v;
}

/* prev is fed from the distorted picture `offset` frames back. */
static const char *diff_sidecar(int offset)
{
    static char text[512];
    snprintf(text, sizeof(text),
             "{\"native_resolution\": true, \"output_keys\": [\"m\", \"bits\"],"
             " \"input_sources\": {\"prev\": {\"picture\": \"distorted\", \"offset\": %d},"
             " \"bpc\": {\"value\": \"bpc\"}}}", offset);
    return text;
}

/* "m" of frame t is mean(frame t) - mean(frame t + offset), the earlier one
 * clamped to the first frame; "bits" is the bit depth. */
static void test_past_pictures(void)
{
    static const unsigned level[] = {10, 40, 30, 100, 0};
    for (int offset = -1; offset >= -2; offset--) {
        VmafDnnContext *ctx = ctx_new();
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff",
                                                        diff_sidecar(offset)), NULL), 0);
        CHECK_STR_CONTAINS(vmaf_dnn_tiny_model_feature_name(ctx, 0, 0), "m");
        CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 0), VMAF_DNN_MODEL_NR);
        for (unsigned t = 0; t < 5; t++)
            CHECK_EQ_INT(read_level(ctx, level[t], t), 0);
        for (unsigned t = 0; t < 5; t++) {
            const int back = (int)t + offset < 0 ? 0 : (int)t + offset;
            CHECK_NEAR(get(ctx, "m", t), ((double)level[t] - level[back]) / 255.0, 1e-6);
            CHECK_NEAR(get(ctx, "bits", t), 8, 1e-6);
        }
        CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
        vmaf_dnn_context_close(ctx);
    }
}

/* A frame out of order is refused, naming the one expected, and scores
 * nothing; the expected one still works. */
static void test_order(void)
{
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(read_level(ctx, 10, 5), 0); /* a sequence may start anywhere */
    CHECK_EQ_INT(read_level(ctx, 20, 7), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "the next one is frame 6");
    CHECK_EQ_INT(read_level(ctx, 20, 5), -EINVAL);
    CHECK(isnan(get(ctx, "m", 7)));
    CHECK_EQ_INT(read_level(ctx, 20, 6), 0);
    CHECK_NEAR(get(ctx, "m", 5), 0, 1e-6);
    CHECK_NEAR(get(ctx, "m", 6), 10 / 255.0, 1e-6);
    /* Its history would miss the frames already read. */
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff2", diff_sidecar(-1)),
                                         NULL), -EEXIST); /* the same keys */
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(
                     ctx, stage("temporal_diff", "diff3",
                                "{\"native_resolution\": true,"
                                " \"input_sources\": {\"prev\": {\"picture\": \"distorted\","
                                " \"offset\": -1}, \"bpc\": {\"value\": \"bpc\"}}}"), NULL),
                 -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "before the first frame");
    vmaf_dnn_context_close(ctx);
}

static const char *const min_sidecar =
    "{\"output_keys\": [\"m2\"], \"input_sources\": {\"a\": {\"feature\": \"m\"},"
    " \"b\": {\"feature\": \"m\", \"offset\": 1}}}";

/* m2[t] = min(m[t], m[t+1]) with m[N] read as m[N-1]: libvmaf's motion2.
 * The model runs one frame behind, so m2 of frame t appears when frame
 * t + 1 is read, and the last one at flush. */
static void test_look_ahead(void)
{
    static const unsigned level[] = {10, 50, 60, 20, 200};
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("pair_min", "min", min_sidecar), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_kind(ctx, 1), VMAF_DNN_MODEL_FEATURES);
    double m[5];
    for (unsigned t = 0; t < 5; t++) {
        CHECK_EQ_INT(read_level(ctx, level[t], t), 0);
        m[t] = ((double)level[t] - level[t ? t - 1 : 0]) / 255.0;
        CHECK(isnan(get(ctx, "m2", t)));            /* not yet: needs m[t + 1] */
        if (t)
            CHECK_NEAR(get(ctx, "m2", t - 1), fmin(m[t - 1], m[t]), 1e-6);
    }
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 5);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_NEAR(get(ctx, "m2", 4), m[4], 1e-6);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0); /* twice: harmless, nothing runs again */
    CHECK_EQ_INT(read_level(ctx, 1, 5), -EINVAL);
    vmaf_dnn_context_close(ctx);

    /* One frame: m2[0] = min(m[0], m[0]) = 0, at flush. */
    ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("pair_min", "min", min_sidecar), NULL), 0);
    CHECK_EQ_INT(read_level(ctx, 10, 0), 0);
    CHECK(isnan(get(ctx, "m2", 0)));
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_NEAR(get(ctx, "m2", 0), 0, 1e-6);
    vmaf_dnn_context_close(ctx);
}

/* Lags add up along a chain: s reads m2 (one frame behind) one frame ahead,
 * so it runs two behind; features of the caller count as lag 0; one-value
 * inputs of rank 2 and 0 are fed too. */
static void test_chain(void)
{
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("pair_min", "min", min_sidecar), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(
                     ctx, stage("pair_sum", "sum",
                                "{\"output_keys\": [\"s\"], \"input_sources\": {\"a\": "
                                "{\"feature\": \"m2\", \"offset\": 1}, \"b\": {\"feature\": "
                                "\"x\", \"offset\": -1}}}"), NULL), 0);
    static const unsigned level[] = {0, 255, 0, 255};
    for (unsigned t = 0; t < 4; t++) {
        CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "x", t, 100.0 * t), 0);
        CHECK_EQ_INT(read_level(ctx, level[t], t), 0);
    }
    /* m = 0, 1, -1, 1; m2 = 0, -1, -1, 1; s[t] = m2[t+1] + x[t-1] */
    CHECK_NEAR(get(ctx, "s", 0), -1 + 0, 1e-6);
    CHECK_NEAR(get(ctx, "s", 1), -1 + 0, 1e-6);
    CHECK(isnan(get(ctx, "s", 2)));
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_NEAR(get(ctx, "s", 2), 1 + 100, 1e-6);
    CHECK_NEAR(get(ctx, "s", 3), 1 + 200, 1e-6);
    vmaf_dnn_context_close(ctx);

    /* A picture model cannot run behind. */
    ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(
                     ctx, stage("temporal_diff", "diffx",
                                "{\"native_resolution\": true, \"input_sources\": {\"bpc\": "
                                "{\"feature\": \"x\", \"offset\": 1}}}"), NULL), -ENOTSUP);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "only models that read no picture may look ahead");
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 0);
    vmaf_dnn_context_close(ctx);
}

/* A frame that fails in the middle: its own models' scores are missing,
 * the models that needed them fail once per frame that needed them, and
 * the sequence goes on; a frame the history model refuses (another size)
 * restarts its history. */
static void test_failure_in_the_middle(void)
{
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("pair_min", "min", min_sidecar), NULL), 0);
    CHECK_EQ_INT(read_level(ctx, 10, 0), 0);
    CHECK_EQ_INT(read_level(ctx, 20, 1), 0);
    Pic big;
    pic_set(&big, 16, 16, 90);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 2), -ERANGE); /* native size */
    CHECK(isnan(get(ctx, "m", 2)));
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 2), -EINVAL); /* it counted */
    CHECK_EQ_INT(read_level(ctx, 50, 3), -ENOENT);  /* m2[2] needs m[2] */
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "feature \"m\" at frame 2");
    CHECK_NEAR(get(ctx, "m", 3), 0, 1e-6); /* history restarted at frame 3 */
    CHECK(isnan(get(ctx, "m2", 1))); /* due at frame 2, whose call stopped at its failure */
    CHECK_EQ_INT(read_level(ctx, 80, 4), 0);
    CHECK_NEAR(get(ctx, "m", 4), 30 / 255.0, 1e-6);
    CHECK_NEAR(get(ctx, "m2", 3), 0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_NEAR(get(ctx, "m2", 4), 30 / 255.0, 1e-6);
    vmaf_dnn_context_close(ctx);
}

/* What temporal_diff needs to attach besides the key under test. */
#define BPC "\"native_resolution\": true, \"input_sources\": {\"bpc\": {\"value\": \"bpc\"}}"

/* Sidecar errors of the new keys, and "requires". */
static void test_sidecar_keys(void)
{
    static const struct {
        const char *sidecar;
        int code;
        const char *fragment;
    } bad[] = {
        {"{\"input_sources\": {\"nope\": {\"value\": \"bpc\"}}}", -EINVAL, "not an input"},
        {"{\"input_sources\": {\"prev\": {\"picture\": \"distorted\", \"offset\": 1}}}", -EINVAL,
         "\"offset\" must be an integer in [-8, 0]"},
        {"{\"input_sources\": {\"prev\": {\"picture\": \"distorted\", \"ofset\": -1}}}", -EINVAL,
         "unknown member"},
        {"{\"input_sources\": {\"bpc\": {\"value\": \"bpc\", \"feature\": \"x\"}}}", -EINVAL,
         "exactly one"},
        {"{\"input_sources\": {\"bpc\": {\"feature\": \"x\", \"offset\": 9}}}", -EINVAL,
         "[-8, 8]"},
        {"{" BPC ", \"output_keys\": [\"a\"]}", -EINVAL,
         "\"output_keys\" has 1 entries for 2"},
        {"{" BPC ", \"requires\": [\"../x.onnx\"]}", -EINVAL,
         "inside the model's directory"},
        {"{" BPC ", \"requires\": [\"absent.onnx\"]}", -ENOENT, "absent"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        VmafDnnContext *ctx = ctx_new();
        int rc = vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "bad", bad[i].sidecar), NULL);
        CHECK_EQ_INT(rc, bad[i].code);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), bad[i].fragment);
        if (rc != bad[i].code || !strstr(vmaf_dnn_last_error(), bad[i].fragment))
            fprintf(stderr, "  case %zu: %s\n", i, vmaf_dnn_last_error());
        CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 0);
        vmaf_dnn_context_close(ctx);
    }

    /* "requires" attaches what a model needs first, once; on failure none. */
    stage("temporal_diff", "req_diff", diff_sidecar(-1));
    const char *top = stage("pair_min", "req_min",
                            "{\"output_keys\": [\"m2\"], \"requires\": [\"req_diff.onnx\"],"
                            " \"input_sources\": {\"a\": {\"feature\": \"m\"},"
                            " \"b\": {\"feature\": \"m\", \"offset\": 1}}}");
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, top, NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 2);
    CHECK_STR_CONTAINS(vmaf_dnn_tiny_model_path(ctx, 0), "req_diff.onnx");
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, top, NULL), -EEXIST); /* m2 is taken */
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 2);
    CHECK_EQ_INT(read_level(ctx, 0, 0), 0);
    CHECK_EQ_INT(read_level(ctx, 51, 1), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_NEAR(get(ctx, "m2", 0), 0, 1e-6);
    CHECK_NEAR(get(ctx, "m2", 1), 0.2, 1e-6);
    vmaf_dnn_context_close(ctx);
}

/* A model attached in the middle of a clip (no past pictures of its own)
 * leaves the temporal model's past alone; a reset forgets it. */
static void test_attach_and_reset(void)
{
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(read_level(ctx, 10, 0), 0);
    CHECK_EQ_INT(read_level(ctx, 30, 1), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
    CHECK_EQ_INT(read_level(ctx, 70, 2), 0);
    CHECK_NEAR(get(ctx, "m", 1), 20 / 255.0, 1e-6);
    CHECK_NEAR(get(ctx, "m", 2), 40 / 255.0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_context_reset(ctx), 0);
    CHECK_EQ_INT(read_level(ctx, 200, 0), 0);
    CHECK_EQ_INT(read_level(ctx, 210, 1), 0);
    CHECK_NEAR(get(ctx, "m", 0), 0, 1e-6); /* its own first frame stands in, not frame 2 */
    CHECK_NEAR(get(ctx, "m", 1), 10 / 255.0, 1e-6);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    vmaf_dnn_context_close(ctx);
}

/* A context with "diff" (m[t] from frames t and t - 1, on the workers with
 * threads > 1) and "sum" (s[t] = m[t] + x[t - 1], x stored by the caller:
 * it runs in frame order). */
static VmafDnnContext *ctx_with_diff_and_sum(void)
{
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(
                     ctx, stage("pair_sum", "sum",
                                "{\"output_keys\": [\"s\"], \"input_sources\": {\"a\": "
                                "{\"feature\": \"m\"}, \"b\": {\"feature\": "
                                "\"x\", \"offset\": -1}}}"), NULL), 0);
    return ctx;
}

/* A model attached in the middle of a clip that reads pictures and a
 * feature written in frame order makes the context score one frame at a
 * time from then on: the temporal model's past goes on unbroken. */
static void test_back_to_one_frame_at_a_time(void)
{
    VmafDnnContext *ctx = ctx_with_diff_and_sum();
    static const unsigned level[] = {10, 30, 100, 160};
    for (unsigned t = 0; t < 4; t++) {
        CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "x", t, t), 0);
        if (t == 2) /* reads pictures and "s", which runs in frame order */
            CHECK_EQ_INT(vmaf_dnn_use_tiny_model(
                             ctx, stage("temporal_diff", "late",
                                        "{\"native_resolution\": true, \"output_keys\": "
                                        "[\"m9\", \"b9\"], \"input_sources\": {\"prev\": "
                                        "{\"picture\": \"distorted\"}, \"bpc\": "
                                        "{\"feature\": \"s\"}}}"), NULL), 0);
        CHECK_EQ_INT(read_level(ctx, level[t], t), 0);
    }
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    for (unsigned t = 1; t < 4; t++) {
        const double m = ((double)level[t] - level[t - 1]) / 255.0;
        CHECK_NEAR(get(ctx, "m", t), m, 1e-6);
        CHECK_NEAR(get(ctx, "s", t), m + (t - 1), 1e-6);
    }
    CHECK_NEAR(get(ctx, "b9", 3), get(ctx, "s", 3), 1e-6);
    vmaf_dnn_context_close(ctx);
}

/* Reads frame `index` (w x w, every sample `v`); a failure of an earlier
 * frame scored in flight is counted in *late and the frame read again, as
 * context.h tells callers to. */
static int read_sized(VmafDnnContext *ctx, unsigned w, unsigned v, unsigned index, int *late)
{
    Pic p;
    pic_set(&p, w, w, v);
    int rc = vmaf_dnn_read_pictures(ctx, NULL, &p.pic, index);
    if (rc && strstr(vmaf_dnn_last_error(), "scored in flight")) {
        CHECK_EQ_INT(rc, -ERANGE);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "native resolution");
        ++*late;
        rc = vmaf_dnn_read_pictures(ctx, NULL, &p.pic, index);
    }
    return rc;
}

/* A native-resolution model's size is locked by the first frame it runs
 * on, in frame order whichever worker scores what: a first frame too small
 * to run locks nothing, and a frame of another size fails (at once, or
 * later in flight) and counts, the clip going on after it. */
static void test_native_size_in_order(void)
{
    const char *sidecar =
        "{\"native_resolution\": true, \"min_width\": 6, \"min_height\": 6, "
        "\"output_keys\": [\"m\", \"bits\"], \"input_sources\": {\"prev\": {\"picture\": "
        "\"distorted\", \"offset\": -1}, \"bpc\": {\"value\": \"bpc\"}}}";
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "small", sidecar), NULL), 0);
    int late = 0;
    CHECK_EQ_INT(read_sized(ctx, 4, 10, 0, &late), 0);
    CHECK_EQ_INT(read_sized(ctx, 8, 40, 1, &late), 0);
    CHECK_EQ_INT(read_sized(ctx, 8, 30, 2, &late), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 3);
    CHECK(isnan(get(ctx, "m", 0)));
    CHECK_NEAR(get(ctx, "m", 1), 0, 1e-6);
    CHECK_NEAR(get(ctx, "m", 2), -10 / 255.0, 1e-6);
    vmaf_dnn_context_close(ctx);

    static const unsigned size[] = {8, 8, 16, 8, 8}, level[] = {10, 20, 90, 50, 80};
    ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(-1)),
                                         NULL), 0);
    int now = 0;
    late = 0;
    for (unsigned t = 0; t < 5; t++) {
        int rc = read_sized(ctx, size[t], level[t], t, &late);
        if (rc) {
            CHECK_EQ_INT(rc, -ERANGE);
            CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "native resolution");
            now++;
        }
    }
    int rc = vmaf_dnn_flush(ctx);
    if (rc) {
        CHECK_EQ_INT(rc, -ERANGE);
        late++;
    }
    CHECK_EQ_INT(now + late, 1); /* frame 2, at once or in flight */
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 5);
    CHECK_NEAR(get(ctx, "m", 1), 10 / 255.0, 1e-6);
    CHECK(isnan(get(ctx, "m", 2)));
    CHECK_NEAR(get(ctx, "m", 3), 0, 1e-6); /* history restarted after frame 2 */
    CHECK_NEAR(get(ctx, "m", 4), 30 / 255.0, 1e-6);
    vmaf_dnn_context_close(ctx);
}

/* A native-resolution model's size is locked by the first frame read that
 * it could take, whatever becomes of that frame in the models before it: a
 * frame an earlier model fails (here "g" misses the caller's feature "x")
 * locks it too, one frame at a time as in flight, where the workers' copies
 * are given the lock before the frame runs. (Offset 0: a model that keeps
 * past planes locks as it keeps the frame's, even one it did not run.) */
static void test_native_size_after_an_earlier_failure(void)
{
    VmafDnnContext *ctx = ctx_new();
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(
                     ctx, stage("pair_sum", "gate",
                                "{\"output_keys\": [\"g\"], \"input_sources\": {\"a\": "
                                "{\"feature\": \"x\"}, \"b\": {\"feature\": \"x\"}}}"),
                     NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "diff", diff_sidecar(0)),
                                         NULL), 0);
    static const unsigned size[] = {16, 8, 16};
    int enoent = 0, erange = 0;
    for (unsigned t = 0; t < 4; t++) {
        int rc = 0;
        if (t < 3) {
            if (t)
                CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "x", t, 1.0), 0);
            Pic p;
            pic_set(&p, size[t], size[t], 10 * (t + 1));
            rc = vmaf_dnn_read_pictures(ctx, NULL, &p.pic, t);
            if (rc && strstr(vmaf_dnn_last_error(), "scored in flight")) {
                enoent += rc == -ENOENT;
                erange += rc == -ERANGE;
                rc = vmaf_dnn_read_pictures(ctx, NULL, &p.pic, t);
            }
        } else {
            rc = vmaf_dnn_flush(ctx);
        }
        enoent += rc == -ENOENT;
        erange += rc == -ERANGE;
        if (rc == -ERANGE)
            CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "set to 16x16");
    }
    CHECK_EQ_INT(enoent, 1); /* frame 0, model gate */
    CHECK_EQ_INT(erange, 1); /* frame 1, model diff: frame 0 locked 16x16 */
    CHECK(isnan(get(ctx, "m", 0)));
    CHECK(isnan(get(ctx, "m", 1)));
    CHECK(!isnan(get(ctx, "m", 2)));
    CHECK_NEAR(get(ctx, "g", 2), 2.0, 1e-6);
    vmaf_dnn_context_close(ctx);
}

/* In flight, a frame's failure is reported by a later call (context.h): a
 * model run in frame order that misses a feature fails the frame it scores
 * when that frame is merged, and the frames after it go on. */
static void test_failure_in_flight(void)
{
    VmafDnnContext *ctx = ctx_with_diff_and_sum();
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "x", 0, 5), 0);
    CHECK_EQ_INT(read_level(ctx, 10, 0), 0);
    CHECK_EQ_INT(read_level(ctx, 20, 1), 0); /* s[1] = m[1] + x[0] */
    CHECK_EQ_INT(read_level(ctx, 40, 2), 0); /* x[1] is missing: s[2] fails */
    CHECK_EQ_INT(read_level(ctx, 70, 3), 0);
    int rc = vmaf_dnn_flush(ctx);
    CHECK_EQ_INT(rc, -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 2 (scored in flight)");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "feature \"x\" of frame 1");
    CHECK_NEAR(get(ctx, "s", 0), 0 + 5, 1e-6);
    CHECK_NEAR(get(ctx, "m", 2), 20 / 255.0, 1e-6); /* the worker's model scored it */
    CHECK(isnan(get(ctx, "s", 2)));
    CHECK_NEAR(get(ctx, "m", 3), 30 / 255.0, 1e-6); /* the past pictures went on */
    vmaf_dnn_context_close(ctx);
}

/* Frames in flight count each worker's copy of a model that keeps past
 * pictures (its history planes) against the memory budget, as the context's
 * own model counts them: at 64x64 with offset -8 a copy keeps 8 fp32 planes
 * (128 KiB); one context fits 300000 bytes (the model's planes: 144 KiB),
 * 2 workers' copies with the slots and past frames (~460 KiB) do not,
 * though without the copies' planes (~204 KiB) they would. */
static void test_budget_counts_copies_history(void)
{
    VmafDnnModelPolicy policy;
    vmaf_dnn_default_model_policy(&policy);
    policy.max_memory_bytes = 300000;
    /* The same when the model reads the reference picture only (whose
     * planes are all the frame's slots hold). */
    static const char *const sidecar[] = {
        NULL,
        "{\"native_resolution\": true, \"output_keys\": [\"m\", \"bits\"], \"input_sources\": "
        "{\"cur\": {\"picture\": \"reference\"}, \"prev\": {\"picture\": \"reference\", "
        "\"offset\": -8}, \"bpc\": {\"value\": \"bpc\"}}}"};
    for (int run = 0; run < 4; run++) {
        const int k = run / 2, threads = run % 2 * 2;
        VmafDnnContextConfig cfg;
        vmaf_dnn_default_context_config(&cfg);
        cfg.threads = threads;
        cfg.policy = &policy;
        VmafDnnContext *ctx = NULL;
        CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("temporal_diff", "deep",
                                                        k ? sidecar[k] : diff_sidecar(-8)),
                                             NULL), 0);
        Pic p;
        pic_set(&p, 64, 64, 7);
        const int rc = vmaf_dnn_read_pictures(ctx, k ? &p.pic : NULL, &p.pic, 0);
        CHECK_EQ_INT(rc, threads ? -EDQUOT : 0);
        if (threads)
            CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "model buffers");
        vmaf_dnn_context_close(ctx);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 || !realpath(argv[1], model_dir) || !mkdtemp(tmp_dir)) {
        fprintf(stderr, "usage: test_temporal MODEL_DIR\n");
        return 2;
    }
    test_past_pictures();
    test_order();
    test_look_ahead();
    test_chain();
    test_failure_in_the_middle();
    test_sidecar_keys();
    test_attach_and_reset();
    test_back_to_one_frame_at_a_time();
    test_native_size_in_order();
    test_native_size_after_an_earlier_failure();
    test_budget_counts_copies_history();
    /* The same with frames in flight: the picture model on the workers, the
     * models that read other frames' features on the context's thread. */
    for (frame_threads = 2; frame_threads <= 3; frame_threads++) {
        test_past_pictures();
        test_order();
        test_look_ahead();
        test_chain();
        test_attach_and_reset();
        test_back_to_one_frame_at_a_time();
        test_native_size_in_order();
        test_native_size_after_an_earlier_failure();
        test_failure_in_flight();
    }
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return check_report();
}
