/*
 * libvmafdnn scoring context: attach tiny quality models, feed pictures,
 * read per-frame scores and write libvmaf-compatible reports.
 *
 * The flow follows libvmaf's:
 *
 *     VmafDnnContext *ctx;
 *     vmaf_dnn_context_open(&ctx, NULL);              // init
 *     vmaf_dnn_use_tiny_model(ctx, "psnr_y.onnx", NULL); // use model(s)
 *     for (i = 0; i < frames; i++)
 *         vmaf_dnn_read_pictures(ctx, &ref, &dist, i); // read pictures
 *     vmaf_dnn_flush(ctx);                             // flush
 *     vmaf_dnn_feature_pool(ctx, "psnr_y", VMAF_DNN_POOL_MEAN, 0, frames - 1, &score);
 *     vmaf_dnn_write_output(ctx, "log.json", VMAF_DNN_OUTPUT_JSON);
 *     vmaf_dnn_context_close(ctx);                     // close
 *
 * The conventions of vmafdnn.h hold here too: 0 or a negative errno, a
 * readable message in vmaf_dnn_last_error() after every failure, `**out`
 * written only on success, NULL-safe close. Error codes mean what vmafdnn.h
 * says, plus:
 *   -ERANGE   a frame does not fit a model (wrong size without a resize mode,
 *             a size change for a native-resolution model), or a frame index
 *             is too large (>= 2^24)
 *   -EEXIST   a feature key is already taken, or a frame already has a value
 *   -ENOENT   a feature or frame has no value (never read as 0.0)
 *
 * Thread-safety: every call on one context takes the context's lock, so
 * calls from several threads are serialised (never interleaved); different
 * contexts are independent and run concurrently. vmaf_dnn_context_cancel may
 * be called from any thread at any time; vmaf_dnn_context_close waits for
 * the call in flight on another thread to return, and no call may start
 * after close has begun (as with fclose).
 */
#ifndef VMAFDNN_CONTEXT_H
#define VMAFDNN_CONTEXT_H

#include <stddef.h>
#include <stdio.h>

#include "vmafdnn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The farthest frame offset a model may read (sidecar "input_sources"):
 * pictures up to this many frames back, features this many back or ahead. */
#define VMAF_DNN_MAX_FRAME_OFFSET 8

/* The most frames one ONNX Runtime Run may score (VmafDnnContextConfig.batch). */
#define VMAF_DNN_MAX_BATCH 64

/* ------------------------------------------------------------------------ */
/* Pictures                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * One frame as planes in the caller's memory; the library only reads them
 * during vmaf_dnn_read_pictures() and never keeps a pointer (unless the
 * caller lets it: vmaf_dnn_read_pictures_kept). They must not change until
 * that call returns: models may read them in place while they run, after
 * the checks below (a picture written meanwhile scores whatever the models
 * happen to read).
 * Models read the luma plane (index 0), and U or V where a sidecar's
 * "input_sources" asks for them ("plane", see vmaf_dnn_use_tiny_model; a
 * model that reads one needs it non-NULL, of one size in both pictures).
 * Rules, checked on every read
 * (-EINVAL with a message naming the picture and plane):
 *   - bpc is 8..16. bpc 8: one uint8_t per sample; bpc 9..16: one uint16_t
 *     per sample (native endianness), so data[] and stride[] must be even;
 *     bpc 9..15: every sample is below 2^bpc (the message names the first
 *     one above, with its position).
 *   - data[0] is not NULL, the top row; w[0] and h[0] are
 *     1..VMAF_DNN_MAX_DIMENSION; stride[0] is the bytes from one row to the
 *     next, at least a row either way: negative for rows stored bottom-up
 *     (FFmpeg's negative linesizes: row y is at data[0] + y * stride[0]).
 *   - data[1] and data[2] (U, V) may be NULL, in which case their w, h and
 *     stride are ignored; when set they follow the rules of data[0].
 * A model sees luma as float sample / (2^bpc - 1), so bpc must be the real
 * bit depth (10 for 10-bit video stored in uint16_t).
 */
typedef struct VmafDnnPicture {
    const void *data[3];  /* Y, U, V; caller-owned */
    ptrdiff_t stride[3];  /* bytes */
    unsigned w[3], h[3];  /* samples */
    unsigned bpc;         /* bits per sample, 8..16 */
} VmafDnnPicture;

/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct VmafDnnContext VmafDnnContext;

/*
 * How luma is brought to a model's fixed input size when the frame has
 * another size. All filters work on the normalised fp32 plane and write fp32
 * (no rounding, no clamping: bicubic may overshoot [0, 1] slightly at edges).
 * Convention: half-pixel centres (output sample x sits at source position
 * (x + 0.5) * src_w / dst_w - 0.5, as in OpenCV's cv::resize and PyTorch's
 * align_corners=False), edge samples replicated, and the filter is not
 * widened when shrinking (no area averaging or antialiasing; for large
 * downscales export the model at a closer resolution instead).
 */
typedef enum VmafDnnResize {
    VMAF_DNN_RESIZE_DEFAULT = 0,  /* defer: model config -> sidecar "resize" ->
                                     context config -> NONE */
    VMAF_DNN_RESIZE_NONE = 1,     /* a size mismatch is an error (-ERANGE) */
    VMAF_DNN_RESIZE_BILINEAR = 2, /* 2x2 taps, linear weights */
    VMAF_DNN_RESIZE_NEAREST = 3,  /* source sample floor((x + 0.5) * src_w / dst_w) */
    VMAF_DNN_RESIZE_BICUBIC = 4,  /* 4x4 taps, Keys' cubic convolution, a = -0.5 */
} VmafDnnResize;

typedef struct VmafDnnContextConfig {
    VmafDnnConfig session; /* session config of models attached without one
                              (checked at open, as a session's is) */
    VmafDnnResize resize;  /* resize mode of models that set none themselves
                              (neither in their VmafDnnModelConfig nor in
                              their sidecar); DEFAULT means NONE */
    double fps;            /* "fps" written into reports instead of the
                              measured one; 0 (default): the processing
                              speed, as libvmaf (see Reports); finite, >= 0 */
    const VmafDnnModelPolicy *policy; /* what attached model files may be and
                              contain; NULL: vmaf_dnn_default_model_policy().
                              Borrowed: must outlive the context. Its
                              max_memory_bytes, read at open (and at reset),
                              is also the budget of the context's stored
                              scores (see vmaf_dnn_feature_append) */
    int threads;           /* the threads the context may use in all,
                              0..VMAF_DNN_MAX_THREADS. 0 (default): as
                              before, one frame at a time, each session with
                              its own config's intra-op threads. 1: one frame
                              at a time, every session on one intra-op
                              thread. N > 1: N frames in flight, each on a
                              worker thread with its own copy of every model
                              on one intra-op thread (measured faster than N
                              intra-op threads: docs/throughput.md; at
                              most 4 when every model runs on a GPU or
                              NPU, where more only contend for it; one
                              frame at a time, each session on N threads,
                              when a model that would be copied runs on
                              OpenVINO, whose sessions run one at a
                              time in a process and on threads of its
                              own). With
                              temporal models (see vmaf_dnn_use_tiny_model)
                              the workers run the models that read
                              pictures, past ones included, and the
                              context's thread those that read other
                              frames' features or run behind, in frame
                              order; only where a model that reads pictures
                              also reads another frame's features (or
                              ones such a model writes) is a frame
                              scored at a time, on N intra-op threads.
                              Non-zero replaces the session configs'
                              threads. See vmaf_dnn_read_pictures for
                              frames in flight */
    int batch;             /* frames per ONNX Runtime Run, at most, for the
                              models that can score several at once
                              (VmafDnnBatching.batchable); other models
                              score a frame per Run. 0..VMAF_DNN_MAX_BATCH.
                              0 (default): the library's choice, today one
                              frame per Run on every device: stacking
                              frames was measured no faster on the CPU EP
                              nor on CUDA fed from host memory
                              (docs/throughput.md). 1: one frame per Run.
                              Above 1 with such a model, frames are
                              in flight (see vmaf_dnn_read_pictures) with
                              threads 0 and 1 too, on one worker whose
                              copies keep the session configs' threads
                              (if that worker cannot start, or the frames
                              in flight do not fit max_memory_bytes,
                              frames are scored one at a time instead). A
                              worker
                              waits until a whole batch is queued, unless
                              a call waits for a queued frame (flush,
                              close, reset, a full set of slots): Runs
                              take whole batches, the last ones fewer.
                              Frames of another size than the ones before
                              them start a new Run. Scores are those of
                              one Run per frame: the declared shapes only
                              suggest that a model's frames do not mix
                              (no statistic over the batch, no output that
                              only looks per-frame), so the frames of a
                              model's first batched Run are also scored
                              one per Run, those scores are kept, and the
                              model is batched from then on only if the
                              values agreed (1e-6 + 1e-5 relative), no
                              frame failed alone, and the frames' values
                              differed from each other (identical frames
                              prove nothing: the check is repeated, up to
                              8 times, then the model is refused). A
                              batched Run that fails or gives another
                              count is redone frame by frame and refuses
                              the model. A verdict is the context's, kept
                              for the rest of its life (resets
                              included), so a frame fails only where it
                              fails alone. A context whose frames were scored
                              one at a time before such a model was
                              attached stays one frame at a time until
                              vmaf_dnn_context_reset when a model reads
                              past pictures (the workers would lack
                              them). */
} VmafDnnContextConfig;

/* Fills `cfg` with the defaults: vmaf_dnn_default_config() sessions, resize
 * NONE, fps 0, threads 0, batch 0. A NULL config given to vmaf_dnn_context_open means these.
 * NULL cfg: no-op. */
VMAF_DNN_API void vmaf_dnn_default_context_config(VmafDnnContextConfig *cfg);

/* Opens an empty context (no models, no scores); `cfg` is copied (NULL means
 * defaults). On success *out is a new context the caller owns; close it with
 * vmaf_dnn_context_close. Loads no ONNX Runtime yet: that happens on the
 * first vmaf_dnn_use_tiny_model(). Everything in `cfg` is checked here, as
 * vmaf_dnn_session_open_with_policy checks its config and policy, so a bad
 * value fails where it was given rather than at the first attach.
 * Returns 0, -ENOMEM, or -EINVAL with a message naming the field: out NULL;
 * unknown resize value; fps negative or not finite; threads outside
 * 0..VMAF_DNN_MAX_THREADS; batch outside 0..VMAF_DNN_MAX_BATCH; in session, an unknown device, device_index < 0
 * or threads outside 0..VMAF_DNN_MAX_THREADS (checked even when the
 * context's threads replaces it); in the policy (when not NULL),
 * max_model_bytes 0, max_nodes outside 1..VMAF_DNN_MAX_NODES,
 * max_loop_nodes or max_subgraph_depth above their hard caps, or an
 * allowed_ops entry outside the built-in list (NULL, or allowed_ops NULL
 * with n_allowed_ops > 0). */
VMAF_DNN_API int vmaf_dnn_context_open(VmafDnnContext **out, const VmafDnnContextConfig *cfg);

/* Releases the context, its models (and their sessions) and its scores.
 * Every string and session handed out by the context becomes invalid.
 * Waits for a call in flight on another thread (see Thread-safety above)
 * and for the frames in flight (see vmaf_dnn_read_pictures), whose failures
 * go unreported.
 * NULL is a no-op. */
VMAF_DNN_API void vmaf_dnn_context_close(VmafDnnContext *ctx);

/* Empties the context for the next clip while keeping its models: drops
 * every stored value (model outputs and appended features), the frame
 * count, the first-frame size, the speed measurement, the flushed state and
 * a frame failure not yet reported (frames in flight), after the frames in
 * flight have finished. The attached models stay, with their open ONNX
 * Runtime sessions; the context then scores a new clip from any frame index
 * (from frame 0 as if just opened with those models attached). Models that
 * keep state between frames forget it without being opened again: temporal
 * models drop their past planes, and "native_resolution" models take the
 * size of the next first frame. No model file is read again.
 * Feature names handed out before become invalid. Serialised with the
 * context's other calls (one in flight on another thread finishes first).
 * Returns 0; -EINVAL (ctx NULL); -ENOMEM. On failure nothing is dropped
 * (the frames in flight have finished, and their scores are stored). */
VMAF_DNN_API int vmaf_dnn_context_reset(VmafDnnContext *ctx);

/* Stops the model run in flight in vmaf_dnn_read_pictures() (if any) on
 * another thread: that call returns -ECANCELED and the frame is left partly
 * scored, as after any failed frame. With frames in flight (threads > 1,
 * or a batch; see vmaf_dnn_read_pictures) it stops every frame
 * in flight: each fails with -ECANCELED, reported as vmaf_dnn_read_pictures
 * says. Later calls are not affected. Callable
 * from any thread without taking the context's lock; not async-signal-safe.
 * NULL is a no-op. */
VMAF_DNN_API void vmaf_dnn_context_cancel(VmafDnnContext *ctx);

/* ------------------------------------------------------------------------ */
/* Attaching tiny models                                                    */
/* ------------------------------------------------------------------------ */

/* Per-model options. All-zero ({0}) means "every default". */
typedef struct VmafDnnModelConfig {
    const char *name;              /* feature key (see vmaf_dnn_use_tiny_model);
                                      NULL: sidecar "name", else the file name
                                      without ".onnx". Copied. */
    const VmafDnnConfig *session;  /* NULL: the context's session config.
                                      Copied. */
    VmafDnnResize resize;          /* DEFAULT: sidecar "resize", else the
                                      context's */
    int no_reference;              /* non-zero: the caller will give this model
                                      distorted pictures only, so a
                                      full-reference model is refused at
                                      attach (-EINVAL) instead of failing on
                                      the first frame */
} VmafDnnModelConfig;

/* What a model reads each frame. */
typedef enum VmafDnnModelKind {
    VMAF_DNN_MODEL_INVALID = 0,  /* only returned for a bad context or index */
    VMAF_DNN_MODEL_FR = 1,       /* two luma planes: reference and distorted */
    VMAF_DNN_MODEL_NR = 2,       /* one luma plane: the distorted one */
    VMAF_DNN_MODEL_FEATURES = 3, /* no picture: a vector of features that
                                    other models or the caller produced */
} VmafDnnModelKind;

/*
 * Opens the ONNX model at `onnx_path` with its sidecar (`<model>.json`
 * beside it, optional); `onnx_path` may also be a model name ("psnr_y": no
 * '/', no ".onnx"), resolved by vmaf_dnn_model_resolve() (catalog.h; an
 * unknown name is -ENOENT listing the known ones), checks that it can be attached, and attaches it:
 * from then on every vmaf_dnn_read_pictures() runs it and stores its
 * outputs as features. `mcfg` is copied (NULL means all defaults). Several
 * models may be attached; each frame they run in attach order, so a
 * FEATURES model may read what an earlier model produced for that frame.
 *
 * What a model may look like (each refusal is -ENOTSUP with its own
 * message, unless noted):
 *   - Inputs are rank 4 (NCHW images) or rank 2 ([batch, F] feature
 *     vectors). The batch dim is 1 or symbolic (then fed as 1).
 *   - FR: two image inputs [reference, distorted], bound by the sidecar's
 *     "input_names" (its image entries, in that order; a name that is not a
 *     model input is -EINVAL), else by position. NR: one image input, fed
 *     the distorted luma. FEATURES: no image input, one rank-2 input.
 *     The sidecar's "kind", when present, must agree with the image input
 *     count (it is not checked for FEATURES models).
 *   - Image inputs have one channel (C = 1 or symbolic) and the same H x W
 *     in every image input; H and W are 1..VMAF_DNN_MAX_DIMENSION. The
 *     per-frame buffers the model needs (its inputs as fp32, resize scratch)
 *     must fit the policy's max_memory_bytes: else -EDQUOT at attach, naming
 *     the input and the bytes it would need, when even a frame of the
 *     model's own size cannot fit (every frame is checked again, see
 *     vmaf_dnn_read_pictures). A symbolic H or W is
 *     refused unless the sidecar says "native_resolution": true: then it
 *     takes the size of the first frame read that is not below its minimum
 *     size (even one an earlier model then fails), and a later frame of
 *     another size fails with -ERANGE.
 *   - At most one rank-2 input. Its F values are the sidecar's "features"
 *     read from this context for the frame, optionally scaled as
 *     (x - feature_mean[i]) / feature_std[i]; F must equal the number of
 *     features (a symbolic F takes that number). An image model may have one
 *     besides its image inputs (a codec one-hot block, say).
 *   - Inputs and outputs of type FLOAT16 need fp16_io in the session config.
 *   - Every output holds exactly one value: it has a known rank and fixed
 *     dims whose product is 1 (an output of unknown rank is -ENOTSUP naming
 *     it); a symbolic dim is allowed only first, and only when an
 *     input has a symbolic batch (it is the batch, fed as 1). When the
 *     sidecar has "output_name", only that output is attached.
 *   - A sidecar "cap_db_per_bpc": [slope, intercept] caps every output at
 *     slope * bpc + intercept per frame (libvmaf's PSNR cap is [6, 12]); a
 *     FEATURES model has no bit depth and may not have one.
 *   - Luma reaches the model as sample / (2^bpc - 1). When the frame size
 *     differs from the model's fixed H x W, the resize mode applies (see
 *     VmafDnnResize and VmafDnnModelConfig.resize); with NONE the frame
 *     fails with -ERANGE.
 *   - Image inputs of type UINT16 take the frame's own samples instead,
 *     0..2^bpc - 1, with no fp32 round trip (the VMAF features' CPU form
 *     does: the picture crosses no conversion); a resized plane is rounded
 *     back to samples (half up, clamped), past planes are kept as samples.
 *     Where the model's session specialises (VmafDnnStaticShapes) and its
 *     graph only moves and casts those inputs, an 8-bit frame not resized
 *     goes as UINT8, its samples' own bytes, to a session specialised so:
 *     the same values, half the bytes to a device (VmafDnnStaticRuns.uint8
 *     counts those runs; VMAFDNN_UINT8=0 keeps UINT16).
 *     Either every image input of a model is UINT16 or none is (else
 *     -ENOTSUP naming both); other inputs are never UINT16 (-ENOTSUP). Such
 *     a model shares Runs between frames like any other
 *     (VmafDnnContextConfig.batch: the samples forms take N frames).
 *
 * Frame offsets and other input sources. The sidecar's "input_sources"
 * object maps a model input to what feeds it, instead of the rules above:
 *   {"picture": "reference"|"distorted", "plane": "y"|"u"|"v",
 *    "offset": -k}  a plane ("y", the default, or chroma at its own size,
 *       normalised like luma) of frame t - k (0 <= k <=
 *       VMAF_DNN_MAX_FRAME_OFFSET), an image input like the others (same
 *       size rules, resized the same way). All image inputs of one model
 *       read the same plane (planes differ in size; else -ENOTSUP): libvmaf's
 *       psnr is the built-in psnr, which "requires" psnr_y and psnr_cb. The model keeps the
 *       last k planes it needs at its input size (counted in its memory
 *       budget). Before the sequence has k frames, the oldest one held is
 *       read, and on its first frame the frame itself (libvmaf's motion is
 *       0 there).
 *   {"value": "bpc"|"width"|"height"}  the frame's bit depth, or the width
 *       or height of the planes as fed to the model; needs a picture.
 *   {"value": "device_type"}  the hardware the model's session runs on: 0
 *       CPU, 1 GPU, 2 NPU (ORT's OrtHardwareDeviceType; an EP that took only
 *       some nodes counts as its device). A graph can size its work to it:
 *       the built-in VMAF features graph walks a frame in cache-sized row
 *       slabs on a CPU and in a few large ones elsewhere (fewer, larger
 *       kernels; 5-7x faster on CUDA, docs/vmaf.md).
 *   {"feature": NAME, "offset": o}  feature NAME of frame t + o
 *       (|o| <= VMAF_DNN_MAX_FRAME_OFFSET) from this context, frames kept
 *       inside the sequence: before its first frame reads the first, past
 *       the last frame reads the last (libvmaf's motion2[N-1] = motion[N-1]).
 *   "value" and "feature" inputs hold one float: every dim 1 or symbolic.
 *   Unsourced image inputs keep the rules above ([reference, distorted], or
 *   [distorted]); the kind is FR when any input reads the reference, NR when
 *   an image input reads only the distorted picture, else FEATURES.
 * A model that reads a feature ahead of its frame runs behind: it scores
 * frame t when frame t + lag is read, where lag is the largest o + (the
 * producer's lag) over what it reads (features the caller appends: lag 0),
 * and vmaf_dnn_flush() scores its last `lag` frames. Only models that read
 * no picture may run behind (else -ENOTSUP). A model that reads past
 * pictures, features at an offset, or runs behind is temporal: it must be
 * attached before the context's first frame (-EINVAL after), and from then
 * on frames must come in order, first, first + 1, ... (any first index).
 * More sidecar keys: "output_keys" (the exact key of each attached output,
 * in slot order, no fallback: a taken one is -EEXIST; the name is not used)
 * and "requires" (model files beside this one, no absolute path or "..",
 * attached first with the same mcfg but no name, unless a model of that
 * path is attached already; nesting deeper than 4 is -ELOOP). libvmaf's
 * VMAF is such a set (docs/vmaf.md).
 *
 * Feature keys. The model's name is mcfg->name, else the sidecar's "name",
 * else the file name without its directory and a final ".onnx".
 *   - One output: the key is the name.
 *   - Several outputs: output slot s gets "<name>_<suffix>", where the
 *     suffix is entry s of the sidecar's "output_names" when it has one entry
 *     per output, else the ONNX output name; every byte of the suffix outside
 *     [A-Za-z0-9_] becomes '_'. When that key is taken (by an earlier slot,
 *     another attached model, or a feature already in the context), the slot
 *     gets the first free "<name>_output<s>_<n>" for n = 1..100.
 * A key must be a valid feature name (at most 255 bytes of printable UTF-8;
 * else -EINVAL). A single-output key that is taken, or a slot with no free
 * key, is -EEXIST naming the key.
 *
 * Returns 0; -EINVAL (ctx or onnx_path NULL, the context is flushed, a bad
 * mcfg value (an empty name, an unknown resize) or session config, a
 * no_reference FR model, an "input_names" entry that is not a model input or
 * that leaves an image input unbound, an "output_name" that is not a model
 * output, "features" on a model without a rank-2 input, a key that is not a
 * valid feature name); -ENOTSUP (the shapes above); -EEXIST;
 * the codes of vmaf_dnn_session_open (-ENOENT, -ENOSYS, -EBADMSG, ...); the
 * sidecar's codes (-EINVAL for a bad key or value, -EBADMSG for bad JSON,
 * -EISDIR, -E2BIG, -EACCES, ...: the message names the file and key);
 * -ELOOP ("requires" too deep); -ENOMEM. On failure nothing is attached,
 * the models "requires" attached on the way included.
 */
VMAF_DNN_API int vmaf_dnn_use_tiny_model(VmafDnnContext *ctx, const char *onnx_path,
                                         const VmafDnnModelConfig *mcfg);

/* Attached models, numbered 0.. in attach order. */

/* Number of attached models; 0 for NULL. */
VMAF_DNN_API size_t vmaf_dnn_tiny_model_count(const VmafDnnContext *ctx);

/* The path the model was attached from, as given. Owned by the context;
 * NULL for a NULL context or an index out of range. */
VMAF_DNN_API const char *vmaf_dnn_tiny_model_path(const VmafDnnContext *ctx, size_t model);

/* What the model reads; VMAF_DNN_MODEL_INVALID for a bad context or index. */
VMAF_DNN_API VmafDnnModelKind vmaf_dnn_tiny_model_kind(const VmafDnnContext *ctx, size_t model);

/* The smallest plane the model scores, from its sidecar's "min_width" and
 * "min_height" (1 where absent): its receptive field, e.g. 11x11 for
 * ssim_y's window. A frame below it is not run through the model: each of
 * its outputs gets NaN for that frame (reports write null, as libvmaf does
 * for its SSIM of such a frame) and the other models score it; front ends
 * use this to warn, naming the model and its minimum. Returns 0, or -EINVAL
 * (a NULL argument, or no model at that index). */
VMAF_DNN_API int vmaf_dnn_tiny_model_min_size(const VmafDnnContext *ctx, size_t model,
                                              unsigned *width, unsigned *height);

/* Number of feature keys the model writes (one per attached output); 0 for
 * a bad context or index. */
VMAF_DNN_API size_t vmaf_dnn_tiny_model_feature_count(const VmafDnnContext *ctx, size_t model);

/* Key `feature` of the model, in output slot order. Owned by the context;
 * NULL when out of range. */
VMAF_DNN_API const char *vmaf_dnn_tiny_model_feature_name(const VmafDnnContext *ctx,
                                                          size_t model, size_t feature);

/* The execution provider the model's session runs on (see
 * vmaf_dnn_session_attached_ep). Static storage; NULL for a bad index. */
VMAF_DNN_API const char *vmaf_dnn_tiny_model_attached_ep(const VmafDnnContext *ctx,
                                                         size_t model);

/* The model file that scores for model `model`: the path it was attached
 * from, or the form of it that its sidecar names for the EP its session
 * attached ("forms": {"CPU": "vmaf_features_kernels.onnx"}, a file beside the
 * model with the same inputs and outputs made for that EP: the VMAF
 * features' fused CPU kernels; the key "*" names the form for every EP
 * other than ORT's CPU EP, "CPU", that has no key of its own: the
 * built-ins' accelerator forms). The form is opened with the model's config
 * and policy and must attach the same EP and declare the same inputs and
 * outputs (except that a FLOAT or FLOAT16 image input may be UINT16 in the
 * form, which then takes the samples: see vmaf_dnn_use_tiny_model, and that
 * an image input's or output's first dim the model declares 1 may be
 * symbolic in the form: see VmafDnnBatching, and that the form may
 * declare more inputs after the model's, each one number (FLOAT or FLOAT16,
 * every dim 1) that the sidecar's "input_sources" feeds as a "value": the
 * built-ins' samples forms, named for CUDA, take the samples and "bpc"; a
 * "value" entry may name an input that only a form declares, and is refused
 * (-EINVAL) when neither the model nor any readable form declares it), else the
 * attach fails (-EINVAL, or the form's open error) saying why; the model's own file is then read and checked under the policy but
 * needs no ONNX Runtime session of its own. EP
 * names are compared without case. The environment variable
 * VMAFDNN_MODEL_FORMS=0 (or false, no, off) keeps every model on its own
 * file; VMAFDNN_MODEL_FORMS=<EP name> (e.g. CUDA: a name of the EP table,
 * any spelling vmaf_dnn_ep_from_name takes, else the attach fails with
 * -EINVAL) takes the form the sidecar names for that EP whatever EP the
 * session attached, on that EP (tests run the accelerator forms on ORT's
 * CPU EP that way; unset, 1, true, yes, on or auto: the attached EP's form).
 * A model whose sidecar names a form for ORT's CPU EP ("CPU") is attached
 * there under VMAF_DNN_DEVICE_AUTO when the chain's first EP that binds is
 * another EP's CPU device (OpenVINO:CPU): the same processor, where that EP
 * would get the "*" form written for accelerators; the model's fallback
 * reason says so ("OpenVINO:CPU: passed over for ORT's CPU EP, ..."). A
 * device asked for by name (openvino, openvino-cpu, a policy) is kept.
 * Owned by the context; NULL for a bad context or index. */
VMAF_DNN_API const char *vmaf_dnn_tiny_model_form_path(const VmafDnnContext *ctx, size_t model);

/* What VmafDnnContextConfig.batch did for one attached model. */
typedef struct VmafDnnBatching {
    int batchable;           /* it can take several frames per Run (as
                                the file that scores declares it: the
                                model, or its form, which may declare N
                                where the model declares 1): every picture
                                of the frame scored with a symbolic first
                                dim and every output with one; "value"
                                inputs (bpc, width, height, device_type)
                                of fixed shape, fed once per Run (its
                                frames share size and depth); past
                                pictures ("offset" < 0) declared with a
                                first dim of 1: a Run feeds those of its
                                first frame (the frame itself at the
                                clip's first, as alone), and the graph
                                takes the later frames' from the batch's
                                own pictures (frame b's picture k back is
                                frame b - k of the batch, for b >= k, and
                                the first frame's picture k - b back for
                                b < k: a picture read k back must also be
                                read at every offset -1..-k, else the model
                                is not batchable); no
                                "feature" input nor feature vector. A Run
                                of such a model takes consecutive frames
                                only */
    int batch;               /* frames per Run asked of it: the context's
                                batch, 1 when that is 0 or 1 or the model is
                                not batchable */
    int refused;             /* the check of its batched Runs found values
                                other than one Run per frame's (or a frame
                                that failed alone, or 8 checks on frames
                                that all gave the same values), or a
                                batched Run failed: it scores a frame per
                                Run for the rest of the context's life */
    uint64_t batched_frames; /* frames whose scores came from batched Runs
                                (after the check) since the context opened;
                                resets do not clear it */
} VmafDnnBatching;

/* Fills *out for model `model` once the frames in flight are scored (it
 * waits for them, like the other calls). Returns 0, or -EINVAL (ctx or out
 * NULL, model out of range) leaving *out untouched. Serialised with the
 * context's other calls. */
VMAF_DNN_API int vmaf_dnn_tiny_model_batching(const VmafDnnContext *ctx, size_t model,
                                              VmafDnnBatching *out);

/* How the model's runs went with static shapes and device-resident I/O
 * (VmafDnnStaticRuns, see vmaf_dnn_session_static_runs), over the context's
 * own session and the copies of it that score the frames in flight, those
 * of the copies closed since included (attaching a model, leaving frames
 * in flight for one at a time, a pool that could not restart): the counts are the
 * sum; reason, specialised and device_io_reason are the context's own
 * session's (or, where it made no run, those of the first copy that did),
 * which the copies, opened with its settings on its EP, share unless a
 * copy met a failure of its own. Returns 0, -EINVAL (NULL, model
 * out of range) leaving *out untouched. Serialised with the context's
 * other calls. */
VMAF_DNN_API int vmaf_dnn_tiny_model_static_runs(const VmafDnnContext *ctx, size_t model,
                                                 VmafDnnStaticRuns *out);

/* The model's session, for the read-only functions of vmafdnn.h
 * (fallback reason, input and output info). Owned by the context: never
 * close or run it. NULL for a bad index. */
VMAF_DNN_API const VmafDnnSession *vmaf_dnn_tiny_model_session(const VmafDnnContext *ctx,
                                                               size_t model);

/* ------------------------------------------------------------------------ */
/* Scoring                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Scores frame `index`: runs every attached model, in attach order, and
 * stores each output under its key for that frame (a model that runs
 * behind scores frame index - lag instead, see vmaf_dnn_use_tiny_model).
 * Frames may come in any order, unless a temporal model is attached: then
 * index must be the one after the previous frame read (-EINVAL naming the
 * expected one). Each index may be read once.
 *   - `dist` is the distorted picture; NULL only when no attached model
 *     reads pictures (every model is FEATURES).
 *   - `ref` is the reference; NULL only when no attached model is FR.
 *   - When both are given, their luma sizes and bpc must match.
 *   - A frame smaller than a model's minimum (vmaf_dnn_tiny_model_min_size)
 *     is not an error: that model stores NaN for it, the others score it.
 * Stops at the first model that fails: the models before it have stored
 * their scores for this frame, it and the ones after it have not; whatever
 * was stored stays valid, and so does a report written afterwards. Reading
 * the same index again is then -EEXIST (the frame is partly scored).
 * With temporal models the frame still counts as read once the checks
 * before any model runs have passed: the next frame is index + 1, models
 * keep its planes as history (a model that could not take the frame's size
 * starts its history afresh with the next frame), models after the failing
 * one, those running behind included, skip their frame of this call, and a
 * model that needs a score the failure left missing fails with -ENOENT on
 * the call that runs it; later frames score normally.
 *
 * Frames in flight (VmafDnnContextConfig.threads N > 1, or batch B > 1
 * with a model that can take several frames per Run): once the checks
 * above pass, the raw samples of the planes the models read are copied into
 * one of (W + 1) x B slots (W workers: N, or at most 4 when every model the
 * workers run is on a GPU or NPU, 1 when threads is 0 or 1; B 1 without
 * such a model), with those of the D frames before it
 * when a model reads pictures up to D frames back (the context keeps D
 * frames' samples for that; the slots' and those samples plus each
 * worker's fp32 planes (B frames' with a batch) and its model copies' own
 * buffers (past planes, resize scratch, FLOAT16 copies, stacked planes)
 * and the pool's own bookkeeping (slot headers, checked before the pool
 * allocates them) must fit the policy's max_memory_bytes, else -EDQUOT
 * before the frame is taken; with threads 0 or 1, where frames are in
 * flight only for the batch, such frames are scored one at a time instead)
 * and this call returns; a worker
 * normalises them and scores the frame with its own copy of every model
 * that reads pictures (shown the past frames first, so it holds what one
 * model reading every frame in order would). Models that read other
 * frames' features or run behind are run by the thread that owns the
 * context as each frame's scores are moved into the context, oldest first,
 * in attach order among the others: their failures are reported like a
 * worker's. When every slot is taken the call
 * first waits for the oldest frame. Every other call on the context waits
 * for all frames in flight first, so scores, frame count and reports are
 * those of one-frame-at-a-time scoring; the exceptions never wait for a
 * frame: vmaf_dnn_frames_done, vmaf_dnn_feature_get of a frame it counts
 * done, and the vmaf_dnn_tiny_model_* accessors of what attach fixed
 * (count, path, kind, min size, keys, EP, form, session). A frame that fails on a
 * worker is reported by the first later vmaf_dnn_read_pictures that needs
 * its slot (the ((W + 1) x B)-th read after it), by vmaf_dnn_flush, or by
 * a vmaf_dnn_frames_done that finds it finished, whichever comes first: the
 * code is the frame's own, the message starts "frame K (scored in
 * flight)", and a read_pictures call that reports it does NOT take its own
 * frame (call it again). Only the earliest unreported failure is kept; its
 * message counts the later ones. Without vmaf_dnn_frames_done, which call
 * reports a failure depends only on the calls made, never on thread
 * timing.
 * Each output stored counts against the budget of the context's stored
 * scores (see vmaf_dnn_feature_append): a frame whose scores would take it
 * past the budget fails with -EDQUOT at the first output refused (the
 * outputs before it stay, as after any failed model).
 * Returns 0; -EINVAL (ctx NULL, the context is flushed, no model attached, a
 * missing or invalid picture); -ERANGE (index >= 2^24, or a frame that does
 * not fit a model: the message names the sizes and the model); -EEXIST (the
 * frame already has a value from an attached model); -ENOENT (a FEATURES
 * input has no value for this frame: the message names the feature, frame
 * and model); -ENOTSUP (a model returned more than one value); -EDQUOT
 * (a model's per-frame buffers for this frame: the fp32 luma planes it
 * reads, resize scratch, the past planes it keeps, FLOAT16 copies, exceed its policy's
 * max_memory_bytes; checked before anything is allocated or run, so the
 * frame stays unscored; a native-resolution model meets its real size
 * here; or storing an output would take the stored scores past their
 * budget); -ECANCELED (vmaf_dnn_context_cancel was called during this call:
 * the models that finished before it took effect keep their scores, the
 * rest do not run); -ENOMEM; and the codes of
 * vmaf_dnn_session_run (-EIO, -ENOEXEC, -ETIMEDOUT, ...).
 */
VMAF_DNN_API int vmaf_dnn_read_pictures(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                                        const VmafDnnPicture *dist, unsigned index);

/* Called once the library no longer reads the pictures of a frame read with
 * vmaf_dnn_read_pictures_kept; `opaque` is the one given with them. */
typedef void (*VmafDnnPicturesRelease)(void *opaque);

/*
 * vmaf_dnn_read_pictures, for a caller whose pictures can stay as they are
 * until the library is done with them (a decoder's reference-counted
 * frames, a reader's pool of buffers): instead of copying the frame's
 * samples into a slot for a frame in flight, and those of the frames that
 * models read as past pictures, the library reads the caller's planes where
 * they lie, on the workers too, and calls release(opaque) when it no longer
 * needs them. The VmafDnnPicture structs themselves are copied; only the
 * memory their data[] point to is kept.
 *   - Returns 0: release(opaque) is called exactly once, later or before
 *     this call returns (without frames in flight, when nothing keeps the
 *     frame, before the return). Until then the planes must stay valid and
 *     unchanged: models read them from other threads. release runs on the
 *     thread of a call on this context, never on a worker thread: this
 *     one, a later vmaf_dnn_read_pictures[_kept] or vmaf_dnn_frames_done,
 *     any call that waits for the frames in flight; vmaf_dnn_flush,
 *     vmaf_dnn_context_reset and vmaf_dnn_context_close release every
 *     picture still kept before they return. It runs while that call holds
 *     the context: it must not call into this context, and a call into
 *     another context waits for that one's call in flight, so releases must
 *     not wait on each other in a cycle (context A's release calling B
 *     while B's calls A, on two threads); it should be quick (free or
 *     recycle the buffer). The thread's vmaf_dnn_last_error() message is
 *     the call's again after it.
 *   - Returns an error: release is not called for this call and the planes
 *     are the caller's again at once, as after vmaf_dnn_read_pictures
 *     (a call that reports an earlier frame's failure and does not take its
 *     own frame is such a call: call it again with the same pictures).
 * How many frames are kept at once, when a call returns: the newest
 * (W + 1) x B + D frames read, at most: the frames in flight (see
 * vmaf_dnn_read_pictures) and, for models that read pictures up to D
 * frames back, the D frames before each of them (of these only the picture
 * such a model reads is read again, but a frame's pictures are released
 * together). A caller recycling buffers needs one more, to read the next
 * frame into. The memory budget of frames in flight (-EDQUOT, see
 * vmaf_dnn_read_pictures) counts a kept frame's samples as it counts the
 * copies they replace: the frames in flight hold that memory either way.
 * Returns what vmaf_dnn_read_pictures returns, and -EINVAL when release
 * is NULL, -ENOMEM when the frame's bookkeeping (a few bytes) cannot be
 * allocated.
 */
VMAF_DNN_API int vmaf_dnn_read_pictures_kept(VmafDnnContext *ctx, const VmafDnnPicture *ref,
                                             const VmafDnnPicture *dist, unsigned index,
                                             VmafDnnPicturesRelease release, void *opaque);

/*
 * Picture buffers: memory for the planes of the pictures a caller reads
 * into this context, which its models send to their device from where they
 * lie. Where an attached model that takes a picture's own samples (the
 * built-ins on CUDA and other accelerators: vmaf_dnn_tiny_model_session's
 * inputs UINT16) runs on an EP device that offers host-accessible memory
 * (ORT 1.23+; CUDA: pinned memory, which the GPU reads by DMA), a buffer
 * comes from that memory: the first such model in attach order chooses,
 * among the models attached when the buffer is allocated. Otherwise (no such
 * model, ORT's CPU EP, that memory exhausted) it is plain memory aligned to
 * 64 bytes, no better and no worse than the caller's own.
 * A plane whose rows lie back to back in such a buffer (stride = w x bytes
 * per sample) is copied to the device straight from it by those models,
 * where a plane elsewhere is first copied into the model's own pinned
 * memory (one copy of its samples on the host per model and frame; with
 * frames in flight, the copy into a slot too unless the pictures are read
 * with vmaf_dnn_read_pictures_kept): a reader that reads each frame into a
 * buffer of its own and hands it over with vmaf_dnn_read_pictures_kept
 * makes no copy of the samples at all. (Frames in flight that the library
 * copies, read with vmaf_dnn_read_pictures, are copied into slots of that
 * memory and fed from there: one copy.) VmafDnnStaticRuns.pictures counts
 * the runs fed so. Scores are the same either way.
 *
 * vmaf_dnn_picture_buffer_alloc: a buffer of `size` bytes (contents
 * undefined) in *out, the caller's until vmaf_dnn_picture_buffer_free; it
 * may outlive the context (freed after vmaf_dnn_context_close, it goes back
 * at once). Returns 0; -EINVAL (ctx or out NULL, size 0; *out is NULLed
 * when out is given) or -ENOMEM. Does not wait for the context's calls or
 * frames in flight: callable from any thread while the context is open,
 * a release callback (VmafDnnPicturesRelease) included.
 * vmaf_dnn_picture_buffer_free: gives a buffer back; the context keeps up
 * to 16 for its next allocations of the same size until it closes (getting
 * and giving back pinned memory is slow). Returns 0 (also for NULL) or
 * -EINVAL: not a buffer of vmaf_dnn_picture_buffer_alloc, or freed already
 * (nothing is touched). Any thread; the buffer must no longer be read by a
 * context (a picture read with vmaf_dnn_read_pictures_kept: after its
 * release).
 * vmaf_dnn_picture_memory: ORT's name of the memory the next buffer comes
 * from ("CudaPinned", ...), or NULL for plain memory (also for ctx NULL).
 * Owned by the library, valid for the process.
 */
VMAF_DNN_API int vmaf_dnn_picture_buffer_alloc(VmafDnnContext *ctx, size_t size, void **out);
VMAF_DNN_API int vmaf_dnn_picture_buffer_free(void *buffer);
VMAF_DNN_API const char *vmaf_dnn_picture_memory(const VmafDnnContext *ctx);

/* Which frames are scored, without waiting: for a caller that passes each
 * frame on once its scores are in (a filter) while the next frames are in
 * flight. Moves into the context the scores of the frames in flight that
 * have finished, oldest first, stopping at the first still being scored
 * (with the turns of the models that read other frames' features or run
 * behind, as vmaf_dnn_read_pictures would when it needed their slots), and
 * writes to *done how many of the frames read since the context was opened
 * or reset are done: the first *done frames read, in read order. A done
 * frame's vmaf_dnn_feature_get answers without waiting and reads what
 * one-frame-at-a-time scoring gives after the frames read so far: its own
 * scores are all in, except those a model running behind stores once the
 * frame `lag` after it is read (see vmaf_dnn_use_tiny_model; they arrive
 * with a later frame or at vmaf_dnn_flush). A frame is not done while it,
 * or in a context with models running behind one of the `lag` frames after
 * it, is in flight. So the count is that of this call: with models running
 * behind, a later read may put up to `lag` frames counted done back among
 * the frames not done (the frames after them are in flight again); without
 * such models it never goes down. Without frames in flight (threads 0 or 1
 * and no batch, models that cannot be in flight, after vmaf_dnn_flush) every
 * frame read is done.
 * Returns 0; -EINVAL (ctx or done NULL); or the failure of a frame scored
 * in flight that it moved (or that an earlier call moved and none
 * reported), as vmaf_dnn_read_pictures describes ("frame K (scored in
 * flight)"; *done untouched): reported once, by the first call that can. */
VMAF_DNN_API int vmaf_dnn_frames_done(VmafDnnContext *ctx, unsigned *done);

/* Marks the end of the pictures: later vmaf_dnn_read_pictures,
 * vmaf_dnn_feature_append and vmaf_dnn_use_tiny_model calls return -EINVAL.
 * First the models that run behind score the frames they still owe (in
 * attach order, then frame order), reading features past the last frame
 * from the last frame; this stops at the first failure, leaving the rest
 * unscored, and vmaf_dnn_context_cancel stops it too. The context is flushed
 * either way. Scores stay readable and reports writable. Flushing twice is
 * harmless (nothing runs again).
 * Returns 0, -EINVAL (ctx NULL), or the codes of vmaf_dnn_read_pictures for
 * a frame scored here (-ENOENT, -ECANCELED, a session run's code, ...). */
VMAF_DNN_API int vmaf_dnn_flush(VmafDnnContext *ctx);

/* ------------------------------------------------------------------------ */
/* Features (scores)                                                        */
/* ------------------------------------------------------------------------ */

/* Stores a feature value the caller computed (imported from a libvmaf log,
 * say) for frame `index`, so FEATURES models and reports see it. Push a
 * frame's features before reading its pictures. `name` is copied.
 * Memory: the context's stored scores (these and the models' outputs) are
 * kept sparsely, in runs of 4096 frames allocated where a value falls, and
 * together may hold at most the policy's max_memory_bytes (default
 * VMAF_DNN_DEFAULT_MAX_MEMORY_BYTES, 2 GiB; 0: no limit), counted in bytes
 * requested from malloc: names, tables and about 8.1 bytes per frame of
 * each run in use. A value in a run already allocated costs nothing more;
 * a new feature or run costs from about 0.6 KiB (frame 0 of a new feature)
 * to about 68 KiB (a new feature at frame 2^24 - 1; once, this allocated
 * 151 MB). A clip of N frames costs about 8.1 x N bytes per feature.
 * Returns 0, -EINVAL (ctx or name NULL, the context is flushed, a name that
 * is not printable UTF-8 of 1..255 bytes), -EEXIST (the frame of that
 * feature already has a value, or `name` is a key written by an attached
 * model), -ERANGE (index >= 2^24), -EDQUOT (storing it would take the
 * stored scores past the budget: nothing is stored; the message names the
 * feature, frame and bytes), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_feature_append(VmafDnnContext *ctx, const char *name, unsigned index,
                                         double value);

/* Reads frame `index` of feature `name` into *value (untouched on failure).
 * With frames in flight it waits for them only when they may still store
 * this value: when `name` is an attached model's key and frame `index` (or
 * for a model running behind, one of the `lag` frames after it) is in
 * flight; never for a frame the last vmaf_dnn_frames_done counted done,
 * when no frame was read since.
 * Returns 0, -EINVAL (NULL argument), -ENOENT (no such feature, or no value
 * for that frame). */
VMAF_DNN_API int vmaf_dnn_feature_get(const VmafDnnContext *ctx, const char *name,
                                      unsigned index, double *value);

/* Number of features with at least one value (model keys appear once the
 * model stored a value); 0 for NULL. */
VMAF_DNN_API size_t vmaf_dnn_feature_count(const VmafDnnContext *ctx);

/* Name of feature `feature` (0-based, in order of first value). Owned by the
 * context, valid until it is closed; NULL when out of range. */
VMAF_DNN_API const char *vmaf_dnn_feature_name(const VmafDnnContext *ctx, size_t feature);

/* One more than the largest frame index with a value; 0 for NULL or none. */
VMAF_DNN_API unsigned vmaf_dnn_frame_count(const VmafDnnContext *ctx);

typedef enum VmafDnnPoolMethod {
    VMAF_DNN_POOL_MIN = 0,
    VMAF_DNN_POOL_MAX = 1,
    VMAF_DNN_POOL_MEAN = 2,
    VMAF_DNN_POOL_HARMONIC_MEAN = 3, /* libvmaf's: n / sum(1 / (x + 1)) - 1 */
} VmafDnnPoolMethod;

/* Pools feature `name` over frames first..last (inclusive; last may exceed
 * the frame count) into *out, over the frames that have a value (missing
 * frames are skipped, never counted as 0). NaN values enter as in libvmaf's
 * pooling: they make MEAN and HARMONIC_MEAN NaN, and MIN and MAX skip them
 * (NaN only when every value is NaN). Returns 0, -EINVAL (NULL argument, unknown method, first > last),
 * -ENOENT (no such feature, or no value in the range; *out untouched). */
VMAF_DNN_API int vmaf_dnn_feature_pool(const VmafDnnContext *ctx, const char *name,
                                       VmafDnnPoolMethod method, unsigned first, unsigned last,
                                       double *out);

/* ------------------------------------------------------------------------ */
/* Reports                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum VmafDnnOutputFormat {
    VMAF_DNN_OUTPUT_JSON = 0,
    VMAF_DNN_OUTPUT_XML = 1,
    VMAF_DNN_OUTPUT_CSV = 2,
} VmafDnnOutputFormat;

/*
 * Writes every feature of every frame as a libvmaf-compatible report, laid
 * out as libvmaf's own (its tools read ours):
 *   JSON: version, fps, frames[].metrics, pooled_metrics (min, max, mean,
 *         harmonic_mean), aggregate_metrics.
 *   XML:  <VMAF version> (no "<?xml" prolog, as libvmaf), <params
 *         qualityWidth qualityHeight /> (the luma size of the first frame
 *         read), <fyi fps />, <frames>, <pooled_metrics>, <aggregate_metrics />.
 *   CSV:  "Frame,name,...," then one "index,value,...," row per frame: every
 *         line ends with ',' as libvmaf's.
 * Numbers are "%.6f" as libvmaf's, except a value within 1e-6 of an integer
 * and not equal to it, written "%.16f" (libvmaf's rule, so 3.4e-7 is not
 * written 0.000000). "fps" is libvmaf's: the processing speed, frames read
 * per second of wall time from the start of the first
 * vmaf_dnn_read_pictures() to the end of the last one (or of
 * vmaf_dnn_flush()), "%.2f"; the context config's fps, when non-zero, is
 * written instead. Missing values are left out (JSON, XML) or an empty cell
 * (CSV), never written as 0; NaN and Inf are null in JSON and nan/inf in XML
 * and CSV. What differs from libvmaf's reports is listed in the README.
 * May be called at any time (before flush, after a failed frame) and gives a
 * complete, valid report of what is stored.
 *
 * vmaf_dnn_write_output replaces `path` atomically: readers see the whole
 * old report or the whole new one, never a part. A symbolic link at `path`
 * is followed (its target is replaced, the link stays); an existing report
 * keeps its permission bits and, where permitted, its owner; a new one gets
 * 0666 & ~umask. The new contents are written to an unnamed O_TMPFILE in the
 * target's directory (or, where the file system lacks it, a fresh
 * "<name>.XXXXXX" created with O_EXCL), synced, linked under a unique name
 * and renamed over the target. Two writers of one path never share a
 * temporary file, and SIGINT/SIGTERM never leave one behind (see
 * docs/security.md, "Reports"). A device or FIFO at `path` (/dev/stdout) is
 * written in place. vmaf_dnn_write_output_file writes to `f` (caller-owned,
 * left open and flushed).
 * Returns 0, -EINVAL (NULL argument, empty path or one ending in "." or
 * "..", unknown format, a feature name XML cannot carry as an attribute: use
 * JSON or CSV), -ELOOP (more than 40 symbolic links at `path`),
 * -ENAMETOOLONG (a link's text too long), -EIO (opening the directory,
 * creating, writing, syncing or renaming failed; the message names the file
 * and the reason), -ENOMEM.
 */
VMAF_DNN_API int vmaf_dnn_write_output(const VmafDnnContext *ctx, const char *path,
                                       VmafDnnOutputFormat fmt);
VMAF_DNN_API int vmaf_dnn_write_output_file(const VmafDnnContext *ctx, FILE *f,
                                            VmafDnnOutputFormat fmt);

/* Flag of vmaf_dnn_write_output_callback / _buffer: every number "%.17g"
 * (".0" added to an integral one) instead of libvmaf's digits, so it parses
 * back to the very same double (for front ends that read the report back). */
#define VMAF_DNN_OUTPUT_EXACT 1

/* Receives a report in pieces, in order (`data` is not NUL-terminated and
 * valid only during the call). Returns 0 to go on, non-zero to stop. */
typedef int (*VmafDnnOutputWrite)(void *opaque, const char *data, size_t size);

/* Writes the report (see vmaf_dnn_write_output) through `write`, which gets
 * `opaque` with every piece; for front ends that keep reports in memory or
 * send them elsewhere. `flags`: 0 or VMAF_DNN_OUTPUT_EXACT. The callback
 * runs while the context is locked: it must not call into this context.
 * Returns 0, -EINVAL (ctx or write NULL, unknown format or flags, a name XML
 * cannot carry), -ECANCELED (the callback returned non-zero: the pieces
 * given before stay given), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_write_output_callback(const VmafDnnContext *ctx,
                                                VmafDnnOutputFormat fmt, unsigned flags,
                                                VmafDnnOutputWrite write, void *opaque);

/* Renders the report (see vmaf_dnn_write_output) into `buf` as snprintf
 * does: at most size - 1 bytes and a terminating NUL (nothing when size is
 * 0; buf may then be NULL), and *length = the whole report's length without
 * the NUL. Call with size 0 to learn the size, then with length + 1.
 * Returns 0, -ENOBUFS (the report did not fit: buf holds its start, *length
 * its full length), -EINVAL (ctx or length NULL, buf NULL with size > 0,
 * unknown format or flags, a name XML cannot carry), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_write_output_buffer(const VmafDnnContext *ctx,
                                              VmafDnnOutputFormat fmt, unsigned flags,
                                              char *buf, size_t size, size_t *length);

/* Checks now, before the first frame, that a report in `fmt` will be able to
 * carry the context's feature names: every key of the attached models,
 * every feature stored and the `n_more` names of `more` (features the
 * caller will append, such as a features file's; NULL and 0: none). The
 * writers refuse a name the format cannot carry
 * (-EINVAL: an XML report of a name that is not an XML attribute name or is
 * "frameNum"; a CSV report of a feature named "Frame", or of two names that
 * one CSV header cell would show alike, such as "=x" and "'=x": the CSV
 * cell rule quotes the first), but only when the report is written, after
 * every frame was scored. A front end that knows its report format calls
 * this once its models are attached (the vmafdnn CLI and the FFmpeg filter
 * do). Features appended later and not named in `more` are checked when
 * the report is written. Returns 0, -EINVAL (NULL ctx, unknown format,
 * `more` NULL with n_more > 0 or holding NULL, a name the format cannot
 * carry: the message is the writer's, naming it), -ENOMEM. */
VMAF_DNN_API int vmaf_dnn_check_output(const VmafDnnContext *ctx, VmafDnnOutputFormat fmt,
                                       const char *const *more, size_t n_more);

#ifdef __cplusplus
}
#endif

#endif /* VMAFDNN_CONTEXT_H */
