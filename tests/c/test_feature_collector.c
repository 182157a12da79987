/* Tests of csrc/feature_collector.c: storage, errors, pooling, threads. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "feature_collector.h"

static VdnnFeatureCollector *new_collector(void)
{
    VdnnFeatureCollector *fc = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK(fc != NULL);
    return fc;
}

static void test_lifecycle(void)
{
    CHECK_EQ_INT(vdnn_feature_collector_init(NULL), -EINVAL);
    vdnn_feature_collector_free(NULL);

    VdnnFeatureCollector *fc = new_collector();
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(fc), 0);
    CHECK(vdnn_feature_collector_feature_name(fc, 0) == NULL);
    vdnn_feature_collector_free(fc);

    CHECK_EQ_INT(vdnn_feature_collector_feature_count(NULL), 0);
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(NULL), 0);
    CHECK(!vdnn_feature_collector_has(NULL, "x", 0));
}

static void test_append_get(void)
{
    VdnnFeatureCollector *fc = new_collector();
    char name[16] = "psnr_y";

    /* Out of order, with a gap at frame 2. */
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, 3, 30.5), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, 0, 34.25), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, 1, 32.0), 0);
    strcpy(name, "clobbered"); /* the collector keeps its own copy */
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "ssim_y", 1, NAN), 0);

    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), 2);
    CHECK(strcmp(vdnn_feature_collector_feature_name(fc, 0), "psnr_y") == 0);
    CHECK(strcmp(vdnn_feature_collector_feature_name(fc, 1), "ssim_y") == 0);
    CHECK(vdnn_feature_collector_feature_name(fc, 2) == NULL);
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(fc), 4);

    double v = -1.0;
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "psnr_y", 3, &v), 0);
    CHECK(v == 30.5);
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "psnr_y", 0, &v), 0);
    CHECK(v == 34.25);
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "ssim_y", 1, &v), 0);
    CHECK(isnan(v));
    CHECK(vdnn_feature_collector_has(fc, "psnr_y", 1));
    CHECK(vdnn_feature_collector_has(fc, "ssim_y", 1));

    /* Missing values are errors, never 0.0, and *value is left alone. */
    v = 7.0;
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "psnr_y", 2, &v), -ENOENT);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"psnr_y\" has no value for frame 2");
    CHECK(v == 7.0);
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "psnr_y", 1000000, &v), -ENOENT);
    CHECK_STR_CONTAINS(vdnn_last_error(), "frame 1000000");
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "vmaf", 0, &v), -ENOENT);
    CHECK_STR_CONTAINS(vdnn_last_error(), "no feature \"vmaf\"");
    CHECK(v == 7.0);
    CHECK(!vdnn_feature_collector_has(fc, "psnr_y", 2));
    CHECK(!vdnn_feature_collector_has(fc, "ssim_y", 0));
    CHECK(!vdnn_feature_collector_has(fc, "vmaf", 0));
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, NULL, 0, &v), -EINVAL);
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "psnr_y", 0, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_feature_collector_get(NULL, "psnr_y", 0, &v), -EINVAL);

    /* Index-based reads. */
    CHECK(vdnn_feature_collector_value_at(fc, 0, 1, &v) && v == 32.0);
    CHECK(!vdnn_feature_collector_value_at(fc, 0, 2, &v));
    CHECK(!vdnn_feature_collector_value_at(fc, 2, 0, &v));
    CHECK(!vdnn_feature_collector_value_at(fc, 0, 1, NULL));

    /* A second value for the same key is refused and the first one kept. */
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "psnr_y", 1, 99.0), -EEXIST);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"psnr_y\" already has a value for frame 1");
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "psnr_y", 1, &v), 0);
    CHECK(v == 32.0);

    CHECK_EQ_INT(vdnn_feature_collector_append(NULL, "psnr_y", 5, 1.0), -EINVAL);
    vdnn_feature_collector_free(fc);
}

static void test_growth_and_range(void)
{
    VdnnFeatureCollector *fc = new_collector();
    int failures = 0;
    for (unsigned i = 0; i < 5000; i++)
        failures += vdnn_feature_collector_append(fc, "a", 4999 - i, (double)i) != 0;
    CHECK_EQ_INT(failures, 0);
    double v;
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "a", 0, &v), 0);
    CHECK(v == 4999.0);
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(fc), 5000);

    const unsigned last = VDNN_FEATURE_MAX_FRAMES - 1;
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "b", last, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(fc), VDNN_FEATURE_MAX_FRAMES);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "b", last + 1, 1.0), -ERANGE);
    CHECK_STR_CONTAINS(vdnn_last_error(), "frame 16777216 of feature \"b\"");
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "c", UINT_MAX, 1.0), -ERANGE);
    /* A refused append creates no feature. */
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), 2);
    vdnn_feature_collector_free(fc);
}

static void test_names(void)
{
    VdnnFeatureCollector *fc = new_collector();
    char long_name[VDNN_FEATURE_NAME_MAX + 2];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';

    CHECK_EQ_INT(vdnn_feature_collector_append(fc, long_name, 0, 1.0), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "longer than 255 bytes");
    long_name[VDNN_FEATURE_NAME_MAX] = '\0';
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, long_name, 0, 1.0), 0);

    CHECK_EQ_INT(vdnn_feature_collector_append(fc, NULL, 0, 1.0), -EINVAL);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "", 0, 1.0), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "feature name is empty");

    static const char *const bad[] = {
        "tab\there", "new\nline", "del\x7f", "c1\xc2\x85", /* control characters */
        "bad\xff", "overlong\xc0\xaf", "surrogate\xed\xa0\x80", "cut\xe2\x82",
        "too_high\xf4\x90\x80\x80",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, bad[i], 0, 1.0), -EINVAL);
        CHECK_STR_CONTAINS(vdnn_last_error(), "feature name");
    }
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "tab\there", 0, 1.0), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "control character U+0009 at byte 3");
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "bad\xff", 0, 1.0), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "not valid UTF-8 at byte 3");

    static const char *const good[] = {"psnr_y", "my model, v2", "qualit\xc3\xa9",
                                       "\xe2\x82\xac", "\xf0\x9f\x98\x80", "a\"b\\c"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, good[i], 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), 7);
    vdnn_feature_collector_free(fc);
}

static void test_pooling(void)
{
    VdnnFeatureCollector *fc = new_collector();
    /* Frames 0, 2, 5 with gaps; appended out of order. */
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "q", 5, 4.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "q", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "q", 2, 2.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "n", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "n", 1, NAN), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "n", 2, 3.0), 0);

    VdnnFeaturePool p;
    CHECK_EQ_INT(vdnn_feature_pool(fc, "q", 0, VDNN_FEATURE_MAX_FRAMES, &p), 0);
    CHECK_EQ_INT(p.count, 3);
    CHECK(p.min == 1.0);
    CHECK(p.max == 4.0);
    CHECK(p.mean == 7.0 / 3.0);
    /* libvmaf: 1 / mean(1 / (x + 1)) - 1 = 3 / (1/2 + 1/3 + 1/5) - 1 */
    double hm = 3.0 / (1.0 / 2.0 + 1.0 / 3.0 + 1.0 / 5.0) - 1.0;
    CHECK(fabs(p.harmonic_mean - hm) < 1e-12);
    CHECK(fabs(p.harmonic_mean - 1.9032258064516130) < 1e-12); /* 59/31 */
    CHECK(p.harmonic_mean <= p.mean);

    CHECK_EQ_INT(vdnn_feature_pool(fc, "q", 1, 2, &p), 0);
    CHECK_EQ_INT(p.count, 1);
    CHECK(p.min == 2.0 && p.max == 2.0 && p.mean == 2.0 && p.harmonic_mean == 2.0);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "q", 0, UINT_MAX, &p), 0);
    CHECK_EQ_INT(p.count, 3);

    /* Nothing in range: an error by name, count 0 and NaNs by index. */
    p.count = 99;
    CHECK_EQ_INT(vdnn_feature_pool(fc, "q", 3, 4, &p), -ENOENT);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"q\" has no value in frames 3..4");
    CHECK_EQ_INT(p.count, 99);
    CHECK_EQ_INT(vdnn_feature_pool_at(fc, 0, 3, 4, &p), 0);
    CHECK_EQ_INT(p.count, 0);
    CHECK(isnan(p.min) && isnan(p.max) && isnan(p.mean) && isnan(p.harmonic_mean));
    CHECK_EQ_INT(vdnn_feature_pool_at(fc, 0, 6, UINT_MAX, &p), 0);
    CHECK_EQ_INT(p.count, 0);

    /* A NaN frame poisons the sums (as libvmaf's pooling) but never wins
     * min or max, not even as the range's first frame. */
    CHECK_EQ_INT(vdnn_feature_pool(fc, "n", 0, 2, &p), 0);
    CHECK_EQ_INT(p.count, 3);
    CHECK(p.min == 1.0 && p.max == 3.0);
    CHECK(isnan(p.mean) && isnan(p.harmonic_mean));
    CHECK_EQ_INT(vdnn_feature_pool(fc, "n", 1, 2, &p), 0);
    CHECK(p.min == 3.0 && p.max == 3.0 && isnan(p.mean));
    CHECK_EQ_INT(vdnn_feature_pool(fc, "n", 1, 1, &p), 0);
    CHECK_EQ_INT(p.count, 1);
    CHECK(isnan(p.min) && isnan(p.max) && isnan(p.mean) && isnan(p.harmonic_mean));
    CHECK_EQ_INT(vdnn_feature_pool(fc, "n", 2, 2, &p), 0);
    CHECK(p.mean == 3.0);

    CHECK_EQ_INT(vdnn_feature_pool(fc, "nope", 0, 2, &p), -ENOENT);
    CHECK_STR_CONTAINS(vdnn_last_error(), "no feature \"nope\"");
    CHECK_EQ_INT(vdnn_feature_pool(fc, "q", 2, 1, &p), -EINVAL);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "q", 0, 1, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_feature_pool_at(fc, 2, 0, 1, &p), -EINVAL);
    CHECK_EQ_INT(vdnn_feature_pool_at(fc, 0, 2, 1, &p), -EINVAL);
    vdnn_feature_collector_free(fc);
}

#define THREADS 4
#define PER_THREAD 3000

typedef struct Worker {
    VdnnFeatureCollector *fc;
    unsigned id;
    int failures;
} Worker;

/* Each thread fills its own feature and interleaved frames of a shared one,
 * while also reading, so appends race with growth and lookups. */
static void *worker(void *arg)
{
    Worker *w = arg;
    char name[16];
    snprintf(name, sizeof(name), "t%u", w->id);
    for (unsigned i = 0; i < PER_THREAD; i++) {
        unsigned frame = PER_THREAD - 1 - i;
        if (vdnn_feature_collector_append(w->fc, name, frame, w->id + frame * 0.5))
            w->failures++;
        if (vdnn_feature_collector_append(w->fc, "shared", i * THREADS + w->id, (double)w->id))
            w->failures++;
        (void)vdnn_feature_collector_frame_count(w->fc);
        if (!vdnn_feature_collector_has(w->fc, "shared", i * THREADS + w->id))
            w->failures++;
    }
    return NULL;
}

static void test_threads(void)
{
    VdnnFeatureCollector *fc = new_collector();
    pthread_t tid[THREADS];
    Worker w[THREADS];
    for (unsigned t = 0; t < THREADS; t++) {
        w[t] = (Worker){fc, t, 0};
        CHECK_EQ_INT(pthread_create(&tid[t], NULL, worker, &w[t]), 0);
    }
    for (unsigned t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        CHECK_EQ_INT(w[t].failures, 0);
    }
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), THREADS + 1);
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(fc), PER_THREAD * THREADS);
    int bad = 0;
    for (unsigned t = 0; t < THREADS; t++) {
        char name[16];
        snprintf(name, sizeof(name), "t%u", t);
        for (unsigned i = 0; i < PER_THREAD; i++) {
            double v;
            if (vdnn_feature_collector_get(fc, name, i, &v) || v != t + i * 0.5)
                bad++;
            if (vdnn_feature_collector_get(fc, "shared", i * THREADS + t, &v) || v != t)
                bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    vdnn_feature_collector_free(fc);
}

/* Thousands of names: every one is found again at its own position (the
 * name index survives its rebuilds), and order stays first-append order. */
static void test_many_names(void)
{
    enum { N = 5000 };
    VdnnFeatureCollector *fc = new_collector();
    char name[32];
    for (unsigned i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "feature_%u", i);
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, 0, (double)i), 0);
    }
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), N);
    for (unsigned i = 0; i < N; i += 7) {
        snprintf(name, sizeof(name), "feature_%u", i);
        double v = -1;
        CHECK_EQ_INT(vdnn_feature_collector_get(fc, name, 0, &v), 0);
        CHECK(v == (double)i);
        CHECK(strcmp(vdnn_feature_collector_feature_name(fc, i), name) == 0);
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, 0, 1.0), -EEXIST);
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, 1, 2.0), 0);
    }
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), N);
    CHECK(!vdnn_feature_collector_has(fc, "feature_5000", 0));
    vdnn_feature_collector_free(fc);
}

/* Storage is sparse: a value at the last frame costs one leaf and the
 * directory, not a dense array of every frame before it (151 MB a name
 * before), and frames are still found across leaves, in order. */
static void test_sparse(void)
{
    enum { NAMES = 64 };
    const unsigned last = VDNN_FEATURE_MAX_FRAMES - 1;
    VdnnFeatureCollector *fc = new_collector();
    const size_t empty = vdnn_feature_collector_bytes(fc);
    CHECK(empty > 0 && empty < 1024);
    char name[32];
    for (unsigned i = 0; i < NAMES; i++) {
        snprintf(name, sizeof(name), "high_%u", i);
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, last, (double)i), 0);
    }
    const size_t held = vdnn_feature_collector_bytes(fc);
    CHECK(held - empty < NAMES * (size_t)80 * 1024);
    CHECK(held - empty > NAMES * (size_t)64 * 1024); /* a directory and a full leaf each */
    CHECK_EQ_INT(vdnn_feature_collector_frame_count(fc), VDNN_FEATURE_MAX_FRAMES);
    double v = -1;
    CHECK_EQ_INT(vdnn_feature_collector_get(fc, "high_63", last, &v), 0);
    CHECK(v == 63.0);
    CHECK(!vdnn_feature_collector_has(fc, "high_63", last - 1));
    CHECK(!vdnn_feature_collector_has(fc, "high_63", 0));
    CHECK(!vdnn_feature_collector_has(fc, "high_63", UINT_MAX));

    /* A clip-sized feature costs about what the dense arrays did (300
     * frames in 512 slots: 4.6 KiB then, 4.2 KiB now, plus the tables). */
    VdnnFeatureCollector *clip = new_collector();
    for (unsigned i = 0; i < 300; i++)
        CHECK_EQ_INT(vdnn_feature_collector_append(clip, "clip", i, 1.0), 0);
    CHECK(vdnn_feature_collector_bytes(clip) - empty < 5000);
    vdnn_feature_collector_free(clip);

    /* Frames on both sides of leaf boundaries, and a leaf never allocated
     * between them; pooling walks them in frame order. */
    static const unsigned frames[] = {0, 4095, 4096, 8191, 3 * 4096 + 7, 1u << 20, last};
    const size_t n = sizeof(frames) / sizeof(frames[0]);
    for (size_t i = n; i-- > 0;)
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, "s", frames[i], (double)(i + 1)), 0);
    for (size_t i = 0; i < n; i++) {
        CHECK(vdnn_feature_collector_get(fc, "s", frames[i], &v) == 0 && v == (double)(i + 1));
        CHECK(!vdnn_feature_collector_has(fc, "s", frames[i] + 2));
    }
    CHECK(!vdnn_feature_collector_has(fc, "s", 2 * 4096 + 5));
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "s", 4096, 9.0), -EEXIST);
    VdnnFeaturePool p;
    CHECK_EQ_INT(vdnn_feature_pool(fc, "s", 0, UINT_MAX, &p), 0);
    CHECK_EQ_INT(p.count, n);
    CHECK(p.min == 1.0 && p.max == (double)n && p.mean == (n + 1) / 2.0);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "s", 4095, 4096, &p), 0);
    CHECK(p.count == 2 && p.min == 2.0 && p.max == 3.0);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "s", 4097, 8190, &p), -ENOENT);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "s", 8191, (1u << 20) - 1, &p), 0);
    CHECK(p.count == 2 && p.min == 4.0 && p.max == 5.0);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "s", last, last, &p), 0);
    CHECK(p.count == 1 && p.mean == (double)n);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "high_0", 0, last - 1, &p), -ENOENT);
    /* next_frame walks the written frames in order, across gaps and leaves. */
    const size_t s_feature = NAMES; /* "s" came after the 64 "high_" names */
    unsigned at = 0;
    for (size_t i = 0; i < n; i++, at++) {
        at = vdnn_feature_collector_next_frame(fc, s_feature, at);
        CHECK_EQ_INT(at, frames[i]);
    }
    CHECK_EQ_INT(vdnn_feature_collector_next_frame(fc, s_feature, 0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_next_frame(fc, s_feature, 8192), 3 * 4096 + 7);
    CHECK_EQ_INT(vdnn_feature_collector_next_frame(fc, s_feature, UINT_MAX),
                 VDNN_FEATURE_MAX_FRAMES);
    CHECK_EQ_INT(vdnn_feature_collector_next_frame(fc, 0, 0), last);
    CHECK_EQ_INT(vdnn_feature_collector_next_frame(fc, NAMES + 1, 0), VDNN_FEATURE_MAX_FRAMES);
    CHECK_EQ_INT(vdnn_feature_collector_next_frame(NULL, 0, 0), VDNN_FEATURE_MAX_FRAMES);
    vdnn_feature_collector_free(fc);

    /* Every frame of a long clip: about 8 bytes and a bit per frame. */
    fc = new_collector();
    for (unsigned i = 0; i < 100000; i++)
        CHECK(vdnn_feature_collector_append(fc, "dense", i, i * 0.5) == 0);
    const size_t dense = vdnn_feature_collector_bytes(fc);
    CHECK(dense >= 100000 * (size_t)8 && dense < 100000 * (size_t)9);
    CHECK_EQ_INT(vdnn_feature_pool(fc, "dense", 0, 99999, &p), 0);
    CHECK(p.count == 100000 && p.mean == 99999 * 0.25);
    vdnn_feature_collector_free(fc);
}

/* With a budget, an append that would take the store past it is refused
 * with -EDQUOT before anything is allocated, and the store never holds more
 * than the budget. */
static void test_budget(void)
{
    const unsigned last = VDNN_FEATURE_MAX_FRAMES - 1;
    const uint64_t budget = 1u << 20;
    VdnnFeatureCollector *fc = new_collector();
    vdnn_feature_collector_set_budget(NULL, 1); /* no-op */
    CHECK_EQ_INT(vdnn_feature_collector_bytes(NULL), 0);
    vdnn_feature_collector_set_budget(fc, budget);
    char name[32];
    unsigned stored = 0;
    int rc = 0;
    while (!rc && stored < 1000) {
        snprintf(name, sizeof(name), "f%u", stored);
        if (!(rc = vdnn_feature_collector_append(fc, name, last, 1.0)))
            stored++;
    }
    CHECK_EQ_INT(rc, -EDQUOT);
    CHECK(stored > 5 && stored < 20);
    CHECK_STR_CONTAINS(vdnn_last_error(), "storing frame 16777215 of feature \"f");
    CHECK_STR_CONTAINS(vdnn_last_error(), "of its 1048576-byte budget");
    const size_t held = vdnn_feature_collector_bytes(fc);
    CHECK(held <= budget);
    /* The refused name is not a feature and took nothing. */
    CHECK_EQ_INT(vdnn_feature_collector_feature_count(fc), stored);
    CHECK(!vdnn_feature_collector_has(fc, name, last));
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, last, 1.0), -EDQUOT);
    CHECK_EQ_INT(vdnn_feature_collector_bytes(fc), held);
    /* A budget at what is held: frames that an existing leaf holds cost
     * nothing and are still taken; a new leaf of an existing feature is
     * refused. */
    vdnn_feature_collector_set_budget(fc, held);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "f0", last - 4095, 2.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_bytes(fc), held);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "f0", last - 4096, 2.0), -EDQUOT);
    CHECK(!vdnn_feature_collector_has(fc, "f0", last - 4096));
    /* Dense appends stop at the budget too: 64 KiB more hold the first
     * leaf (4096 frames, 33 KiB) and half of the second. */
    vdnn_feature_collector_set_budget(fc, held + 64 * 1024);
    for (rc = 0, stored = 0; !rc && stored < 100000;)
        if (!(rc = vdnn_feature_collector_append(fc, "dense", stored, 1.0)))
            stored++;
    CHECK_EQ_INT(rc, -EDQUOT);
    CHECK_EQ_INT(stored, 4096 + 2048);
    CHECK(vdnn_feature_collector_bytes(fc) <= held + 64 * 1024);
    /* 0 lifts the limit. */
    vdnn_feature_collector_set_budget(fc, 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, last, 1.0), 0);
    vdnn_feature_collector_free(fc);
}

/* take: the value moves out; a leaf left empty is freed and its bytes come
 * back, so a store that values pass through stays the size of what is in it. */
static void test_take(void)
{
    VdnnFeatureCollector *fc = new_collector();
    double v = -1;
    CHECK(!vdnn_feature_collector_take(NULL, "a", 0, &v));
    CHECK(!vdnn_feature_collector_take(fc, NULL, 0, &v));
    CHECK(!vdnn_feature_collector_take(fc, "a", 0, NULL));
    CHECK(!vdnn_feature_collector_take(fc, "a", 0, &v)); /* no such feature */
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "a", 0, 1.5), 0);
    const size_t with_name = vdnn_feature_collector_bytes(fc);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "a", 5000, 2.5), 0);
    CHECK(vdnn_feature_collector_bytes(fc) > with_name);
    CHECK(vdnn_feature_collector_take(fc, "a", 5000, &v));
    CHECK(v == 2.5);
    CHECK(!vdnn_feature_collector_has(fc, "a", 5000));
    CHECK(!vdnn_feature_collector_take(fc, "a", 5000, &v)); /* taken once */
    /* Its leaf is gone: what is left over is the directory's growth to 2 leaves. */
    CHECK(vdnn_feature_collector_bytes(fc) <= with_name + 2 * sizeof(void *));
    CHECK(vdnn_feature_collector_has(fc, "a", 0)); /* the other leaf is untouched */
    /* A leaf with another value stays; the frame can be written again. */
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "a", 1, 3.0), 0);
    CHECK(vdnn_feature_collector_take(fc, "a", 0, &v));
    CHECK(v == 1.5 && vdnn_feature_collector_has(fc, "a", 1));
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "a", 0, 4.0), 0);
    /* 100k values passing through one at a time never hold more than one leaf. */
    size_t most = 0;
    for (unsigned i = 10000; i < 110000; i++) {
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, "through", i, i), 0);
        size_t b = vdnn_feature_collector_bytes(fc);
        most = b > most ? b : most;
        CHECK(vdnn_feature_collector_take(fc, "through", i, &v) && v == i);
    }
    CHECK(most < with_name + 2 * 40 * 1024);
    vdnn_feature_collector_free(fc);
}

int main(void)
{
    test_lifecycle();
    test_append_get();
    test_growth_and_range();
    test_names();
    test_pooling();
    test_threads();
    test_many_names();
    test_sparse();
    test_budget();
    test_take();
    return check_report();
}
