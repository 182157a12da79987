/* Frames in flight (frame_pool.h): model copies per worker, slots holding a
 * frame's raw samples (normalised by the worker that takes it), and the
 * merge of results into the context's feature store in submission order, so that what a caller observes (the
 * scores, the order of feature names, which call reports a failure) does
 * not depend on which worker finished first. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_internal.h"
#include "error.h"
#include "frame_pool.h"
#include "picture_memory.h"
#include "resize.h"
#include "scratch.h"

/* ------------------------------------------------------------------------ */
/* Recipes and copies of a model                                            */
/* ------------------------------------------------------------------------ */

int vdnn_model_recipe_new(VdnnModelRecipe **out, const char *name, const VmafDnnConfig *session,
                          VmafDnnResize resize, int no_reference)
{
    VdnnModelRecipe *r = calloc(1, sizeof(*r));
    if (!r || (name && !(r->name = strdup(name)))) {
        free(r);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    r->session = *session;
    r->resize = resize;
    r->no_reference = no_reference;
    *out = r;
    return 0;
}

void vdnn_model_recipe_free(VdnnModelRecipe *r)
{
    if (!r)
        return;
    free(r->name);
    free(r);
}

/* key_taken of a copy: every key but the original's own. The copy tries the
 * same candidates in the same order as the original did (same file, sidecar
 * and name), so the first one not "taken" is the original's key of that
 * slot: the copy ends up with exactly the original's keys, whatever other
 * models and features the context holds now. */
static int not_original_key(void *opaque, const char *key)
{
    const VdnnTinyModel *original = opaque;
    for (size_t k = 0; k < vdnn_tiny_model_key_count(original); k++)
        if (strcmp(vdnn_tiny_model_key(original, k), key) == 0)
            return 0;
    return 1;
}

int vdnn_tiny_model_reopen(VdnnTinyModel **out, const VdnnTinyModel *m,
                           const VdnnModelRecipe *r, const VmafDnnModelPolicy *policy,
                           VmafDnnResize context_resize, int threads)
{
    VmafDnnConfig session = r->session;
    if (threads > 0)
        session.threads = threads;
    const VdnnTinyModelOptions opt = {
        .onnx_path = vdnn_tiny_model_path(m),
        .session = &session,
        .policy = policy,
        .name = r->name,
        .resize = r->resize,
        .context_resize = context_resize,
        .no_reference = r->no_reference,
        .key_taken = not_original_key,
        .opaque = (void *)m,
        /* the form the original scores with, when it is not its own file */
        .form_path = vdnn_tiny_model_form_path(m) != vdnn_tiny_model_path(m)
                         ? vdnn_tiny_model_form_path(m)
                         : NULL,
    };
    VdnnTinyModel *copy = NULL;
    int rc = vdnn_tiny_model_open(&copy, &opt);
    if (rc)
        return rc;
    int same = vdnn_tiny_model_key_count(copy) == vdnn_tiny_model_key_count(m);
    for (size_t k = 0; same && k < vdnn_tiny_model_key_count(m); k++)
        same = strcmp(vdnn_tiny_model_key(copy, k), vdnn_tiny_model_key(m, k)) == 0;
    /* The frames carry the planes (and the pool the past pictures) that the
     * original reads: a copy reading others would read planes never given. */
    const int reads_alike =
        vdnn_tiny_model_planes(copy) == vdnn_tiny_model_planes(m) &&
        vdnn_tiny_model_takes_samples(copy) == vdnn_tiny_model_takes_samples(m) &&
        vdnn_tiny_model_history_depth(copy, VDNN_PICTURE_REFERENCE) ==
            vdnn_tiny_model_history_depth(m, VDNN_PICTURE_REFERENCE) &&
        vdnn_tiny_model_history_depth(copy, VDNN_PICTURE_DISTORTED) ==
            vdnn_tiny_model_history_depth(m, VDNN_PICTURE_DISTORTED);
    if (!same || !reads_alike) {
        vdnn_tiny_model_close(copy);
        return vdnn_fail(-EIO, "model %s: opened again, it no longer has the %s it was "
                         "attached with (was the file or its sidecar replaced?)",
                         vdnn_tiny_model_path(m), same ? "inputs" : "keys");
    }
    vdnn_tiny_model_set_lag(copy, vdnn_tiny_model_lag(m));
    *out = copy;
    return 0;
}

int vdnn_frame_pending_take(VdnnFramePending *pending)
{
    const int rc = pending->rc;
    if (!rc)
        return 0;
    if (pending->more)
        vdnn_fail(rc, "frame %u (scored in flight): %s (and %u later frame%s failed)",
                  pending->frame, pending->message, pending->more,
                  pending->more == 1 ? "" : "s");
    else
        vdnn_fail(rc, "frame %u (scored in flight): %s", pending->frame, pending->message);
    pending->rc = 0;
    pending->more = 0;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The pool                                                                 */
/* ------------------------------------------------------------------------ */

typedef enum SlotState { SLOT_FREE, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE } SlotState;

/* A caller-appended feature of the slot's frame (FEATURES models read them). */
typedef struct SlotFeature {
    const char *name; /* owned by the context's store, which outlives the slot's use */
    double value;
} SlotFeature;

typedef struct Slot {
    SlotState state;
    unsigned long long seq;  /* submission number: merges go in this order */
    VdnnRawCopy now;         /* the frame: the caller's samples */
    VdnnRawCopy past[VMAF_DNN_MAX_FRAME_OFFSET]; /* the frames before it, oldest first */
    unsigned n_past;
    unsigned *lock;          /* 2 x n_models: the models' size locks for this frame */
    SlotFeature *feature;
    size_t n_feature, feature_cap;
    atomic_int cancelled;    /* also read by the session runs
                                (vdnn_session_watch_stop_flag) */
    unsigned worker;         /* the worker whose store holds the results */
    int rc;
    size_t failed_model;     /* the worker's model that failed; n_models: none did */
    char message[1024];
} Slot;

VdnnKeptPictures *vdnn_kept_pictures_ref(VdnnKeptPictures *k)
{
    if (k)
        k->refs++;
    return k;
}

void vdnn_kept_pictures_unref(VdnnKeptPictures *k)
{
    if (!k || --k->refs)
        return;
    /* A release may call into other contexts; the call it runs in may be
     * failing, and its message must survive them. */
    char message[VDNN_ERROR_BYTES];
    vdnn_save_error(message);
    k->release(k->opaque);
    vdnn_restore_error(message);
    free(k);
}

/* Empties c (its buffers stay for the next frame), letting go of the
 * caller's pictures it held. */
static void raw_copy_clear(VdnnRawCopy *c)
{
    vdnn_kept_pictures_unref(c->kept);
    c->kept = NULL;
    memset(c->w, 0, sizeof(c->w));
    memset(c->h, 0, sizeof(c->h));
    memset(c->at, 0, sizeof(c->at));
    memset(c->stride, 0, sizeof(c->stride));
}

/* Lets go of the pictures a slot holds by reference (its frame merged, or
 * it was never queued). */
static void slot_clear(Slot *s)
{
    raw_copy_clear(&s->now);
    for (unsigned k = 0; k < s->n_past; k++)
        raw_copy_clear(&s->past[k]);
}

/* One frame's fp32 planes. */
typedef struct PlaneSet {
    float *plane[2][3];
    size_t cap[2][3];        /* floats */
} PlaneSet;

typedef struct Worker {
    struct VdnnFramePool *pool;
    unsigned id;
    pthread_t thread;
    int started;
    VdnnTinyModel **model;   /* the pool's n_models copies */
    VdnnFeatureCollector *fc;
    PlaneSet *set;           /* the pool's batch: the frames it scores at once,
                                normalised from their slots */
    PlaneSet past;           /* a past frame, normalised likewise */
    VdnnTinyModel *running;  /* under the pool's lock: for cancel */
    int opened;              /* under the lock: open_worker returned */
    int open_rc;             /* its code; open_message its message */
    char open_message[1024];
} Worker;

struct VdnnFramePool {
    VdnnFramePoolSetup setup;
    uint64_t max_memory_bytes; /* 0: no budget */
    unsigned char *ordered;    /* n_models flags: setup.ordered's copy (the owner runs it) */
    unsigned char *batched;    /* n_models flags: setup.batched's copy */
    unsigned batch;            /* frames a worker takes at once, >= 1 */
    unsigned past_depth;       /* frames back the workers' models read, 0: none */
    unsigned past_pictures;    /* bit p: picture p of those frames is kept */
    int reads_features;        /* some model reads features: slots carry them */
    pthread_mutex_t lock;
    pthread_cond_t work;       /* a slot was queued, or stop */
    pthread_cond_t done;       /* a slot is done, or a worker opened its models */
    int stop;
    unsigned hurry;            /* owners waiting for a queued frame: workers
                                  take what is queued without a full batch */
    uint64_t *batched_model;   /* n_models: frames scored by trusted batched Runs */
    signed char *verdict;      /* n_models: vdnn_tiny_model_batch_trust's values, shared */
    unsigned *undecided;       /* n_models: checks that could not tell */
    unsigned long long next_seq;
    unsigned n_slots;
    Slot *slot;
    unsigned n_workers;
    Worker *worker;
};

void vdnn_frame_pool_batching(VdnnFramePool *p, size_t model, uint64_t *frames, int *trust)
{
    *frames = 0;
    *trust = 0;
    if (model >= p->setup.n_models)
        return;
    pthread_mutex_lock(&p->lock);
    *frames = p->batched_model[model];
    *trust = p->verdict[model];
    pthread_mutex_unlock(&p->lock);
}

/* Worker w's copy of model `model`, NULL where it has none (not opened,
 * failed to open, or a model the owner runs). Under the lock. */
static const VdnnTinyModel *worker_copy(const VdnnFramePool *p, unsigned w, size_t model)
{
    const Worker *wk = &p->worker[w];
    return wk->opened && !wk->open_rc && wk->model ? wk->model[model] : NULL;
}

void vdnn_frame_pool_add_run_counts(VdnnFramePool *p, size_t model, VmafDnnStaticRuns *sum)
{
    if (model >= p->setup.n_models)
        return;
    pthread_mutex_lock(&p->lock);
    for (unsigned w = 0; w < p->n_workers; w++) {
        const VdnnTinyModel *copy = worker_copy(p, w, model);
        if (copy)
            vdnn_tiny_model_add_run_counts(copy, sum);
    }
    pthread_mutex_unlock(&p->lock);
}

int vdnn_frame_pool_static_runs(VdnnFramePool *p, size_t model, VmafDnnStaticRuns *out)
{
    int found = 0;
    if (model >= p->setup.n_models)
        return 0;
    pthread_mutex_lock(&p->lock);
    for (unsigned w = 0; w < p->n_workers && !found; w++) {
        const VdnnTinyModel *copy = worker_copy(p, w, model);
        if (!copy)
            continue;
        VmafDnnStaticRuns runs;
        vmaf_dnn_session_static_runs(vdnn_tiny_model_session(copy), &runs);
        if ((found = runs.fixed + runs.as_opened > 0))
            *out = runs;
    }
    pthread_mutex_unlock(&p->lock);
    return found;
}

/* The pool's own bookkeeping: slot headers and the workers' plane sets,
 * which grow with threads x batch (up to 16448 slots of ~3 KB). */
static uint64_t bookkeeping_bytes(unsigned n_slots, unsigned n_workers, unsigned batch,
                                  size_t n_models)
{
    return (uint64_t)n_slots * (sizeof(Slot) + 2 * (n_models + 1) * sizeof(unsigned)) +
           (uint64_t)n_workers * (sizeof(Worker) + batch * sizeof(PlaneSet) +
                                  n_models * sizeof(VdnnTinyModel *));
}

unsigned vdnn_frame_pool_slots(const VdnnFramePool *p)
{
    return p->n_slots;
}

/* The queued slot submitted first, or NULL. Under the lock. */
static Slot *next_queued(VdnnFramePool *p)
{
    Slot *best = NULL;
    for (unsigned i = 0; i < p->n_slots; i++)
        if (p->slot[i].state == SLOT_QUEUED && (!best || p->slot[i].seq < best->seq))
            best = &p->slot[i];
    return best;
}

/* The queued slot a worker takes next, or NULL: with a batch above 1,
 * only once a whole batch is queued or someone waits for a queued frame
 * (the end of a clip), so that Runs take full batches. Under the lock. */
static Slot *next_ready(VdnnFramePool *p)
{
    if (p->batch > 1 && !p->hurry) {
        unsigned queued = 0;
        for (unsigned i = 0; i < p->n_slots; i++)
            queued += p->slot[i].state == SLOT_QUEUED;
        if (queued < p->batch)
            return NULL;
    }
    return next_queued(p);
}

/* Waits for slot s to be done, hurrying the workers. Under the lock. */
static void wait_done(VdnnFramePool *p, const Slot *s)
{
    if (s->state == SLOT_DONE)
        return;
    p->hurry++;
    pthread_cond_broadcast(&p->work);
    while (s->state != SLOT_DONE)
        pthread_cond_wait(&p->done, &p->lock);
    p->hurry--;
}

/* The occupied slot submitted first, or NULL. Under the lock. */
static Slot *oldest(VdnnFramePool *p)
{
    Slot *best = NULL;
    for (unsigned i = 0; i < p->n_slots; i++)
        if (p->slot[i].state != SLOT_FREE && (!best || p->slot[i].seq < best->seq))
            best = &p->slot[i];
    return best;
}

/* Publishes the model about to run so that cancel can stop it, unless the
 * frame was cancelled already; then withdraws it. As in the serial path
 * (context.c), a cancel that came while the model ran fails the frame even
 * when the run finished: it may have landed before ORT's run began. */
/* -ECANCELED for slot s's frame at model m, cancelled before the model ran
 * or while it ran (then its scores are kept). */
static int cancelled_at(const Slot *s, const VdnnTinyModel *m, int ran)
{
    return vdnn_fail(-ECANCELED, ran ? "read_pictures: frame %u was cancelled while model %s ran "
                                       "(its scores are kept)"
                                     : "read_pictures: frame %u was cancelled before model %s "
                                       "ran",
                     s->now.frame.index, vdnn_tiny_model_path(m));
}

static int run_model(Worker *w, Slot *s, const VdnnTinyFrame *f, VdnnTinyModel *m)
{
    VdnnFramePool *p = w->pool;
    pthread_mutex_lock(&p->lock);
    const int before = s->cancelled;
    w->running = before ? NULL : m;
    pthread_mutex_unlock(&p->lock);
    if (before)
        return cancelled_at(s, m, 0);
    vdnn_session_watch_stop_flag(&s->cancelled);
    int rc = vdnn_tiny_model_run(m, f, w->fc);
    vdnn_session_watch_stop_flag(NULL);
    pthread_mutex_lock(&p->lock);
    const int during = s->cancelled;
    w->running = NULL;
    pthread_mutex_unlock(&p->lock);
    return !rc && during ? cancelled_at(s, m, 1) : rc;
}

int vdnn_raw_planes_normalise(const VdnnRawPlanes *raw, unsigned fp32, VdnnTinyFrame *f,
                              float *plane[2][3], size_t cap[2][3])
{
    static const char *const what[2][3] = {
        {"reference luma plane", "reference U plane", "reference V plane"},
        {"distorted luma plane", "distorted U plane", "distorted V plane"}};
    for (int pic = 0; pic < 2; pic++)
        for (int i = 0; i < 3; i++) {
            f->samples[pic][i] = raw->data[pic][i];
            f->sample_stride[pic][i] = raw->stride[pic][i];
            f->plane[pic][i] = NULL;
            if (!raw->data[pic][i] || !(fp32 & (1u << (pic * 3 + i))))
                continue;
            const unsigned pw = raw->w[pic][i], ph = raw->h[pic][i];
            int rc = vdnn_grow_floats(&plane[pic][i], &cap[pic][i], (size_t)pw * ph,
                                      what[pic][i]);
            if (rc)
                return rc;
            vdnn_plane_normalise(raw->data[pic][i], raw->stride[pic][i], pw, ph, f->bpc,
                                 plane[pic][i]);
            f->plane[pic][i] = plane[pic][i];
        }
    return 0;
}

/* The raw planes a copy holds, as vmaf_dnn_read_pictures checked them. */
static VdnnRawPlanes raw_view(const VdnnRawCopy *c)
{
    VdnnRawPlanes raw = {0};
    for (int pic = 0; pic < 2; pic++)
        for (int i = 0; i < 3; i++)
            if (c->w[pic][i]) {
                raw.data[pic][i] = c->at[pic][i];
                raw.stride[pic][i] = c->stride[pic][i];
                raw.w[pic][i] = c->w[pic][i];
                raw.h[pic][i] = c->h[pic][i];
            }
    return raw;
}

/* Shows the models (NULL entries skipped) one past frame, normalised into
 * plane[][] (grown as needed). */
static int show_past_frame(VdnnTinyModel *const *model, size_t n, const VdnnRawCopy *c,
                           float *plane[2][3], size_t cap[2][3])
{
    VdnnTinyFrame past = c->frame;
    const VdnnRawPlanes raw = raw_view(c);
    int rc = vdnn_raw_planes_normalise(&raw, vdnn_tiny_model_fp32_planes(model, n), &past, plane,
                                       cap);
    for (size_t i = 0; i < n && !rc; i++)
        if (model[i])
            rc = vdnn_tiny_model_remember(model[i], &past);
    return rc;
}

/* Brings the worker's copies to the state of the context's models at the
 * slot's frame: their size locks, then the frames before it, shown from
 * nothing, oldest first: what a copy then holds is what the context's model
 * holds after reading them in order (vdnn_tiny_model_remember forgets a
 * frame it cannot take, as there). */
static int prime_copies(Worker *w, const Slot *s)
{
    const VdnnFramePool *p = w->pool;
    for (size_t i = 0; i < p->setup.n_models; i++)
        if (w->model[i])
            vdnn_tiny_model_set_locked_size(w->model[i], s->lock[2 * i], s->lock[2 * i + 1]);
    if (!p->past_depth)
        return 0;
    for (size_t i = 0; i < p->setup.n_models; i++)
        if (w->model[i])
            vdnn_tiny_model_forget_past(w->model[i]);
    int rc = 0;
    for (unsigned k = 0; k < s->n_past && !rc; k++)
        rc = show_past_frame(w->model, p->setup.n_models, &s->past[k], w->past.plane,
                             w->past.cap);
    return rc;
}

/* The k-th oldest frame `past` holds (k < past->filled). */
static const VdnnRawCopy *past_frame(const VdnnRawPast *past, unsigned k)
{
    return &past->frame[(past->next + past->depth - past->filled + k) % past->depth];
}

int vdnn_raw_past_replay(VdnnRawPast *past, VdnnTinyModel *const *model, size_t n,
                         float *plane[2][3], size_t cap[2][3])
{
    int rc = 0;
    for (unsigned k = 0; k < past->filled && !rc; k++)
        rc = show_past_frame(model, n, past_frame(past, k), plane, cap);
    vdnn_raw_past_empty(past);
    return rc;
}

void vdnn_raw_past_empty(VdnnRawPast *past)
{
    for (unsigned k = 0; k < VMAF_DNN_MAX_FRAME_OFFSET; k++)
        raw_copy_clear(&past->frame[k]);
    past->filled = past->next = 0;
}

/* Records the first failure of a slot's frame: model `model` failed with
 * rc, the message being this thread's last error. */
static void fail_slot(Slot *s, int rc, size_t model)
{
    s->rc = rc;
    s->failed_model = model;
    snprintf(s->message, sizeof(s->message), "%s", vdnn_last_error());
}

/* Whether two frames can share a Run: the same planes, sizes and depth. */
static int same_geometry(const VdnnRawCopy *a, const VdnnRawCopy *b)
{
    if (a->frame.bpc != b->frame.bpc)
        return 0;
    for (int pic = 0; pic < 2; pic++)
        for (int i = 0; i < 3; i++)
            if (a->w[pic][i] != b->w[pic][i] || a->h[pic][i] != b->h[pic][i])
                return 0;
    return 1;
}

/* Checks of a model's batched Runs that could not tell (every frame gave
 * the same values) before it is refused: a model whose outputs never vary
 * cannot be checked. */
#define MAX_UNDECIDED_CHECKS 8

/* Model i of the worker on the frames of the group that have not failed,
 * in one Run (vdnn_tiny_model_batch_run), or one by one where the model
 * says they cannot share one. Until the pool's verdict on the model is
 * "trusted", a batched Run is checked against one Run per frame, whose
 * scores are kept (vdnn_tiny_model_batch_check); the verdict is the pool's,
 * shared by the workers' copies, and a refusal is final. Cancellation as
 * in run_model. */
static void run_batched(Worker *w, Slot **group, const VdnnTinyFrame *frame, size_t n,
                        size_t i)
{
    VdnnFramePool *p = w->pool;
    VdnnTinyModel *m = w->model[i];
    const VdnnTinyFrame *live_frame[VMAF_DNN_MAX_BATCH];
    Slot *live[VMAF_DNN_MAX_BATCH];
    unsigned locks[2 * VMAF_DNN_MAX_BATCH];
    size_t n_live = 0;
    pthread_mutex_lock(&p->lock);
    const int verdict = p->verdict[i];
    for (size_t b = 0; b < n; b++) {
        Slot *s = group[b];
        if (s->rc)
            continue;
        if (s->cancelled) {
            fail_slot(s, cancelled_at(s, m, 0), i);
            continue;
        }
        live[n_live] = s;
        live_frame[n_live] = &frame[b];
        locks[2 * n_live] = s->lock[2 * i];
        locks[2 * n_live + 1] = s->lock[2 * i + 1];
        n_live++;
    }
    int batch = n_live > 1 && verdict >= 0;
    w->running = batch ? m : NULL;
    pthread_mutex_unlock(&p->lock);
    /* A model that reads past pictures is shown the frames before the
     * batch's first (the Run feeds them; the graph takes the later frames'
     * from the batch), and before each frame it scores alone. */
    const int past = vdnn_tiny_model_reads_past(m);
    if (batch && past && prime_copies(w, live[0]))
        batch = 0;
    /* Cancel marks every slot at once (vdnn_frame_pool_cancel): any live
     * one's flag speaks for the batch. */
    vdnn_session_watch_stop_flag(batch ? &live[0]->cancelled : NULL);
    int rc = batch ? vdnn_tiny_model_batch_run(m, live_frame, locks, n_live) : 1;
    vdnn_session_watch_stop_flag(NULL);
    int found = 0;
    if (rc == VDNN_BATCH_REFUSED) { /* frame by frame, and never batched again */
        rc = 1;
        found = -1;
    }
    pthread_mutex_lock(&p->lock);
    int cancelled[VMAF_DNN_MAX_BATCH];
    for (size_t k = 0; k < n_live; k++)
        cancelled[k] = live[k]->cancelled;
    w->running = NULL;
    pthread_mutex_unlock(&p->lock);
    const int check = rc == 0 && verdict == 0;
    int check_cancelled = 0;
    uint64_t batched = 0;
    for (size_t k = 0; k < n_live; k++) {
        Slot *s = live[k];
        int frame_rc;
        if (rc == 1 || check) {
            vdnn_tiny_model_set_locked_size(m, locks[2 * k], locks[2 * k + 1]);
            frame_rc = past ? prime_copies(w, s) : 0;
            if (!frame_rc)
                frame_rc = run_model(w, s, live_frame[k], m);
            check_cancelled |= frame_rc == -ECANCELED;
        } else if (rc) {
            frame_rc = vdnn_fail(rc, "read_pictures: frame %u was cancelled while model %s ran "
                                 "on %zu frames", s->now.frame.index, vdnn_tiny_model_path(m),
                                 n_live);
        } else if ((frame_rc = vdnn_tiny_model_batch_store(m, k, live_frame[k], w->fc)) == 0) {
            batched++;
            if (cancelled[k])
                frame_rc = cancelled_at(s, m, 1);
        }
        if (frame_rc)
            fail_slot(s, frame_rc, i);
    }
    if (check && !check_cancelled)
        found = vdnn_tiny_model_batch_check(m, live_frame, n_live, w->fc);
    pthread_mutex_lock(&p->lock);
    if (check && !check_cancelled && found == 0 &&
        ++p->undecided[i] >= MAX_UNDECIDED_CHECKS)
        found = -1;
    /* a refusal wins over a trust another worker found meanwhile */
    if (found && (p->verdict[i] == 0 || found < 0))
        p->verdict[i] = (signed char)found;
    p->batched_model[i] += batched;
    pthread_mutex_unlock(&p->lock);
}

/* Scores the frames of a group as the serial path scores each: every model
 * the workers run, in attach order, a frame stopping at its first failure
 * (its slot's failed_model says which). Models that take several frames
 * per Run (the pool's `batched`) score the group's frames together; the
 * others run frame by frame, each stretch of them on one frame before the
 * next, so that a frame's copies are primed (prime_copies) once a stretch. */
static void score_group(Worker *w, Slot **group, size_t n)
{
    const VdnnFramePool *p = w->pool;
    const size_t n_models = p->setup.n_models;
    VdnnTinyFrame frame[VMAF_DNN_MAX_BATCH];
    /* A failure before any model counts as the first model's. */
    size_t first = 0;
    while (first < n_models && !w->model[first])
        first++;
    for (size_t b = 0; b < n; b++) {
        Slot *s = group[b];
        const unsigned index = s->now.frame.index;
        s->rc = 0;
        s->failed_model = n_models;
        s->message[0] = 0;
        frame[b] = s->now.frame;
        int rc = 0;
        for (size_t i = 0; i < s->n_feature && !rc; i++)
            rc = vdnn_feature_collector_append(w->fc, s->feature[i].name, index,
                                               s->feature[i].value);
        if (!rc) {
            const VdnnRawPlanes raw = raw_view(&s->now);
            rc = vdnn_raw_planes_normalise(&raw, vdnn_tiny_model_fp32_planes(w->model, n_models),
                                           &frame[b], w->set[b].plane, w->set[b].cap);
        }
        if (rc)
            fail_slot(s, rc, first);
    }
    for (size_t i = first; i < n_models;) {
        if (n > 1 && p->batched[i] && w->model[i]) {
            run_batched(w, group, frame, n, i++);
            continue;
        }
        size_t end = i + 1;
        while (end < n_models && !(n > 1 && p->batched[end] && w->model[end]))
            end++;
        /* A priming failure counts as the stretch's first model the worker
         * runs (an owner-run model there would not stop the frame's merge). */
        size_t runs = i;
        while (runs < end && !w->model[runs])
            runs++;
        for (size_t b = 0; b < n && runs < end; b++) {
            Slot *s = group[b];
            if (s->rc)
                continue;
            int rc = prime_copies(w, s);
            if (rc) {
                fail_slot(s, rc, runs);
                continue;
            }
            for (size_t j = i; j < end && !s->rc; j++)
                if (w->model[j] && (rc = run_model(w, s, &frame[b], w->model[j])))
                    fail_slot(s, rc, j);
        }
        i = end;
    }
    /* The context's features were lent for these frames only, whatever
     * became of them (a retry of a frame finds none left). */
    for (size_t b = 0; b < n; b++)
        for (size_t f = 0; f < group[b]->n_feature; f++) {
            double lent;
            vdnn_feature_collector_take(w->fc, group[b]->feature[f].name,
                                        group[b]->now.frame.index, &lent);
        }
}

static int open_worker(VdnnFramePool *p, Worker *w);

static void *worker_main(void *arg)
{
    Worker *w = arg;
    VdnnFramePool *p = w->pool;
    /* Each worker opens its own copies, so that the copies of N workers
     * open in parallel rather than one after another on the caller's
     * thread; vdnn_frame_pool_open waits for all of them. */
    vdnn_clear_error();
    const int open_rc = open_worker(p, w);
    pthread_mutex_lock(&p->lock);
    w->open_rc = open_rc;
    if (open_rc)
        snprintf(w->open_message, sizeof(w->open_message), "%s", vdnn_last_error());
    w->opened = 1;
    pthread_cond_broadcast(&p->done);
    for (;;) {
        Slot *s = NULL;
        while (!p->stop && (open_rc || !(s = next_ready(p))))
            pthread_cond_wait(&p->work, &p->lock);
        if (!s)
            break;
        /* The frames queued now, up to the batch, oldest first: no waiting
         * for more (while a group runs the caller queues the next). */
        Slot *group[VMAF_DNN_MAX_BATCH];
        size_t n = 0;
        do {
            s->state = SLOT_RUNNING;
            s->worker = w->id;
            group[n++] = s;
        } while (n < p->batch && (s = next_queued(p)) && same_geometry(&s->now, &group[0]->now));
        pthread_mutex_unlock(&p->lock);
        vdnn_clear_error();
        score_group(w, group, n);
        pthread_mutex_lock(&p->lock);
        for (size_t b = 0; b < n; b++)
            group[b]->state = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Moves a done slot's scores into fc, model by model in attach order: a
 * worker's model gives what it stored, an ordered one runs now (on the
 * owner's thread); the frame stops at its first failure, as in the serial
 * path. The owner calls this without the pool's lock, which run_ordered must
 * not meet (vmaf_dnn_context_cancel takes the context's lock, then the
 * pool's); a done slot is the owner's alone, and the stores have locks of
 * their own. */
static void merge(VdnnFramePool *p, Slot *s, VdnnFeatureCollector *fc)
{
    const Worker *w = &p->worker[s->worker];
    const VdnnFramePoolSetup *setup = &p->setup;
    const unsigned index = s->now.frame.index;
    int rc = 0;
    for (size_t i = 0; i < setup->n_models && !rc; i++) {
        if (p->ordered[i]) {
            vdnn_clear_error();
            if ((rc = setup->run_ordered(setup->opaque, i, index)))
                snprintf(s->message, sizeof(s->message), "%s", vdnn_last_error());
            continue;
        }
        const VdnnTinyModel *m = w->model[i];
        /* A failed model may have stored some outputs (a cancel that came
         * while it ran, a budget reached at its second output): they stay,
         * as in the serial path; the models after it did not run. */
        if (i == s->failed_model)
            rc = s->rc;
        for (size_t k = 0; k < vdnn_tiny_model_key_count(m); k++) {
            const char *key = vdnn_tiny_model_key(m, k);
            double v;
            /* Taken, not copied: the worker's store keeps only the frames in
             * flight (it used to keep its share of the whole clip, with a
             * budget of its own that a long clip could exhaust). */
            if (!vdnn_feature_collector_take(w->fc, key, index, &v))
                continue;
            int stored = vdnn_feature_collector_append(fc, key, index, v);
            if (stored && !rc) {
                rc = stored;
                snprintf(s->message, sizeof(s->message), "%s", vdnn_last_error());
            }
        }
    }
    if (!rc && s->rc) /* a failure before the first model (normalising, lent features) */
        rc = s->rc;
    /* What a failure left unmerged goes too: the store keeps frames in flight only. */
    for (size_t i = 0; i < setup->n_models; i++)
        for (size_t k = 0; w->model[i] && k < vdnn_tiny_model_key_count(w->model[i]); k++) {
            double dropped;
            vdnn_feature_collector_take(w->fc, vdnn_tiny_model_key(w->model[i], k), index,
                                        &dropped);
        }
    VdnnFramePending *pending = setup->pending;
    if (rc && pending->rc) {
        pending->more++;
    } else if (rc) {
        pending->rc = rc;
        pending->frame = index;
        memcpy(pending->message, s->message, sizeof(pending->message));
    }
}

/* Waits for the oldest frame, merges it and frees its slot; 0 when no slot
 * is taken. Called and returns under the lock, which it drops to merge. */
static int merge_oldest(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged)
{
    Slot *s = oldest(p);
    if (!s)
        return 0;
    wait_done(p, s);
    pthread_mutex_unlock(&p->lock);
    merge(p, s, fc);
    slot_clear(s); /* may release the caller's pictures: outside the lock */
    pthread_mutex_lock(&p->lock);
    s->state = SLOT_FREE;
    s->n_feature = 0;
    ++*merged;
    return 1;
}

/* The slots that hold a frame (queued, running or done, not merged). Under
 * the lock. */
static unsigned slots_taken(const VdnnFramePool *p)
{
    unsigned taken = 0;
    for (unsigned i = 0; i < p->n_slots; i++)
        taken += p->slot[i].state != SLOT_FREE;
    return taken;
}

void vdnn_frame_pool_make_room(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged)
{
    pthread_mutex_lock(&p->lock);
    while (slots_taken(p) == p->n_slots && merge_oldest(p, fc, merged))
        ;
    pthread_mutex_unlock(&p->lock);
}

unsigned vdnn_frame_pool_collect(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged)
{
    pthread_mutex_lock(&p->lock);
    Slot *s;
    while ((s = oldest(p)) && s->state == SLOT_DONE)
        merge_oldest(p, fc, merged);
    const unsigned held = slots_taken(p);
    pthread_mutex_unlock(&p->lock);
    return held;
}

int vdnn_frame_pool_holds(VdnnFramePool *p, unsigned first, unsigned last)
{
    int held = 0;
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < p->n_slots && !held; i++) {
        const Slot *s = &p->slot[i];
        held = s->state != SLOT_FREE && s->now.frame.index >= first &&
               s->now.frame.index <= last;
    }
    pthread_mutex_unlock(&p->lock);
    return held;
}

void vdnn_frame_pool_drain(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged)
{
    pthread_mutex_lock(&p->lock);
    while (merge_oldest(p, fc, merged))
        ;
    pthread_mutex_unlock(&p->lock);
}

/* The samples of raw's planes of `pictures` (bit per picture) that are in
 * `planes` (bits picture * 3 + plane). */
static uint64_t frame_samples(const VdnnRawPlanes *raw, unsigned pictures, unsigned planes)
{
    uint64_t n = 0;
    for (int pic = 0; pic < 2; pic++)
        for (int i = 0; i < 3; i++)
            if (raw->data[pic][i] && (pictures >> pic & 1) && (planes >> (pic * 3 + i) & 1))
                n += (uint64_t)raw->w[pic][i] * raw->h[pic][i];
    return n;
}

int vdnn_frame_pool_check(const VdnnFramePool *p, const VdnnTinyFrame *f,
                          const VdnnRawPlanes *raw)
{
    VdnnFramePool *pool = (VdnnFramePool *)p; /* the lock only */
    pthread_mutex_lock(&pool->lock);
    int queued = 0;
    for (unsigned i = 0; i < p->n_slots && !queued; i++)
        queued = p->slot[i].state != SLOT_FREE && p->slot[i].now.frame.index == f->index;
    pthread_mutex_unlock(&pool->lock);
    if (queued)
        return vdnn_fail(-EEXIST, "read_pictures: frame %u was already read (it is being "
                         "scored)", f->index);
    /* The slots hold raw samples, each with the past frames' pictures that
     * models read (the context keeps as many); each worker normalises the
     * frame it scores, and one past frame at a time, into fp32 planes of
     * its own, and its model copies hold their own buffers (past planes,
     * resize scratch, FLOAT16 copies) as the context's models do. Only
     * the planes some model reads as fp32 are normalised. */
    const unsigned fp32 = vdnn_tiny_model_fp32_planes(p->setup.model, p->setup.n_models);
    const uint64_t samples = frame_samples(raw, 3, ~0u);
    const uint64_t past = p->past_depth ? frame_samples(raw, p->past_pictures, ~0u) : 0;
    const uint64_t samples_fp32 = frame_samples(raw, 3, fp32);
    const uint64_t past_fp32 = p->past_depth ? frame_samples(raw, p->past_pictures, fp32) : 0;
    const uint64_t sample_bytes = f->bpc > 8 ? 2 : 1;
    uint64_t copies = 0;
    for (size_t i = 0; i < p->setup.n_models; i++)
        if (!p->ordered[i])
            copies += vdnn_tiny_model_own_frame_bytes(p->setup.model[i], f->w, f->h) +
                      (p->batched[i] ? vdnn_tiny_model_batch_bytes(p->setup.model[i], f->w,
                                                                   f->h, p->batch) : 0);
    /* A worker normalises each frame of the group it takes (up to the
     * batch) into planes of its own. A kept frame's samples count as the
     * copies would: the frames in flight hold them either way (the caller
     * cannot free or reuse them until they are released). */
    const uint64_t bytes =
        (samples + past * p->past_depth) * sample_bytes * p->n_slots +
        past * p->past_depth * sample_bytes +
        ((samples_fp32 * p->batch + past_fp32) * sizeof(float) + copies) * p->n_workers +
        bookkeeping_bytes(p->n_slots, p->n_workers, p->batch, p->setup.n_models);
    if (p->max_memory_bytes && bytes > p->max_memory_bytes)
        return vdnn_fail(-EDQUOT, "read_pictures: %u frames in flight of %ux%u need %llu bytes "
                         "(%u slots of %u-bit samples with %u past frame%s, %u workers' fp32 "
                         "planes and model buffers for %u frame%s per Run), above the "
                         "policy's max_memory_bytes of %llu; use fewer threads%s",
                         p->n_slots, f->w[0], f->h[0], (unsigned long long)bytes,
                         p->n_slots, f->bpc > 8 ? 16 : 8, p->past_depth,
                         p->past_depth == 1 ? "" : "s", p->n_workers, p->batch,
                         p->batch == 1 ? "" : "s", (unsigned long long)p->max_memory_bytes,
                         p->batch > 1 ? " or a smaller batch" : "");
    return 0;
}

static int copy_features(Slot *s, const VdnnFeatureCollector *fc, unsigned index)
{
    const size_t n = vdnn_feature_collector_feature_count(fc);
    for (size_t i = 0; i < n; i++) {
        double v;
        if (!vdnn_feature_collector_value_at(fc, i, index, &v))
            continue;
        if (s->n_feature == s->feature_cap) {
            size_t cap = s->feature_cap ? 2 * s->feature_cap : 8;
            SlotFeature *grown = realloc(s->feature, cap * sizeof(*grown));
            if (!grown)
                return vdnn_fail(-ENOMEM, "out of memory");
            s->feature = grown;
            s->feature_cap = cap;
        }
        s->feature[s->n_feature++] =
            (SlotFeature){vdnn_feature_collector_feature_name(fc, i), v};
    }
    return 0;
}

/* A block of n bytes for c's samples: a picture buffer of c->memory where
 * it has one (VdnnRawCopy.memory), else plain memory; NULL when out of it. */
static unsigned char *raw_block(const VdnnRawCopy *c, size_t n)
{
    void *block = NULL;
    if (c->memory)
        vdnn_picture_buffer_new(NULL, c->memory, n, &block);
    else
        block = malloc(n);
    return block;
}

static void raw_block_free(const VdnnRawCopy *c, unsigned char *block)
{
    if (c->memory)
        vdnn_picture_buffer_free(block);
    else
        free(block);
}

/* Copies one plane's w x h samples of `bytes` bytes, rows contiguous. */
static int copy_plane(VdnnRawCopy *c, int pic, int i, const VdnnRawPlanes *raw, size_t bytes)
{
    const size_t row = (size_t)raw->w[pic][i] * bytes, n = row * raw->h[pic][i];
    if (n > c->cap[pic][i]) { /* overwritten whole below: nothing to keep */
        unsigned char *grown = raw_block(c, n);
        if (!grown)
            return vdnn_fail(-ENOMEM, "out of memory for a frame in flight");
        raw_block_free(c, c->raw[pic][i]);
        c->raw[pic][i] = grown;
        c->cap[pic][i] = n;
    }
    const unsigned char *src = raw->data[pic][i];
    if (raw->stride[pic][i] == (ptrdiff_t)row) {
        memcpy(c->raw[pic][i], src, n);
    } else {
        for (unsigned y = 0; y < raw->h[pic][i]; y++)
            memcpy(c->raw[pic][i] + y * row, src + (ptrdiff_t)y * raw->stride[pic][i], row);
    }
    return 0;
}

/* Makes c frame f's planes of the pictures in `pictures` (bit p: picture
 * p): copies of `raw`'s, or, with `kept`, `raw`'s own, held by reference. */
static int copy_frame(VdnnRawCopy *c, const VdnnTinyFrame *f, const VdnnRawPlanes *raw,
                      unsigned pictures, VdnnKeptPictures *kept)
{
    raw_copy_clear(c);
    c->frame = *f;
    memset(c->frame.plane, 0, sizeof(c->frame.plane));
    const size_t bytes = f->bpc > 8 ? 2 : 1;
    int rc = 0;
    for (int pic = 0; pic < 2 && !rc; pic++)
        for (int i = 0; i < 3 && !rc; i++) {
            if (!raw->data[pic][i] || !(pictures >> pic & 1))
                continue;
            if (!kept && (rc = copy_plane(c, pic, i, raw, bytes)))
                break;
            c->at[pic][i] = kept ? raw->data[pic][i] : c->raw[pic][i];
            c->stride[pic][i] = kept ? raw->stride[pic][i]
                                     : (ptrdiff_t)(raw->w[pic][i] * bytes);
            c->w[pic][i] = raw->w[pic][i];
            c->h[pic][i] = raw->h[pic][i];
        }
    if (!rc)
        c->kept = vdnn_kept_pictures_ref(kept);
    return rc;
}

static void raw_copy_free(VdnnRawCopy *c)
{
    raw_copy_clear(c);
    for (int pic = 0; pic < 2; pic++)
        for (int i = 0; i < 3; i++)
            raw_block_free(c, c->raw[pic][i]);
    memset(c, 0, sizeof(*c));
}

void vdnn_raw_past_free(VdnnRawPast *past)
{
    if (!past)
        return;
    for (unsigned k = 0; k < VMAF_DNN_MAX_FRAME_OFFSET; k++)
        raw_copy_free(&past->frame[k]);
    memset(past, 0, sizeof(*past));
}

/* Models of another depth read the past now: the newest frames held that
 * fit the new depth stay, oldest first (the slots' buffers move with them,
 * none is lost or shared). */
static void past_resize(VdnnRawPast *past, unsigned depth)
{
    VdnnRawCopy order[VMAF_DNN_MAX_FRAME_OFFSET];
    unsigned char moved[VMAF_DNN_MAX_FRAME_OFFSET] = {0};
    const unsigned keep = past->depth ? (past->filled < depth ? past->filled : depth) : 0;
    unsigned n = 0;
    for (unsigned k = past->filled - keep; k < past->filled; k++) {
        const unsigned at = (past->next + past->depth - past->filled + k) % past->depth;
        order[n++] = past->frame[at];
        moved[at] = 1;
    }
    for (unsigned at = 0; at < VMAF_DNN_MAX_FRAME_OFFSET; at++)
        if (!moved[at]) {
            raw_copy_clear(&past->frame[at]); /* a frame the new depth drops */
            order[n++] = past->frame[at];
        }
    memcpy(past->frame, order, sizeof(order));
    past->depth = depth;
    past->filled = keep;
    past->next = keep % depth;
}

/* Copies the past frames the workers' models read into the slot, oldest
 * first (those the caller lets the library keep by reference), then keeps
 * frame f among them. */
static int copy_past(VdnnFramePool *p, Slot *s, const VdnnTinyFrame *f,
                     const VdnnRawPlanes *raw, VdnnRawPast *past, VdnnKeptPictures *kept)
{
    s->n_past = 0;
    if (!p->past_depth)
        return 0;
    if (past->depth != p->past_depth)
        past_resize(past, p->past_depth);
    int rc = 0;
    for (unsigned k = 0; k < past->filled && !rc; k++) {
        const VdnnRawCopy *c = past_frame(past, k);
        const VdnnRawPlanes view = raw_view(c);
        rc = copy_frame(&s->past[k], &c->frame, &view, p->past_pictures, c->kept);
        s->n_past = k + 1;
    }
    if (!rc)
        rc = copy_frame(&past->frame[past->next], f, raw, p->past_pictures, kept);
    if (rc) {
        /* The frame counts as read, so what it would have shown is gone:
         * the next frame starts afresh, like one after a frame a model
         * could not take. */
        vdnn_raw_past_empty(past);
        return rc;
    }
    past->next = (past->next + 1) % past->depth;
    if (past->filled < past->depth)
        past->filled++;
    return 0;
}

int vdnn_frame_pool_submit(VdnnFramePool *p, const VdnnTinyFrame *f, const VdnnRawPlanes *raw,
                           const VdnnFeatureCollector *fc, VdnnRawPast *past,
                           VdnnKeptPictures *kept)
{
    /* Only the owner queues slots and only it frees them, so a free slot
     * stays free while it is filled outside the lock. */
    pthread_mutex_lock(&p->lock);
    Slot *s = NULL;
    for (unsigned i = 0; i < p->n_slots && !s; i++)
        if (p->slot[i].state == SLOT_FREE)
            s = &p->slot[i];
    pthread_mutex_unlock(&p->lock);
    if (!s)
        return vdnn_fail(-EAGAIN, "read_pictures: no free frame slot (internal)");
    /* The features first: once `past` holds the frame, nothing fails. */
    s->n_feature = 0;
    int rc = p->reads_features ? copy_features(s, fc, f->index) : 0;
    if (!rc)
        rc = copy_frame(&s->now, f, raw, 3, kept);
    if (!rc)
        rc = copy_past(p, s, f, raw, past, kept);
    if (rc) {
        slot_clear(s);
        return rc;
    }
    /* The context's models hold the size locks, noted in frame order by the
     * context; each frame takes their state to the worker's copies (a copy
     * locked by the frames it happened to score would refuse, or take,
     * other frames than the one model does). */
    for (size_t i = 0; i < p->setup.n_models; i++)
        if (!p->ordered[i])
            vdnn_tiny_model_locked_size(p->setup.model[i], &s->lock[2 * i],
                                        &s->lock[2 * i + 1]);
    pthread_mutex_lock(&p->lock);
    s->seq = p->next_seq++;
    s->cancelled = 0;
    s->rc = 0;
    s->state = SLOT_QUEUED;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void vdnn_frame_pool_cancel(VdnnFramePool *p)
{
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < p->n_slots; i++)
        if (p->slot[i].state == SLOT_QUEUED || p->slot[i].state == SLOT_RUNNING)
            p->slot[i].cancelled = 1;
    for (unsigned i = 0; i < p->n_workers; i++)
        if (p->worker[i].running)
            vdnn_tiny_model_cancel(p->worker[i].running);
    pthread_mutex_unlock(&p->lock);
}

static void close_models(Worker *w, size_t n)
{
    for (size_t i = 0; w->model && i < n; i++)
        vdnn_tiny_model_close(w->model[i]);
    free(w->model);
    w->model = NULL;
}

/* Opens the worker's copies of every model (one intra-op thread each: the
 * frame-level workers are the parallelism) and its store. On the worker's
 * thread (worker_main). */
static int open_worker(VdnnFramePool *p, Worker *w)
{
    const VdnnFramePoolSetup *s = &p->setup;
    w->model = calloc(s->n_models ? s->n_models : 1, sizeof(*w->model));
    if (!w->model)
        return vdnn_fail(-ENOMEM, "out of memory");
    int rc = vdnn_feature_collector_init(&w->fc);
    if (!rc) /* a worker's store holds what it scored too: the same budget */
        vdnn_feature_collector_set_budget(w->fc, vdnn_policy_max_memory(s->policy));
    for (size_t i = 0; i < s->n_models && !rc; i++)
        if (!p->ordered[i])
            rc = vdnn_tiny_model_reopen(&w->model[i], s->model[i], s->recipe[i], s->policy,
                                        s->context_resize, s->copy_threads);
    return rc;
}

/* Frees the pool's per-model arrays and the pool itself (before its
 * threads, slots and lock exist, or after they are gone). */
static void free_flags(VdnnFramePool *p)
{
    free(p->ordered);
    free(p->batched);
    free(p->batched_model);
    free(p->verdict);
    free(p->undecided);
    free(p);
}

int vdnn_frame_pool_open(VdnnFramePool **out, const VdnnFramePoolSetup *setup)
{
    VdnnFramePool *p = calloc(1, sizeof(*p));
    if (!p)
        return vdnn_fail(-ENOMEM, "out of memory");
    p->setup = *setup;
    p->setup.ordered = p->setup.batched = NULL;
    p->max_memory_bytes = vdnn_policy_max_memory(setup->policy);
    p->ordered = calloc(setup->n_models ? setup->n_models : 1, 1);
    p->batched = calloc(setup->n_models ? setup->n_models : 1, 1);
    p->batched_model = calloc(setup->n_models ? setup->n_models : 1, sizeof(uint64_t));
    p->verdict = calloc(setup->n_models ? setup->n_models : 1, 1);
    p->undecided = calloc(setup->n_models ? setup->n_models : 1, sizeof(unsigned));
    if (!p->ordered || !p->batched || !p->batched_model || !p->verdict || !p->undecided) {
        free_flags(p);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    p->batch = setup->batch < 1 ? 1 : setup->batch > VMAF_DNN_MAX_BATCH ? VMAF_DNN_MAX_BATCH
                                                                         : setup->batch;
    for (size_t i = 0; i < setup->n_models; i++) {
        const VdnnTinyModel *m = setup->model[i];
        if (setup->ordered && setup->ordered[i]) {
            p->ordered[i] = 1;
            continue;
        }
        p->batched[i] = setup->batched && setup->batched[i] && vdnn_tiny_model_batchable(m);
        /* the context's model carries the verdicts of earlier pools */
        p->verdict[i] = (signed char)vdnn_tiny_model_batch_trust(m);
        p->reads_features |= vdnn_tiny_model_read_count(m) > 0;
        for (int pic = 0; pic < 2; pic++) {
            const unsigned depth = vdnn_tiny_model_history_depth(m, (VdnnSourcePicture)pic);
            if (depth)
                p->past_pictures |= 1u << pic;
            if (depth > p->past_depth)
                p->past_depth = depth;
        }
    }
    p->n_workers = setup->workers;
    /* One group of frames more than workers: the caller prepares the next
     * frames while every worker runs a group (docs/throughput.md). */
    p->n_slots = (setup->workers + 1) * p->batch;
    const uint64_t bookkeeping = bookkeeping_bytes(p->n_slots, p->n_workers, p->batch,
                                                   setup->n_models);
    if (p->max_memory_bytes && bookkeeping > p->max_memory_bytes) {
        const unsigned slots = p->n_slots, batch = p->batch;
        free_flags(p);
        return vdnn_fail(-EDQUOT, "read_pictures: %u frame slots (%u workers, %u frame%s per "
                         "Run) need %llu bytes of bookkeeping, above the policy's "
                         "max_memory_bytes of %llu; use fewer threads or a smaller batch",
                         slots, setup->workers, batch, batch == 1 ? "" : "s",
                         (unsigned long long)bookkeeping,
                         (unsigned long long)vdnn_policy_max_memory(setup->policy));
    }
    p->slot = calloc(p->n_slots, sizeof(*p->slot));
    p->worker = calloc(p->n_workers, sizeof(*p->worker));
    int allocated = p->slot && p->worker;
    for (unsigned i = 0; allocated && i < p->n_slots; i++) {
        p->slot[i].now.memory = setup->slot_memory;
        allocated = (p->slot[i].lock = calloc(2 * (setup->n_models + 1), sizeof(unsigned))) !=
                    NULL;
    }
    for (unsigned i = 0; allocated && i < p->n_workers; i++)
        allocated = (p->worker[i].set = calloc(p->batch, sizeof(PlaneSet))) != NULL;
    if (!allocated) {
        for (unsigned i = 0; p->slot && i < p->n_slots; i++)
            free(p->slot[i].lock);
        for (unsigned i = 0; p->worker && i < p->n_workers; i++)
            free(p->worker[i].set);
        free(p->slot);
        free(p->worker);
        free_flags(p);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    int rc = 0;
    for (unsigned i = 0; i < p->n_workers && !rc; i++) {
        Worker *w = &p->worker[i];
        w->pool = p;
        w->id = i;
        if (pthread_create(&w->thread, NULL, worker_main, w))
            rc = vdnn_fail(-EAGAIN, "read_pictures: cannot start frame worker %u of %u", i + 1,
                           p->n_workers);
        else
            w->started = 1;
    }
    /* Every started worker reports its open; the failure reported is the
     * lowest-numbered worker's, so it does not depend on which finished
     * first. */
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < p->n_workers; i++)
        while (p->worker[i].started && !p->worker[i].opened)
            pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n_workers && !rc; i++)
        if (p->worker[i].open_rc)
            rc = vdnn_fail(p->worker[i].open_rc, "%s", p->worker[i].open_message);
    if (rc) {
        vdnn_frame_pool_close(p);
        return rc;
    }
    *out = p;
    return 0;
}

void vdnn_frame_pool_close(VdnnFramePool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < p->n_slots; i++)
        if (p->slot[i].state == SLOT_QUEUED || p->slot[i].state == SLOT_RUNNING)
            wait_done(p, &p->slot[i]);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n_workers; i++) {
        Worker *w = &p->worker[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        close_models(w, p->setup.n_models);
        vdnn_feature_collector_free(w->fc);
        for (int pic = 0; pic < 2; pic++)
            for (int k = 0; k < 3; k++) {
                for (unsigned b = 0; w->set && b < p->batch; b++)
                    free(w->set[b].plane[pic][k]);
                free(w->past.plane[pic][k]);
            }
        free(w->set);
    }
    for (unsigned i = 0; i < p->n_slots; i++) {
        free(p->slot[i].lock);
        raw_copy_free(&p->slot[i].now);
        for (unsigned k = 0; k < VMAF_DNN_MAX_FRAME_OFFSET; k++)
            raw_copy_free(&p->slot[i].past[k]);
        free(p->slot[i].feature);
    }
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->slot);
    free(p->worker);
    free_flags(p);
}

int vdnn_frame_pool_restart(VdnnFramePool *p)
{
    const VdnnFramePoolSetup *s = &p->setup;
    /* The workers wait for work: nothing of theirs is in use. */
    for (unsigned i = 0; i < p->n_workers; i++) {
        Worker *w = &p->worker[i];
        VdnnFeatureCollector *fresh = NULL;
        int rc = vdnn_feature_collector_init(&fresh);
        if (rc)
            return rc;
        vdnn_feature_collector_set_budget(fresh, vdnn_policy_max_memory(s->policy));
        vdnn_feature_collector_free(w->fc);
        w->fc = fresh;
        for (size_t k = 0; k < s->n_models; k++)
            if (w->model[k])
                vdnn_tiny_model_rewind(w->model[k]);
    }
    return 0;
}
