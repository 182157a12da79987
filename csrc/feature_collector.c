#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "feature_collector.h"

typedef struct Feature {
    char *name;             /* owned copy */
    double *value;          /* `capacity` slots, indexed by frame */
    unsigned char *written; /* `capacity` flags: value[i] holds a score */
    unsigned capacity;
    unsigned end;           /* largest written frame index + 1 */
} Feature;

struct VdnnFeatureCollector {
    pthread_mutex_t lock;
    Feature *feature;       /* `count` features in first-append order */
    size_t count;
    size_t capacity;
    /* Open-addressing index from name to position, so that a lookup costs
     * O(1) and importing thousands of features stays linear. Entries hold
     * position + 1 (0: empty); the size is a power of two kept above twice
     * `count`, so probing always ends. */
    size_t *index;
    size_t index_size;
};

/* The mutex is not part of the collector's logical value: readers take a
 * const collector yet must lock it. Every collector is a malloc'd, non-const
 * object, so casting the qualifier away here is well defined. */
static void lock(const VdnnFeatureCollector *fc)
{
    pthread_mutex_lock((pthread_mutex_t *)&fc->lock);
}

static void unlock(const VdnnFeatureCollector *fc)
{
    pthread_mutex_unlock((pthread_mutex_t *)&fc->lock);
}

/* Length of the UTF-8 sequence starting at s, storing its code point in *cp;
 * 0 when the sequence is malformed, overlong, a surrogate or above U+10FFFF.
 * The NUL terminator fails the continuation test, so it never reads past it. */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t c = s[0];
    size_t len;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        c &= 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min_cp[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

int vdnn_text_check(const char *text, size_t max_len, const char *what)
{
    if (!text)
        return vdnn_fail(-EINVAL, "%s is NULL", what);
    size_t len = strnlen(text, max_len + 1);
    if (len == 0)
        return vdnn_fail(-EINVAL, "%s is empty", what);
    if (len > max_len)
        return vdnn_fail(-EINVAL, "%s \"%.40s...\" is longer than %zu bytes", what, text,
                         max_len);
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, &cp);
        if (n == 0)
            return vdnn_fail(-EINVAL, "%s \"%.*s...\" is not valid UTF-8 at byte %zu", what,
                             (int)i, text, i);
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
            return vdnn_fail(-EINVAL, "%s \"%.*s...\" has control character U+%04X at byte %zu",
                             what, (int)i, text, (unsigned)cp, i);
        i += n;
    }
    return 0;
}

int vdnn_feature_collector_init(VdnnFeatureCollector **out)
{
    if (!out)
        return vdnn_fail(-EINVAL, "feature collector output pointer is NULL");
    VdnnFeatureCollector *fc = calloc(1, sizeof(*fc));
    if (!fc)
        return vdnn_fail(-ENOMEM, "out of memory creating a feature collector");
    int err = pthread_mutex_init(&fc->lock, NULL);
    if (err) {
        free(fc);
        return vdnn_fail(-err, "cannot create the feature collector's mutex");
    }
    *out = fc;
    return 0;
}

static void feature_release(Feature *f)
{
    free(f->name);
    free(f->value);
    free(f->written);
}

void vdnn_feature_collector_free(VdnnFeatureCollector *fc)
{
    if (!fc)
        return;
    for (size_t i = 0; i < fc->count; i++)
        feature_release(&fc->feature[i]);
    free(fc->feature);
    free(fc->index);
    pthread_mutex_destroy(&fc->lock);
    free(fc);
}

/* FNV-1a: short names, no adversarial pressure worth a keyed hash (a
 * caller that wants collisions controls its own context only). */
static size_t name_hash(const char *name)
{
    uint64_t h = 14695981039346656037u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return (size_t)h;
}

/* The index slot holding `name`, or the empty slot where it would go.
 * Caller holds the lock; index_size > count. */
static size_t *index_slot(const VdnnFeatureCollector *fc, const char *name)
{
    size_t mask = fc->index_size - 1;
    for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
        size_t *slot = &fc->index[i];
        if (!*slot || strcmp(fc->feature[*slot - 1].name, name) == 0)
            return slot;
    }
}

/* Caller holds the lock. */
static Feature *find(const VdnnFeatureCollector *fc, const char *name)
{
    if (!fc->index_size)
        return NULL;
    size_t *slot = index_slot(fc, name);
    return *slot ? &fc->feature[*slot - 1] : NULL;
}

/* Makes room in the index for one more feature (rebuilding it at twice the
 * size when it would be half full). Caller holds the lock. */
static int index_reserve(VdnnFeatureCollector *fc)
{
    if (2 * (fc->count + 1) <= fc->index_size)
        return 0;
    size_t size = fc->index_size ? 2 * fc->index_size : 16;
    size_t *index = calloc(size, sizeof(*index));
    if (!index)
        return vdnn_fail(-ENOMEM, "out of memory indexing %zu features", fc->count + 1);
    free(fc->index);
    fc->index = index;
    fc->index_size = size;
    for (size_t i = 0; i < fc->count; i++)
        *index_slot(fc, fc->feature[i].name) = i + 1;
    return 0;
}

/* Writes one value, doubling the frame arrays as needed so that appending
 * frame by frame costs amortised O(1). */
static int feature_store(Feature *f, unsigned index, double value)
{
    if (index >= f->capacity) {
        unsigned cap = f->capacity ? f->capacity : 64;
        while (cap <= index) /* index < 2^24, so this stops at 2^24 */
            cap *= 2;
        double *v = realloc(f->value, cap * sizeof(*v));
        if (!v)
            return vdnn_fail(-ENOMEM, "out of memory growing feature \"%s\" to %u frames",
                             f->name, cap);
        f->value = v;
        unsigned char *w = realloc(f->written, cap);
        if (!w)
            return vdnn_fail(-ENOMEM, "out of memory growing feature \"%s\" to %u frames",
                             f->name, cap);
        memset(w + f->capacity, 0, cap - f->capacity);
        f->written = w;
        f->capacity = cap;
    }
    if (f->written[index])
        return vdnn_fail(-EEXIST, "feature \"%s\" already has a value for frame %u", f->name,
                         index);
    f->value[index] = value;
    f->written[index] = 1;
    if (index >= f->end)
        f->end = index + 1;
    return 0;
}

/* Builds the new feature completely before publishing it, so a failed
 * allocation never leaves an empty feature behind. Caller holds the lock. */
static int add_feature(VdnnFeatureCollector *fc, const char *name, unsigned index,
                       double value)
{
    Feature f = {0};
    size_t len = strlen(name);
    f.name = malloc(len + 1);
    if (!f.name)
        return vdnn_fail(-ENOMEM, "out of memory adding feature \"%s\"", name);
    memcpy(f.name, name, len + 1);

    int err = feature_store(&f, index, value);
    if (!err)
        err = index_reserve(fc);
    if (!err && fc->count == fc->capacity) {
        size_t cap = fc->capacity ? 2 * fc->capacity : 8;
        Feature *grown = realloc(fc->feature, cap * sizeof(*grown));
        if (grown) {
            fc->feature = grown;
            fc->capacity = cap;
        } else {
            err = vdnn_fail(-ENOMEM, "out of memory adding feature \"%s\"", name);
        }
    }
    if (err) {
        feature_release(&f);
        return err;
    }
    fc->feature[fc->count] = f;
    *index_slot(fc, f.name) = ++fc->count;
    return 0;
}

int vdnn_feature_collector_append(VdnnFeatureCollector *fc, const char *name,
                                  unsigned index, double value)
{
    if (!fc)
        return vdnn_fail(-EINVAL, "feature collector is NULL");
    int err = vdnn_text_check(name, VDNN_FEATURE_NAME_MAX, "feature name");
    if (err)
        return err;
    if (index >= VDNN_FEATURE_MAX_FRAMES)
        return vdnn_fail(-ERANGE, "frame %u of feature \"%s\" is beyond the last frame "
                         "a collector can hold (%u)", index, name, VDNN_FEATURE_MAX_FRAMES - 1);

    lock(fc);
    Feature *f = find(fc, name);
    err = f ? feature_store(f, index, value) : add_feature(fc, name, index, value);
    unlock(fc);
    return err;
}

int vdnn_feature_collector_get(const VdnnFeatureCollector *fc, const char *name,
                               unsigned index, double *value)
{
    if (!fc || !name || !value)
        return vdnn_fail(-EINVAL, "feature collector, name or value pointer is NULL");
    int err = 0;
    lock(fc);
    const Feature *f = find(fc, name);
    if (!f)
        err = vdnn_fail(-ENOENT, "no feature \"%s\" has been collected (asked for frame %u)",
                        name, index);
    else if (index >= f->capacity || !f->written[index])
        err = vdnn_fail(-ENOENT, "feature \"%s\" has no value for frame %u", name, index);
    else
        *value = f->value[index];
    unlock(fc);
    return err;
}

bool vdnn_feature_collector_has(const VdnnFeatureCollector *fc, const char *name,
                                unsigned index)
{
    if (!fc || !name)
        return false;
    lock(fc);
    const Feature *f = find(fc, name);
    bool has = f && index < f->capacity && f->written[index];
    unlock(fc);
    return has;
}

size_t vdnn_feature_collector_feature_count(const VdnnFeatureCollector *fc)
{
    if (!fc)
        return 0;
    lock(fc);
    size_t count = fc->count;
    unlock(fc);
    return count;
}

const char *vdnn_feature_collector_feature_name(const VdnnFeatureCollector *fc,
                                                size_t feature)
{
    if (!fc)
        return NULL;
    lock(fc);
    const char *name = feature < fc->count ? fc->feature[feature].name : NULL;
    unlock(fc);
    return name;
}

unsigned vdnn_feature_collector_frame_count(const VdnnFeatureCollector *fc)
{
    if (!fc)
        return 0;
    unsigned end = 0;
    lock(fc);
    for (size_t i = 0; i < fc->count; i++) {
        if (fc->feature[i].end > end)
            end = fc->feature[i].end;
    }
    unlock(fc);
    return end;
}

bool vdnn_feature_collector_value_at(const VdnnFeatureCollector *fc, size_t feature,
                                     unsigned index, double *value)
{
    if (!fc || !value)
        return false;
    bool has = false;
    lock(fc);
    if (feature < fc->count) {
        const Feature *f = &fc->feature[feature];
        has = index < f->capacity && f->written[index];
        if (has)
            *value = f->value[index];
    }
    unlock(fc);
    return has;
}

/* Caller holds the lock. Sums in frame order with libvmaf's formulas, so the
 * results are bit-identical to vmaf_feature_score_pooled() on the same data. */
static void pool_feature(const Feature *f, unsigned first, unsigned last,
                         VdnnFeaturePool *out)
{
    unsigned n = 0, numbers = 0;
    double min = NAN, max = NAN, sum = 0.0, inv_sum = 0.0;

    /* i < f->end <= 2^24 bounds the loop even when last is UINT_MAX. */
    for (unsigned i = first; i < f->end && i <= last; i++) {
        if (!f->written[i])
            continue;
        double x = f->value[i];
        n++;
        /* NaN poisons the sums (mean, harmonic mean) but never wins a
         * comparison, as in libvmaf's pooling. */
        sum += x;
        inv_sum += 1.0 / (x + 1.0);
        if (isnan(x))
            continue;
        if (numbers == 0 || x < min)
            min = x;
        if (numbers == 0 || x > max)
            max = x;
        numbers++;
    }

    out->count = n;
    out->min = min;
    out->max = max;
    out->mean = n ? sum / n : NAN;
    out->harmonic_mean = n ? n / inv_sum - 1.0 : NAN;
}

int vdnn_feature_pool_at(const VdnnFeatureCollector *fc, size_t feature,
                         unsigned first, unsigned last, VdnnFeaturePool *out)
{
    if (!fc || !out)
        return vdnn_fail(-EINVAL, "feature collector or pool output is NULL");
    if (first > last)
        return vdnn_fail(-EINVAL, "pooling range %u..%u is empty (first > last)", first, last);
    int err = 0;
    lock(fc);
    if (feature < fc->count)
        pool_feature(&fc->feature[feature], first, last, out);
    else
        err = vdnn_fail(-EINVAL, "feature number %zu is out of range (%zu features)", feature,
                        fc->count);
    unlock(fc);
    return err;
}

int vdnn_feature_pool(const VdnnFeatureCollector *fc, const char *name, unsigned first,
                      unsigned last, VdnnFeaturePool *out)
{
    if (!fc || !name || !out)
        return vdnn_fail(-EINVAL, "feature collector, name or pool output is NULL");
    if (first > last)
        return vdnn_fail(-EINVAL, "pooling range %u..%u of feature \"%s\" is empty "
                         "(first > last)", first, last, name);
    VdnnFeaturePool pool;
    lock(fc);
    const Feature *f = find(fc, name);
    if (f)
        pool_feature(f, first, last, &pool);
    unlock(fc);
    if (!f)
        return vdnn_fail(-ENOENT, "no feature \"%s\" has been collected", name);
    if (pool.count == 0)
        return vdnn_fail(-ENOENT, "feature \"%s\" has no value in frames %u..%u", name, first,
                         last);
    *out = pool;
    return 0;
}
