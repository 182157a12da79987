/* Internal: per-frame scalar scores keyed by feature name, the store that
 * attached models write into and the report writers (output.h) read from.
 *
 * A feature is a name ("psnr_y", "mymodel_score") with at most one double per
 * frame index. Frames may arrive in any order and may have gaps; a frame
 * without a value is "missing", which is never the same as 0.0: every reader
 * either says so (-ENOENT, false) or leaves the frame out.
 *
 * Ownership: the collector owns everything it stores. Names passed in are
 * copied; names handed out (vdnn_feature_collector_feature_name) stay valid
 * until the collector is freed, because features are never removed.
 *
 * Thread-safety: every function takes the collector's mutex, so any number of
 * threads (one per model, say) may append and read concurrently. Each call is
 * atomic on its own; a reader that makes several calls (a report writer) sees
 * a consistent picture only once the appending threads are done, so write
 * reports after the last append, as libvmaf does. vdnn_feature_collector_free
 * must not race with any other call.
 *
 * Memory: storage is sparse (leaves of 4096 frames behind a directory per
 * feature, each grown only as far as its highest frame), so a high frame
 * index costs what the frames near it cost: one value at frame 2^24 - 1
 * takes about 68 KiB, not the 151 MB a dense array took. Every byte the
 * collector holds is counted, and with a budget set
 * (vdnn_feature_collector_set_budget; the context sets its policy's
 * max_memory_bytes) an append that would take more is refused with -EDQUOT
 * before anything is allocated, so a caller choosing names and indexes
 * cannot make it take the machine's memory.
 *
 * Errors: 0 or a negative errno, with a message recorded through vdnn_fail()
 * that names the feature and frame at fault.
 */
#ifndef VMAFDNN_FEATURE_COLLECTOR_H
#define VMAFDNN_FEATURE_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest feature name, in bytes (without the terminating NUL). */
#define VDNN_FEATURE_NAME_MAX 255

/* Frame indexes must be below this (2^24 frames: over 3 days at 60 fps);
 * larger ones are refused with -ERANGE rather than allocating gigabytes. */
#define VDNN_FEATURE_MAX_FRAMES (1u << 24)

typedef struct VdnnFeatureCollector VdnnFeatureCollector;

/* Summary of one feature over a frame range, taken over the frames that have
 * a value (gaps are skipped, not counted as 0). */
typedef struct VdnnFeaturePool {
    unsigned count;       /* frames that contributed; 0: no value in the range */
    double min;
    double max;
    double mean;
    double harmonic_mean; /* libvmaf's: count / sum(1 / (x + 1)) - 1 */
} VdnnFeaturePool;

/* Checks text that reports carry verbatim (feature names use max_len
 * VDNN_FEATURE_NAME_MAX): non-NULL, non-empty, at most max_len bytes, valid
 * UTF-8 (reports are UTF-8 documents) and free of control characters (C0,
 * DEL and C1, which XML 1.0 cannot carry at all). Returns 0 or -EINVAL with a
 * message that starts with `what` ("feature name", "report version", ...). */
int vdnn_text_check(const char *text, size_t max_len, const char *what);

/* Creates an empty collector; on success *out is owned by the caller (free it
 * with vdnn_feature_collector_free), on failure *out is untouched.
 * Returns 0, -EINVAL (out NULL), -ENOMEM. */
int vdnn_feature_collector_init(VdnnFeatureCollector **out);

/* Frees the collector and everything it owns. NULL is a no-op. */
void vdnn_feature_collector_free(VdnnFeatureCollector *fc);

/* Caps the bytes the collector may hold at `max_bytes` (0, a new
 * collector's setting: no limit). A cap below what it holds already drops
 * nothing; appends that need more memory are then refused. NULL: no-op. */
void vdnn_feature_collector_set_budget(VdnnFeatureCollector *fc, uint64_t max_bytes);

/* The bytes the collector holds, as charged to its budget: names, the
 * feature table and name index, directories and leaves, as requested from
 * malloc (its own per-block overhead is not counted). NULL: 0. */
size_t vdnn_feature_collector_bytes(const VdnnFeatureCollector *fc);

/* Stores `value` (any double, NaN and Inf included) for frame `index` of the
 * feature `name`, creating the feature on first use; features keep the order
 * in which they were first appended.
 * Returns 0, -EINVAL (fc or name NULL, or a name refused by
 * vdnn_text_check), -ERANGE (index >= VDNN_FEATURE_MAX_FRAMES),
 * -EEXIST (that frame of that feature already has a value; the stored value
 * is kept: a model scoring a frame twice is a bug worth reporting, and
 * "already exists" says so better than libvmaf's -EINVAL), -EDQUOT (storing
 * it would take the collector past its budget: the message names the bytes
 * needed, held and allowed; nothing is stored or allocated), -ENOMEM. */
int vdnn_feature_collector_append(VdnnFeatureCollector *fc, const char *name,
                                  unsigned index, double value);

/* Reads the value of frame `index` of feature `name` into *value.
 * Returns 0, -EINVAL (NULL argument), -ENOENT (no such feature, or the frame
 * has no value: the message says which; *value is untouched). */
int vdnn_feature_collector_get(const VdnnFeatureCollector *fc, const char *name,
                               unsigned index, double *value);

/* Whether frame `index` of feature `name` has a value. NULL arguments: false.
 * Never records a message. */
bool vdnn_feature_collector_has(const VdnnFeatureCollector *fc, const char *name,
                                unsigned index);

/* Moves the value of frame `index` of feature `name` into *value and
 * forgets it there (a leaf left empty is freed, its bytes given back to the
 * budget): what a frame worker's store does with a frame once the context
 * has its scores, so that the store holds the frames in flight, not the
 * clip. Returns whether there was a value; NULL arguments: false. Never
 * records a message. */
bool vdnn_feature_collector_take(VdnnFeatureCollector *fc, const char *name, unsigned index,
                                 double *value);

/* Number of features. NULL: 0. */
size_t vdnn_feature_collector_feature_count(const VdnnFeatureCollector *fc);

/* Name of feature number `feature` (0-based, first-append order), or NULL when
 * out of range. Owned by the collector, valid until it is freed. */
const char *vdnn_feature_collector_feature_name(const VdnnFeatureCollector *fc,
                                                size_t feature);

/* One more than the largest frame index of any feature; 0 when empty. */
unsigned vdnn_feature_collector_frame_count(const VdnnFeatureCollector *fc);

/* Index-based read for code that walks every feature (report writers): true
 * and *value set when frame `index` of feature number `feature` has a value;
 * false otherwise (out of range included). Never records a message. */
bool vdnn_feature_collector_value_at(const VdnnFeatureCollector *fc, size_t feature,
                                     unsigned index, double *value);

/* The first frame at or after `from` at which feature number `feature` has
 * a value, or VDNN_FEATURE_MAX_FRAMES when none (a feature out of range
 * included). Skips leaves never allocated and 64 empty frames a step, so a
 * walk over a feature's frames in order costs what the feature holds, not
 * its highest frame: a report of features stored at frame 2^24 - 1 must not
 * visit the 2^24 frames before it once per feature (0.4 s a feature, hours
 * for the tens of thousands of names a budget allows). NULL: none. Never
 * records a message. */
unsigned vdnn_feature_collector_next_frame(const VdnnFeatureCollector *fc, size_t feature,
                                           unsigned from);

/* Pools feature number `feature` over frames first..last (inclusive; last may
 * exceed the frame count). When no frame in the range has a value, out->count
 * is 0 and the four statistics are NaN. NaN values (a frame a model could
 * not score) enter as in libvmaf: mean and harmonic mean become NaN, so a
 * failed frame never yields a plausible-looking average, while min and max
 * skip them (NaN only when every value is NaN). libvmaf's min/max are also
 * NaN when the range's first frame is NaN (its first value seeds the
 * comparison); that order dependence is not copied. Infinities follow IEEE
 * arithmetic.
 * Returns 0, -EINVAL (NULL argument, feature out of range, first > last). */
int vdnn_feature_pool_at(const VdnnFeatureCollector *fc, size_t feature,
                         unsigned first, unsigned last, VdnnFeaturePool *out);

/* The same for the feature called `name`, but a range without any value is
 * an error. Returns 0, -EINVAL, -ENOENT (no such feature, or no value in
 * first..last; *out is untouched). */
int vdnn_feature_pool(const VdnnFeatureCollector *fc, const char *name,
                      unsigned first, unsigned last, VdnnFeaturePool *out);

#endif
