/* The public scoring context (vmafdnn/context.h): argument checks, picture
 * checks and normalisation, routing frames through the attached models
 * (tiny_model.h) into the feature collector, and reports (output.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmafdnn/context.h"

#include "catalog.h"
#include "error.h"
#include "feature_collector.h"
#include "frame_pool.h"
#include "context_internal.h"
#include "output.h"
#include "picture_memory.h"
#include "tiny_model.h"
#include "vectorize.h"

struct VmafDnnContext {
    VmafDnnContextConfig cfg;
    VdnnFeatureCollector *fc;
    VdnnTinyModel **model;   /* n_models owned models, in attach order */
    VdnnModelRecipe **recipe; /* how each was attached (frame_pool.h) */
    size_t n_models, model_capacity;
    /* Where picture buffers come from (vmaf_dnn_picture_buffer_alloc), set
     * as models attach; read without the lock. */
    const VdnnHostMemory *_Atomic picture_memory;
    int flushed;
    /* Frame order. Once a temporal model is attached (one that reads other
     * frames than the one it scores, or runs behind), frames must come as
     * first, first + 1, ...: `next` is the one expected. */
    int temporal;            /* some attached model is temporal */
    int started;             /* a frame was read */
    unsigned first, next;
    float *plane[2][3];      /* this frame's normalised planes, by
                              * [VdnnSourcePicture][VdnnSourcePlane]: those
                              * some model reads */
    size_t plane_capacity[2][3]; /* floats in each */

    /* Serialisation. A public call owns the context from enter() to leave()
     * (`busy`); `gate` is held only briefly, to update the fields below, so
     * vmaf_dnn_context_cancel can take it while a call runs a model. The
     * read functions take a const context and still lock: the lock is the
     * one mutable part of a const context (the object itself is never
     * const: it comes from calloc), hence the cast in enter(). */
    pthread_mutex_t gate;
    pthread_cond_t turn;     /* signalled when busy drops */
    int busy;
    unsigned waiting;        /* calls blocked in enter(): close waits for them too */
    int frame_in_flight;     /* inside vmaf_dnn_read_pictures */
    atomic_int cancelled;    /* this frame was cancelled (also read by the
                                session runs: vdnn_session_watch_stop_flag) */
    VdnnTinyModel *running;  /* the model whose run is in flight, or NULL */

    /* What reports say besides scores, as libvmaf measures it: frames read,
     * wall time from the first read_pictures call to the end of the last
     * read or flush (fps = processing speed), luma size of the first frame. */
    unsigned frames_read;
    struct timespec call_start, clock_start, clock_end;
    unsigned width, height;

    /* Frames in flight (threads > 1, every model that reads pictures able
     * to run on a worker: see frames_in_flight_split): opened at the first
     * frame, dropped when a model is attached. Set and cleared under
     * `gate`, for cancel. */
    VdnnFramePool *pool;
    VdnnFramePending pending; /* first unreported failure of such a frame */
    VdnnRawPast past;         /* the last frames' samples, for the workers' past pictures */
    size_t serial_models;     /* n_models when these models were found to
                                 score a frame at a time; SIZE_MAX: not yet */
};

static int check_resize(VmafDnnResize r, const char *what)
{
    if ((unsigned)r > VMAF_DNN_RESIZE_BICUBIC)
        return vdnn_fail(-EINVAL, "%s: unknown resize mode %d", what, (int)r);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Serialisation                                                            */
/* ------------------------------------------------------------------------ */

/* Waits until no other call owns the context, then owns it. */
static VmafDnnContext *enter_call(const VmafDnnContext *locked_ctx)
{
    VmafDnnContext *ctx = (VmafDnnContext *)locked_ctx; /* see `gate` */
    pthread_mutex_lock(&ctx->gate);
    ctx->waiting++;
    while (ctx->busy)
        pthread_cond_wait(&ctx->turn, &ctx->gate);
    ctx->waiting--;
    ctx->busy = 1;
    pthread_mutex_unlock(&ctx->gate);
    return ctx;
}

static void settle(VmafDnnContext *ctx);

/* enter_call, then the frames in flight finish and their scores are
 * stored: every call but vmaf_dnn_read_pictures sees the context as if each
 * frame had been scored in its own read_pictures call. */
static VmafDnnContext *enter(const VmafDnnContext *locked_ctx)
{
    VmafDnnContext *ctx = enter_call(locked_ctx);
    settle(ctx);
    return ctx;
}

static void leave(VmafDnnContext *ctx)
{
    pthread_mutex_lock(&ctx->gate);
    ctx->busy = 0;
    /* Broadcast, not signal: close waits on the same condition for a
     * different predicate and must not swallow a caller's wake-up. */
    pthread_cond_broadcast(&ctx->turn);
    pthread_mutex_unlock(&ctx->gate);
}

size_t vdnn_context_calls_in_flight(const VmafDnnContext *locked_ctx)
{
    VmafDnnContext *ctx = (VmafDnnContext *)locked_ctx; /* see `gate` */
    pthread_mutex_lock(&ctx->gate);
    size_t n = (size_t)ctx->busy + ctx->waiting;
    pthread_mutex_unlock(&ctx->gate);
    return n;
}

size_t vdnn_context_feature_bytes(const VmafDnnContext *locked_ctx)
{
    VmafDnnContext *ctx = enter(locked_ctx);
    size_t bytes = vdnn_feature_collector_bytes(ctx->fc);
    leave(ctx);
    return bytes;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                             */
/* ------------------------------------------------------------------------ */

/* The budget of the context's feature store: the policy's max_memory_bytes
 * (0: no limit), the figure a caller already chose for what one model may
 * hold. Without it, feature_append at frame 2^24 - 1 under many names (or
 * frames read at such indexes) could make the store take the machine. */
static uint64_t store_budget(const VmafDnnContext *ctx)
{
    return vdnn_policy_max_memory(ctx->cfg.policy);
}

/* Checks what the first attach would otherwise be the first to check, so a
 * bad config fails where it was given. vdnn_config_check names the field
 * itself; the policy's messages get the prefix here. */
static int check_context_config(const VmafDnnContextConfig *cfg)
{
    int rc = check_resize(cfg->resize, "context config");
    if (rc)
        return rc;
    if (!isfinite(cfg->fps) || cfg->fps < 0)
        return vdnn_fail(-EINVAL, "context config: fps must be finite and >= 0 (got %g)",
                         cfg->fps);
    if (cfg->threads < 0 || cfg->threads > VMAF_DNN_MAX_THREADS)
        return vdnn_fail(-EINVAL, "context config: threads must be 0..%d (got %d)",
                         VMAF_DNN_MAX_THREADS, cfg->threads);
    if (cfg->batch < 0 || cfg->batch > VMAF_DNN_MAX_BATCH)
        return vdnn_fail(-EINVAL, "context config: batch must be 0..%d (got %d)",
                         VMAF_DNN_MAX_BATCH, cfg->batch);
    VmafDnnConfig session;
    if ((rc = vdnn_config_check(&cfg->session, &session, "context config: session.")))
        return rc;
    if (cfg->policy && (rc = vdnn_model_policy_check(cfg->policy))) {
        char reason[768];
        snprintf(reason, sizeof(reason), "%s", vdnn_last_error());
        return vdnn_fail(rc, "context config: policy: %s", reason);
    }
    return 0;
}

void vmaf_dnn_default_context_config(VmafDnnContextConfig *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    vmaf_dnn_default_config(&cfg->session);
    cfg->resize = VMAF_DNN_RESIZE_NONE;
}

int vmaf_dnn_context_open(VmafDnnContext **out, const VmafDnnContextConfig *cfg)
{
    vdnn_clear_error();
    if (!out)
        return vdnn_fail(-EINVAL, "context_open: out is NULL");
    VmafDnnContextConfig config;
    vmaf_dnn_default_context_config(&config);
    if (cfg) {
        int rc = check_context_config(cfg);
        if (rc)
            return rc;
        config = *cfg;
    }
    VmafDnnContext *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return vdnn_fail(-ENOMEM, "out of memory");
    ctx->cfg = config;
    ctx->serial_models = SIZE_MAX;
    if (pthread_mutex_init(&ctx->gate, NULL)) {
        free(ctx);
        return vdnn_fail(-ENOMEM, "context_open: cannot create the context's lock");
    }
    if (pthread_cond_init(&ctx->turn, NULL)) {
        pthread_mutex_destroy(&ctx->gate);
        free(ctx);
        return vdnn_fail(-ENOMEM, "context_open: cannot create the context's lock");
    }
    int rc = vdnn_feature_collector_init(&ctx->fc);
    if (rc) {
        pthread_cond_destroy(&ctx->turn);
        pthread_mutex_destroy(&ctx->gate);
        free(ctx);
        return rc;
    }
    vdnn_feature_collector_set_budget(ctx->fc, store_budget(ctx));
    *out = ctx;
    return 0;
}

void vmaf_dnn_context_close(VmafDnnContext *ctx)
{
    if (!ctx)
        return;
    /* Every call that got as far as enter() finishes first, including those
     * queued behind the one in flight; freeing under their feet is what this
     * lock exists to prevent. A cancel in progress holds the gate, so it
     * too is over once close has it. */
    pthread_mutex_lock(&ctx->gate);
    while (ctx->busy || ctx->waiting)
        pthread_cond_wait(&ctx->turn, &ctx->gate);
    pthread_mutex_unlock(&ctx->gate);
    vdnn_frame_pool_close(ctx->pool);
    vdnn_raw_past_free(&ctx->past);
    vdnn_picture_buffers_disown(ctx);
    for (size_t i = 0; i < ctx->n_models; i++) {
        vdnn_tiny_model_close(ctx->model[i]);
        vdnn_model_recipe_free(ctx->recipe[i]);
    }
    free(ctx->model);
    free(ctx->recipe);
    vdnn_feature_collector_free(ctx->fc);
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 3; i++)
            free(ctx->plane[p][i]);
    pthread_cond_destroy(&ctx->turn);
    pthread_mutex_destroy(&ctx->gate);
    free(ctx);
}

void vmaf_dnn_context_cancel(VmafDnnContext *ctx)
{
    if (!ctx)
        return;
    /* The gate, not the call lock: the call in flight holds that one for the
     * whole frame. Under the gate `running` cannot end and be freed while
     * its session is told to stop. */
    pthread_mutex_lock(&ctx->gate);
    if (ctx->frame_in_flight) {
        ctx->cancelled = 1;
        if (ctx->running)
            vdnn_tiny_model_cancel(ctx->running);
    }
    if (ctx->pool)
        vdnn_frame_pool_cancel(ctx->pool);
    pthread_mutex_unlock(&ctx->gate);
}

static int check_open(const VmafDnnContext *ctx, const char *what)
{
    if (!ctx)
        return vdnn_fail(-EINVAL, "%s: context is NULL", what);
    if (ctx->flushed)
        return vdnn_fail(-EINVAL, "%s: the context is flushed", what);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Frames in flight and reset (frame_pool.h)                                */
/* ------------------------------------------------------------------------ */

static void note_merged(VmafDnnContext *ctx, unsigned merged)
{
    /* The speed in reports counts until the last frame's scores exist. */
    if (merged)
        clock_gettime(CLOCK_MONOTONIC, &ctx->clock_end);
}

static void settle(VmafDnnContext *ctx)
{
    if (!ctx->pool)
        return;
    unsigned merged = 0;
    vdnn_frame_pool_drain(ctx->pool, ctx->fc, &merged);
    note_merged(ctx, merged);
}

/* Closes the pool, whose frames were settled. Caller owns the context. */
static void drop_pool(VmafDnnContext *ctx)
{
    pthread_mutex_lock(&ctx->gate);
    VdnnFramePool *p = ctx->pool;
    ctx->pool = NULL;
    pthread_mutex_unlock(&ctx->gate);
    /* Drained by every caller but close, where the counts no longer matter:
     * the workers' batching is kept on the context's models. */
    for (size_t i = 0; p && i < ctx->n_models; i++) {
        uint64_t frames;
        int trust;
        vdnn_frame_pool_batching(p, i, &frames, &trust);
        vdnn_tiny_model_note_batching(ctx->model[i], frames);
        VmafDnnStaticRuns gone = {0};
        vdnn_frame_pool_add_run_counts(p, i, &gone);
        vdnn_tiny_model_keep_run_counts(ctx->model[i], &gone);
        if (trust)
            vdnn_tiny_model_set_batch_trust(ctx->model[i], trust);
    }
    vdnn_frame_pool_close(p);
}

/* Frames in flight on accelerators: past this many, copies of the sessions
 * only contend for the one device (an H100, CUDA EP, psnr_y + ssim_y at
 * 1080p, steady fps by frames in flight: 1: 54-81, 2: 102, 4: 108-123,
 * 8: 93, 16: 76-84; docs/throughput.md). */
#define ACCEL_FRAMES_IN_FLIGHT 4

/* The frame workers for `threads`: all of them, unless every model they run
 * runs on a GPU or NPU, where more than ACCEL_FRAMES_IN_FLIGHT only slow
 * it. */
static unsigned frame_workers(const VmafDnnContext *ctx, const unsigned char *ordered)
{
    const unsigned threads = ctx->cfg.threads > 1 ? (unsigned)ctx->cfg.threads : 1;
    for (size_t i = 0; i < ctx->n_models; i++)
        if (!ordered[i] &&
            vdnn_session_device_type(vdnn_tiny_model_session(ctx->model[i])) == 0)
            return threads;
    return threads < ACCEL_FRAMES_IN_FLIGHT ? threads : ACCEL_FRAMES_IN_FLIGHT;
}

/* Frames per Run for model m (VmafDnnContextConfig.batch): 1 unless it can
 * take several and the caller asked for more. batch 0 is the library's
 * choice, one frame per Run today on every device: stacking frames was
 * measured no faster on the CPU EP nor on CUDA fed from host memory (an
 * H200 at 1080p: 0.5-1.0x per frame; docs/throughput.md). */
static unsigned model_batch(const VmafDnnContext *ctx, const VdnnTinyModel *m)
{
    if (!vdnn_tiny_model_batchable(m) || ctx->cfg.batch <= 1)
        return 1;
    return (unsigned)ctx->cfg.batch;
}

/* Which of the models the workers run take several frames per Run
 * (batched[i]), and the most any takes: the frames a worker takes at once.
 * Returns 1 when none does. */
static unsigned batch_split(const VmafDnnContext *ctx, const unsigned char *ordered,
                            unsigned char *batched)
{
    unsigned most = 1;
    for (size_t i = 0; i < ctx->n_models; i++) {
        /* a model refused by an earlier pool's check is not tried again */
        const unsigned b = ordered[i] || vdnn_tiny_model_batch_trust(ctx->model[i]) < 0
                               ? 1
                               : model_batch(ctx, ctx->model[i]);
        batched[i] = b > 1;
        if (b > most)
            most = b;
    }
    return most;
}

static const VdnnTinyModel *key_owner(const VmafDnnContext *ctx, const char *key);

/* Whether a model the workers would run (ordered[i] 0) holds past planes
 * of frames the context scored one at a time: `past` lacks those frames, so
 * the workers' copies could not be shown them. */
static int workers_lack_past(const VmafDnnContext *ctx, const unsigned char *ordered)
{
    for (size_t i = 0; i < ctx->n_models; i++)
        if (!ordered[i] && vdnn_tiny_model_holds_past(ctx->model[i]))
            return 1;
    return 0;
}

/* Which models frame workers can run, any frame on any worker: ordered[i]
 * is set for the others, which the context's thread runs in frame order as
 * frames are merged. A worker runs a model that runs behind no frame and
 * reads features of its own frame only, stored by the caller or written by
 * models the workers run before it (it keeps its own copy of the past
 * pictures it reads). Returns 0 when frames cannot be in flight: no model
 * for the workers, one that reads pictures but must run in order (the
 * pictures are gone by its turn), or one on an EP whose sessions run in
 * turn (OpenVINO: the workers' copies would wait for each other, while the
 * context's own session runs on all the context's threads). */
static int frames_in_flight_split(const VmafDnnContext *ctx, unsigned char *ordered)
{
    int any = 0;
    for (size_t i = 0; i < ctx->n_models; i++) {
        const VdnnTinyModel *m = ctx->model[i];
        int in_order = vdnn_tiny_model_lag(m) > 0;
        for (size_t k = 0; k < vdnn_tiny_model_read_count(m) && !in_order; k++) {
            int offset;
            const char *name = vdnn_tiny_model_read(m, k, &offset);
            if (!name)
                continue;
            const VdnnTinyModel *owner = key_owner(ctx, name);
            size_t o = 0;
            while (owner && ctx->model[o] != owner)
                o++;
            in_order = offset != 0 || (owner && ordered[o]);
        }
        if (in_order && vdnn_tiny_model_planes(m))
            return 0;
        if (!in_order && vdnn_session_runs_in_turn(vdnn_tiny_model_session(m)))
            return 0;
        ordered[i] = (unsigned char)in_order;
        any |= !in_order;
    }
    return any;
}

static int run_in_turn(VmafDnnContext *ctx, size_t i, const VdnnTinyFrame *frame);

/* frame_pool.h's run_ordered: model i's turn as frame `index` is merged. */
static int run_ordered(void *opaque, size_t i, unsigned index)
{
    VmafDnnContext *ctx = opaque;
    const VdnnTinyFrame frame = {.index = index, .first = ctx->first, .last = index};
    return run_in_turn(ctx, i, &frame);
}

/* The context goes on without frames in flight, until its models change
 * or a reset: a failure of a frame scored in flight is reported first
 * (ctx->past stays for the next call), then the context's own models are
 * shown the frames the workers saw (they saw none of them), and go on
 * reading every frame themselves. For a model attached in the middle of a
 * clip that took frames in flight away, or a pool only there for the batch
 * that could not be had. */
static int go_serial(VmafDnnContext *ctx)
{
    int rc = vdnn_frame_pending_take(&ctx->pending);
    if (!rc)
        rc = vdnn_raw_past_replay(&ctx->past, ctx->model, ctx->n_models, ctx->plane,
                                  ctx->plane_capacity);
    if (!rc)
        ctx->serial_models = ctx->n_models;
    return rc;
}

/* Scores the frames in flight, closes the pool and goes on a frame at a
 * time (go_serial). */
static int leave_pool(VmafDnnContext *ctx)
{
    unsigned merged = 0;
    vdnn_frame_pool_drain(ctx->pool, ctx->fc, &merged);
    note_merged(ctx, merged);
    drop_pool(ctx);
    return go_serial(ctx);
}

/* Before a frame is taken: with frames in flight (threads > 1, or models
 * that take several frames per Run) and models frame workers can run, the
 * pool exists and has a free slot, and an earlier frame's failure is
 * returned now, before this frame is taken. Which call that is depends
 * only on the calls made (a slot is freed by waiting for the oldest
 * frame), never on which worker finished first. */
static int pool_ready(VmafDnnContext *ctx)
{
    if (ctx->cfg.threads < 2 && ctx->cfg.batch < 2)
        return 0;
    if (!ctx->pool && ctx->serial_models == ctx->n_models)
        return 0;
    if (!ctx->pool) {
        unsigned char *ordered = calloc(ctx->n_models ? 2 * ctx->n_models : 1, 1);
        if (!ordered)
            return vdnn_fail(-ENOMEM, "out of memory");
        unsigned char *batched = ordered + ctx->n_models;
        const int split = frames_in_flight_split(ctx, ordered);
        const unsigned batch = split ? batch_split(ctx, ordered, batched) : 1;
        /* threads 0 and 1 score a frame at a time unless frames share a
         * Run (then on one worker); after frames scored one at a time that
         * a worker's model would need, a frame at a time until a reset. */
        if (!split || (ctx->cfg.threads < 2 && batch < 2) || workers_lack_past(ctx, ordered)) {
            free(ordered);
            return go_serial(ctx);
        }
        const VdnnFramePoolSetup setup = {
            .model = ctx->model,
            .recipe = ctx->recipe,
            .n_models = ctx->n_models,
            .ordered = ordered,
            .run_ordered = run_ordered,
            .opaque = ctx,
            .policy = ctx->cfg.policy,
            .context_resize = ctx->cfg.resize,
            .workers = frame_workers(ctx, ordered),
            .pending = &ctx->pending,
            .batched = batched,
            .batch = batch,
            /* frames-level workers are the parallelism; a lone worker that
             * exists for the batch keeps the sessions' threads */
            .copy_threads = ctx->cfg.threads > 1 ? 1 : ctx->cfg.threads,
            /* a frame in flight is copied where its models take it from */
            .slot_memory = atomic_load(&ctx->picture_memory),
        };
        VdnnFramePool *p = NULL;
        int rc = vdnn_frame_pool_open(&p, &setup);
        free(ordered);
        if (rc && ctx->cfg.threads < 2) {
            /* Only there for the batch, an optimisation that measured no
             * faster anywhere yet: the context's own models score a frame
             * at a time instead (a model file gone since its attach, the
             * budget, no thread). */
            vdnn_clear_error();
            return go_serial(ctx);
        }
        if (rc)
            return rc;
        pthread_mutex_lock(&ctx->gate);
        ctx->pool = p;
        pthread_mutex_unlock(&ctx->gate);
    }
    unsigned merged = 0;
    vdnn_frame_pool_make_room(ctx->pool, ctx->fc, &merged);
    note_merged(ctx, merged);
    return vdnn_frame_pending_take(&ctx->pending);
}

static int context_reset(VmafDnnContext *ctx)
{
    VdnnFeatureCollector *fc = NULL;
    int rc = vdnn_feature_collector_init(&fc);
    if (rc)
        return rc;
    /* The sessions stay: a model forgets only its locked size and past
     * planes, so a reset costs microseconds instead of a model open. */
    for (size_t i = 0; i < ctx->n_models; i++)
        vdnn_tiny_model_rewind(ctx->model[i]);
    vdnn_feature_collector_set_budget(fc, store_budget(ctx));
    vdnn_feature_collector_free(ctx->fc);
    ctx->fc = fc;
    /* A pool that cannot start afresh is opened again at the next frame. */
    if (ctx->pool && vdnn_frame_pool_restart(ctx->pool)) {
        drop_pool(ctx);
        vdnn_clear_error();
    }
    ctx->flushed = 0;
    ctx->started = 0;
    ctx->first = ctx->next = 0;
    ctx->frames_read = 0;
    ctx->width = ctx->height = 0;
    memset(&ctx->clock_start, 0, sizeof(ctx->clock_start));
    memset(&ctx->clock_end, 0, sizeof(ctx->clock_end));
    memset(&ctx->pending, 0, sizeof(ctx->pending));
    vdnn_raw_past_empty(&ctx->past);
    /* The models forgot their past planes: frames in flight again. */
    ctx->serial_models = SIZE_MAX;
    return 0;
}

int vmaf_dnn_context_reset(VmafDnnContext *ctx)
{
    vdnn_clear_error();
    if (!ctx)
        return vdnn_fail(-EINVAL, "context_reset: context is NULL");
    enter(ctx);
    int rc = context_reset(ctx);
    leave(ctx);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Attaching                                                                */
/* ------------------------------------------------------------------------ */

/* The attached model that writes feature `key`, or NULL. */
static const VdnnTinyModel *key_owner(const VmafDnnContext *ctx, const char *key)
{
    for (size_t i = 0; i < ctx->n_models; i++)
        for (size_t k = 0; k < vdnn_tiny_model_key_count(ctx->model[i]); k++)
            if (strcmp(vdnn_tiny_model_key(ctx->model[i], k), key) == 0)
                return ctx->model[i];
    return NULL;
}

/* VdnnTinyModelOptions.key_taken: keys of other models and stored features. */
static int key_taken(void *opaque, const char *key)
{
    const VmafDnnContext *ctx = opaque;
    if (key_owner(ctx, key))
        return 1;
    for (size_t i = 0; i < vdnn_feature_collector_feature_count(ctx->fc); i++)
        if (strcmp(vdnn_feature_collector_feature_name(ctx->fc, i), key) == 0)
            return 1;
    return 0;
}

/* How deep "requires" may nest (a model requiring a model requiring ...). */
#define REQUIRE_DEPTH_MAX 4

static int grow_models(VmafDnnContext *ctx)
{
    if (ctx->n_models < ctx->model_capacity)
        return 0;
    size_t cap = ctx->model_capacity ? 2 * ctx->model_capacity : 4;
    VdnnModelRecipe **recipes = realloc(ctx->recipe, cap * sizeof(*recipes));
    if (recipes)
        ctx->recipe = recipes;
    VdnnTinyModel **grown = recipes ? realloc(ctx->model, cap * sizeof(*grown)) : NULL;
    if (!grown)
        return vdnn_fail(-ENOMEM, "out of memory");
    ctx->model = grown;
    ctx->model_capacity = cap;
    return 0;
}

/* A model scores frame t once every feature it reads exists: a feature at
 * offset o from a producer that runs `lag` frames behind exists for frame
 * t + o once frame t + o + lag has been read, so the model runs
 * max(o + lag) frames behind (features stored by the caller: lag 0). Only
 * models that read no picture can run behind: the pictures of an older
 * frame are gone. */
static int decide_lag(const VmafDnnContext *ctx, VdnnTinyModel *m)
{
    long long lag = 0;
    const char *why = NULL;
    for (size_t i = 0; i < vdnn_tiny_model_read_count(m); i++) {
        int offset;
        const char *name = vdnn_tiny_model_read(m, i, &offset);
        if (!name)
            continue;
        const VdnnTinyModel *owner = key_owner(ctx, name);
        const long long need = offset + (long long)(owner ? vdnn_tiny_model_lag(owner) : 0);
        if (need > lag) {
            lag = need;
            why = name;
        }
    }
    if (lag && vdnn_tiny_model_kind(m) != VMAF_DNN_MODEL_FEATURES)
        return vdnn_fail(-ENOTSUP, "model %s reads pictures and feature \"%s\" of a later frame "
                         "(it would run %lld frame%s behind); only models that read no picture "
                         "may look ahead", vdnn_tiny_model_path(m), why, lag,
                         lag == 1 ? "" : "s");
    vdnn_tiny_model_set_lag(m, (unsigned)lag);
    if (vdnn_tiny_model_temporal(m) && ctx->started)
        return vdnn_fail(-EINVAL, "model %s reads neighbouring frames; attach it before the "
                         "first frame is read", vdnn_tiny_model_path(m));
    return 0;
}

static int attach(VmafDnnContext *ctx, const char *onnx_path, const VmafDnnModelConfig *mcfg,
                  int depth);

/* "requires" entries are files beside the model: no absolute path, no "..",
 * so a sidecar cannot pull in models from elsewhere. Each is attached unless
 * a model of that path is attached already (two VMAF variants share their
 * features model that way). */
static int attach_requires(VmafDnnContext *ctx, const char *onnx_path,
                           const VdnnSidecarStrings *req, const VmafDnnModelConfig *mcfg,
                           int depth)
{
    if (depth >= REQUIRE_DEPTH_MAX)
        return vdnn_fail(-ELOOP, "model %s: sidecar \"requires\" nests deeper than %d models",
                         onnx_path, REQUIRE_DEPTH_MAX);
    /* The requirements are attached with the caller's session and resize,
     * under their own names. */
    VmafDnnModelConfig sub = *mcfg;
    sub.name = NULL;
    for (size_t i = 0; i < req->count; i++) {
        const char *file = req->items[i];
        if (!vdnn_sidecar_path_inside(file))
            return vdnn_fail(-EINVAL, "model %s: sidecar \"requires\" entry \"%s\" must be a "
                             "path inside the model's directory", onnx_path, file);
        char *path = vdnn_sidecar_beside(onnx_path, file);
        if (!path)
            return vdnn_fail(-ENOMEM, "out of memory");
        int attached = 0, rc = 0;
        for (size_t k = 0; k < ctx->n_models && !attached; k++)
            attached = strcmp(vdnn_tiny_model_path(ctx->model[k]), path) == 0;
        if (!attached)
            rc = attach(ctx, path, &sub, depth + 1);
        free(path);
        if (rc)
            return rc;
    }
    return 0;
}

static int attach(VmafDnnContext *ctx, const char *onnx_path, const VmafDnnModelConfig *mcfg,
                  int depth)
{
    /* threads is the total: it replaces every session's own count. */
    VmafDnnConfig session = *(mcfg->session ? mcfg->session : &ctx->cfg.session);
    if (ctx->cfg.threads)
        session.threads = ctx->cfg.threads;
    const VdnnTinyModelOptions opt = {
        .onnx_path = onnx_path,
        .session = &session,
        .policy = ctx->cfg.policy,
        .name = mcfg->name,
        .resize = mcfg->resize,
        .context_resize = ctx->cfg.resize,
        .no_reference = mcfg->no_reference,
        .key_taken = key_taken,
        .opaque = ctx,
    };
    VdnnTinyModel *m = NULL;
    int rc = vdnn_tiny_model_open(&m, &opt);
    if (!rc && vdnn_tiny_model_requires(m)->count) {
        /* Its keys and lag depend on what the requirements attach: open it
         * again once they are in. */
        rc = attach_requires(ctx, onnx_path, vdnn_tiny_model_requires(m), mcfg, depth);
        vdnn_tiny_model_close(m);
        m = NULL;
        if (!rc)
            rc = vdnn_tiny_model_open(&m, &opt);
    }
    if (!rc && vdnn_tiny_model_on_cpu_ep(m))
        session.device = VMAF_DNN_DEVICE_CPU; /* the recipe of its copies */
    if (!rc && !(rc = decide_lag(ctx, m)) && !(rc = grow_models(ctx)) &&
        !(rc = vdnn_model_recipe_new(&ctx->recipe[ctx->n_models], mcfg->name, &session,
                                     mcfg->resize, mcfg->no_reference))) {
        ctx->model[ctx->n_models++] = m;
        ctx->temporal |= vdnn_tiny_model_temporal(m);
        return 0;
    }
    vdnn_tiny_model_close(m);
    return rc;
}

/* The host-accessible memory of the first model that takes its pictures'
 * own samples on a device that has some (samples_in_place in tiny_model.c
 * feeds those from there), else NULL: plain memory. */
static void choose_picture_memory(VmafDnnContext *ctx)
{
    const VdnnHostMemory *memory = NULL;
    for (size_t i = 0; !memory && i < ctx->n_models; i++)
        if (vdnn_tiny_model_takes_samples(ctx->model[i]))
            memory = vdnn_session_host_memory(vdnn_tiny_model_session(ctx->model[i]));
    atomic_store(&ctx->picture_memory, memory);
}

static int use_tiny_model(VmafDnnContext *ctx, const char *onnx_path,
                          const VmafDnnModelConfig *mcfg)
{
    int rc = check_open(ctx, "use_tiny_model");
    if (rc)
        return rc;
    if (!onnx_path)
        return vdnn_fail(-EINVAL, "use_tiny_model: onnx_path is NULL");
    const VmafDnnModelConfig none = {0};
    if (!mcfg)
        mcfg = &none;
    if ((rc = check_resize(mcfg->resize, "model config")))
        return rc;
    /* A model name stands for its file on the catalog's search path
     * (catalog.h); "requires" then sit beside that file. */
    char *path = NULL;
    if ((rc = vdnn_catalog_resolve(onnx_path, &path)))
        return rc;
    const size_t before = ctx->n_models;
    const int temporal = ctx->temporal;
    if ((rc = attach(ctx, path, mcfg, 0))) {
        /* All or nothing: the requirements attached on the way go too. */
        while (ctx->n_models > before) {
            --ctx->n_models;
            vdnn_tiny_model_close(ctx->model[ctx->n_models]);
            vdnn_model_recipe_free(ctx->recipe[ctx->n_models]);
        }
        ctx->temporal = temporal;
    }
    free(path);
    return rc;
}

int vmaf_dnn_use_tiny_model(VmafDnnContext *ctx, const char *onnx_path,
                            const VmafDnnModelConfig *mcfg)
{
    vdnn_clear_error();
    if (!ctx)
        return vdnn_fail(-EINVAL, "use_tiny_model: context is NULL");
    enter(ctx);
    /* The workers hold copies of the models attached so far (and a pointer
     * to the model array, which attaching may move): they start afresh with
     * the next frame. */
    drop_pool(ctx);
    int rc = use_tiny_model(ctx, onnx_path, mcfg);
    choose_picture_memory(ctx);
    leave(ctx);
    return rc;
}

int vmaf_dnn_picture_buffer_alloc(VmafDnnContext *ctx, size_t size, void **out)
{
    vdnn_clear_error();
    if (out)
        *out = NULL;
    if (!ctx || !out)
        return vdnn_fail(-EINVAL, "picture_buffer_alloc: %s is NULL", !ctx ? "context" : "out");
    return vdnn_picture_buffer_new(ctx, atomic_load(&ctx->picture_memory), size, out);
}

int vmaf_dnn_picture_buffer_free(void *buffer)
{
    vdnn_clear_error();
    return vdnn_picture_buffer_free(buffer);
}

const char *vmaf_dnn_picture_memory(const VmafDnnContext *ctx)
{
    const VdnnHostMemory *memory = ctx ? atomic_load(&ctx->picture_memory) : NULL;
    return memory ? vdnn_ort_host_memory_name(memory) : NULL;
}

/* Model `i`, or NULL, looked up under the lock; the model itself lives until
 * close, and what the accessors below read of it never changes after attach
 * (a model is attached whole, under the lock, or not at all). */
static const VdnnTinyModel *model_at(const VmafDnnContext *locked_ctx, size_t i)
{
    if (!locked_ctx)
        return NULL;
    VmafDnnContext *ctx = enter_call(locked_ctx); /* nothing here waits for frames */
    const VdnnTinyModel *m = i < ctx->n_models ? ctx->model[i] : NULL;
    leave(ctx);
    return m;
}

size_t vmaf_dnn_tiny_model_count(const VmafDnnContext *locked_ctx)
{
    if (!locked_ctx)
        return 0;
    VmafDnnContext *ctx = enter_call(locked_ctx);
    size_t n = ctx->n_models;
    leave(ctx);
    return n;
}

const char *vmaf_dnn_tiny_model_path(const VmafDnnContext *ctx, size_t model)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vdnn_tiny_model_path(m) : NULL;
}

VmafDnnModelKind vmaf_dnn_tiny_model_kind(const VmafDnnContext *ctx, size_t model)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vdnn_tiny_model_kind(m) : VMAF_DNN_MODEL_INVALID;
}

int vmaf_dnn_tiny_model_min_size(const VmafDnnContext *ctx, size_t model, unsigned *width,
                                 unsigned *height)
{
    vdnn_clear_error();
    if (!width || !height)
        return vdnn_fail(-EINVAL, "tiny_model_min_size: %s is NULL", !width ? "width" : "height");
    const VdnnTinyModel *m = model_at(ctx, model);
    if (!m)
        return vdnn_fail(-EINVAL, "tiny_model_min_size: no model %zu", model);
    vdnn_tiny_model_min_size(m, width, height);
    return 0;
}

size_t vmaf_dnn_tiny_model_feature_count(const VmafDnnContext *ctx, size_t model)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vdnn_tiny_model_key_count(m) : 0;
}

const char *vmaf_dnn_tiny_model_feature_name(const VmafDnnContext *ctx, size_t model,
                                             size_t feature)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vdnn_tiny_model_key(m, feature) : NULL;
}

const char *vmaf_dnn_tiny_model_attached_ep(const VmafDnnContext *ctx, size_t model)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vmaf_dnn_session_attached_ep(vdnn_tiny_model_session(m)) : NULL;
}

const char *vmaf_dnn_tiny_model_form_path(const VmafDnnContext *ctx, size_t model)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vdnn_tiny_model_form_path(m) : NULL;
}

const VmafDnnSession *vmaf_dnn_tiny_model_session(const VmafDnnContext *ctx, size_t model)
{
    const VdnnTinyModel *m = model_at(ctx, model);
    return m ? vdnn_tiny_model_session(m) : NULL;
}

int vmaf_dnn_tiny_model_batching(const VmafDnnContext *locked_ctx, size_t model,
                                 VmafDnnBatching *out)
{
    vdnn_clear_error();
    if (!locked_ctx || !out)
        return vdnn_fail(-EINVAL, "tiny_model_batching: %s is NULL", !out ? "out" : "ctx");
    VmafDnnContext *ctx = enter(locked_ctx);
    int rc = 0;
    if (model >= ctx->n_models) {
        rc = vdnn_fail(-EINVAL, "tiny_model_batching: model %zu out of range (%zu attached)",
                       model, ctx->n_models);
    } else {
        const VdnnTinyModel *m = ctx->model[model];
        uint64_t pool_frames = 0;
        int pool_trust = 0;
        if (ctx->pool)
            vdnn_frame_pool_batching(ctx->pool, model, &pool_frames, &pool_trust);
        out->batchable = vdnn_tiny_model_batchable(m);
        out->batch = (int)model_batch(ctx, m);
        out->refused = vdnn_tiny_model_batch_trust(m) < 0 || pool_trust < 0;
        out->batched_frames = vdnn_tiny_model_batched_frames(m) + pool_frames;
    }
    leave(ctx);
    return rc;
}

int vmaf_dnn_tiny_model_static_runs(const VmafDnnContext *locked_ctx, size_t model,
                                    VmafDnnStaticRuns *out)
{
    vdnn_clear_error();
    if (!locked_ctx || !out)
        return vdnn_fail(-EINVAL, "tiny_model_static_runs: %s is NULL", !out ? "out" : "ctx");
    VmafDnnContext *ctx = enter(locked_ctx);
    int rc = 0;
    if (model >= ctx->n_models) {
        rc = vdnn_fail(-EINVAL, "tiny_model_static_runs: model %zu out of range (%zu attached)",
                       model, ctx->n_models);
    } else {
        const VdnnTinyModel *m = ctx->model[model];
        vmaf_dnn_session_static_runs(vdnn_tiny_model_session(m), out);
        /* Every frame went to the copies: their reasons are the ones met */
        if (!out->fixed && !out->as_opened && ctx->pool)
            vdnn_frame_pool_static_runs(ctx->pool, model, out);
        out->fixed = out->as_opened = out->device_io = out->captured = out->pinned = 0;
        out->uint8 = out->pictures = 0;
        vdnn_tiny_model_add_run_counts(m, out);
        if (ctx->pool)
            vdnn_frame_pool_add_run_counts(ctx->pool, model, out);
    }
    leave(ctx);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Pictures                                                                 */
/* ------------------------------------------------------------------------ */

/* The bits of a row's samples ORed together. */
VDNN_VECTOR_LOOP
static unsigned row_bits(const uint16_t *restrict row, unsigned w)
{
    unsigned acc = 0;
    for (unsigned x = 0; x < w; x++)
        acc |= row[x];
    return acc;
}

/* Every sample of a plane of uint16_t samples is below 2^bpc: a sample above
 * the bit depth would reach a model above 1.0 (and the library's kernels
 * refuse it). One check for every way a picture enters: the C API, Python's
 * arrays and Frame objects, the FFmpeg filter. 8- and 16-bit samples cannot
 * exceed their depth. */
static int check_samples(const VmafDnnPicture *p, int i, const char *which, const char *plane)
{
    if (p->bpc <= 8 || p->bpc >= 16)
        return 0;
    const unsigned limit = 1u << p->bpc;
    for (unsigned y = 0; y < p->h[i]; y++) {
        const uint16_t *row = (const uint16_t *)(const void *)((const char *)p->data[i] +
                                                                (ptrdiff_t)y * p->stride[i]);
        if (row_bits(row, p->w[i]) < limit)
            continue;
        unsigned x = 0, v = 0; /* each sample read once: the caller's race below */
        while (x < p->w[i] && (v = row[x]) < limit)
            x++;
        if (x == p->w[i])
            continue; /* changed since row_bits read it */
        return vdnn_fail(-EINVAL, "%s picture: plane %s has sample value %u at (%u, %u), above "
                         "the %u-bit maximum %u", which, plane, v, x, y, p->bpc, limit - 1);
    }
    return 0;
}

static int check_plane(const VmafDnnPicture *p, int i, const char *which)
{
    static const char *const plane[3] = {"Y", "U", "V"};
    const unsigned bytes = p->bpc > 8 ? 2 : 1;
    if (!p->data[i])
        return i ? 0 : vdnn_fail(-EINVAL, "%s picture: plane Y data is NULL", which);
    if (!p->w[i] || !p->h[i] || p->w[i] > VMAF_DNN_MAX_DIMENSION ||
        p->h[i] > VMAF_DNN_MAX_DIMENSION)
        return vdnn_fail(-EINVAL, "%s picture: plane %s is %ux%u; each side must be 1..%d", which,
                         plane[i], p->w[i], p->h[i], VMAF_DNN_MAX_DIMENSION);
    /* Negative: rows bottom-up in memory (FFmpeg's vflip, bottom-up
     * decoders); data[] is still the top row. */
    const ptrdiff_t row = (ptrdiff_t)p->w[i] * (ptrdiff_t)bytes;
    if (p->stride[i] < row && p->stride[i] > -row)
        return vdnn_fail(-EINVAL, "%s picture: plane %s stride %td is smaller than a row of %u "
                         "samples of %u byte%s (either way)", which, plane[i], p->stride[i],
                         p->w[i], bytes, bytes > 1 ? "s" : "");
    if (bytes == 2 && (((uintptr_t)p->data[i] & 1u) || (p->stride[i] & 1)))
        return vdnn_fail(-EINVAL, "%s picture: plane %s holds uint16_t samples (bpc %u) but its "
                         "address or stride is odd", which, plane[i], p->bpc);
    return check_samples(p, i, which, plane[i]);
}

static int check_picture(const VmafDnnPicture *p, const char *which)
{
    if (p->bpc < 8 || p->bpc > 16)
        return vdnn_fail(-EINVAL, "%s picture: bpc is %u; it must be 8..16", which, p->bpc);
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++)
        rc = check_plane(p, i, which);
    return rc;
}

/* The chroma planes a model reads are there, of one size in both pictures. */
static int check_chroma(const VmafDnnContext *ctx, const VmafDnnPicture *ref,
                        const VmafDnnPicture *dist)
{
    static const char *const plane[3] = {"Y", "U", "V"};
    for (size_t m = 0; m < ctx->n_models; m++) {
        const unsigned bits = vdnn_tiny_model_planes(ctx->model[m]);
        for (int i = 1; i < 3; i++) {
            const int reads_ref = !!(bits & (1u << (VDNN_PICTURE_REFERENCE * 3 + i)));
            const int reads_dist = !!(bits & (1u << (VDNN_PICTURE_DISTORTED * 3 + i)));
            if (!reads_ref && !reads_dist)
                continue;
            const VmafDnnPicture *missing = reads_dist && !dist->data[i] ? dist
                                            : reads_ref && !ref->data[i]  ? ref
                                                                          : NULL;
            if (missing)
                return vdnn_fail(-EINVAL, "read_pictures: model %s reads plane %s of the %s "
                                 "picture, which has none (data[%d] is NULL)",
                                 vdnn_tiny_model_path(ctx->model[m]), plane[i],
                                 missing == ref ? "reference" : "distorted", i);
            if (reads_ref && (ref->w[i] != dist->w[i] || ref->h[i] != dist->h[i]))
                return vdnn_fail(-EINVAL, "read_pictures: plane %s is %ux%u in the reference, "
                                 "%ux%u in the distorted picture; model %s reads both, they "
                                 "must match", plane[i], ref->w[i], ref->h[i], dist->w[i],
                                 dist->h[i], vdnn_tiny_model_path(ctx->model[m]));
        }
    }
    return 0;
}

/* Checks the pictures against what the attached models read. */
static int check_pictures(const VmafDnnContext *ctx, const VmafDnnPicture *ref,
                          const VmafDnnPicture *dist)
{
    for (size_t i = 0; i < ctx->n_models; i++) {
        VmafDnnModelKind kind = vdnn_tiny_model_kind(ctx->model[i]);
        if (!dist && kind != VMAF_DNN_MODEL_FEATURES)
            return vdnn_fail(-EINVAL, "read_pictures: dist is NULL, but model %s reads pictures",
                             vdnn_tiny_model_path(ctx->model[i]));
        if (!ref && kind == VMAF_DNN_MODEL_FR)
            return vdnn_fail(-EINVAL, "read_pictures: ref is NULL, but model %s is "
                             "full-reference", vdnn_tiny_model_path(ctx->model[i]));
    }
    if (ref && !dist)
        return vdnn_fail(-EINVAL, "read_pictures: a reference picture without a distorted one");
    int rc;
    if ((dist && (rc = check_picture(dist, "distorted"))) ||
        (ref && (rc = check_picture(ref, "reference"))))
        return rc;
    if (ref && (ref->w[0] != dist->w[0] || ref->h[0] != dist->h[0] || ref->bpc != dist->bpc))
        return vdnn_fail(-EINVAL, "read_pictures: the reference is %ux%u at %u bits, the "
                         "distorted picture %ux%u at %u bits; they must match", ref->w[0],
                         ref->h[0], ref->bpc, dist->w[0], dist->h[0], dist->bpc);
    return check_chroma(ctx, ref, dist);
}

/* A frame is read once: refuse it before running anything if any model
 * already stored a value. */
static int check_unscored(const VmafDnnContext *ctx, unsigned index)
{
    for (size_t i = 0; i < ctx->n_models; i++) {
        const char *key = vdnn_tiny_model_scored_key(ctx->model[i], ctx->fc, index);
        if (key)
            return vdnn_fail(-EEXIST, "read_pictures: frame %u was already read (feature \"%s\" "
                             "has a value)", index, key);
    }
    return 0;
}

/* The planes the attached models read (vdnn_tiny_model_planes bits). */
static unsigned planes_read(const VmafDnnContext *ctx)
{
    unsigned bits = 0;
    for (size_t i = 0; i < ctx->n_models; i++)
        bits |= vdnn_tiny_model_planes(ctx->model[i]);
    return bits;
}

static unsigned fp32_planes(const VmafDnnContext *ctx)
{
    return vdnn_tiny_model_fp32_planes(ctx->model, ctx->n_models);
}

/* Fills the frame's geometry and *raw with the planes the models read;
 * without frames in flight, normalises them into the frame. With them, the
 * worker that scores the frame normalises its copy of the raw samples
 * (frame_pool.h): the caller's thread feeds every worker, so it does the
 * least work per frame. */
static int prepare_frame(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                         const VmafDnnPicture *dist, VdnnTinyFrame *f, VdnnRawPlanes *raw)
{
    memset(raw, 0, sizeof(*raw));
    if (!dist)
        return 0;
    for (int i = 0; i < 3; i++) {
        f->w[i] = dist->data[i] ? dist->w[i] : 0;
        f->h[i] = dist->data[i] ? dist->h[i] : 0;
    }
    f->bpc = dist->bpc;
    /* Only the planes some model reads: the memory budget counts these. */
    const unsigned bits = planes_read(ctx);
    for (int p = 0; p < 2; p++) {
        const VmafDnnPicture *pic = p == VDNN_PICTURE_REFERENCE ? ref : dist;
        for (int i = 0; i < 3; i++) {
            if (!(bits & (1u << (p * 3 + i))))
                continue;
            raw->data[p][i] = pic->data[i];
            raw->stride[p][i] = pic->stride[i];
            raw->w[p][i] = pic->w[i];
            raw->h[p][i] = pic->h[i];
        }
    }
    return ctx->pool ? 0 : vdnn_raw_planes_normalise(raw, fp32_planes(ctx), f, ctx->plane,
                                                     ctx->plane_capacity);
}

/* Checks, before anything is allocated for the frame, that every model's
 * per-frame buffers at this frame's size fit its memory budget. */
static int check_frame_budgets(const VmafDnnContext *ctx, const VmafDnnPicture *dist)
{
    if (!dist)
        return 0;
    for (size_t i = 0; i < ctx->n_models; i++) {
        int rc = vdnn_tiny_model_check_frame(ctx->model[i], dist->w, dist->h);
        if (rc)
            return rc;
    }
    return 0;
}

/* Publishes the model about to run so that vmaf_dnn_context_cancel can stop
 * it, unless the frame was cancelled already (between two models, say). */
static int start_run(VmafDnnContext *ctx, VdnnTinyModel *m, unsigned index)
{
    pthread_mutex_lock(&ctx->gate);
    const int cancelled = ctx->cancelled;
    ctx->running = cancelled ? NULL : m;
    pthread_mutex_unlock(&ctx->gate);
    if (cancelled)
        return vdnn_fail(-ECANCELED, "read_pictures: frame %u was cancelled before model %s "
                         "ran", index, vdnn_tiny_model_path(m));
    return 0;
}

/* Withdraws the model from cancel's reach. A cancel that came while it ran
 * fails the frame even when the run finished: it may have landed before the
 * session's run began, where vmaf_dnn_session_cancel has nothing to stop,
 * and the caller who cancelled must not get a 0 by that chance. */
static int end_run(VmafDnnContext *ctx, VdnnTinyModel *m, unsigned index, int rc)
{
    pthread_mutex_lock(&ctx->gate);
    const int cancelled = ctx->cancelled;
    ctx->running = NULL;
    pthread_mutex_unlock(&ctx->gate);
    if (!rc && cancelled)
        return vdnn_fail(-ECANCELED, "read_pictures: frame %u was cancelled while model %s "
                         "ran (its scores are kept)", index, vdnn_tiny_model_path(m));
    return rc;
}

static void set_frame_in_flight(VmafDnnContext *ctx, int in_flight)
{
    pthread_mutex_lock(&ctx->gate);
    ctx->frame_in_flight = in_flight;
    ctx->cancelled = 0;
    ctx->running = NULL;
    pthread_mutex_unlock(&ctx->gate);
}

static const char *first_temporal(const VmafDnnContext *ctx)
{
    for (size_t i = 0; i < ctx->n_models; i++)
        if (vdnn_tiny_model_temporal(ctx->model[i]))
            return vdnn_tiny_model_path(ctx->model[i]);
    return "";
}

/* Runs model m on frame f under cancel's reach. */
static int run_model(VmafDnnContext *ctx, VdnnTinyModel *m, const VdnnTinyFrame *f)
{
    int rc = start_run(ctx, m, f->index);
    if (rc)
        return rc;
    vdnn_session_watch_stop_flag(&ctx->cancelled);
    rc = vdnn_tiny_model_run(m, f, ctx->fc);
    vdnn_session_watch_stop_flag(NULL);
    return end_run(ctx, m, f->index, rc);
}

/* Model i's turn as `frame` is read (or, in flight, merged): it scores the
 * frame, or one `lag` frames back once there is one. */
static int run_in_turn(VmafDnnContext *ctx, size_t i, const VdnnTinyFrame *frame)
{
    VdnnTinyModel *m = ctx->model[i];
    const unsigned lag = vdnn_tiny_model_lag(m);
    if (!lag)
        return run_model(ctx, m, frame);
    if (frame->index - ctx->first < lag)
        return 0;
    const VdnnTinyFrame late = {.index = frame->index - lag, .first = frame->first,
                                .last = frame->index};
    return run_model(ctx, m, &late);
}

static int read_pictures(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                         const VmafDnnPicture *dist, unsigned index, VdnnKeptPictures *kept)
{
    int rc = check_open(ctx, "read_pictures");
    if (rc)
        return rc;
    if (!ctx->n_models)
        return vdnn_fail(-EINVAL, "read_pictures: no model is attached");
    if (index >= VDNN_FEATURE_MAX_FRAMES)
        return vdnn_fail(-ERANGE, "read_pictures: frame %u is beyond the last frame a context "
                         "can hold (%u)", index, VDNN_FEATURE_MAX_FRAMES - 1);
    if (ctx->temporal && ctx->started && index != ctx->next)
        return vdnn_fail(-EINVAL, "read_pictures: frame %u comes out of order: model %s reads "
                         "neighbouring frames, so frames must come one after another; the next "
                         "one is frame %u", index, first_temporal(ctx), ctx->next);
    if ((rc = pool_ready(ctx)))
        return rc;
    VdnnTinyFrame frame = {.index = index};
    VdnnRawPlanes raw;
    if ((rc = check_pictures(ctx, ref, dist)) || (rc = check_unscored(ctx, index)) ||
        (rc = check_frame_budgets(ctx, dist)) ||
        (rc = prepare_frame(ctx, ref, dist, &frame, &raw)))
        return rc;
    if (ctx->pool && (rc = vdnn_frame_pool_check(ctx->pool, &frame, &raw))) {
        if (rc != -EDQUOT || ctx->cfg.threads > 1)
            return rc;
        /* A pool only there for the batch, whose frames do not fit the
         * budget: one frame at a time fits (check_frame_budgets). */
        vdnn_clear_error();
        if ((rc = leave_pool(ctx)) ||
            (rc = vdnn_raw_planes_normalise(&raw, fp32_planes(ctx), &frame, ctx->plane,
                                            ctx->plane_capacity)))
            return rc;
    }
    /* From here on the frame counts as read, failed or not: offsets count
     * frames, so the sequence moves on and each model keeps its planes. */
    if (!ctx->started) {
        ctx->started = 1;
        ctx->first = index;
    }
    ctx->next = index + 1;
    if (ctx->frames_read++ == 0) {
        ctx->clock_start = ctx->call_start;
        const VmafDnnPicture *p = dist ? dist : ref;
        if (p) {
            ctx->width = p->w[0];
            ctx->height = p->h[0];
        }
    }
    frame.first = ctx->temporal ? ctx->first : 0;
    frame.last = index;
    /* A native-resolution model's size is the first frame's it could take,
     * whatever becomes of that frame in the models before it: noted here,
     * in frame order, so that frames in flight (whose workers' copies get
     * the lock with the frame) lock alike. */
    for (size_t i = 0; i < ctx->n_models; i++)
        vdnn_tiny_model_note_frame(ctx->model[i], &frame);
    if (ctx->pool)
        return vdnn_frame_pool_submit(ctx->pool, &frame, &raw, ctx->fc, &ctx->past, kept);
    for (size_t i = 0; i < ctx->n_models && !rc; i++)
        rc = run_in_turn(ctx, i, &frame);
    for (size_t i = 0; i < ctx->n_models; i++) {
        int remembered = vdnn_tiny_model_remember(ctx->model[i], &frame);
        if (!rc)
            rc = remembered;
    }
    return rc;
}

/* vmaf_dnn_read_pictures, and vmaf_dnn_read_pictures_kept with `kept`
 * (one reference: the call's own, dropped before it returns 0). */
static int read_pictures_call(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                              const VmafDnnPicture *dist, unsigned index,
                              VdnnKeptPictures *kept)
{
    enter_call(ctx);
    clock_gettime(CLOCK_MONOTONIC, &ctx->call_start);
    set_frame_in_flight(ctx, 1);
    const unsigned before = ctx->frames_read;
    int rc = read_pictures(ctx, ref, dist, index, kept);
    set_frame_in_flight(ctx, 0);
    if (ctx->frames_read != before)
        clock_gettime(CLOCK_MONOTONIC, &ctx->clock_end);
    if (kept && !rc) {
        vdnn_kept_pictures_unref(kept); /* the last reference when none holds them */
    } else if (kept) {
        /* Nothing holds a failed call's pictures (vdnn_frame_pool_submit
         * takes no reference when it fails): they are the caller's again,
         * and release is not called. */
        free(kept);
    }
    leave(ctx);
    return rc;
}

int vmaf_dnn_read_pictures(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                           const VmafDnnPicture *dist, unsigned index)
{
    vdnn_clear_error();
    if (!ctx)
        return vdnn_fail(-EINVAL, "read_pictures: context is NULL");
    return read_pictures_call(ctx, ref, dist, index, NULL);
}

int vmaf_dnn_read_pictures_kept(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                                const VmafDnnPicture *dist, unsigned index,
                                VmafDnnPicturesRelease release, void *opaque)
{
    vdnn_clear_error();
    if (!ctx)
        return vdnn_fail(-EINVAL, "read_pictures_kept: context is NULL");
    if (!release)
        return vdnn_fail(-EINVAL, "read_pictures_kept: release is NULL");
    VdnnKeptPictures *kept = malloc(sizeof(*kept));
    if (!kept)
        return vdnn_fail(-ENOMEM, "out of memory");
    *kept = (VdnnKeptPictures){.refs = 1, .release = release, .opaque = opaque};
    return read_pictures_call(ctx, ref, dist, index, kept);
}

/* Scores the frames the models that run behind still owe: the last `lag`
 * frames, reading features past the last frame from the last frame. */
static int flush_pending(VmafDnnContext *ctx)
{
    if (!ctx->started || !ctx->temporal)
        return 0;
    const unsigned last = ctx->next - 1;
    for (size_t i = 0; i < ctx->n_models; i++) {
        VdnnTinyModel *m = ctx->model[i];
        const unsigned lag = vdnn_tiny_model_lag(m);
        if (!lag)
            continue;
        const unsigned from = last - ctx->first + 1 > lag ? last - lag + 1 : ctx->first;
        for (unsigned t = from; t <= last; t++) {
            const VdnnTinyFrame late = {.index = t, .first = ctx->first, .last = last};
            int rc = run_model(ctx, m, &late);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int vmaf_dnn_flush(VmafDnnContext *ctx)
{
    vdnn_clear_error();
    if (!ctx)
        return vdnn_fail(-EINVAL, "flush: context is NULL");
    enter(ctx);
    int rc = 0;
    if (!ctx->flushed) {
        set_frame_in_flight(ctx, 1);
        rc = flush_pending(ctx);
        set_frame_in_flight(ctx, 0);
        ctx->flushed = 1;
        /* No frame comes after: the past pictures the workers would show
         * go, and with them the caller's kept pictures (enter() merged the
         * frames in flight, whose slots held the others). */
        vdnn_raw_past_empty(&ctx->past);
        if (ctx->frames_read)
            clock_gettime(CLOCK_MONOTONIC, &ctx->clock_end);
    }
    /* An earlier frame's failure comes first: it happened first. */
    const int earlier = vdnn_frame_pending_take(&ctx->pending);
    if (earlier)
        rc = earlier;
    leave(ctx);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Features                                                                 */
/* ------------------------------------------------------------------------ */

static int feature_append(VmafDnnContext *ctx, const char *name, unsigned index, double value)
{
    int rc = check_open(ctx, "feature_append");
    if (rc)
        return rc;
    if (!name)
        return vdnn_fail(-EINVAL, "feature_append: name is NULL");
    const VdnnTinyModel *owner = key_owner(ctx, name);
    if (owner)
        return vdnn_fail(-EEXIST, "feature_append: feature \"%s\" is written by attached model "
                         "%s", name, vdnn_tiny_model_path(owner));
    return vdnn_feature_collector_append(ctx->fc, name, index, value);
}

int vmaf_dnn_feature_append(VmafDnnContext *ctx, const char *name, unsigned index, double value)
{
    vdnn_clear_error();
    if (!ctx)
        return vdnn_fail(-EINVAL, "feature_append: context is NULL");
    enter(ctx);
    int rc = feature_append(ctx, name, index, value);
    leave(ctx);
    return rc;
}

/* The most frames after frame t whose merge may store a value for t: a
 * model running behind scores t when frame t + lag is merged. */
static unsigned max_lag(const VmafDnnContext *ctx)
{
    unsigned lag = 0;
    for (size_t i = 0; i < ctx->n_models; i++) {
        const unsigned l = vdnn_tiny_model_lag(ctx->model[i]);
        lag = l > lag ? l : lag;
    }
    return lag;
}

int vmaf_dnn_frames_done(VmafDnnContext *ctx, unsigned *done)
{
    vdnn_clear_error();
    if (!ctx || !done)
        return vdnn_fail(-EINVAL, "frames_done: %s is NULL", !ctx ? "context" : "done");
    enter_call(ctx);
    unsigned held = 0;
    if (ctx->pool) {
        /* The merge runs the models that read other frames' features, as
         * read_pictures does: vmaf_dnn_context_cancel stops them here too. */
        set_frame_in_flight(ctx, 1);
        unsigned merged = 0;
        held = vdnn_frame_pool_collect(ctx->pool, ctx->fc, &merged);
        note_merged(ctx, merged);
        set_frame_in_flight(ctx, 0);
    }
    /* The frames held are the last ones read (in a temporal context the
     * indices run on, so the lag frames before them are the ones read
     * just before them). */
    const unsigned lag = max_lag(ctx);
    unsigned waiting = held ? held + lag : 0;
    if (waiting > ctx->frames_read || waiting < held)
        waiting = ctx->frames_read;
    const int rc = vdnn_frame_pending_take(&ctx->pending);
    if (!rc)
        *done = ctx->frames_read - waiting;
    leave(ctx);
    return rc;
}

int vmaf_dnn_feature_get(const VmafDnnContext *locked_ctx, const char *name, unsigned index,
                         double *value)
{
    vdnn_clear_error();
    if (!locked_ctx || !name || !value)
        return vdnn_fail(-EINVAL, "feature_get: %s is NULL",
                         !locked_ctx ? "context" : !name ? "name" : "value");
    VmafDnnContext *ctx = enter_call(locked_ctx);
    /* A model's value for frame t is stored when frame t + its lag is
     * merged (the caller's features never are): unless that frame is in
     * flight, the store already reads what scoring one frame at a time
     * gives, and the frames in flight go on. */
    const VdnnTinyModel *owner = ctx->pool ? key_owner(ctx, name) : NULL;
    if (owner) {
        const unsigned lag = vdnn_tiny_model_lag(owner);
        const unsigned last = index > UINT_MAX - lag ? UINT_MAX : index + lag;
        if (vdnn_frame_pool_holds(ctx->pool, index, last))
            settle(ctx);
    }
    int rc = vdnn_feature_collector_get(ctx->fc, name, index, value);
    leave(ctx);
    return rc;
}

size_t vmaf_dnn_feature_count(const VmafDnnContext *locked_ctx)
{
    if (!locked_ctx)
        return 0;
    VmafDnnContext *ctx = enter(locked_ctx);
    size_t n = vdnn_feature_collector_feature_count(ctx->fc);
    leave(ctx);
    return n;
}

const char *vmaf_dnn_feature_name(const VmafDnnContext *locked_ctx, size_t feature)
{
    if (!locked_ctx)
        return NULL;
    VmafDnnContext *ctx = enter(locked_ctx);
    const char *name = vdnn_feature_collector_feature_name(ctx->fc, feature);
    leave(ctx);
    return name;
}

unsigned vmaf_dnn_frame_count(const VmafDnnContext *locked_ctx)
{
    if (!locked_ctx)
        return 0;
    VmafDnnContext *ctx = enter(locked_ctx);
    unsigned n = vdnn_feature_collector_frame_count(ctx->fc);
    leave(ctx);
    return n;
}

int vmaf_dnn_feature_pool(const VmafDnnContext *locked_ctx, const char *name,
                          VmafDnnPoolMethod method, unsigned first, unsigned last, double *out)
{
    vdnn_clear_error();
    if (!locked_ctx || !name || !out)
        return vdnn_fail(-EINVAL, "feature_pool: %s is NULL",
                         !locked_ctx ? "context" : !name ? "name" : "out");
    if ((unsigned)method > VMAF_DNN_POOL_HARMONIC_MEAN)
        return vdnn_fail(-EINVAL, "feature_pool: unknown pool method %d", (int)method);
    VdnnFeaturePool pool;
    VmafDnnContext *ctx = enter(locked_ctx);
    int rc = vdnn_feature_pool(ctx->fc, name, first, last, &pool);
    leave(ctx);
    if (rc)
        return rc;
    switch (method) {
    case VMAF_DNN_POOL_MIN: *out = pool.min; break;
    case VMAF_DNN_POOL_MAX: *out = pool.max; break;
    case VMAF_DNN_POOL_MEAN: *out = pool.mean; break;
    case VMAF_DNN_POOL_HARMONIC_MEAN: *out = pool.harmonic_mean; break;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Reports                                                                  */
/* ------------------------------------------------------------------------ */

static int report_format(VmafDnnOutputFormat fmt, VdnnReportFormat *format)
{
    switch (fmt) {
    case VMAF_DNN_OUTPUT_JSON: *format = VDNN_REPORT_JSON; return 0;
    case VMAF_DNN_OUTPUT_XML: *format = VDNN_REPORT_XML; return 0;
    case VMAF_DNN_OUTPUT_CSV: *format = VDNN_REPORT_CSV; return 0;
    }
    return vdnn_fail(-EINVAL, "write_output: unknown format %d", (int)fmt);
}

/* Caller owns the context. */
static void report_info(const VmafDnnContext *ctx, unsigned flags, VdnnReportInfo *info)
{
    vdnn_report_info_default(info);
    info->fps = ctx->cfg.fps;
    if (info->fps == 0.0 && ctx->frames_read) {
        double s = (double)(ctx->clock_end.tv_sec - ctx->clock_start.tv_sec) +
                   (double)(ctx->clock_end.tv_nsec - ctx->clock_start.tv_nsec) * 1e-9;
        info->fps = s > 0.0 ? ctx->frames_read / s : 0.0;
    }
    info->width = ctx->width;
    info->height = ctx->height;
    info->exact = (flags & VMAF_DNN_OUTPUT_EXACT) != 0;
}

/* `has_target`: the destination (path, FILE, callback, length) is not NULL. */
static int report_args(const VmafDnnContext *ctx, bool has_target, VmafDnnOutputFormat fmt,
                       unsigned flags, VdnnReportFormat *format)
{
    if (!ctx || !has_target)
        return vdnn_fail(-EINVAL, "write_output: %s is NULL", !ctx ? "context" : "destination");
    if (flags & ~(unsigned)VMAF_DNN_OUTPUT_EXACT)
        return vdnn_fail(-EINVAL, "write_output: unknown flags 0x%x",
                         flags & ~(unsigned)VMAF_DNN_OUTPUT_EXACT);
    return report_format(fmt, format);
}

int vmaf_dnn_write_output(const VmafDnnContext *locked_ctx, const char *path,
                          VmafDnnOutputFormat fmt)
{
    vdnn_clear_error();
    VdnnReportFormat format = VDNN_REPORT_JSON;
    int rc = report_args(locked_ctx, path != NULL, fmt, 0, &format);
    if (rc)
        return rc;
    VmafDnnContext *ctx = enter(locked_ctx);
    VdnnReportInfo info;
    report_info(ctx, 0, &info);
    rc = vdnn_write_report_path(ctx->fc, format, path, &info);
    leave(ctx);
    return rc;
}

int vmaf_dnn_write_output_file(const VmafDnnContext *locked_ctx, FILE *f,
                               VmafDnnOutputFormat fmt)
{
    vdnn_clear_error();
    VdnnReportFormat format = VDNN_REPORT_JSON;
    int rc = report_args(locked_ctx, f != NULL, fmt, 0, &format);
    if (rc)
        return rc;
    VmafDnnContext *ctx = enter(locked_ctx);
    VdnnReportInfo info;
    report_info(ctx, 0, &info);
    rc = vdnn_write_report(ctx->fc, format, f, &info);
    leave(ctx);
    return rc;
}

int vmaf_dnn_write_output_callback(const VmafDnnContext *locked_ctx, VmafDnnOutputFormat fmt,
                                   unsigned flags, VmafDnnOutputWrite write, void *opaque)
{
    vdnn_clear_error();
    VdnnReportFormat format = VDNN_REPORT_JSON;
    int rc = report_args(locked_ctx, write != NULL, fmt, flags, &format);
    if (rc)
        return rc;
    VmafDnnContext *ctx = enter(locked_ctx);
    VdnnReportInfo info;
    report_info(ctx, flags, &info);
    rc = vdnn_write_report_callback(ctx->fc, format, write, opaque, &info);
    leave(ctx);
    return rc;
}

/* snprintf-like: keeps the first size - 1 bytes, counts them all. */
typedef struct Buffer {
    char *data;
    size_t size, length;
} Buffer;

static int buffer_write(void *opaque, const char *data, size_t size)
{
    Buffer *b = opaque;
    if (b->length < b->size) {
        size_t room = b->size - 1 - b->length;
        memcpy(b->data + b->length, data, size < room ? size : room);
    }
    b->length += size;
    return 0;
}

int vmaf_dnn_write_output_buffer(const VmafDnnContext *locked_ctx, VmafDnnOutputFormat fmt,
                                 unsigned flags, char *buf, size_t size, size_t *length)
{
    vdnn_clear_error();
    if (size && !buf)
        return vdnn_fail(-EINVAL, "write_output_buffer: buf is NULL but size is %zu", size);
    VdnnReportFormat format = VDNN_REPORT_JSON;
    int rc = report_args(locked_ctx, length != NULL, fmt, flags, &format);
    if (rc)
        return rc;
    Buffer b = {.data = buf, .size = size};
    VmafDnnContext *ctx = enter(locked_ctx);
    VdnnReportInfo info;
    report_info(ctx, flags, &info);
    rc = vdnn_write_report_callback(ctx->fc, format, buffer_write, &b, &info);
    leave(ctx);
    if (rc)
        return rc;
    if (size)
        buf[b.length < size ? b.length : size - 1] = '\0';
    *length = b.length;
    if (b.length >= size)
        return vdnn_fail(-ENOBUFS, "write_output_buffer: the report is %zu bytes, the buffer "
                         "holds %zu with its terminating NUL", b.length, size);
    return 0;
}

int vmaf_dnn_check_output(const VmafDnnContext *locked_ctx, VmafDnnOutputFormat fmt,
                          const char *const *more, size_t n_more)
{
    vdnn_clear_error();
    VdnnReportFormat format = VDNN_REPORT_JSON;
    if (!more && n_more)
        return vdnn_fail(-EINVAL, "check_output: %zu names announced but the array is NULL",
                         n_more);
    int rc = report_args(locked_ctx, true, fmt, 0, &format);
    if (rc)
        return rc;
    /* The features stored, the attached models' keys, then the caller's
     * (a name listed twice is one feature to the check). */
    VmafDnnContext *ctx = enter(locked_ctx);
    size_t stored = vdnn_feature_collector_feature_count(ctx->fc), n = stored;
    for (size_t m = 0; m < ctx->n_models; m++)
        n += vdnn_tiny_model_key_count(ctx->model[m]);
    const char **names = n_more <= SIZE_MAX / sizeof(*names) - n
                             ? malloc((n + n_more ? n + n_more : 1) * sizeof(*names)) : NULL;
    if (!names) {
        leave(ctx);
        return vdnn_fail(-ENOMEM, "check_output: out of memory listing %zu feature names", n);
    }
    n = 0;
    for (size_t k = 0; k < stored; k++)
        names[n++] = vdnn_feature_collector_feature_name(ctx->fc, k);
    for (size_t m = 0; m < ctx->n_models; m++) {
        for (size_t k = 0; k < vdnn_tiny_model_key_count(ctx->model[m]); k++)
            names[n++] = vdnn_tiny_model_key(ctx->model[m], k);
    }
    for (size_t k = 0; k < n_more; k++)
        names[n++] = more[k];
    rc = vdnn_report_check_features(names, n, format);
    free(names);
    leave(ctx);
    return rc;
}
