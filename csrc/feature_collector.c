#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "feature_collector.h"

/* Storage is sparse so that a high frame index costs what the frames near
 * it cost, not what every frame before it would: a feature's frames are cut
 * into leaves of LEAF_FRAMES consecutive frames, each allocated on its first
 * value and grown by doubling (from LEAF_MIN frames) only as far as the
 * highest offset written into it, behind a directory that grows by doubling
 * up to LEAVES entries. A clip of a few hundred frames costs about what a
 * dense array did; one value at frame 2^24 - 1 costs the directory (32 KiB)
 * and one leaf (36 KiB) instead of 151 MB; a lookup is two indexings. */
#define LEAF_SHIFT 12
#define LEAF_FRAMES (1u << LEAF_SHIFT)
#define LEAF_MIN 64u
#define LEAVES (VDNN_FEATURE_MAX_FRAMES >> LEAF_SHIFT)

typedef struct Leaf {
    double *value;     /* `capacity` slots: frame base + i */
    uint64_t *written; /* capacity / 64 words: bit i set when value[i] holds a score */
    unsigned capacity; /* LEAF_MIN..LEAF_FRAMES, a power of two */
} Leaf;

typedef struct Feature {
    char *name;         /* owned copy */
    Leaf **leaf;        /* `leaves` entries, NULL where no frame has a value */
    unsigned leaves;
    unsigned end;       /* largest written frame index + 1 */
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
    /* Every byte the collector holds (names, features, the name index,
     * directories, leaves; as requested from malloc, its own overhead not
     * counted) and the most it may hold (0: no limit). A caller decides the
     * indexes and the names, so without this one call per name could make
     * the store take what the machine has. */
    size_t bytes;
    uint64_t max_bytes;
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
    fc->bytes = sizeof(*fc);
    *out = fc;
    return 0;
}

void vdnn_feature_collector_set_budget(VdnnFeatureCollector *fc, uint64_t max_bytes)
{
    if (!fc)
        return;
    lock(fc);
    fc->max_bytes = max_bytes;
    unlock(fc);
}

size_t vdnn_feature_collector_bytes(const VdnnFeatureCollector *fc)
{
    if (!fc)
        return 0;
    lock(fc);
    size_t bytes = fc->bytes;
    unlock(fc);
    return bytes;
}

/* Bytes of a leaf of `capacity` frames, its header included. */
static size_t leaf_bytes(unsigned capacity)
{
    return sizeof(Leaf) + capacity * sizeof(double) + capacity / 64 * sizeof(uint64_t);
}

/* Bytes a feature holds: what was charged for it. */
static size_t feature_bytes(const Feature *f)
{
    size_t bytes = f->name ? strlen(f->name) + 1 : 0;
    bytes += f->leaves * sizeof(*f->leaf);
    for (unsigned i = 0; i < f->leaves; i++)
        if (f->leaf[i])
            bytes += leaf_bytes(f->leaf[i]->capacity);
    return bytes;
}

static void leaf_free(Leaf *leaf)
{
    if (!leaf)
        return;
    free(leaf->value);
    free(leaf->written);
    free(leaf);
}

static void feature_release(Feature *f)
{
    free(f->name);
    for (unsigned i = 0; i < f->leaves; i++)
        leaf_free(f->leaf[i]);
    free(f->leaf);
}

/* Takes `more` bytes from the budget for frame `index` of feature `name`,
 * or refuses with -EDQUOT before anything is allocated. The caller gives
 * them back (fc->bytes -= more) when the allocation then fails. Caller
 * holds the lock. */
static int charge(VdnnFeatureCollector *fc, size_t more, const char *name, unsigned index)
{
    if (fc->max_bytes &&
        ((uint64_t)more > fc->max_bytes || (uint64_t)fc->bytes > fc->max_bytes - more))
        return vdnn_fail(-EDQUOT, "storing frame %u of feature \"%s\" needs %zu more bytes: "
                         "the feature store holds %zu of its %" PRIu64 "-byte budget (the "
                         "policy's max_memory_bytes)", index, name, more, fc->bytes,
                         fc->max_bytes);
    fc->bytes += more;
    return 0;
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
 * size when it would be half full), for frame `at` of feature `name`.
 * Caller holds the lock. */
static int index_reserve(VdnnFeatureCollector *fc, const char *name, unsigned at)
{
    if (2 * (fc->count + 1) <= fc->index_size)
        return 0;
    size_t size = fc->index_size ? 2 * fc->index_size : 16;
    const size_t more = (size - fc->index_size) * sizeof(*fc->index);
    int err = charge(fc, more, name, at);
    if (err)
        return err;
    size_t *index = calloc(size, sizeof(*index));
    if (!index) {
        fc->bytes -= more;
        return vdnn_fail(-ENOMEM, "out of memory indexing %zu features", fc->count + 1);
    }
    free(fc->index);
    fc->index = index;
    fc->index_size = size;
    for (size_t i = 0; i < fc->count; i++)
        *index_slot(fc, fc->feature[i].name) = i + 1;
    return 0;
}

/* The smallest leaf capacity that holds offset `off`. */
static unsigned leaf_capacity(unsigned off)
{
    unsigned cap = LEAF_MIN;
    while (cap <= off) /* off < LEAF_FRAMES, so this stops at LEAF_FRAMES */
        cap *= 2;
    return cap;
}

/* Grows f's directory to hold leaf `li` (< LEAVES), doubling. */
static int grow_directory(VdnnFeatureCollector *fc, Feature *f, unsigned li, unsigned index)
{
    unsigned n = f->leaves ? f->leaves : 1;
    while (n <= li) /* li < LEAVES, a power of two: stops at LEAVES */
        n *= 2;
    const size_t more = (size_t)(n - f->leaves) * sizeof(*f->leaf);
    int err = charge(fc, more, f->name, index);
    if (err)
        return err;
    Leaf **grown = realloc(f->leaf, n * sizeof(*grown));
    if (!grown) {
        fc->bytes -= more;
        return vdnn_fail(-ENOMEM, "out of memory growing feature \"%s\" to frame %u", f->name,
                         index);
    }
    memset(grown + f->leaves, 0, (n - f->leaves) * sizeof(*grown));
    f->leaf = grown;
    f->leaves = n;
    return 0;
}

/* Creates leaf `li` of f, large enough for offset `off`. */
static int new_leaf(VdnnFeatureCollector *fc, Feature *f, unsigned li, unsigned off,
                    unsigned index)
{
    const unsigned cap = leaf_capacity(off);
    int err = charge(fc, leaf_bytes(cap), f->name, index);
    if (err)
        return err;
    Leaf *leaf = calloc(1, sizeof(*leaf));
    if (leaf) {
        leaf->value = malloc(cap * sizeof(*leaf->value));
        leaf->written = calloc(cap / 64, sizeof(*leaf->written));
        leaf->capacity = cap;
    }
    if (!leaf || !leaf->value || !leaf->written) {
        leaf_free(leaf);
        fc->bytes -= leaf_bytes(cap);
        return vdnn_fail(-ENOMEM, "out of memory growing feature \"%s\" to frame %u", f->name,
                         index);
    }
    f->leaf[li] = leaf;
    return 0;
}

/* Doubles `leaf` until it holds offset `off`, so that appending frame by
 * frame costs amortised O(1). */
static int grow_leaf(VdnnFeatureCollector *fc, Feature *f, Leaf *leaf, unsigned off,
                     unsigned index)
{
    const unsigned cap = leaf_capacity(off);
    const size_t more = leaf_bytes(cap) - leaf_bytes(leaf->capacity);
    int err = charge(fc, more, f->name, index);
    if (err)
        return err;
    /* Each array is valid on its own at either size: a failure in between
     * leaves a leaf of the old capacity with a larger block behind it. */
    double *v = realloc(leaf->value, cap * sizeof(*v));
    if (v)
        leaf->value = v;
    uint64_t *w = v ? realloc(leaf->written, cap / 64 * sizeof(*w)) : NULL;
    if (!w) {
        fc->bytes -= more;
        return vdnn_fail(-ENOMEM, "out of memory growing feature \"%s\" to frame %u", f->name,
                         index);
    }
    memset(w + leaf->capacity / 64, 0, (cap - leaf->capacity) / 64 * sizeof(*w));
    leaf->written = w;
    leaf->capacity = cap;
    return 0;
}

/* The leaf holding frame `index` of f and the frame's offset in it, when
 * that frame has a value; else NULL. Caller holds the lock. */
static Leaf *written_leaf(const Feature *f, unsigned index, unsigned *off)
{
    const unsigned li = index >> LEAF_SHIFT;
    Leaf *leaf = li < f->leaves ? f->leaf[li] : NULL;
    *off = index & (LEAF_FRAMES - 1);
    if (!leaf || *off >= leaf->capacity || !(leaf->written[*off / 64] >> (*off % 64) & 1))
        return NULL;
    return leaf;
}

/* The value of frame `index` of f, if it has one. Caller holds the lock. */
static bool lookup(const Feature *f, unsigned index, double *value)
{
    unsigned off;
    const Leaf *leaf = written_leaf(f, index, &off);
    if (leaf && value)
        *value = leaf->value[off];
    return leaf != NULL;
}

/* Writes one value (index < VDNN_FEATURE_MAX_FRAMES), charging what it
 * allocates to the budget. Caller holds the lock. */
static int feature_store(VdnnFeatureCollector *fc, Feature *f, unsigned index, double value)
{
    if (lookup(f, index, NULL))
        return vdnn_fail(-EEXIST, "feature \"%s\" already has a value for frame %u", f->name,
                         index);
    const unsigned li = index >> LEAF_SHIFT, off = index & (LEAF_FRAMES - 1);
    int err = 0;
    if (li >= f->leaves && (err = grow_directory(fc, f, li, index)))
        return err;
    Leaf *leaf = f->leaf[li];
    if (!leaf)
        err = new_leaf(fc, f, li, off, index);
    else if (off >= leaf->capacity)
        err = grow_leaf(fc, f, leaf, off, index);
    if (err)
        return err;
    leaf = f->leaf[li];
    leaf->value[off] = value;
    leaf->written[off / 64] |= (uint64_t)1 << (off % 64);
    if (index >= f->end)
        f->end = index + 1;
    return 0;
}

/* Builds the new feature completely before publishing it, so a failed
 * allocation or a refused charge never leaves an empty feature behind (nor
 * its bytes on the budget). Caller holds the lock. */
static int add_feature(VdnnFeatureCollector *fc, const char *name, unsigned index,
                       double value)
{
    Feature f = {0};
    size_t len = strlen(name);
    int err = charge(fc, len + 1, name, index);
    if (err)
        return err;
    f.name = malloc(len + 1);
    if (!f.name) {
        fc->bytes -= len + 1;
        return vdnn_fail(-ENOMEM, "out of memory adding feature \"%s\"", name);
    }
    memcpy(f.name, name, len + 1);

    err = feature_store(fc, &f, index, value);
    if (!err)
        err = index_reserve(fc, name, index);
    if (!err && fc->count == fc->capacity) {
        size_t cap = fc->capacity ? 2 * fc->capacity : 8;
        const size_t more = (cap - fc->capacity) * sizeof(*fc->feature);
        err = charge(fc, more, name, index);
        Feature *grown = err ? NULL : realloc(fc->feature, cap * sizeof(*grown));
        if (grown) {
            fc->feature = grown;
            fc->capacity = cap;
        } else if (!err) {
            fc->bytes -= more;
            err = vdnn_fail(-ENOMEM, "out of memory adding feature \"%s\"", name);
        }
    }
    if (err) {
        fc->bytes -= feature_bytes(&f);
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
    err = f ? feature_store(fc, f, index, value) : add_feature(fc, name, index, value);
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
    else if (!lookup(f, index, value))
        err = vdnn_fail(-ENOENT, "feature \"%s\" has no value for frame %u", name, index);
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
    bool has = f && lookup(f, index, NULL);
    unlock(fc);
    return has;
}

bool vdnn_feature_collector_take(VdnnFeatureCollector *fc, const char *name, unsigned index,
                                 double *value)
{
    if (!fc || !name || !value)
        return false;
    lock(fc);
    Feature *f = find(fc, name);
    unsigned off;
    Leaf *leaf = f ? written_leaf(f, index, &off) : NULL;
    const bool had = leaf != NULL;
    if (had) {
        *value = leaf->value[off];
        leaf->written[off / 64] &= ~((uint64_t)1 << (off % 64));
        bool empty = true;
        for (unsigned w = 0; empty && w < leaf->capacity / 64; w++)
            empty = leaf->written[w] == 0;
        if (empty) {
            fc->bytes -= leaf_bytes(leaf->capacity);
            leaf_free(leaf);
            f->leaf[index >> LEAF_SHIFT] = NULL;
        }
    }
    unlock(fc);
    return had;
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
    if (feature < fc->count)
        has = lookup(&fc->feature[feature], index, value);
    unlock(fc);
    return has;
}

/* The lowest bit set in a non-zero word. */
static unsigned lowest_bit(uint64_t bits)
{
    unsigned n = 0;
    for (; !(bits & 0xFFFFFFFFu); bits >>= 32)
        n += 32;
    for (; !(bits & 1u); bits >>= 1)
        n++;
    return n;
}

/* The first written frame >= from of f, or VDNN_FEATURE_MAX_FRAMES. Caller
 * holds the lock. */
static unsigned next_written(const Feature *f, unsigned from)
{
    for (unsigned li = from >> LEAF_SHIFT; from < f->end && li < f->leaves; li++) {
        const Leaf *leaf = f->leaf[li];
        if (!leaf)
            continue;
        const unsigned base = li << LEAF_SHIFT;
        const unsigned off = from > base ? from - base : 0;
        for (unsigned w = off / 64; w < leaf->capacity / 64; w++) {
            uint64_t bits = leaf->written[w];
            if (w == off / 64)
                bits &= ~(uint64_t)0 << (off % 64);
            if (bits)
                return base + w * 64 + lowest_bit(bits);
        }
    }
    return VDNN_FEATURE_MAX_FRAMES;
}

unsigned vdnn_feature_collector_next_frame(const VdnnFeatureCollector *fc, size_t feature,
                                           unsigned from)
{
    if (!fc)
        return VDNN_FEATURE_MAX_FRAMES;
    lock(fc);
    unsigned next = feature < fc->count ? next_written(&fc->feature[feature], from)
                                        : VDNN_FEATURE_MAX_FRAMES;
    unlock(fc);
    return next;
}

/* Caller holds the lock. Sums in frame order with libvmaf's formulas, so the
 * results are bit-identical to vmaf_feature_score_pooled() on the same data. */
static void pool_feature(const Feature *f, unsigned first, unsigned last,
                         VdnnFeaturePool *out)
{
    unsigned n = 0, numbers = 0;
    double min = NAN, max = NAN, sum = 0.0, inv_sum = 0.0;

    /* Frames first..last in order, through the written ones only (leaves
     * never allocated are skipped); next_written stops at f->end <= 2^24,
     * which bounds the walk even when last is UINT_MAX. */
    for (unsigned i = next_written(f, first); i < f->end && i <= last;
         i = next_written(f, i + 1)) {
        double x;
        if (!lookup(f, i, &x)) /* next_written found it written */
            continue;
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
