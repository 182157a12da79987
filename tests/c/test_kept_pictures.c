/* vmaf_dnn_read_pictures_kept: the caller's pictures read where they lie
 * (no copies for frames in flight or past pictures), each released exactly
 * once, on the caller's thread, after the library's last read of them (the
 * release poisons and frees the planes: a later read scores otherwise, and
 * an ASan build reports it); not released by a call that fails; every kept
 * picture released by flush, reset and close; scores equal to
 * vmaf_dnn_read_pictures'.
 * Usage: test_kept_pictures MODEL_DIR (tests/models/factory.py's output). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"
#include "frame_fixture.h"

static char tmp_dir[] = "/tmp/vmafdnn-kept-XXXXXX";
static pthread_t main_thread;

#define FRAMES 14

/* One frame's pictures as handed over. */
typedef struct Kept {
    Frame ref, dist;
    unsigned released;  /* times release ran */
    int on_main;        /* it ran on the caller's thread */
} Kept;

static Kept kept[FRAMES + 4];

static void release(void *opaque)
{
    Kept *k = opaque;
    k->released++;
    k->on_main = pthread_equal(pthread_self(), main_thread);
    memset(k->ref.y, 0xa5, (size_t)k->ref.pic.w[0] * k->ref.pic.h[0]);
    memset(k->dist.y, 0x5a, (size_t)k->dist.pic.w[0] * k->dist.pic.h[0]);
    free(k->ref.y);
    free(k->dist.y);
    k->ref.y = k->dist.y = NULL;
}

/* Frame i's pictures, w x h, made afresh for slot `at` of kept[]. */
static Kept *kept_make(unsigned at, unsigned i, unsigned w, unsigned h)
{
    Kept *k = &kept[at];
    memset(k, 0, sizeof(*k));
    frame_make(&k->ref, w, h, i * 5 + 1);
    frame_make(&k->dist, w, h, i * 11 + 7);
    return k;
}

/* Frees the pictures of a read that failed: they are the caller's. */
static void kept_drop(Kept *k)
{
    free(k->ref.y);
    free(k->dist.y);
    k->ref.y = k->dist.y = NULL;
}

static const char *stage(const char *name, const char *as, const char *sidecar)
{
    return stage_model(tmp_dir, name, as, sidecar);
}

/* "m": the distorted picture's mean minus that of the one `back` frames
 * before it (a model that reads past pictures). */
static const char *past_model(int back)
{
    char sidecar[512], as[32];
    snprintf(sidecar, sizeof(sidecar),
             "{\"native_resolution\": true, \"output_keys\": [\"m%d\", \"bits%d\"],"
             " \"input_sources\": {\"prev\": {\"picture\": \"distorted\", \"offset\": -%d},"
             " \"bpc\": {\"value\": \"bpc\"}}}", back, back, back);
    snprintf(as, sizeof(as), "past%d", back);
    return stage("temporal_diff", as, sidecar);
}

static VmafDnnContext *open_with_models(int threads)
{
    VmafDnnContext *ctx = open_context(threads);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("fr_diff"), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, past_model(1), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, past_model(3), NULL), 0);
    return ctx;
}

#define MAX_FEATURES 8

/* Every feature of every frame, in the context's feature order. */
static size_t scores(const VmafDnnContext *ctx, double out[MAX_FEATURES][FRAMES])
{
    const size_t n = vmaf_dnn_feature_count(ctx);
    CHECK(n >= 4 && n <= MAX_FEATURES);
    for (size_t f = 0; f < n && f < MAX_FEATURES; f++)
        for (unsigned i = 0; i < FRAMES; i++) {
            out[f][i] = -1;
            CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, vmaf_dnn_feature_name(ctx, f), i,
                                              &out[f][i]), 0);
        }
    return n;
}

/* Kept pictures score as copied ones, with frames in flight and models that
 * read 1 and 3 frames back; mode 1 mixes kept and copied frames. Each kept
 * frame is released once, on this thread: without frames in flight before
 * its call returns; with them once it is neither in flight nor among the
 * past frames a model reads (the header's count of frames held). */
static void test_same_scores_one_release(void)
{
    double want[MAX_FEATURES][FRAMES], got[MAX_FEATURES][FRAMES];
    size_t n_want = 0;
    {
        VmafDnnContext *ctx = open_with_models(0);
        for (unsigned i = 0; i < FRAMES; i++) {
            Kept *k = kept_make(i, i, 8, 8);
            CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &k->ref.pic, &k->dist.pic, i), 0);
            kept_drop(k);
        }
        CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
        n_want = scores(ctx, want);
        vmaf_dnn_context_close(ctx);
    }
    static const int threads[] = {0, 1, 2, 3, 4};
    for (int mode = 0; mode < 2; mode++)
        for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
            VmafDnnContext *ctx = open_with_models(threads[t]);
            for (unsigned i = 0; i < FRAMES; i++) {
                Kept *k = kept_make(i, i, 8, 8);
                if (mode == 1 && i % 3 == 1) {
                    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &k->ref.pic, &k->dist.pic, i),
                                 0);
                    kept_drop(k);
                    k->released = 1;
                    k->on_main = 1;
                    continue;
                }
                CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, i,
                                                         release, k), 0);
                if (threads[t] < 2) {
                    CHECK_EQ_INT(k->released, 1);
                    continue;
                }
                /* Held: the newest W + 1 (slots) + 3 (the past frames they
                 * show) frames. */
                const unsigned held = (unsigned)threads[t] + 1 + 3;
                for (unsigned j = 0; j <= i; j++)
                    if (!(mode == 1 && j % 3 == 1))
                        CHECK_EQ_INT(kept[j].released, j + held <= i);
            }
            CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
            for (unsigned i = 0; i < FRAMES; i++) {
                CHECK_EQ_INT(kept[i].released, 1);
                CHECK(kept[i].on_main);
            }
            CHECK_EQ_INT((int)scores(ctx, got), (int)n_want);
            for (size_t f = 0; f < n_want; f++)
                for (unsigned i = 0; i < FRAMES; i++)
                    if (got[f][i] != want[f][i]) {
                        fprintf(stderr, "mode %d threads %d: %s of frame %u: %.9g, copied "
                                "%.9g\n", mode, threads[t], vmaf_dnn_feature_name(ctx, f), i,
                                got[f][i], want[f][i]);
                        CHECK(got[f][i] == want[f][i]);
                    }
            vmaf_dnn_context_close(ctx);
        }
}

/* A call that fails releases nothing and leaves the pictures the caller's;
 * the frame that fails on a worker was taken (0), so it is released. */
static void test_failed_calls_keep_nothing(void)
{
    Kept *k = kept_make(0, 0, 8, 8);
    CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(NULL, &k->ref.pic, &k->dist.pic, 0, release, k),
                 -EINVAL);
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.threads = 2;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, 0, release, k),
                 -EINVAL); /* no model yet */
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, 0, NULL, k),
                 -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "release is NULL");
    k->dist.pic.bpc = 7;
    CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, NULL, &k->dist.pic, 0, release, k), -EINVAL);
    k->dist.pic.bpc = 8;
    CHECK_EQ_INT(k->released, 0);
    kept_drop(k);

    /* Frame 3 is 16x16 for an 8x8 model: taken, it fails on a worker and is
     * reported by the read of frame 6, which does not take its frame. */
    for (unsigned i = 0; i < 6; i++) {
        k = kept_make(i, i, i == 3 ? 16 : 8, i == 3 ? 16 : 8);
        CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, NULL, &k->dist.pic, i, release, k), 0);
        if (i == 1) /* in flight: refused, and not released twice */
            CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, NULL, &k->dist.pic, i, release, k),
                         -EEXIST);
    }
    k = kept_make(6, 6, 8, 8);
    CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, NULL, &k->dist.pic, 6, release, k), -ERANGE);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 3");
    CHECK_EQ_INT(k->released, 0);
    CHECK(k->dist.y != NULL);
    CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, NULL, &k->dist.pic, 6, release, k), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    for (unsigned i = 0; i < 7; i++)
        CHECK_EQ_INT(kept[i].released, 1);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 7);
    vmaf_dnn_context_close(ctx);
}

/* Close with frames in flight, reset and cancel release every kept
 * picture before they return. */
static void test_close_reset_cancel_release_all(void)
{
    for (int how = 0; how < 3; how++) {
        VmafDnnContext *ctx = open_with_models(3);
        for (unsigned i = 0; i < 7; i++) {
            Kept *k = kept_make(i, i, 8, 8);
            CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, i,
                                                     release, k), 0);
        }
        if (how == 1) {
            CHECK_EQ_INT(vmaf_dnn_context_reset(ctx), 0);
        } else if (how == 2) {
            vmaf_dnn_context_cancel(ctx);
            CHECK(vmaf_dnn_flush(ctx) <= 0);
        }
        if (how)
            for (unsigned i = 0; i < 7; i++)
                CHECK_EQ_INT(kept[i].released, 1);
        if (how == 1) { /* the next clip keeps its own pictures again */
            Kept *k = kept_make(7, 0, 8, 8);
            CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, 0,
                                                     release, k), 0);
            CHECK_EQ_INT(k->released, 0);
        }
        vmaf_dnn_context_close(ctx);
        for (unsigned i = 0; i < (how == 1 ? 8u : 7u); i++) {
            CHECK_EQ_INT(kept[i].released, 1);
            CHECK(kept[i].on_main);
        }
    }
}

static char read_message[1024]; /* read_with_budget's read's message */

/* The bytes an -EDQUOT message says frames in flight need. */
static unsigned long long bytes_needed(void)
{
    const char *at = strstr(read_message, " need ");
    return at ? strtoull(at + 6, NULL, 10) : 0;
}

/* Frame 0 of a 512x512 clip read copied or kept by a context of 3 threads
 * whose policy allows `budget` bytes; the read's code. */
static int read_with_budget(unsigned long long budget, int keep)
{
    VmafDnnModelPolicy policy;
    vmaf_dnn_default_model_policy(&policy);
    policy.max_memory_bytes = budget;
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.threads = 3;
    cfg.policy = &policy;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, past_model(3), NULL), 0);
    Kept *k = kept_make(0, 0, 512, 512);
    const int rc = keep ? vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, 0,
                                                      release, k)
                        : vmaf_dnn_read_pictures(ctx, &k->ref.pic, &k->dist.pic, 0);
    snprintf(read_message, sizeof(read_message), "%s", vmaf_dnn_last_error());
    vmaf_dnn_context_close(ctx);
    CHECK_EQ_INT(k->released, keep && !rc);
    if (!k->released)
        kept_drop(k);
    return rc;
}

/* The memory budget of frames in flight counts a kept frame's samples as
 * the copies they replace (the frames in flight hold the caller's memory
 * instead): a budget that refuses the copies refuses the kept frame, with
 * the same figure, and one that takes them takes it. */
static void test_budget_counts_kept_samples_as_copies(void)
{
    CHECK_EQ_INT(read_with_budget(5 << 20, 0), -EDQUOT);
    const unsigned long long copied = bytes_needed();
    CHECK_STR_CONTAINS(read_message, "slots of 8-bit samples with 3 past frames");
    CHECK_EQ_INT(read_with_budget(5 << 20, 1), -EDQUOT);
    CHECK_EQ_INT((int)(bytes_needed() - copied), 0);
    CHECK_EQ_INT(read_with_budget(copied - 1, 1), -EDQUOT);
    CHECK_EQ_INT(read_with_budget(copied, 1), 0);
    CHECK_EQ_INT(read_with_budget(copied, 0), 0);
}

static VmafDnnContext *other;

/* A release that calls into another context (which clears this thread's
 * message as every call does). */
static void release_calling_other(void *opaque)
{
    release(opaque);
    unsigned done;
    CHECK_EQ_INT(vmaf_dnn_frames_done(other, &done), 0);
}

/* A failing call whose releases run after its failure (flush: a model
 * running behind lacks a feature at the last frame, then the past frames
 * go) keeps its message whatever the releases call. */
static void test_a_release_keeps_the_calls_message(void)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.threads = 2;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    CHECK_EQ_INT(vmaf_dnn_context_open(&other, NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, past_model(1), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, stage("pair_sum", "sum",
        "{\"output_keys\": [\"s\"], \"input_sources\": {\"a\": {\"feature\": \"y\", "
        "\"offset\": 1}, \"b\": {\"feature\": \"x\", \"offset\": 0}}}"), NULL), 0);
    for (unsigned i = 0; i < 6; i++) {
        Kept *k = kept_make(i, i, 8, 8);
        if (i < 5)
            CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "x", i, i), 0);
        if (i >= 1)
            CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "y", i, i), 0);
        CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &k->ref.pic, &k->dist.pic, i,
                                                 release_calling_other, k), 0);
    }
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), -ENOENT);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "needs feature \"x\" at frame 5");
    for (unsigned i = 0; i < 6; i++)
        CHECK_EQ_INT(kept[i].released, 1);
    vmaf_dnn_context_close(ctx);
    vmaf_dnn_context_close(other);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/sum.onnx", tmp_dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/sum.json", tmp_dir);
    unlink(path);
}

int main(int argc, char **argv)
{
    const int unready = fixture_start(argc, argv, tmp_dir);
    if (unready)
        return unready;
    main_thread = pthread_self();
    test_same_scores_one_release();
    test_failed_calls_keep_nothing();
    test_close_reset_cancel_release_all();
    test_a_release_keeps_the_calls_message();
    test_budget_counts_kept_samples_as_copies();
    char path[PATH_MAX + 64];
    for (int back = 1; back <= 3; back += 2) {
        snprintf(path, sizeof(path), "%s/past%d.onnx", tmp_dir, back);
        unlink(path);
        snprintf(path, sizeof(path), "%s/past%d.json", tmp_dir, back);
        unlink(path);
    }
    rmdir(tmp_dir);
    return check_report();
}
