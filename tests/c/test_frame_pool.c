/* Frames in flight (VmafDnnContextConfig.threads > 1) and
 * vmaf_dnn_context_reset: scores equal to one-frame-at-a-time scoring,
 * failures reported by a call that depends only on the calls made, cancel
 * and close with frames in flight, and reset keeping sessions.
 * Usage: test_frame_pool MODEL_DIR (tests/models/factory.py's output). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"
#include "frame_fixture.h"

static char tmp_dir[] = "/tmp/vmafdnn-frame-pool-XXXXXX";

#define FRAMES 12

/* Frames in flight give the very values, keys and feature order of the
 * one-at-a-time context, for frames read in any order. */
static void test_same_scores(void)
{
    static const unsigned order[FRAMES] = {3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10};
    double want[2][FRAMES];
    char names[2][64] = {{0}};
    for (int pass = 0; pass < 3; pass++) {
        const int threads = pass == 0 ? 0 : pass == 1 ? 2 : 3;
        VmafDnnContext *ctx = open_context(threads);
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("fr_diff"), NULL), 0);
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
        for (unsigned k = 0; k < FRAMES; k++) {
            Frame ref, dist;
            frame_make(&ref, 8, 8, order[k]);
            frame_make(&dist, 8, 8, order[k] * 3 + 1);
            CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, order[k]), 0);
            free(ref.y);
            free(dist.y);
        }
        CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
        CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), FRAMES);
        CHECK_EQ_INT(vmaf_dnn_feature_count(ctx), 2);
        for (size_t f = 0; f < 2; f++) {
            const char *name = vmaf_dnn_feature_name(ctx, f);
            if (pass == 0)
                snprintf(names[f], sizeof(names[f]), "%s", name);
            else
                CHECK(name && strcmp(name, names[f]) == 0);
            for (unsigned i = 0; i < FRAMES; i++) {
                double v = -1;
                CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, names[f], i, &v), 0);
                if (pass == 0)
                    want[f][i] = v;
                else
                    CHECK(v == want[f][i]);
            }
        }
        vmaf_dnn_context_close(ctx);
    }
}

/* A picture of `bpc` bits whose rows lie `pad` samples apart beyond w, with
 * U and V planes of half the size (4:2:0) likewise; samples depend on seed
 * and reach the top of the range. */
typedef struct RawPic {
    void *plane[3];
    VmafDnnPicture pic;
} RawPic;

static void raw_make(RawPic *r, unsigned w, unsigned h, unsigned bpc, unsigned pad,
                     unsigned seed)
{
    memset(r, 0, sizeof(*r));
    const unsigned bytes = bpc > 8 ? 2 : 1, max = (1u << bpc) - 1u;
    for (int i = 0; i < 3; i++) {
        const unsigned pw = i ? (w + 1) / 2 : w, ph = i ? (h + 1) / 2 : h;
        const size_t stride = (size_t)(pw + pad) * bytes;
        r->plane[i] = malloc(stride * ph);
        for (unsigned y = 0; y < ph; y++)
            for (unsigned x = 0; x < pw + pad; x++) {
                const unsigned v = x >= pw ? 0xabcdu : (x * 131u + y * 71u + seed * 977u +
                                                         (unsigned)i * 13u) % (max + 1u);
                if (bytes == 2)
                    ((uint16_t *)r->plane[i])[(size_t)y * (pw + pad) + x] = (uint16_t)v;
                else
                    ((uint8_t *)r->plane[i])[(size_t)y * (pw + pad) + x] = (uint8_t)v;
            }
        r->pic.data[i] = r->plane[i];
        r->pic.stride[i] = (ptrdiff_t)stride;
        r->pic.w[i] = pw;
        r->pic.h[i] = ph;
    }
    r->pic.bpc = bpc;
}

static void raw_free(RawPic *r)
{
    for (int i = 0; i < 3; i++)
        free(r->plane[i]);
}

/* The built-in models, when the build generated them (BUILD/models, three
 * levels above the test models in BUILD/tests/c/models); NULL otherwise. */
static const char *builtin_model(const char *name)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/../../../models/%s.onnx", model_dir, name);
    return access(path, R_OK) == 0 ? path : NULL;
}

/* Slots hold the caller's raw samples and the worker normalises them: the
 * scores equal one-frame-at-a-time scoring bit for bit at 8, 10 and 16 bits,
 * with rows spaced beyond their width, and for chroma planes (the built-in
 * psnr reads U and V) when the built-in models are there. */
static void test_raw_layouts(void)
{
    static const unsigned bpcs[3] = {8, 10, 16};
    const char *psnr = builtin_model("psnr");
    for (int b = 0; b < 3; b++) {
        double want[8][FRAMES];
        size_t n_features = 0;
        for (int pass = 0; pass < 2; pass++) {
            VmafDnnContext *ctx = open_context(pass ? 2 : 0);
            CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("fr_diff"), NULL), 0);
            CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
            if (psnr)
                CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, psnr, NULL), 0);
            for (unsigned k = 0; k < FRAMES; k++) {
                RawPic ref, dist;
                raw_make(&ref, 8, 8, bpcs[b], 1 + k % 3, k);
                raw_make(&dist, 8, 8, bpcs[b], k % 2, k * 5 + 3);
                CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, k), 0);
                raw_free(&ref);
                raw_free(&dist);
            }
            CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
            if (pass == 0)
                n_features = vmaf_dnn_feature_count(ctx);
            CHECK_EQ_INT((int)vmaf_dnn_feature_count(ctx), (int)n_features);
            CHECK(n_features >= (psnr ? 5u : 2u) && n_features <= 8);
            for (size_t f = 0; f < n_features && f < 8; f++)
                for (unsigned i = 0; i < FRAMES; i++) {
                    double v = -1;
                    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, vmaf_dnn_feature_name(ctx, f), i,
                                                      &v), 0);
                    if (pass == 0)
                        want[f][i] = v;
                    else if (!(v == want[f][i] || (isnan(v) && isnan(want[f][i]))))
                        CHECK(v == want[f][i]);
                }
            vmaf_dnn_context_close(ctx);
        }
    }
    if (!psnr)
        printf("test_raw_layouts: no built-in models next to the test models: chroma not "
               "covered\n");
}

/* The workers open their copies of the models on their own threads at the
 * first frame: a copy that cannot be opened (the file is gone) fails that
 * read_pictures with the open's code, the frame is not taken, and the next
 * read opens the workers again. */
static void test_worker_open_fails(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/gone.onnx", tmp_dir);
    copy_file(model("nr_mean"), path);
    VmafDnnContext *ctx = open_context(3);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, path, NULL), 0);
    unlink(path);
    Frame d;
    frame_make(&d, 8, 8, 4);
    const int rc = vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0);
    CHECK(rc < 0);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "gone.onnx");
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0), rc);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 0);
    copy_file(model("nr_mean"), path);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 1);
    unlink(path);
    free(d.y);
    vmaf_dnn_context_close(ctx);
}

/* Scores are readable right after read_pictures returns: other calls wait
 * for the frames in flight. A frame in flight cannot be read twice. */
static void test_settled_reads(void)
{
    VmafDnnContext *ctx = open_context(2);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
    Frame d;
    frame_make(&d, 8, 8, 5);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0), -EEXIST);
    double v = -1;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "nr_mean", 0, &v), 0);
    CHECK(v >= 0 && v <= 1);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, 0), -EEXIST);
    free(d.y);
    vmaf_dnn_context_close(ctx);
}

/* A frame that fails on a worker (16x16 for an 8x8 model, no resize) is
 * reported by the call that needs its slot: with 2 workers (3 slots) the
 * read of the third frame after it, whatever the timing; that call does not
 * take its own frame, which can be read again. */
static void test_failure_reported_deterministically(void)
{
    for (int round = 0; round < 3; round++) {
        VmafDnnContext *ctx = open_context(2);
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
        Frame good, bad;
        frame_make(&good, 8, 8, 1);
        frame_make(&bad, 16, 16, 2);
        for (unsigned i = 0; i < 6; i++)
            CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, i == 3 ? &bad.pic : &good.pic, i), 0);
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &good.pic, 6), -ERANGE);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 3");
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &good.pic, 6), 0);
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &bad.pic, 7), 0);
        /* The last frame's failure comes with flush. */
        CHECK_EQ_INT(vmaf_dnn_flush(ctx), -ERANGE);
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 7");
        CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
        double v;
        CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "nr_mean", 3, &v), -ENOENT);
        CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "nr_mean", 6, &v), 0);
        CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 7);
        free(good.y);
        free(bad.y);
        vmaf_dnn_context_close(ctx);
    }
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* A picture of one value (stall_bright: above 127 never finishes on its own,
 * at or below scores at once). */
static void frame_const(Frame *f, unsigned w, unsigned h, uint8_t value)
{
    frame_make(f, w, h, 0);
    memset(f->y, value, (size_t)w * h);
}

typedef struct Canceller {
    VmafDnnContext *ctx;
    atomic_int stop;
    int cancels;
} Canceller;

/* Cancels every millisecond until told to stop. One cancel can come after
 * a worker has published the model it is about to run but before that
 * model's session Run began: the session then has no run to stop, and the
 * run goes on until it ends (the frame then fails as cancelled) or meets
 * its time budget. stall_bright's bright frames never end, so the test
 * cancels until they have settled, as a caller of such a model would. */
static void *cancel_until_stopped(void *arg)
{
    Canceller *c = arg;
    while (!atomic_load(&c->stop)) {
        vmaf_dnn_context_cancel(c->ctx);
        c->cancels++;
        sleep_ms(1);
    }
    return NULL;
}

/* Cancel stops both frames in flight, and a frame read after the cancel is
 * scored. The two frames are stall_bright's bright ones, which only a cancel
 * ends: the outcome is the same whether the workers had started them or not
 * when the cancel came. (Frames of slow_chain, about a second each, were
 * scored when the cancel came late: after the 100 ms sleep before it, the
 * main thread can wait in a loaded machine's run queue while the workers
 * run.) */
static void test_cancel_in_flight(void)
{
    VmafDnnContext *ctx = open_context(2);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("stall_bright"), NULL), 0);
    Frame bright, dark;
    frame_const(&bright, 8, 8, 200);
    frame_const(&dark, 8, 8, 51);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &bright.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &bright.pic, 1), 0);
    sleep_ms(20); /* usually inside the Runs by now; either way is right */
    const double t0 = now_s();
    Canceller c = {.ctx = ctx};
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, cancel_until_stopped, &c), 0);
    double v;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 0, &v), -ENOENT); /* waits */
    const double waited = now_s() - t0;
    atomic_store(&c.stop, 1);
    pthread_join(t, NULL);
    printf("cancel: frames in flight stopped in %.3f s (%d cancels)\n", waited, c.cancels);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 2), -ECANCELED);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 0");
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "1 later frame");
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 2), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 2, &v), 0);
    CHECK(fabs(v - 0.2) < 1e-6);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 1, &v), -ENOENT);
    free(bright.y);
    free(dark.y);
    vmaf_dnn_context_close(ctx);
}

/* Polls vmaf_dnn_frames_done until *done reaches `want` or it fails,
 * cancelling on every turn when `cancel` is set. Returns the last code. */
static int poll_done(VmafDnnContext *ctx, unsigned want, int cancel, unsigned *done)
{
    for (;;) {
        if (cancel)
            vmaf_dnn_context_cancel(ctx);
        const int rc = vmaf_dnn_frames_done(ctx, done);
        if (rc || *done >= want)
            return rc;
        sleep_ms(1);
    }
}

/* vmaf_dnn_frames_done never waits for a frame: with a bright frame of
 * stall_bright in flight, which never finishes on its own, it returns, the
 * frames before it are done and read without waiting (were either call to
 * wait, the test would never end), and a finished frame behind the stalled
 * one stays in flight (frames are done in read order). The stalled frame's
 * failure comes from a later frames_done, once, then every frame is done.
 * With a model running one frame behind (pair_min reading the score at
 * offsets 0 and +1), a frame is done only once the frame after it is out of
 * flight. */
static void test_frames_done(int behind)
{
    VmafDnnContext *ctx = open_context(2);
    unsigned done = 12345;
    CHECK_EQ_INT(vmaf_dnn_frames_done(NULL, &done), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_frames_done(ctx, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_frames_done(ctx, &done), 0);
    CHECK_EQ_INT(done, 0);
    char path[PATH_MAX + 64], json[PATH_MAX + 64];
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("stall_bright"), NULL), 0);
    if (behind) {
        snprintf(path, sizeof(path), "%s/m2.onnx", tmp_dir);
        snprintf(json, sizeof(json), "%s/m2.json", tmp_dir);
        copy_file(model("pair_min"), path);
        FILE *f = fopen(json, "w");
        CHECK(f != NULL);
        fputs("{\"output_keys\": [\"m2\"], \"input_sources\": {\"a\": {\"feature\": "
              "\"stall_bright\"}, \"b\": {\"feature\": \"stall_bright\", \"offset\": 1}}}",
              f);
        fclose(f);
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, path, NULL), 0);
    }
    Frame bright, dark, darker;
    frame_const(&bright, 8, 8, 200);
    frame_const(&dark, 8, 8, 51);
    frame_const(&darker, 8, 8, 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &darker.pic, 1), 0);
    CHECK_EQ_INT(poll_done(ctx, 2, 0, &done), 0);
    CHECK_EQ_INT(done, 2);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &bright.pic, 2), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 3), 0); /* finishes behind it */
    for (int round = 0; round < 3; round++) {
        CHECK_EQ_INT(vmaf_dnn_frames_done(ctx, &done), 0);
        CHECK_EQ_INT(done, behind ? 1 : 2);
    }
    double v = -1;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 0, &v), 0);
    CHECK(fabs(v - 0.2) < 1e-6);
    if (!behind) {
        CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 1, &v), 0);
        CHECK(v == 0.0);
    } else {
        CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "m2", 0, &v), 0);
        CHECK(v == 0.0);
    }
    CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), behind ? 2 : 1);
    CHECK(strcmp(vmaf_dnn_tiny_model_feature_name(ctx, 0, 0), "stall_bright") == 0);
    CHECK_EQ_INT(vmaf_dnn_frames_done(ctx, &done), 0);
    CHECK_EQ_INT(done, behind ? 1 : 2);

    /* Cancelled, the stalled frame fails. What follows depends on timing:
     * frame 3 may have been cancelled too (if it had not finished); with the
     * model running behind, the merge of the frame after a failed one finds
     * a score missing (-ENOENT). Each is reported once, by a later call, or
     * counted in an earlier report when one merge took both. */
    CHECK_EQ_INT(poll_done(ctx, 4, 1, &done), -ECANCELED);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 2 (scored in flight)");
    int rc, reports = 0;
    while ((rc = poll_done(ctx, 4, 0, &done)) && reports++ < 4) {
        CHECK(rc == -ECANCELED || (behind && rc == -ENOENT));
        CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frame 3 (scored in flight)");
    }
    CHECK_EQ_INT(rc, 0);
    CHECK(reports <= 1);
    CHECK_EQ_INT(done, 4);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 2, &v), -ENOENT);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 4), 0);
    /* Behind: m2 of frame 3 at frame 4's merge lacks frame 3's score when
     * frame 3 was cancelled. */
    rc = vmaf_dnn_flush(ctx);
    CHECK(rc == 0 || (behind && rc == -ENOENT));
    CHECK_EQ_INT(vmaf_dnn_frames_done(ctx, &done), 0);
    CHECK_EQ_INT(done, 5);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 4, &v), 0);
    free(bright.y);
    free(dark.y);
    free(darker.y);
    vmaf_dnn_context_close(ctx);
    if (behind) {
        unlink(path);
        unlink(json);
    }
}

/* Close with frames queued and running waits for them (TSan and ASan see
 * no use after free), also while another thread cancels. */
static void sleep_ms(long ms);

static void *cancel_later(void *arg)
{
    sleep_ms(50);
    vmaf_dnn_context_cancel(arg);
    return NULL;
}

static void test_close_in_flight(void)
{
    for (int with_cancel = 0; with_cancel < 2; with_cancel++) {
        VmafDnnContext *ctx = open_context(2);
        CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("slow_chain"), NULL), 0);
        Frame d;
        frame_make(&d, 512, 512, 4);
        for (unsigned i = 0; i < 3; i++)
            CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &d.pic, i), 0);
        pthread_t t;
        if (with_cancel)
            pthread_create(&t, NULL, cancel_later, ctx);
        else
            vmaf_dnn_context_cancel(ctx); /* keeps the test short */
        if (with_cancel)
            pthread_join(t, NULL);
        vmaf_dnn_context_close(ctx);
        free(d.y);
        CHECK(1);
    }
}

/* Reset: everything stored goes, the models and their sessions stay, and
 * the next clip scores as in a new context; flush no longer blocks reads. */
static void test_reset(int threads)
{
    VmafDnnContext *ctx = open_context(threads);
    CHECK_EQ_INT(vmaf_dnn_context_reset(NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("fr_diff"), NULL), 0);
    const VmafDnnSession *session = vmaf_dnn_tiny_model_session(ctx, 0);
    double first[4];
    for (int clip = 0; clip < 2; clip++) {
        CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "label", 0, clip), 0);
        for (unsigned i = 0; i < 4; i++)
            CHECK_EQ_INT(read_pair(ctx, 8, 8, i, i + 9, i), 0);
        CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
        CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 4);
        for (unsigned i = 0; i < 4; i++) {
            double v;
            CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "fr_diff", i, &v), 0);
            if (clip == 0)
                first[i] = v;
            else
                CHECK(v == first[i]);
        }
        size_t len = 0;
        CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 0, NULL, 0, &len),
                     -ENOBUFS);
        CHECK(len > 20);
        CHECK_EQ_INT(vmaf_dnn_context_reset(ctx), 0);
        CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), 0);
        CHECK_EQ_INT(vmaf_dnn_feature_count(ctx), 0);
        CHECK_EQ_INT(vmaf_dnn_tiny_model_count(ctx), 1);
        CHECK(vmaf_dnn_tiny_model_session(ctx, 0) == session);
        char buf[256];
        CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_JSON, 0, buf, sizeof(buf),
                                                  &len), 0);
        CHECK_STR_CONTAINS(buf, "\"fps\": 0.00,\n  \"frames\": [\n  ]");
    }
    vmaf_dnn_context_close(ctx);
}

/* A native-resolution model takes the size of the first frame after a reset
 * (before reset, another size is -ERANGE, with or without frames in flight). */
static void test_reset_native(int threads)
{
    char path[PATH_MAX], side[PATH_MAX];
    snprintf(path, sizeof(path), "%s/native.onnx", tmp_dir);
    snprintf(side, sizeof(side), "%s/native.json", tmp_dir);
    copy_file(model("symbolic_hw_mean"), path);
    FILE *f = fopen(side, "w");
    fputs("{\"native_resolution\": true}\n", f);
    fclose(f);
    VmafDnnContext *ctx = open_context(threads);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, path, NULL), 0);
    Frame big, small;
    frame_make(&big, 16, 12, 1);
    frame_make(&small, 8, 6, 2);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &big.pic, 0), 0);
    int rc = vmaf_dnn_read_pictures(ctx, NULL, &small.pic, 1);
    if (rc == 0)
        rc = vmaf_dnn_flush(ctx);
    CHECK_EQ_INT(rc, -ERANGE);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "native resolution");
    /* The model is rewound in place, not opened again: its session stays
     * and its file is not needed any more. */
    const VmafDnnSession *session = vmaf_dnn_tiny_model_session(ctx, 0);
    unlink(path);
    unlink(side);
    CHECK_EQ_INT(vmaf_dnn_context_reset(ctx), 0);
    CHECK(vmaf_dnn_tiny_model_session(ctx, 0) == session);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &small.pic, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &small.pic, 1), 0);
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    double v;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "native", 1, &v), 0);
    free(big.y);
    free(small.y);
    vmaf_dnn_context_close(ctx);
}

static void test_config(void)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    CHECK_EQ_INT(cfg.threads, 0);
    VmafDnnContext *ctx = NULL;
    cfg.threads = -1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    cfg.threads = VMAF_DNN_MAX_THREADS + 1;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "threads");
    CHECK(ctx == NULL);
    /* threads replaces the sessions' own intra-op count. */
    ctx = open_context(3);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, model("nr_mean"), NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_session_config(vmaf_dnn_tiny_model_session(ctx, 0))->threads, 3);
    vmaf_dnn_context_close(ctx);
}

/* The frames in flight count against the policy's memory budget: 3 slots
 * of 2 x 256 x 256 8-bit samples (384 KiB) and 2 workers' fp32 planes
 * (1 MiB) do not fit 1 MiB, one frame does. */
static void test_budget(void)
{
    VmafDnnModelPolicy policy;
    vmaf_dnn_default_model_policy(&policy);
    policy.max_memory_bytes = 1 << 20;
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.policy = &policy;
    cfg.resize = VMAF_DNN_RESIZE_BILINEAR;
    for (int threads = 1; threads <= 2; threads++) {
        cfg.threads = threads;
        VmafDnnContext *ctx = NULL;
        CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
        int rc = vmaf_dnn_use_tiny_model(ctx, model("fr_diff"), NULL);
        CHECK_EQ_INT(rc, 0);
        if (rc) {
            printf("attach under 1 MiB: %s\n", vmaf_dnn_last_error());
            vmaf_dnn_context_close(ctx);
            continue;
        }
        Frame r, d;
        frame_make(&r, 256, 256, 1);
        frame_make(&d, 256, 256, 2);
        rc = vmaf_dnn_read_pictures(ctx, &r.pic, &d.pic, 0);
        CHECK_EQ_INT(rc, threads == 1 ? 0 : -EDQUOT);
        if (threads > 1)
            CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "frames in flight");
        free(r.y);
        free(d.y);
        vmaf_dnn_context_close(ctx);
    }
}

/* Static runs with device I/O bound on every run (ON, on ORT's CPU EP)
 * counted over the copies scoring frames in flight, read while they run:
 * the counts never go back, every fixed run bound, and they end at one run
 * per frame (under TSan: the counts and reasons are read while the
 * workers' runs replace them). */
static void test_static_runs_in_flight(void)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.threads = 3;
    cfg.session.static_shapes = VMAF_DNN_STATIC_SHAPES_ON;
    cfg.session.device_io = VMAF_DNN_DEVICE_IO_ON;
    /* A model with named symbolic sizes: the accelerator form of psnr_y */
    const char *psnr_y = builtin_model("psnr_y_accel");
    if (!psnr_y) {
        printf("static runs in flight: no built-in models in this build, not run\n");
        return;
    }
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    CHECK_EQ_INT(vmaf_dnn_use_tiny_model(ctx, psnr_y, NULL), 0);
    VmafDnnStaticRuns runs, last = {0};
    CHECK_EQ_INT(vmaf_dnn_tiny_model_static_runs(ctx, 1, &runs), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_static_runs(ctx, 0, NULL), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_static_runs(NULL, 0, &runs), -EINVAL);
    for (unsigned i = 0; i < FRAMES; i++) {
        CHECK_EQ_INT(read_pair(ctx, 16, 12, i, i + 100, i), 0);
        CHECK_EQ_INT(vmaf_dnn_tiny_model_static_runs(ctx, 0, &runs), 0);
        CHECK(runs.fixed >= last.fixed && runs.device_io >= last.device_io);
        CHECK(runs.device_io <= runs.fixed && runs.captured == 0 && runs.as_opened == 0);
        CHECK(runs.reason && runs.device_io_reason && strlen(runs.device_io_reason) < 4096);
        last = runs;
    }
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(vmaf_dnn_tiny_model_static_runs(ctx, 0, &runs), 0);
    CHECK(runs.fixed == FRAMES && runs.device_io == FRAMES && runs.as_opened == 0);
    CHECK(runs.specialised >= 1 && strcmp(runs.reason, "") == 0);
    CHECK_STR_CONTAINS(runs.device_io_reason, "records no graphs");
    vmaf_dnn_context_close(ctx);
}

int main(int argc, char **argv)
{
    const int unready = fixture_start(argc, argv, tmp_dir);
    if (unready)
        return unready;
    test_config();
    test_same_scores();
    test_settled_reads();
    test_failure_reported_deterministically();
    test_budget();
    test_raw_layouts();
    test_worker_open_fails();
    test_reset(0);
    test_reset(2);
    test_reset_native(0);
    test_reset_native(2);
    test_cancel_in_flight();
    test_frames_done(0);
    test_frames_done(1);
    test_close_in_flight();
    test_static_runs_in_flight();
    rmdir(tmp_dir);
    return check_report();
}
