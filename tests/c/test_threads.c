/* One scoring context used from several threads (vmafdnn/context.h,
 * "Thread-safety"): calls are serialised, close waits for the calls in
 * flight, and vmaf_dnn_context_cancel stops a slow frame. Built for
 * ThreadSanitizer too (tools/sanitize.sh): every check below must also be
 * free of data races.
 *
 * usage: test_threads MODEL_DIR
 *   MODEL_DIR holds the models of tests/models/factory.py (nr_mean,
 *   slow_chain, stall_bright, loop_forever, loop_count).
 * ORT is found the documented way (VMAFDNN_ORT_LIBRARY, then the loader).
 *
 * check.h's counters are not atomic: only the main thread checks; worker
 * threads record what they saw and the main thread checks it after join.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"
#include "context_internal.h"

static char model_dir[PATH_MAX];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char *model(const char *name)
{
    static char path[4][PATH_MAX + 64];
    static unsigned next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof(path[0]), "%s/%s.onnx", model_dir, name);
    return p;
}

static VmafDnnContext *ctx_with(const char *name)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.session.device = VMAF_DNN_DEVICE_CPU;
    cfg.session.threads = 1;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    int rc = ctx ? vmaf_dnn_use_tiny_model(ctx, model(name), NULL) : -EINVAL;
    if (rc)
        fprintf(stderr, "attach %s: %d %s\n", name, rc, vmaf_dnn_last_error());
    CHECK_EQ_INT(rc, 0);
    return ctx;
}

/* An 8-bit picture of one value, rows padded. */
typedef struct Pic {
    VmafDnnPicture pic;
    unsigned char *buf;
} Pic;

static Pic pic_const(unsigned w, unsigned h, unsigned v)
{
    Pic p;
    memset(&p, 0, sizeof(p));
    p.pic.stride[0] = (ptrdiff_t)w + 5;
    p.buf = malloc((size_t)p.pic.stride[0] * h);
    if (p.buf)
        memset(p.buf, (int)v, (size_t)p.pic.stride[0] * h);
    p.pic.data[0] = p.buf;
    p.pic.w[0] = w;
    p.pic.h[0] = h;
    p.pic.bpc = 8;
    return p;
}

/* Creates an empty file named from `path_template` (mkstemp's XXXXXX). */
static void make_temp(char *path_template)
{
    int fd = mkstemp(path_template);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
}

/* ------------------------------------------------------------------------ */
/* Concurrent frames on one context are serialised, with the right scores   */
/* ------------------------------------------------------------------------ */

#define READERS 4
#define FRAMES_PER_READER 40

typedef struct Reader {
    VmafDnnContext *ctx;
    unsigned first;  /* frames first, first + READERS, ... */
    int failures;    /* calls that did not return 0 */
    int last_rc;
    char last_error[256];
} Reader;

/* The value every sample of frame `i` has: distinct per frame, so a plane
 * normalised for one frame and run for another shows up in its score. */
static unsigned frame_value(unsigned i)
{
    return (i * 37u + 11u) % 256u;
}

static void *read_frames(void *arg)
{
    Reader *r = arg;
    for (unsigned k = 0; k < FRAMES_PER_READER; k++) {
        unsigned index = r->first + k * READERS;
        Pic p = pic_const(8, 8, frame_value(index));
        int rc = vmaf_dnn_read_pictures(r->ctx, NULL, &p.pic, index);
        if (rc) {
            r->failures++;
            r->last_rc = rc;
            snprintf(r->last_error, sizeof(r->last_error), "%s", vmaf_dnn_last_error());
        }
        free(p.buf);
    }
    return NULL;
}

typedef struct Observer {
    VmafDnnContext *ctx;
    const char *report;
    int bad;            /* reads that returned an impossible value */
    unsigned rounds;
} Observer;

/* Reads scores, pools and writes reports while frames arrive: each result
 * must be one of the states the context passes through, never a torn one. */
static void *observe(void *arg)
{
    Observer *o = arg;
    for (o->rounds = 0; o->rounds < 200; o->rounds++) {
        unsigned frames = vmaf_dnn_frame_count(o->ctx);
        if (frames > READERS * FRAMES_PER_READER)
            o->bad++;
        double v = NAN;
        int rc = vmaf_dnn_feature_get(o->ctx, "nr_mean", 0, &v);
        if (rc == 0 && fabs(v - frame_value(0) / 255.0) > 1e-6)
            o->bad++;
        else if (rc != 0 && rc != -ENOENT)
            o->bad++;
        double mean;
        rc = vmaf_dnn_feature_pool(o->ctx, "nr_mean", VMAF_DNN_POOL_MEAN, 0, 0, &mean);
        if (rc != 0 && rc != -ENOENT && rc != -EINVAL)
            o->bad++;
        if (o->rounds % 20 == 0 && vmaf_dnn_write_output(o->ctx, o->report, VMAF_DNN_OUTPUT_JSON))
            o->bad++;
        if (vmaf_dnn_feature_count(o->ctx) > 1 || vmaf_dnn_tiny_model_count(o->ctx) != 1)
            o->bad++;
    }
    return NULL;
}

static void test_serialised_frames(void)
{
    VmafDnnContext *ctx = ctx_with("nr_mean");
    if (!ctx)
        return;
    char report[] = "/tmp/vmafdnn-threads-XXXXXX";
    make_temp(report);
    Reader r[READERS];
    Observer o = {.ctx = ctx, .report = report};
    pthread_t tid[READERS + 1];
    for (unsigned t = 0; t < READERS; t++) {
        r[t] = (Reader){.ctx = ctx, .first = t};
        CHECK_EQ_INT(pthread_create(&tid[t], NULL, read_frames, &r[t]), 0);
    }
    CHECK_EQ_INT(pthread_create(&tid[READERS], NULL, observe, &o), 0);
    for (unsigned t = 0; t <= READERS; t++)
        pthread_join(tid[t], NULL);
    for (unsigned t = 0; t < READERS; t++) {
        if (r[t].failures)
            fprintf(stderr, "reader %u: %d failures, last %d: %s\n", t, r[t].failures,
                    r[t].last_rc, r[t].last_error);
        CHECK_EQ_INT(r[t].failures, 0);
    }
    CHECK_EQ_INT(o.bad, 0);
    CHECK_EQ_INT(vmaf_dnn_frame_count(ctx), READERS * FRAMES_PER_READER);
    int wrong = 0;
    for (unsigned i = 0; i < READERS * FRAMES_PER_READER; i++) {
        double v = NAN;
        if (vmaf_dnn_feature_get(ctx, "nr_mean", i, &v) || fabs(v - frame_value(i) / 255.0) > 1e-6)
            wrong++;
    }
    CHECK_EQ_INT(wrong, 0);
    vmaf_dnn_context_close(ctx);
    unlink(report);
}

/* ------------------------------------------------------------------------ */
/* Close waits for the calls in flight                                      */
/* ------------------------------------------------------------------------ */

typedef enum CallKind { CALL_READ, CALL_GET, CALL_REPORT, CALL_APPEND, CALL_POOL } CallKind;

typedef struct Call {
    VmafDnnContext *ctx;
    CallKind kind;
    const char *report;
    Pic *pic;
    int rc;
    double done_at; /* now_s() when the call returned */
    atomic_int done; /* set after done_at */
} Call;

/* Waits until each of the n calls has entered the context (is inside it,
 * or queued for it) or has returned: then close may begin (a call that
 * starts after close has begun is a use after free). Returned calls are
 * counted first: one counted then cannot be in flight too, so the sum
 * never counts a call twice. A call that returned early (the slow frame
 * over before the others entered, on a loaded machine) makes the test
 * weaker, not wrong: waiting for all n in flight at once failed then. */
static size_t wait_entered(const VmafDnnContext *ctx, Call *call, size_t n)
{
    for (;;) {
        size_t returned = 0;
        for (size_t i = 0; i < n; i++)
            returned += (size_t)atomic_load(&call[i].done);
        const size_t in_flight = vdnn_context_calls_in_flight(ctx);
        if (returned + in_flight >= n)
            return in_flight;
        sleep_ms(1);
    }
}

/* The CPU time thread t has spent, in ms (-1: it cannot be read). */
static double thread_cpu_ms(pthread_t t)
{
    clockid_t clock;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &clock) || clock_gettime(clock, &ts))
        return -1;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Makes exactly one call and never touches the context again: a call that
 * started before close began is the only kind close can wait for. */
static void *one_call(void *arg)
{
    Call *c = arg;
    double v;
    switch (c->kind) {
    case CALL_READ: c->rc = vmaf_dnn_read_pictures(c->ctx, NULL, &c->pic->pic, 0); break;
    case CALL_GET: c->rc = vmaf_dnn_feature_get(c->ctx, "slow_chain", 0, &v); break;
    case CALL_REPORT: c->rc = vmaf_dnn_write_output(c->ctx, c->report, VMAF_DNN_OUTPUT_XML); break;
    case CALL_APPEND: c->rc = vmaf_dnn_feature_append(c->ctx, "extra", 0, 1.5); break;
    case CALL_POOL:
        c->rc = vmaf_dnn_feature_pool(c->ctx, "extra", VMAF_DNN_POOL_MAX, 0, 0, &v);
        break;
    }
    c->done_at = now_s();
    atomic_store(&c->done, 1);
    return NULL;
}

static void test_close_waits(void)
{
    VmafDnnContext *ctx = ctx_with("slow_chain");
    if (!ctx)
        return;
    char report[] = "/tmp/vmafdnn-threads-XXXXXX";
    make_temp(report);
    Pic p = pic_const(512, 512, 51);
    enum { N = 5 };
    Call call[N];
    pthread_t tid[N];
    /* The slow frame first, so the others queue behind it. */
    call[0] = (Call){.ctx = ctx, .kind = CALL_READ, .pic = &p};
    CHECK_EQ_INT(pthread_create(&tid[0], NULL, one_call, &call[0]), 0);
    wait_entered(ctx, call, 1);
    for (int i = 1; i < N; i++) {
        call[i] = (Call){.ctx = ctx, .kind = (CallKind)i, .report = report};
        CHECK_EQ_INT(pthread_create(&tid[i], NULL, one_call, &call[i]), 0);
    }
    const size_t in_flight = wait_entered(ctx, call, N);
    /* Must wait for all five: freeing the model under the frame's run, or
     * the collector under the others, is a use after free (a crash here, a
     * report under ASan and TSan). */
    const double close_started = now_s();
    vmaf_dnn_context_close(ctx);
    printf("close waited %.3f s for %zu calls in flight (of %d)\n", now_s() - close_started,
           in_flight, N);
    for (int i = 0; i < N; i++)
        pthread_join(tid[i], NULL);
    CHECK_EQ_INT(call[0].rc, 0); /* the frame was scored, not cut short */
    CHECK(call[1].rc == 0 || call[1].rc == -ENOENT);
    CHECK_EQ_INT(call[2].rc, 0);
    CHECK_EQ_INT(call[3].rc, 0);
    CHECK(call[4].rc == 0 || call[4].rc == -ENOENT);
    /* The report is whole, whichever state it saw. */
    FILE *f = fopen(report, "r");
    char text[4096] = "";
    size_t len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[len] = '\0';
    CHECK_STR_CONTAINS(text, "</VMAF>");
    unlink(report);
    free(p.buf);
}

/* ------------------------------------------------------------------------ */
/* Cancel                                                                   */
/* ------------------------------------------------------------------------ */

static void *read_frame_1(void *arg)
{
    Call *c = arg;
    c->rc = vmaf_dnn_read_pictures(c->ctx, NULL, &c->pic->pic, 1);
    c->done_at = now_s();
    atomic_store(&c->done, 1);
    return NULL;
}

/* A frame in flight is stopped by cancel; frames before and after are not
 * touched. The frame is stall_bright's bright one, whose run never ends on
 * its own, and the cancel comes once the reader thread has spent 50 ms of
 * CPU time, which only that run takes (the context scores on the calling
 * thread, the session on one intra-op thread): the Run is in flight, so
 * the cancel stops it, whatever the scheduling. With slow_chain (about a
 * second) and a cancel a fifth of a measured run after the reader entered
 * the context, the outcome depended on the schedule: on a loaded machine
 * the cancel could land before the frame was in flight (a no-op: the frame
 * was scored) or after it had finished, and "returned within 0.75 of a
 * full run" was a bound on the scheduler. */
static void test_cancel(void)
{
    vmaf_dnn_context_cancel(NULL); /* no-op */
    VmafDnnContext *ctx = ctx_with("stall_bright");
    if (!ctx)
        return;
    Pic dark = pic_const(8, 8, 51), bright = pic_const(8, 8, 200);
    /* A cancel with no frame in flight changes nothing for the next one. */
    vmaf_dnn_context_cancel(ctx);
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 0), 0);
    double v = NAN;
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 0, &v), 0);
    CHECK(fabs(v - 0.2) < 1e-6);

    Call c = {.ctx = ctx, .pic = &bright};
    pthread_t tid;
    const double t0 = now_s();
    CHECK_EQ_INT(pthread_create(&tid, NULL, read_frame_1, &c), 0);
    while (!atomic_load(&c.done) && thread_cpu_ms(tid) < 50)
        sleep_ms(1);
    CHECK(!atomic_load(&c.done)); /* the bright frame has no end of its own */
    const double cancelled_at = now_s();
    vmaf_dnn_context_cancel(ctx);
    pthread_join(tid, NULL);
    printf("cancel: the frame in flight returned %.3f s after the cancel (%.3f s in all)\n",
           c.done_at - cancelled_at, c.done_at - t0);
    CHECK_EQ_INT(c.rc, -ECANCELED);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 1, &v), -ENOENT);

    /* Later frames are not affected. */
    CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, NULL, &dark.pic, 2), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "stall_bright", 2, &v), 0);
    CHECK(fabs(v - 0.2) < 1e-6);
    vmaf_dnn_context_close(ctx);
    free(dark.buf);
    free(bright.buf);
}

/* A context publishes the model it runs for cancel, then runs it: a cancel
 * that lands in between finds no session run in flight to stop. The
 * frame's flag, which cancel sets first, stops each session run as it
 * begins (vdnn_session_watch_stop_flag). Shown on sessions, where the
 * window can be entered at will. */
static int run_one(VmafDnnSession *s, float x, float *y)
{
    int64_t n = 1;
    VmafDnnInput in = {NULL, &x, &n, 1};
    VmafDnnOutput o = {.name = NULL, .data = y, .capacity = 1};
    return vmaf_dnn_session_run(s, &in, 1, &o, 1);
}

static void test_stop_flag(void)
{
    VmafDnnConfig cfg;
    vmaf_dnn_default_config(&cfg);
    cfg.device = VMAF_DNN_DEVICE_CPU;
    cfg.threads = 1;
    VmafDnnSession *forever = NULL, *count = NULL;
    CHECK_EQ_INT(vmaf_dnn_session_open(&forever, model("loop_forever"), &cfg), 0);
    CHECK_EQ_INT(vmaf_dnn_session_open(&count, model("loop_count"), &cfg), 0);
    if (!forever || !count)
        goto done;
    atomic_int flag = 1;
    float y = 0;
    vdnn_session_watch_stop_flag(&flag);
    /* loop_forever has 2^62 iterations: returning at all is the stop. */
    CHECK_EQ_INT(run_one(forever, 0, &y), -ECANCELED);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "cancelled");
    atomic_store(&flag, 0);
    CHECK_EQ_INT(run_one(count, 10, &y), 0); /* a clear flag stops nothing */
    CHECK(y == 10.0f);
    atomic_store(&flag, 1);
    vdnn_session_watch_stop_flag(NULL);
    y = 0;
    CHECK_EQ_INT(run_one(count, 10, &y), 0); /* nor one no longer watched */
    CHECK(y == 10.0f);
done:
    vmaf_dnn_session_close(count);
    vmaf_dnn_session_close(forever);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
        return 2;
    }
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "%s\n", vmaf_dnn_last_error());
        return 1;
    }
    if (!realpath(argv[1], model_dir)) {
        perror(argv[1]);
        return 2;
    }
    test_serialised_frames();
    test_close_waits();
    test_cancel();
    test_stop_flag();
    return check_report();
}
