/* Internal: one attached tiny model: its sidecar, its session, the shape
 * rules it passed, how its inputs are fed and which feature keys its outputs
 * are stored under. vmaf_dnn_use_tiny_model() documents the rules; this
 * module implements them, and runs the model on one frame.
 *
 * Ownership: a VdnnTinyModel owns its session, sidecar, keys and buffers;
 * every pointer it hands out stays valid until vdnn_tiny_model_close().
 * Thread-safety: none; the context serialises calls. Only
 * vdnn_tiny_model_cancel may be called while another thread runs the model.
 */
#ifndef VMAFDNN_TINY_MODEL_H
#define VMAFDNN_TINY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "vmafdnn/context.h"

#include "feature_collector.h"
#include "sidecar.h"

typedef struct VdnnTinyModel VdnnTinyModel;

/* How to attach a model. Pointers are the caller's and only read during
 * vdnn_tiny_model_open(). */
typedef struct VdnnTinyModelOptions {
    const char *onnx_path;
    const VmafDnnConfig *session; /* NULL: defaults */
    const VmafDnnModelPolicy *policy; /* NULL: the default policy */
    const char *name;             /* key override, or NULL */
    VmafDnnResize resize;         /* the model config's; DEFAULT defers to the sidecar */
    VmafDnnResize context_resize; /* the last fallback; DEFAULT means NONE */
    int no_reference;             /* refuse FR models */
    /* Non-zero when `key` is used outside this model (other models, stored
     * features); the model checks its own earlier keys itself. */
    int (*key_taken)(void *opaque, const char *key);
    void *opaque;
    /* The form (sidecar "forms") an earlier open of this model scored with,
     * or NULL. A copy of a model (frame workers) opens it first and keeps it
     * when the sidecar still names it for the EP it attached, instead of
     * creating the model's own session only to drop it. */
    const char *form_path;
} VdnnTinyModelOptions;

/* One frame's planes, owned by the caller, for the planes some model reads
 * (vdnn_tiny_model_planes), NULL otherwise (by VdnnSourcePicture,
 * VdnnSourcePlane); w[i] x h[i] is plane i's size:
 *   samples[][]  the caller's samples (uint8_t for bpc 8, uint16_t above),
 *                rows sample_stride[][] bytes apart: always set
 *   plane[][]    the same normalised to fp32 (vdnn_plane_normalise), rows
 *                contiguous; NULL too where every model reading the plane
 *                takes samples (vdnn_tiny_model_takes_samples)
 * With no picture (then w, h and bpc are 0) every plane is NULL: always so
 * for a model that runs behind (lag > 0), which reads features only.
 * Features at frame offsets are read from frame index + offset kept inside
 * [first, last]: the sequence's first frame and the last frame read so far
 * (first = 0, last = index where frames have no order). */
typedef struct VdnnTinyFrame {
    const float *plane[2][3];
    const void *samples[2][3];
    ptrdiff_t sample_stride[2][3];
    unsigned w[3], h[3], bpc;
    unsigned index;
    unsigned first, last;
} VdnnTinyFrame;

/* Opens and checks the model; *out (owned by the caller, released with
 * vdnn_tiny_model_close) is written only on success. Returns the codes of
 * vmaf_dnn_use_tiny_model(). */
int vdnn_tiny_model_open(VdnnTinyModel **out, const VdnnTinyModelOptions *opt);

/* NULL-safe. */
void vdnn_tiny_model_close(VdnnTinyModel *m);

/* Makes the model's run in flight (on another thread) return -ECANCELED
 * (vmaf_dnn_session_cancel). Thread-safe; the caller keeps m alive. */
void vdnn_tiny_model_cancel(VdnnTinyModel *m);

/* Checks that the model's per-frame buffers for a frame whose planes are
 * w[i] x h[i] (the fp32 planes it reads, resize scratch when the frame will be resized,
 * the past planes it keeps, FLOAT16 copies) fit the policy's max_memory_bytes, before any of them is
 * allocated. Native-resolution models meet their real size here first.
 * Returns 0 or -EDQUOT naming the input, the sizes and the bytes. */
int vdnn_tiny_model_check_frame(const VdnnTinyModel *m, const unsigned w[3],
                                const unsigned h[3]);

/* The part of those buffers every copy of the model holds itself (resize
 * scratch, past planes, FLOAT16 copies; not the fp32 planes it reads, which
 * belong to the context or a frame worker), in bytes; 0 for a FEATURES
 * model. The frame pool counts it once per worker. */
uint64_t vdnn_tiny_model_own_frame_bytes(const VdnnTinyModel *m, const unsigned w[3],
                                         const unsigned h[3]);

/* The planes the model's image inputs read: bit picture * 3 + plane
 * (VdnnSourcePicture, VdnnSourcePlane) for each; 0 for a FEATURES model. */
unsigned vdnn_tiny_model_planes(const VdnnTinyModel *m);

/* Whether the model's picture inputs are UINT16 and take the frame's own
 * samples: it reads VdnnTinyFrame's samples[][] only, so a frame needs no
 * fp32 planes for it. */
int vdnn_tiny_model_takes_samples(const VdnnTinyModel *m);

/* The planes (bits as vdnn_tiny_model_planes) that models[0, n) (NULL entries
 * skipped) read as fp32: those of the models that do not take samples. */
unsigned vdnn_tiny_model_fp32_planes(VdnnTinyModel *const *models, size_t n);

/* The smallest plane the model scores (its sidecar's min_width and
 * min_height, 1 where absent): a smaller frame gets NaN for every output
 * of the model instead of a run (see vdnn_tiny_model_run). */
void vdnn_tiny_model_min_size(const VdnnTinyModel *m, unsigned *w, unsigned *h);

const char *vdnn_tiny_model_path(const VdnnTinyModel *m);
/* 1 when AUTO's first step, a CPU device of another EP, was passed over for
 * ORT's CPU EP (the model names a form for it): copies of the model must
 * open on the CPU too. */
int vdnn_tiny_model_on_cpu_ep(const VdnnTinyModel *m);
/* The file the model's session was opened from: its sidecar's form for the
 * attached EP ("forms"), else the model's own path. */
const char *vdnn_tiny_model_form_path(const VdnnTinyModel *m);
VmafDnnModelKind vdnn_tiny_model_kind(const VdnnTinyModel *m);
const VmafDnnSession *vdnn_tiny_model_session(const VdnnTinyModel *m);
size_t vdnn_tiny_model_key_count(const VdnnTinyModel *m);
const char *vdnn_tiny_model_key(const VdnnTinyModel *m, size_t i); /* NULL out of range */

/* The sidecar's "requires": files attached before this model. */
const VdnnSidecarStrings *vdnn_tiny_model_requires(const VdnnTinyModel *m);

/* The features the model reads: entry i's name (NULL for an input that is
 * not a feature, such as a "value" one) and its frame offset. */
size_t vdnn_tiny_model_read_count(const VdnnTinyModel *m);
const char *vdnn_tiny_model_read(const VdnnTinyModel *m, size_t i, int *offset);

/* How many frames the model runs behind the frame being read (it scores
 * frame t - lag); the context decides it from the offsets of the features
 * the model reads and the lags of their producers. */
unsigned vdnn_tiny_model_lag(const VdnnTinyModel *m);
void vdnn_tiny_model_set_lag(VdnnTinyModel *m, unsigned lag);

/* The policy's max_memory_bytes, the default policy's for NULL (0: no
 * budget): what per-frame buffers and stored scores are charged against. */
uint64_t vdnn_policy_max_memory(const VmafDnnModelPolicy *policy);

/* Forgets what the model learnt from the clip so far, keeping its session:
 * the size a symbolic ("native_resolution") input was locked to by the
 * first frame, and the past planes a temporal model holds. The next frame
 * is then its first, as after a fresh open (vmaf_dnn_context_reset). */
void vdnn_tiny_model_rewind(VdnnTinyModel *m);

/* Non-zero when the model reads another frame than the one it scores (past
 * pictures, features at an offset) or runs behind: its frames must come in
 * order. */
int vdnn_tiny_model_temporal(const VdnnTinyModel *m);

/* How many frames back the model reads picture `picture` (VdnnSourcePicture):
 * the past planes it keeps of it; 0 when none. */
unsigned vdnn_tiny_model_history_depth(const VdnnTinyModel *m, VdnnSourcePicture picture);

/* Non-zero when the model reads pictures of earlier frames (a history
 * depth above 0 for either picture). */
int vdnn_tiny_model_reads_past(const VdnnTinyModel *m);

/* Non-zero when the model holds past planes: frames it read itself since
 * it was opened or rewound (vdnn_tiny_model_remember). */
int vdnn_tiny_model_holds_past(const VdnnTinyModel *m);

/* Frames per Run. A batchable model (every input a picture of the frame
 * scored with a symbolic first dim, every attached output with a symbolic
 * first dim, not temporal; decided at open) can score n frames in one ORT
 * Run: vdnn_tiny_model_batch_run stacks their planes ([n, 1, H, W]), with
 * locks[2 * b], locks[2 * b + 1] as frame b's size lock (see below), and
 * runs once. It returns 0 when every output gave n values, kept for
 * vdnn_tiny_model_batch_store to store frame b's (0 <= b < n) as
 * vdnn_tiny_model_run would; 1 when these frames must be scored one by one
 * with vdnn_tiny_model_run instead: not batchable, n < 2 or above
 * VMAF_DNN_MAX_BATCH, planes of different sizes, a frame the model would
 * refuse or skip alone (size lock, too small), no memory for the stacked
 * planes; VDNN_BATCH_REFUSED when they must too because the Run failed or
 * gave other than n values (so that a frame fails only where it fails
 * alone), which also says the model's frames cannot share a Run;
 * -ECANCELED when the Run was cancelled. The frames' planes are read during
 * the call only. */
#define VDNN_BATCH_REFUSED 2
int vdnn_tiny_model_batchable(const VdnnTinyModel *m);
int vdnn_tiny_model_batch_run(VdnnTinyModel *m, const VdnnTinyFrame *const *f,
                              const unsigned *locks, size_t n);
int vdnn_tiny_model_batch_store(VdnnTinyModel *m, size_t b, const VdnnTinyFrame *f,
                                VdnnFeatureCollector *fc);

/* Whether the model's batched Runs can be trusted: 0 not checked yet, 1
 * trusted, -1 refused. Declared shapes only
 * suggest that a model's frames do not mix (no statistic over the whole
 * batch, no output that only looks per-frame), so the caller checks a
 * batched Run: it also scores those frames one per Run (vdnn_tiny_model_run,
 * whose scores it keeps) and asks vdnn_tiny_model_batch_check, which
 * compares the batched values (frames f[0..n-1] of the last batched Run)
 * with the ones stored in fc: -1 when one differs (beyond 1e-6 + 1e-5
 * relative) or is missing (the frame failed alone): refuse; 1 when they
 * agree and the frames' values differ from each other: trust; 0 when they
 * agree but every frame gave the same values, which a model that mixes
 * frames would too (identical frames): check again. A batched Run that
 * failed or miscounted (VDNN_BATCH_REFUSED) refuses too. The verdict is
 * the caller's (the frame pool shares one among its workers' copies); the
 * context's model keeps it between pools (trust / set_batch_trust). */
int vdnn_tiny_model_batch_trust(const VdnnTinyModel *m);
void vdnn_tiny_model_set_batch_trust(VdnnTinyModel *m, int trust);
int vdnn_tiny_model_batch_check(const VdnnTinyModel *m, const VdnnTinyFrame *const *f, size_t n,
                                const VdnnFeatureCollector *fc);

/* Frames the copies of the context's model scored by trusted batched Runs,
 * noted on the model when a pool closes. */
void vdnn_tiny_model_note_batching(VdnnTinyModel *m, uint64_t frames);
/* Run counts (VmafDnnStaticRuns' fixed, as_opened, device_io, captured):
 * add adds those of the model's session and of its copies gone (safe from
 * any thread while the model runs); keep records a gone copy's. */
void vdnn_tiny_model_add_run_counts(const VdnnTinyModel *m, VmafDnnStaticRuns *sum);
void vdnn_tiny_model_keep_run_counts(VdnnTinyModel *m, const VmafDnnStaticRuns *gone);
uint64_t vdnn_tiny_model_batched_frames(const VdnnTinyModel *m);

/* Bytes a copy of a batchable model holds beyond one frame's
 * (vdnn_tiny_model_own_frame_bytes) to score `frames` frames of w[i] x h[i]
 * per Run: the stacked planes, the results, larger FLOAT16 copies. 0 when
 * not batchable or frames < 2. */
uint64_t vdnn_tiny_model_batch_bytes(const VdnnTinyModel *m, const unsigned w[3],
                                     const unsigned h[3], unsigned frames);


/* A native-resolution model's size lock, which the first frame read that is
 * not below its minimum size sets (a smaller one sets nothing), whether or not
 * the model then runs on it: the context notes every frame it reads, in
 * frame order, before any model runs. Frame workers keep the context's model
 * as the one lock and give its state to their copies before each frame, so
 * a copy refuses what the one model would. 0 x 0: not locked. */
void vdnn_tiny_model_note_frame(VdnnTinyModel *m, const VdnnTinyFrame *f);
void vdnn_tiny_model_locked_size(const VdnnTinyModel *m, unsigned *w, unsigned *h);
void vdnn_tiny_model_set_locked_size(VdnnTinyModel *m, unsigned w, unsigned h);

/* Forgets the past planes only (the locked size stays): a frame worker's
 * copy does this before it is shown the frames preceding the one it scores
 * (vdnn_tiny_model_remember, oldest first), which leaves it holding what
 * the context's own model would hold after reading them in order. */
void vdnn_tiny_model_forget_past(VdnnTinyModel *m);

/* Keeps this frame's planes that later frames read at a past offset, at the
 * model's input size; call once for every frame read (whether the model ran
 * on it or not, so that offsets count frames). A frame the model cannot take
 * (a size it refuses) clears what it kept: the next frame starts afresh, as
 * the first one does. Returns 0 or -ENOMEM (then the history is cleared
 * too). */
int vdnn_tiny_model_remember(VdnnTinyModel *m, const VdnnTinyFrame *frame);

/* The first of the model's keys that has a value for frame `index`, or
 * NULL when none has: a frame is scored once. */
const char *vdnn_tiny_model_scored_key(const VdnnTinyModel *m, const VdnnFeatureCollector *fc,
                                       unsigned index);

/* Runs the model on one frame: feeds the planes its kind needs (the caller
 * checked they are there) and its features from fc, and appends every output
 * to fc under its key, all or none: when vdnn_tiny_model_scored_key() finds
 * a key, nothing is appended. A frame whose plane is smaller than the
 * model's minimum size (vdnn_tiny_model_min_size) is not run: every output
 * gets NaN for it (libvmaf writes its SSIM of such a frame as null). Returns 0, -ERANGE (a frame that does not
 * fit), -ENOENT (a missing feature), -ENOTSUP (a non-scalar result), -EEXIST
 * (a key already has this frame), -ENOMEM, or a session run's code. */
int vdnn_tiny_model_run(VdnnTinyModel *m, const VdnnTinyFrame *frame, VdnnFeatureCollector *fc);

#endif
