/* Frames per Run (VmafDnnContextConfig.batch): a batchable model scores
 * several frames in one ORT Run, with the scores of one Run per frame; the
 * models that cannot are scored frame by frame beside it; a model's first
 * batched Run is checked against one Run per frame and one that mixes
 * frames is refused; Runs that fail are retried frame by frame; the batch
 * bounds memory, ends at flush, close and a change of frame size, and falls
 * back to a frame at a time where frames in flight cannot be had.
 * Usage: test_batch MODEL_DIR (tests/models/factory.py's output). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"
#include "frame_fixture.h"

static VmafDnnContext *open_ctx(int threads, int batch, const VmafDnnModelPolicy *policy)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device = VMAF_DNN_DEVICE_CPU;
    cfg.threads = threads;
    cfg.batch = batch;
    cfg.policy = policy;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    return ctx;
}

static void attach(VmafDnnContext *ctx, const char *name)
{
    const int rc = vmaf_dnn_use_tiny_model(ctx, model(name), NULL);
    if (rc)
        fprintf(stderr, "attach %s: %d %s\n", name, rc, vmaf_dnn_last_error());
    CHECK_EQ_INT(rc, 0);
}

/* Reads frames [0, n) of w x h (reference seed i, distorted 3i + 1). */
static int read_frames(VmafDnnContext *ctx, unsigned first, unsigned n, unsigned w, unsigned h)
{
    int rc = 0;
    for (unsigned i = first; i < first + n && !rc; i++)
        rc = read_pair(ctx, w, h, i, 3 * i + 1, i);
    return rc;
}

static double get(const VmafDnnContext *ctx, const char *name, unsigned index)
{
    double v = NAN;
    const int rc = vmaf_dnn_feature_get(ctx, name, index, &v);
    if (rc)
        fprintf(stderr, "get %s[%u]: %d %s\n", name, index, rc, vmaf_dnn_last_error());
    CHECK_EQ_INT(rc, 0);
    return v;
}

#define FRAMES 10

/* Frames scored by batched Runs, over every model (vmaf_dnn_tiny_model_batching). */
static uint64_t batched(const VmafDnnContext *ctx)
{
    uint64_t n = 0;
    for (size_t i = 0; i < vmaf_dnn_tiny_model_count(ctx); i++) {
        VmafDnnBatching b;
        CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(ctx, i, &b), 0);
        n += b.batched_frames;
    }
    return n;
}

/* One worker takes a whole batch as soon as one is queued, the rest at
 * flush: Runs of 4, 4, 2. A copy's first batched Run is checked against one
 * Run per frame (whose scores are kept), so 6 frames come from batched
 * Runs; every score equals one-Run-per-frame scoring. */
static void test_runs_take_whole_batches(void)
{
    VmafDnnContext *one = open_ctx(1, 1, NULL), *four = open_ctx(1, 4, NULL);
    attach(one, "batch_mean");
    attach(four, "batch_mean");
    CHECK_EQ_INT(read_frames(one, 0, FRAMES, 16, 8), 0);
    CHECK_EQ_INT(read_frames(four, 0, FRAMES, 16, 8), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(one), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(four), 0);
    for (unsigned i = 0; i < FRAMES; i++)
        CHECK(fabs(get(one, "batch_mean", i) - get(four, "batch_mean", i)) < 1e-7);
    CHECK(batched(one) == 0);
    CHECK(batched(four) == 6);
    VmafDnnBatching b;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(four, 0, &b), 0);
    CHECK(b.batchable == 1 && b.batch == 4 && b.refused == 0 && b.batched_frames == 6);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(one, 0, &b), 0);
    CHECK(b.batchable == 1 && b.batch == 1 && b.refused == 0 && b.batched_frames == 0);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(four, 1, &b), -EINVAL);
    CHECK(strstr(vmaf_dnn_last_error(), "out of range") != NULL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(four, 0, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(NULL, 0, &b), -EINVAL);
    vmaf_dnn_context_close(one);
    vmaf_dnn_context_close(four);
}

/* Models whose declared shapes say batchable but whose frames mix: the
 * first batched Run disagrees with one Run per frame, whose scores are
 * kept, and the copy never batches again. batch_size gives the frames per
 * Run (a statistic of the whole batch); batch_rows one value per row,
 * which looks like one per frame when a Run takes as many frames as the
 * frames have rows, and alone fails ("gave 4 values"): so it does batched. */
static void test_mixing_models_are_refused(void)
{
    VmafDnnContext *ctx = open_ctx(1, 4, NULL);
    attach(ctx, "batch_size");
    CHECK_EQ_INT(read_frames(ctx, 0, FRAMES, 16, 8), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    for (unsigned i = 0; i < FRAMES; i++)
        CHECK(get(ctx, "batch_size_frames", i) == 1.0);
    CHECK(batched(ctx) == 0);
    VmafDnnBatching b;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(ctx, 0, &b), 0);
    CHECK(b.batchable == 1 && b.batch == 4 && b.refused == 1 && b.batched_frames == 0);
    vmaf_dnn_context_close(ctx);
    for (int batch = 1; batch <= 4; batch += 3) {
        ctx = open_ctx(1, batch, NULL);
        attach(ctx, "batch_rows");
        int rc = read_frames(ctx, 0, 8, 16, 4);
        if (!rc)
            rc = vmaf_dnn_flush(ctx);
        CHECK_EQ_INT(rc, -ENOTSUP);
        CHECK(strstr(vmaf_dnn_last_error(), "gave 4 values") != NULL);
        double v;
        CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "batch_rows", 0, &v), -ENOENT);
        CHECK(batched(ctx) == 0);
        vmaf_dnn_context_close(ctx);
    }
}

/* batch 0: one frame per Run, and no frames in flight with threads 0. */
static void test_default_is_one_frame(void)
{
    VmafDnnContext *ctx = open_ctx(0, 0, NULL);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 3, 16, 8), 0);
    /* Scored by the read itself: no flush needed. */
    for (unsigned i = 0; i < 3; i++)
        CHECK(!isnan(get(ctx, "batch_mean", i)));
    CHECK(batched(ctx) == 0);
    vmaf_dnn_context_close(ctx);
}

/* Two workers, a full-reference batchable model between two that are not
 * (fr_diff at 8x8, nr_mean): every score equals one-frame-at-a-time
 * scoring, in the same features and order. Each worker checks its first
 * batched Run: of 4 Runs of 3, at least 2 are trusted. */
static void test_mixed_models_same_scores(void)
{
    static const char *const names[] = {"batch_fr", "fr_diff", "batch_mean", "nr_mean"};
    VmafDnnContext *want = open_ctx(0, 1, NULL), *got = open_ctx(2, 3, NULL);
    VmafDnnContext *ctx[2] = {want, got};
    for (int c = 0; c < 2; c++) {
        for (size_t k = 0; k < 4; k++)
            attach(ctx[c], names[k]);
        CHECK_EQ_INT(read_frames(ctx[c], 0, 12, 8, 8), 0);
        CHECK_EQ_INT(vmaf_dnn_flush(ctx[c]), 0);
    }
    CHECK_EQ_INT(vmaf_dnn_feature_count(got), vmaf_dnn_feature_count(want));
    for (size_t f = 0; f < vmaf_dnn_feature_count(want); f++)
        CHECK(strcmp(vmaf_dnn_feature_name(got, f), vmaf_dnn_feature_name(want, f)) == 0);
    for (unsigned i = 0; i < 12; i++)
        for (size_t k = 0; k < 4; k++)
            CHECK(fabs(get(got, names[k], i) - get(want, names[k], i)) < 1e-7);
    /* two batchable models, each trusted after a worker's first group */
    CHECK(batched(got) >= 2 * 6);
    VmafDnnBatching b;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(got, 1, &b), 0); /* fr_diff: fixed batch */
    CHECK(b.batchable == 0 && b.batch == 1 && b.refused == 0 && b.batched_frames == 0);
    vmaf_dnn_context_close(want);
    vmaf_dnn_context_close(got);
}

/* A model whose batched Run fails (batch_one_only) is scored frame by
 * frame: no failure, the values of one Run per frame, and no more batched
 * tries. One whose batched Run gives another count than its frames
 * (batch_rows: 8 rows, 4 frames) likewise: its frames fail as they do
 * alone. */
static void test_failed_batch_runs_go_frame_by_frame(void)
{
    static const char *const models[] = {"batch_one_only"};
    for (size_t k = 0; k < 1; k++) {
        VmafDnnContext *one = open_ctx(0, 1, NULL), *four = open_ctx(1, 4, NULL);
        attach(one, models[k]);
        attach(four, models[k]);
        CHECK_EQ_INT(read_frames(one, 0, FRAMES, 16, 8), 0);
        CHECK_EQ_INT(read_frames(four, 0, FRAMES, 16, 8), 0);
        CHECK_EQ_INT(vmaf_dnn_flush(four), 0);
        for (unsigned i = 0; i < FRAMES; i++)
            CHECK(get(four, models[k], i) == get(one, models[k], i));
        CHECK(batched(four) == 0);
        VmafDnnBatching b;
        CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(four, 0, &b), 0);
        CHECK(b.batchable == 1 && b.refused == 1);
        vmaf_dnn_context_close(one);
        vmaf_dnn_context_close(four);
    }
    VmafDnnContext *ctx = open_ctx(1, 4, NULL);
    attach(ctx, "batch_rows");
    int rc = read_frames(ctx, 0, 8, 16, 8);
    if (!rc)
        rc = vmaf_dnn_flush(ctx);
    CHECK_EQ_INT(rc, -ENOTSUP);
    CHECK(strstr(vmaf_dnn_last_error(), "gave 8 values") != NULL);
    VmafDnnBatching b;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(ctx, 0, &b), 0);
    CHECK(b.batchable == 1 && b.refused == 1 && b.batched_frames == 0);
    vmaf_dnn_context_close(ctx);
}

/* Frames of another size end the group before them; a native-resolution
 * model refuses them one by one (as it would alone), and the frames before
 * keep their scores. */
static void test_size_change(void)
{
    VmafDnnContext *ctx = open_ctx(1, 4, NULL);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 3, 16, 8), 0);
    int rc = read_frames(ctx, 3, 3, 8, 8);
    if (!rc)
        rc = vmaf_dnn_flush(ctx);
    CHECK_EQ_INT(rc, -ERANGE);
    CHECK(strstr(vmaf_dnn_last_error(), "native resolution") != NULL);
    for (unsigned i = 0; i < 3; i++)
        CHECK(!isnan(get(ctx, "batch_mean", i)));
    double v;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "batch_mean", 4, &v), -ENOENT);
    vmaf_dnn_context_close(ctx);
}

/* A batch that never fills: flush takes what is queued, close does not
 * wait for frames that will never come. */
static void test_partial_batches_end(void)
{
    VmafDnnContext *ctx = open_ctx(2, 8, NULL);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 3, 16, 8), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    for (unsigned i = 0; i < 3; i++)
        CHECK(!isnan(get(ctx, "batch_mean", i)));
    vmaf_dnn_context_close(ctx);
    ctx = open_ctx(1, 8, NULL);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 5, 16, 8), 0);
    vmaf_dnn_context_close(ctx); /* must return */
}

/* threads 0 with a batch: frames scored one at a time before a batchable
 * model is attached left the workers no past pictures for a model that
 * reads the previous frame, so the context goes on a frame at a time
 * (scores equal to batch 1's), and batches again after a reset. */
static void test_attach_mid_clip(void)
{
    VmafDnnContext *one = open_ctx(0, 1, NULL), *four = open_ctx(0, 4, NULL);
    VmafDnnContext *ctx[2] = {one, four};
    for (int c = 0; c < 2; c++) {
        attach(ctx[c], "past_diff");
        CHECK_EQ_INT(read_frames(ctx[c], 0, 4, 16, 8), 0);
        attach(ctx[c], "batch_mean");
        CHECK_EQ_INT(read_frames(ctx[c], 4, 6, 16, 8), 0);
        CHECK_EQ_INT(vmaf_dnn_flush(ctx[c]), 0);
    }
    for (unsigned i = 0; i < FRAMES; i++) {
        CHECK(get(four, "m", i) == get(one, "m", i));
        if (i >= 4)
            CHECK(get(four, "batch_mean", i) == get(one, "batch_mean", i));
    }
    CHECK(batched(four) == 0);
    CHECK_EQ_INT(vmaf_dnn_context_reset(four), 0);
    CHECK_EQ_INT(read_frames(four, 0, FRAMES, 16, 8), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(four), 0);
    CHECK(batched(four) == 6);
    vmaf_dnn_context_close(one);
    vmaf_dnn_context_close(four);
}

/* The batch is checked at open, and the memory it takes is charged to the
 * policy's max_memory_bytes before a frame is taken. */
static void test_limits(void)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    CHECK_EQ_INT(cfg.batch, 0);
    VmafDnnContext *ctx = NULL;
    for (int bad = -1; bad <= VMAF_DNN_MAX_BATCH + 1; bad += VMAF_DNN_MAX_BATCH + 2) {
        cfg.batch = bad;
        CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
        CHECK(ctx == NULL);
        CHECK(strstr(vmaf_dnn_last_error(), "batch") != NULL);
    }
    VmafDnnModelPolicy policy;
    vmaf_dnn_default_model_policy(&policy);
    policy.max_memory_bytes = 1u << 20;
    /* threads 2: the frames in flight are the caller's choice: -EDQUOT */
    ctx = open_ctx(2, VMAF_DNN_MAX_BATCH, &policy);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 1, 256, 256), -EDQUOT);
    CHECK(strstr(vmaf_dnn_last_error(), "64 frames per Run") != NULL);
    CHECK(strstr(vmaf_dnn_last_error(), "smaller batch") != NULL);
    vmaf_dnn_context_close(ctx);
    /* threads 1: frames are in flight only for the batch, which does not
     * fit: they are scored one at a time, as batch 1 would */
    ctx = open_ctx(1, VMAF_DNN_MAX_BATCH, &policy);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 3, 256, 256), 0);
    CHECK(!isnan(get(ctx, "batch_mean", 0)));
    CHECK(batched(ctx) == 0);
    vmaf_dnn_context_close(ctx);
    /* bookkeeping alone over the budget: refused at open with threads 2 */
    policy.max_memory_bytes = 64 << 10;
    ctx = open_ctx(2, VMAF_DNN_MAX_BATCH, &policy);
    attach(ctx, "batch_mean");
    CHECK_EQ_INT(read_frames(ctx, 0, 1, 8, 8), -EDQUOT);
    CHECK(strstr(vmaf_dnn_last_error(), "bookkeeping") != NULL);
    vmaf_dnn_context_close(ctx);
}

/* batch_center mixes frames, yet gives one Run per frame's values on
 * identical frames: a check there cannot tell and is repeated; the first
 * distinct frames refuse the model. Scores equal batch 1's throughout. */
static void test_identical_frames_do_not_decide(void)
{
    VmafDnnContext *one = open_ctx(0, 1, NULL), *four = open_ctx(1, 4, NULL);
    VmafDnnContext *ctx[2] = {one, four};
    for (int c = 0; c < 2; c++) {
        attach(ctx[c], "batch_center");
        for (unsigned i = 0; i < 12; i++) {
            /* frames 0-7 identical, then distinct */
            Frame f;
            frame_make(&f, 16, 8, i < 8 ? 1 : i);
            CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx[c], NULL, &f.pic, i), 0);
            free(f.y);
        }
        CHECK_EQ_INT(vmaf_dnn_flush(ctx[c]), 0);
    }
    for (unsigned i = 0; i < 12; i++)
        CHECK(fabs(get(four, "batch_center", i) - get(one, "batch_center", i)) < 1e-7);
    VmafDnnBatching b;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(four, 0, &b), 0);
    CHECK(b.refused == 1 && b.batched_frames == 0);
    vmaf_dnn_context_close(one);
    vmaf_dnn_context_close(four);
}

/* threads 0, batch 4: frames in flight with a model reading the previous
 * picture; a model attached mid-clip reopens the pool; then one attached
 * after the batchable model's file is gone: the pool cannot reopen and the
 * context goes on a frame at a time, its models shown the frames the
 * workers saw. Every score equals batch 1's; the verdict of the first pool
 * carries over (trusted: no second check). */
static void test_pool_reopen_and_fallback(void)
{
    char dir[] = "/tmp/vmafdnn-batch-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char onnx[PATH_MAX + 32], json[PATH_MAX + 32];
    snprintf(onnx, sizeof(onnx), "%s/mean.onnx", dir);
    snprintf(json, sizeof(json), "%s/mean.json", dir);
    FILE *in = fopen(model("batch_mean"), "rb"), *out = fopen(onnx, "wb");
    char buf[4096];
    size_t got;
    while (in && out && (got = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, got, out);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    out = fopen(json, "w");
    if (out) {
        fputs("{\"native_resolution\": true}\n", out);
        fclose(out);
    }
    VmafDnnContext *one = open_ctx(0, 1, NULL), *four = open_ctx(0, 4, NULL);
    VmafDnnContext *ctx[2] = {one, four};
    for (int c = 0; c < 2; c++) {
        attach(ctx[c], "past_diff");
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx[c], onnx, NULL), 0);
        CHECK_EQ_INT(read_frames(ctx[c], 0, 8, 16, 8), 0);
        attach(ctx[c], "batch_fr"); /* the pool reopens at the next frame */
        CHECK_EQ_INT(read_frames(ctx[c], 8, 4, 16, 8), 0);
    }
    unlink(onnx);
    unlink(json);
    rmdir(dir);
    for (int c = 0; c < 2; c++) {
        attach(ctx[c], "batch_one_only"); /* mean.onnx cannot be opened again */
        CHECK_EQ_INT(read_frames(ctx[c], 12, 4, 16, 8), 0);
        CHECK_EQ_INT(vmaf_dnn_flush(ctx[c]), 0);
    }
    for (unsigned i = 0; i < 16; i++) {
        CHECK(get(four, "m", i) == get(one, "m", i));
        CHECK(fabs(get(four, "mean", i) - get(one, "mean", i)) < 1e-7);
        if (i >= 8)
            CHECK(fabs(get(four, "batch_fr", i) - get(one, "batch_fr", i)) < 1e-7);
        if (i >= 12)
            CHECK(get(four, "batch_one_only", i) == get(one, "batch_one_only", i));
    }
    VmafDnnBatching b;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_batching(four, 1, &b), 0);
    CHECK(b.refused == 0 && b.batched_frames == 8); /* frames 4-11 */
    vmaf_dnn_context_close(one);
    vmaf_dnn_context_close(four);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
        return 2;
    }
    snprintf(model_dir, sizeof(model_dir), "%s", argv[1]);
    test_runs_take_whole_batches();
    test_mixing_models_are_refused();
    test_default_is_one_frame();
    test_mixed_models_same_scores();
    test_failed_batch_runs_go_frame_by_frame();
    test_size_change();
    test_partial_batches_end();
    test_attach_mid_clip();
    test_limits();
    test_identical_frames_do_not_decide();
    test_pool_reopen_and_fallback();
    return check_report();
}
