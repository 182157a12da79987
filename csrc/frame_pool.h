/* Internal: frames in flight. A context with `threads` > 1, or a `batch`
 * > 1 and a model that can take several frames per Run, hands each
 * frame, once its pictures are checked, to a pool of worker threads (the raw
 * samples copied, with those of the past frames its models read, or held by
 * reference where the caller lets the library keep them; the worker
 * normalises them); every worker owns a copy of each model that reads
 * pictures (its own ORT session, one intra-op thread) and a private feature
 * store (a worker takes up to a batch of queued frames at once, which
 * batchable models score in one Run), and the frame's scores are moved
 * into the context's store by the
 * thread that owns the context, oldest frame first, which also runs the
 * models that need frames in order (features of other frames, running
 * behind) as each frame's turn comes. docs/throughput.md says why
 * (measurements) and vmaf_dnn_read_pictures() what a caller sees.
 *
 * Thread-safety: every function but vdnn_frame_pool_cancel is called by the
 * thread that owns the context (between the context's enter and leave);
 * vdnn_frame_pool_cancel may be called from any thread.
 */
#ifndef VMAFDNN_FRAME_POOL_H
#define VMAFDNN_FRAME_POOL_H

#include <stddef.h>

#include "vmafdnn/context.h"

#include "feature_collector.h"
#include "picture_memory.h"
#include "tiny_model.h"

/* How an attached model was attached, so that it can be opened again: for a
 * worker's own copy, or afresh on vmaf_dnn_context_reset. */
typedef struct VdnnModelRecipe {
    char *name;             /* VmafDnnModelConfig.name, owned; NULL: none */
    VmafDnnConfig session;  /* the session config it was opened with */
    VmafDnnResize resize;   /* VmafDnnModelConfig.resize */
    int no_reference;
} VdnnModelRecipe;

/* *out: a new recipe (free with vdnn_model_recipe_free). Returns 0, -ENOMEM. */
int vdnn_model_recipe_new(VdnnModelRecipe **out, const char *name, const VmafDnnConfig *session,
                          VmafDnnResize resize, int no_reference);
void vdnn_model_recipe_free(VdnnModelRecipe *r);

/* Opens model `m` again from its recipe as an independent instance with the
 * very same feature keys and lag; `threads` > 0 replaces the recipe's
 * intra-op thread count. Returns vdnn_tiny_model_open's codes, or -EIO when
 * the file no longer yields the same keys. */
int vdnn_tiny_model_reopen(VdnnTinyModel **out, const VdnnTinyModel *m,
                           const VdnnModelRecipe *r, const VmafDnnModelPolicy *policy,
                           VmafDnnResize context_resize, int threads);

/* The first failure of a frame scored in flight that no call reported yet
 * (the context owns it; the pool fills it). */
typedef struct VdnnFramePending {
    int rc;                 /* 0: none */
    unsigned frame, more;   /* the failed frame; later failed frames */
    char message[1024];
} VdnnFramePending;

/* Returns the pending failure as a call's result (message recorded for the
 * calling thread) and clears it; 0 when there is none. */
int vdnn_frame_pending_take(VdnnFramePending *pending);

typedef struct VdnnFramePool VdnnFramePool;

/* The caller's pictures of a frame read with vmaf_dnn_read_pictures_kept,
 * which slots and the past frames hold instead of copies: `refs` holders
 * (the call itself while it runs, each slot and past frame that shows
 * them); the last to let go calls release(opaque). Only the thread that
 * owns the context takes and drops references (slots are let go when
 * their frames merge, past frames when they leave the past), so the count
 * needs no lock, and release runs on that thread. */
typedef struct VdnnKeptPictures {
    unsigned refs;
    VmafDnnPicturesRelease release;
    void *opaque;
} VdnnKeptPictures;

/* A new holder of k (NULL-safe); returns k. */
VdnnKeptPictures *vdnn_kept_pictures_ref(VdnnKeptPictures *k);
/* Drops one reference (NULL-safe): the last one calls release and frees k. */
void vdnn_kept_pictures_unref(VdnnKeptPictures *k);

/* A frame's raw samples as a slot or the past frames keep them: a copy
 * (rows contiguous in raw[][], uint8_t for bpc 8, uint16_t above), or the
 * caller's own planes where `kept` holds them; at[][] and stride[][] say
 * where the samples are either way. w[][] == 0: a plane not held. Buffers
 * grow as needed and are freed by vdnn_raw_past_free or the pool, which
 * also let go of kept pictures. */
typedef struct VdnnRawCopy {
    VdnnTinyFrame frame;        /* geometry, bpc, index; its planes unused */
    unsigned char *raw[2][3];
    size_t cap[2][3];           /* bytes */
    unsigned w[2][3], h[2][3];
    const unsigned char *at[2][3];
    ptrdiff_t stride[2][3];     /* bytes */
    VdnnKeptPictures *kept;     /* NULL: the samples are the copies in raw[][] */
    /* Where raw[][] come from: picture buffers of this device memory
     * (picture_memory.h), so that the models that feed from there take the
     * copies where they lie; NULL: plain memory. */
    const VdnnHostMemory *memory;
} VdnnRawCopy;

/* The raw samples of the last frames read, for the workers' models that
 * read past pictures ("input_sources" offsets < 0): a worker shows its copy
 * the frames before the one it scores (vdnn_tiny_model_remember), so that
 * any worker can score any frame. Owned by the context, not the pool, so
 * that they survive a pool closed between two frames (a model attached in
 * the middle of a clip). Zero-initialised is empty. */
typedef struct VdnnRawPast {
    unsigned depth;             /* frames held at most; 0: none */
    unsigned filled, next;      /* frames held; where the next one goes */
    VdnnRawCopy frame[VMAF_DNN_MAX_FRAME_OFFSET];
} VdnnRawPast;

/* Frees the buffers and empties `past`. NULL-safe. */
void vdnn_raw_past_free(VdnnRawPast *past);

/* Empties `past`, keeping its buffers for the next frames (a reset). */
void vdnn_raw_past_empty(VdnnRawPast *past);

/* Shows the models (vdnn_tiny_model_remember; NULL entries skipped) the
 * frames `past` holds, oldest first, normalised into plane[][] (grown as
 * needed; cap[][] their floats), then empties it: for a context going back
 * to one frame at a time, whose own models did not see the frames scored
 * in flight. Returns 0, -ENOMEM. */
int vdnn_raw_past_replay(VdnnRawPast *past, VdnnTinyModel *const *model, size_t n,
                         float *plane[2][3], size_t cap[2][3]);

typedef struct VdnnFramePoolSetup {
    VdnnTinyModel *const *model;          /* the context's models (keys read) */
    VdnnModelRecipe *const *recipe;       /* one per model */
    size_t n_models;
    /* ordered[i] non-zero: model i is not run by the workers but by the
     * owner, through run_ordered(opaque, i, frame), when the frame's turn
     * comes in the merge: in attach order between the workers' models, so
     * that the store sees what one-frame-at-a-time scoring gives. For
     * models that read features of other frames or run behind; they read
     * no picture. A non-zero return fails the frame like a worker's
     * failure. NULL: every model runs on the workers. */
    const unsigned char *ordered;         /* copied by vdnn_frame_pool_open */
    int (*run_ordered)(void *opaque, size_t model, unsigned frame);
    void *opaque;
    /* batched[i] non-zero: model i scores the frames a worker takes at
     * once in one Run when it can (vdnn_tiny_model_batch_run); copied.
     * NULL: none does. */
    const unsigned char *batched;
    unsigned batch;                       /* frames a worker takes at once,
                                             1..VMAF_DNN_MAX_BATCH */
    const VmafDnnModelPolicy *policy;     /* NULL: the default policy */
    VmafDnnResize context_resize;
    unsigned workers;                     /* 1..VMAF_DNN_MAX_THREADS */
    int copy_threads;                     /* intra-op threads of the
                                             workers' copies; 0: the
                                             recipe's */
    VdnnFramePending *pending;            /* outlives the pool */
    /* The memory of the frames' copies in the slots (VdnnRawCopy.memory):
     * the context's picture memory; NULL: plain memory. */
    const VdnnHostMemory *slot_memory;
} VdnnFramePoolSetup;

/* Starts the workers; each opens its own copy of every model on its own
 * thread (the copies of different workers open in parallel), and this waits
 * for all of them. Returns 0, the codes of vdnn_tiny_model_reopen (the
 * failure of the lowest-numbered worker that failed, whatever the timing),
 * -ENOMEM, -EAGAIN (no thread could be started), -EDQUOT (the slots' and
 * workers' bookkeeping alone is above the policy's max_memory_bytes). */
int vdnn_frame_pool_open(VdnnFramePool **out, const VdnnFramePoolSetup *setup);

/* Waits for every frame in flight (their scores are dropped), stops the
 * workers and closes their models. NULL-safe. */
void vdnn_frame_pool_close(VdnnFramePool *p);

/* For model `model` (the context's index): frames whose scores came from
 * trusted batched Runs since the pool opened, and the pool's verdict on its
 * batched Runs (vdnn_tiny_model_batch_trust's values), which the pool
 * starts from the context's model's and the context keeps when the pool
 * closes. */
void vdnn_frame_pool_batching(VdnnFramePool *p, size_t model, uint64_t *frames, int *trust);
/* Adds the run counts of the workers' copies of model `model` (those whose
 * models opened) to *sum (vdnn_tiny_model_add_run_counts). */
void vdnn_frame_pool_add_run_counts(VdnnFramePool *p, size_t model, VmafDnnStaticRuns *sum);
/* Fills *out (vmaf_dnn_session_static_runs) from the first worker's copy
 * of model `model` that made a run; returns 0, leaving *out alone, when
 * none did. */
int vdnn_frame_pool_static_runs(VdnnFramePool *p, size_t model, VmafDnnStaticRuns *out);

/* Frames the pool holds at most (queued, running or done and not merged). */
unsigned vdnn_frame_pool_slots(const VdnnFramePool *p);

/* Makes room for one more frame: while every slot is taken, waits for the
 * oldest frame and merges it into fc. *merged += frames merged. */
void vdnn_frame_pool_make_room(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged);

/* Merges the frames in flight that are done into fc, oldest first, without
 * waiting: stops at the oldest frame still queued or running (a done frame
 * behind it stays, so frames merge in order). *merged += frames merged.
 * Returns the frames the pool still holds. */
unsigned vdnn_frame_pool_collect(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged);

/* Whether the pool holds (queued, running or done and not merged) a frame
 * whose index is in first..last. */
int vdnn_frame_pool_holds(VdnnFramePool *p, unsigned first, unsigned last);

/* Waits for every frame in flight and merges them into fc, oldest first.
 * *merged += frames merged. */
void vdnn_frame_pool_drain(VdnnFramePool *p, VdnnFeatureCollector *fc, unsigned *merged);

/* The caller's samples of the planes the models read, as checked by
 * vmaf_dnn_read_pictures (uint8_t for bpc 8, uint16_t for 9..16; stride in
 * bytes), by [VdnnSourcePicture][VdnnSourcePlane]; NULL: a plane no model
 * reads. A slot keeps a copy of these raw samples, not of fp32 planes: the
 * worker normalises them (vdnn_plane_normalise), so the caller's thread,
 * which feeds every worker, copies a quarter (8-bit) or half of the bytes
 * and converts nothing (docs/throughput.md). */
typedef struct VdnnRawPlanes {
    const void *data[2][3];
    ptrdiff_t stride[2][3];
    unsigned w[2][3], h[2][3];
} VdnnRawPlanes;

/* Points f's samples at every plane of `raw` and normalises those of them
 * in `fp32` (bits picture * 3 + plane: vdnn_tiny_model_fp32_planes) into
 * plane[][] (vdnn_plane_normalise, the samples being f->bpc bits; grown as
 * needed, cap[][] their floats), pointing f's planes at them (the others
 * NULL): the one conversion of the serial path and of the workers, so both
 * give the same values. Returns 0 or -ENOMEM. */
int vdnn_raw_planes_normalise(const VdnnRawPlanes *raw, unsigned fp32, VdnnTinyFrame *f,
                              float *plane[2][3], size_t cap[2][3]);

/* Checks a frame before it counts as read: frame `index` is not in flight
 * already (-EEXIST), and the slots' raw planes plus every worker's fp32
 * planes and its model copies' own buffers (vdnn_tiny_model_own_frame_bytes
 * at the frame's size) fit the policy's max_memory_bytes (-EDQUOT). A frame
 * of another size than a native-resolution model locked fails on the
 * worker, as vdnn_tiny_model_run says it (the lock is the context's
 * model's, noted in frame order by the context as it reads the frame), and
 * counts as read, as in the serial path. f gives the geometry, bpc and
 * index (its planes are unused). The samples of a frame read with
 * vmaf_dnn_read_pictures_kept count as copies would: the frames in flight
 * hold the caller's pictures instead. */
int vdnn_frame_pool_check(const VdnnFramePool *p, const VdnnTinyFrame *f,
                          const VdnnRawPlanes *raw);

/* Copies the frame's raw planes, the past frames its models read (from
 * `past`, which then keeps this frame too), and the features fc holds for
 * its index when a model reads features, into a free slot
 * (vdnn_frame_pool_make_room first) and queues it. With `kept` (the
 * caller's pictures, vmaf_dnn_read_pictures_kept) the slot and `past` hold
 * references to them instead of copies of the frame's planes, and past
 * frames that were kept are shown by reference too. Returns 0, -ENOMEM;
 * on failure it holds no new reference to `kept`. */
int vdnn_frame_pool_submit(VdnnFramePool *p, const VdnnTinyFrame *f, const VdnnRawPlanes *raw,
                           const VdnnFeatureCollector *fc, VdnnRawPast *past,
                           VdnnKeptPictures *kept);

/* Cancels every frame queued or running now (each fails with -ECANCELED);
 * frames submitted later run normally. Any thread. */
void vdnn_frame_pool_cancel(VdnnFramePool *p);

/* For vmaf_dnn_context_reset, on a drained pool: empties the workers'
 * feature stores and rewinds their models (vdnn_tiny_model_rewind).
 * Returns 0 or -ENOMEM; on failure the pool must be closed. */
int vdnn_frame_pool_restart(VdnnFramePool *p);

#endif
