/* Tests of csrc/output.c: exact JSON/XML/CSV text for a small collector,
 * escaping, refusals, and the atomic path writer: failures, symbolic links,
 * modes, racing writers, a killed writer, and its named-temporary fallback. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "error.h"
#include "feature_collector.h"
#include "output.h"
#include "vmafdnn/context.h"

/* psnr_y on frames 0, 1, 3 (appended out of order), ssim_y on 0 and 3 (NaN),
 * mymodel_score on 1 only; frame 2 has nothing. */
static VdnnFeatureCollector *sample_collector(void)
{
    VdnnFeatureCollector *fc = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "psnr_y", 3, 30.5), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "psnr_y", 0, 34.123456), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "ssim_y", 3, NAN), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "psnr_y", 1, 32.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "ssim_y", 0, 0.9), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "mymodel_score", 1, 1.5), 0);
    return fc;
}

static const VdnnReportMetric sample_aggregates[] = {{"mymodel_agg", 2.0},
                                                     {"inf_agg", INFINITY}};
static const VdnnReportParam sample_params[] = {{"model", "a<&>\"'b"}};

static VdnnReportInfo sample_info(void)
{
    VdnnReportInfo info;
    vdnn_report_info_default(&info);
    info.fps = 25.0;
    info.width = 64;
    info.height = 48;
    info.aggregates = sample_aggregates;
    info.n_aggregates = 2;
    info.params = sample_params;
    info.n_params = 1;
    return info;
}

/* Pooled psnr_y: mean (34.123456 + 32 + 30.5) / 3 = 32.2078186..., harmonic
 * 3 / (1/35.123456 + 1/33 + 1/31.5) - 1 = 32.1418243... */
static const char golden_json[] =
    "{\n"
    "  \"version\": \"libvmafdnn 0.1.0\",\n"
    "  \"fps\": 25.00,\n"
    "  \"frames\": [\n"
    "    {\n"
    "      \"frameNum\": 0,\n"
    "      \"metrics\": {\n"
    "        \"psnr_y\": 34.123456,\n"
    "        \"ssim_y\": 0.900000\n"
    "      }\n"
    "    },\n"
    "    {\n"
    "      \"frameNum\": 1,\n"
    "      \"metrics\": {\n"
    "        \"psnr_y\": 32.000000,\n"
    "        \"mymodel_score\": 1.500000\n"
    "      }\n"
    "    },\n"
    "    {\n"
    "      \"frameNum\": 3,\n"
    "      \"metrics\": {\n"
    "        \"psnr_y\": 30.500000,\n"
    "        \"ssim_y\": null\n"
    "      }\n"
    "    }\n"
    "  ],\n"
    "  \"pooled_metrics\": {\n"
    "    \"psnr_y\": {\n"
    "      \"min\": 30.500000,\n"
    "      \"max\": 34.123456,\n"
    "      \"mean\": 32.207819,\n"
    "      \"harmonic_mean\": 32.141824\n"
    "    },\n"
    "    \"ssim_y\": {\n"
    "      \"min\": 0.900000,\n"
    "      \"max\": 0.900000,\n"
    "      \"mean\": null,\n"
    "      \"harmonic_mean\": null\n"
    "    },\n"
    "    \"mymodel_score\": {\n"
    "      \"min\": 1.500000,\n"
    "      \"max\": 1.500000,\n"
    "      \"mean\": 1.500000,\n"
    "      \"harmonic_mean\": 1.500000\n"
    "    }\n"
    "  },\n"
    "  \"aggregate_metrics\": {\n"
    "    \"mymodel_agg\": 2.000000,\n"
    "    \"inf_agg\": null\n"
    "  }\n"
    "}\n";

static const char golden_xml[] =
    "<VMAF version=\"libvmafdnn 0.1.0\">\n"
    "  <params qualityWidth=\"64\" qualityHeight=\"48\" model=\"a&lt;&amp;&gt;&quot;&apos;b\" />\n"
    "  <fyi fps=\"25.00\" />\n"
    "  <frames>\n"
    "    <frame frameNum=\"0\" psnr_y=\"34.123456\" ssim_y=\"0.900000\" />\n"
    "    <frame frameNum=\"1\" psnr_y=\"32.000000\" mymodel_score=\"1.500000\" />\n"
    "    <frame frameNum=\"3\" psnr_y=\"30.500000\" ssim_y=\"nan\" />\n"
    "  </frames>\n"
    "  <pooled_metrics>\n"
    "    <metric name=\"psnr_y\" min=\"30.500000\" max=\"34.123456\" mean=\"32.207819\" "
    "harmonic_mean=\"32.141824\" />\n"
    "    <metric name=\"ssim_y\" min=\"0.900000\" max=\"0.900000\" mean=\"nan\" harmonic_mean=\"nan\" />\n"
    "    <metric name=\"mymodel_score\" min=\"1.500000\" max=\"1.500000\" mean=\"1.500000\" "
    "harmonic_mean=\"1.500000\" />\n"
    "  </pooled_metrics>\n"
    "  <aggregate_metrics mymodel_agg=\"2.000000\" inf_agg=\"inf\" />\n"
    "</VMAF>\n";

static const char golden_csv[] =
    "Frame,psnr_y,ssim_y,mymodel_score,\n"
    "0,34.123456,0.900000,,\n"
    "1,32.000000,,1.500000,\n"
    "3,30.500000,nan,,\n";

/* Renders a report into a malloc'd string (*text, caller frees; "" on error). */
static int render(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                  const VdnnReportInfo *info, char **text)
{
    size_t size = 0;
    FILE *f = open_memstream(text, &size);
    CHECK(f != NULL);
    if (!f)
        return -ENOMEM;
    int err = vdnn_write_report(fc, fmt, f, info);
    fclose(f);
    return err;
}

/* Renders and compares with the expected text, printing both on mismatch. */
static void check_render(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                         const VdnnReportInfo *info, const char *want)
{
    char *got = NULL;
    CHECK_EQ_INT(render(fc, fmt, info, &got), 0);
    int same = got && strcmp(got, want) == 0;
    CHECK(same);
    if (!same)
        fprintf(stderr, "--- got:\n%s--- want:\n%s---\n", got ? got : "(null)", want);
    free(got);
}

/* Renders expecting failure `err`, and checks that nothing was written. */
static void check_refused(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                          const VdnnReportInfo *info, int err, const char *message)
{
    char *got = NULL;
    CHECK_EQ_INT(render(fc, fmt, info, &got), err);
    CHECK(got && got[0] == '\0');
    CHECK_STR_CONTAINS(vdnn_last_error(), message);
    free(got);
}

static void test_golden(void)
{
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    check_render(fc, VDNN_REPORT_JSON, &info, golden_json);
    check_render(fc, VDNN_REPORT_XML, &info, golden_xml);
    check_render(fc, VDNN_REPORT_CSV, &info, golden_csv);
    vdnn_feature_collector_free(fc);
}

static void test_range_and_defaults(void)
{
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info;
    vdnn_report_info_default(&info);
    info.first_frame = 1;
    info.last_frame = 1;
    /* ssim_y has no value in frame 1: no column. */
    check_render(fc, VDNN_REPORT_CSV, &info,
                 "Frame,psnr_y,mymodel_score,\n1,32.000000,1.500000,\n");
    check_render(fc, VDNN_REPORT_XML, &info,
                 "<VMAF version=\"libvmafdnn 0.1.0\">\n"
                 "  <params />\n"
                 "  <fyi fps=\"0.00\" />\n"
                 "  <frames>\n"
                 "    <frame frameNum=\"1\" psnr_y=\"32.000000\" mymodel_score=\"1.500000\" />\n"
                 "  </frames>\n"
                 "  <pooled_metrics>\n"
                 "    <metric name=\"psnr_y\" min=\"32.000000\" max=\"32.000000\" "
                 "mean=\"32.000000\" harmonic_mean=\"32.000000\" />\n"
                 "    <metric name=\"mymodel_score\" min=\"1.500000\" max=\"1.500000\" "
                 "mean=\"1.500000\" harmonic_mean=\"1.500000\" />\n"
                 "  </pooled_metrics>\n"
                 "  <aggregate_metrics />\n"
                 "</VMAF>\n");

    /* A range with no values, and an empty collector, give empty reports. */
    static const char empty_json[] = "{\n"
                                     "  \"version\": \"libvmafdnn 0.1.0\",\n"
                                     "  \"fps\": 0.00,\n"
                                     "  \"frames\": [\n"
                                     "  ],\n"
                                     "  \"pooled_metrics\": {\n"
                                     "  },\n"
                                     "  \"aggregate_metrics\": {\n"
                                     "  }\n"
                                     "}\n";
    info.first_frame = 2;
    info.last_frame = 2;
    check_render(fc, VDNN_REPORT_JSON, &info, empty_json);
    info.first_frame = 4;
    info.last_frame = VDNN_REPORT_LAST_FRAME;
    check_render(fc, VDNN_REPORT_CSV, &info, "Frame,\n");

    VdnnFeatureCollector *empty = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&empty), 0);
    check_render(empty, VDNN_REPORT_JSON, NULL, empty_json);
    check_render(empty, VDNN_REPORT_CSV, NULL, "Frame,\n");
    vdnn_feature_collector_free(empty);

    /* NULL info and NULL version mean the defaults; fps NaN is null. */
    char *got = NULL;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, NULL, &got), 0);
    CHECK_STR_CONTAINS(got, "\"version\": \"libvmafdnn 0.1.0\",\n  \"fps\": 0.00,\n");
    free(got);
    vdnn_report_info_default(&info);
    info.version = NULL;
    info.fps = NAN;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, &info, &got), 0);
    CHECK_STR_CONTAINS(got, "\"version\": \"libvmafdnn 0.1.0\",\n  \"fps\": null,\n");
    free(got);
    info.version = "tool \"x\" 1.0";
    info.fps = -INFINITY;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_XML, &info, &got), 0);
    CHECK_STR_CONTAINS(got, "<VMAF version=\"tool &quot;x&quot; 1.0\">\n");
    CHECK_STR_CONTAINS(got, "<fyi fps=\"-inf\" />");
    free(got);
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, &info, &got), 0);
    CHECK_STR_CONTAINS(got, "\"version\": \"tool \\\"x\\\" 1.0\",");
    free(got);
    vdnn_feature_collector_free(fc);
}

/* Frames far apart: reports visit the frames that hold values, in order,
 * across leaves of the sparse store and gaps, and never walk the empty
 * frames below a high index once per feature (this took 0.4 s a feature:
 * 256 names at frame 2^24 - 1 took over a minute, the 32,000 a default
 * budget allows would have taken hours). */
static void test_sparse_frames(void)
{
    const unsigned last = VDNN_FEATURE_MAX_FRAMES - 1;
    VdnnFeatureCollector *fc = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    static const unsigned a_frames[] = {last, 4096, 0, 63, 64, 4095};
    for (size_t i = 0; i < sizeof(a_frames) / sizeof(a_frames[0]); i++)
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, "a", a_frames[i],
                                                   a_frames[i] == 4096 ? NAN : i + 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "b", 1u << 20, 7.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "b", 4095, 8.0), 0);
    VdnnReportInfo info;
    vdnn_report_info_default(&info);
    check_render(fc, VDNN_REPORT_CSV, &info,
                 "Frame,a,b,\n"
                 "0,3.000000,,\n"
                 "63,4.000000,,\n"
                 "64,5.000000,,\n"
                 "4095,6.000000,8.000000,\n"
                 "4096,nan,,\n"
                 "1048576,,7.000000,\n"
                 "16777215,1.000000,,\n");
    info.first_frame = 64;
    info.last_frame = 1u << 20;
    check_render(fc, VDNN_REPORT_CSV, &info,
                 "Frame,a,b,\n"
                 "64,5.000000,,\n"
                 "4095,6.000000,8.000000,\n"
                 "4096,nan,,\n"
                 "1048576,,7.000000,\n");
    info.first_frame = 4097;
    info.last_frame = last - 1;
    check_render(fc, VDNN_REPORT_CSV, &info, "Frame,b,\n1048576,7.000000,\n");
    vdnn_feature_collector_free(fc);

    enum { NAMES = 256 };
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    char name[32];
    for (unsigned i = 0; i < NAMES; i++) {
        snprintf(name, sizeof(name), "h%u", i);
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, name, last, i), 0);
    }
    /* CPU time, not the wall clock: other load on the machine does not
     * stretch it. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (int fmt = VDNN_REPORT_JSON; fmt <= VDNN_REPORT_CSV; fmt++) {
        char *got = NULL;
        CHECK_EQ_INT(render(fc, (VdnnReportFormat)fmt, NULL, &got), 0);
        CHECK_STR_CONTAINS(got, "16777215");
        free(got);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    const double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(s < 5.0);
    if (s >= 5.0)
        fprintf(stderr, "three reports of %d features at frame %u took %.1f s of CPU\n", NAMES, last,
                s);
    vdnn_feature_collector_free(fc);
}

static void test_awkward_names(void)
{
    VdnnFeatureCollector *fc = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "a\"b\\c", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "my,model", 1, -0.25), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "qualit\xc3\xa9", 1, 1e-9), 0);

    char *got = NULL;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, NULL, &got), 0);
    CHECK_STR_CONTAINS(got, "        \"a\\\"b\\\\c\": 1.000000\n");
    CHECK_STR_CONTAINS(got, "        \"my,model\": -0.250000,\n"
                            "        \"qualit\xc3\xa9\": 0.0000000010000000\n");
    CHECK_STR_CONTAINS(got, "    \"a\\\"b\\\\c\": {\n");
    free(got);
    check_render(fc, VDNN_REPORT_CSV, NULL,
                 "Frame,\"a\"\"b\\c\",\"my,model\",qualit\xc3\xa9,\n"
                 "0,1.000000,,,\n"
                 "1,,-0.250000,0.0000000010000000,\n");
    /* XML attribute names cannot carry these: refused before writing. */
    check_refused(fc, VDNN_REPORT_XML, NULL, -EINVAL,
                  "feature name \"a\"b\\c\" cannot be an XML attribute name");
    vdnn_feature_collector_free(fc);

    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "frameNum", 0, 1.0), 0);
    check_refused(fc, VDNN_REPORT_XML, NULL, -EINVAL, "\"frameNum\" clashes");
    check_render(fc, VDNN_REPORT_CSV, NULL, "Frame,frameNum,\n0,1.000000,\n");
    vdnn_feature_collector_free(fc);

    /* A feature outside the range is not in the report, so it cannot make
     * the XML writer refuse. */
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "ok", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "9 not xml", 5, 1.0), 0);
    VdnnReportInfo info;
    vdnn_report_info_default(&info);
    info.last_frame = 4;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_XML, &info, &got), 0);
    CHECK_STR_CONTAINS(got, "<frame frameNum=\"0\" ok=\"1.000000\" />\n  </frames>");
    free(got);
    vdnn_feature_collector_free(fc);
}

static void test_refusals(void)
{
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    char *got = NULL;

    CHECK_EQ_INT(vdnn_write_report(NULL, VDNN_REPORT_JSON, stdout, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_write_report(fc, VDNN_REPORT_JSON, NULL, NULL), -EINVAL);
    check_refused(fc, (VdnnReportFormat)3, NULL, -EINVAL, "unknown report format 3");
    info.first_frame = 2;
    info.last_frame = 1;
    check_refused(fc, VDNN_REPORT_JSON, &info, -EINVAL, "frame range 2..1 is empty");

    info = sample_info();
    info.version = "bad\nversion";
    check_refused(fc, VDNN_REPORT_JSON, &info, -EINVAL, "report version");
    info.version = "";
    check_refused(fc, VDNN_REPORT_CSV, &info, -EINVAL, "report version is empty");

    info = sample_info();
    const VdnnReportMetric twice[] = {{"a", 1.0}, {"b", 2.0}, {"a", 3.0}};
    info.aggregates = twice;
    info.n_aggregates = 3;
    check_refused(fc, VDNN_REPORT_JSON, &info, -EINVAL,
                  "aggregate metric name \"a\" is given twice");
    info.aggregates = NULL;
    check_refused(fc, VDNN_REPORT_JSON, &info, -EINVAL, "array is NULL");
    const VdnnReportMetric not_xml[] = {{"2pass", 1.0}};
    info.aggregates = not_xml;
    info.n_aggregates = 1;
    check_refused(fc, VDNN_REPORT_XML, &info, -EINVAL,
                  "aggregate metric name \"2pass\" cannot be an XML attribute name");
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, &info, &got), 0);
    CHECK_STR_CONTAINS(got, "\"aggregate_metrics\": {\n    \"2pass\": 1.000000\n  }\n");
    free(got);

    /* Params are XML only: checked there, ignored elsewhere. */
    info = sample_info();
    const VdnnReportParam dup[] = {{"model", "a"}, {"model", "b"}};
    info.params = dup;
    info.n_params = 2;
    check_refused(fc, VDNN_REPORT_XML, &info, -EINVAL, "report param name \"model\" is given twice");
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, &info, &got), 0);
    free(got);
    const VdnnReportParam ctrl[] = {{"model", "a\tb"}};
    info.params = ctrl;
    info.n_params = 1;
    check_refused(fc, VDNN_REPORT_XML, &info, -EINVAL,
                  "value of report param \"model\" \"a...\" has control character U+0009");
    vdnn_feature_collector_free(fc);
}

static void test_stream_errors(void)
{
    VdnnFeatureCollector *fc = sample_collector();
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        CHECK_EQ_INT(vdnn_write_report(fc, VDNN_REPORT_JSON, full, NULL), -EIO);
        CHECK_STR_CONTAINS(vdnn_last_error(), "cannot write the JSON report: No space left");
        fclose(full);
    } else {
        printf("note: /dev/full missing, stream error check skipped\n");
    }
    vdnn_feature_collector_free(fc);
}

/* Under a locale with a decimal comma the numbers must keep their '.'. Needs
 * a de_DE.UTF-8 locale (LOCPATH may point at one built with localedef). */
static void test_locale(void)
{
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8")) {
        printf("note: no de_DE.UTF-8 locale, decimal-comma check skipped\n");
        return;
    }
    char buf[16];
    snprintf(buf, sizeof(buf), "%.1f", 1.5);
    CHECK(strcmp(buf, "1,5") == 0);
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    check_render(fc, VDNN_REPORT_JSON, &info, golden_json);
    check_render(fc, VDNN_REPORT_CSV, &info, golden_csv);
    snprintf(buf, sizeof(buf), "%.1f", 1.5); /* the thread's locale is restored */
    CHECK(strcmp(buf, "1,5") == 0);
    setlocale(LC_NUMERIC, "C");
    vdnn_feature_collector_free(fc);
}


/* libvmaf's digits: "%.6f", but "%.16f" within 1e-6 of an integer (not on
 * it). The expected strings are what libvmaf 86da14d wrote for such values
 * (integer_vif_scale1, motion3) or follow from the same rule. */
static void test_number_rule(void)
{
    static const struct {
        double x;
        const char *text;
    } cases[] = {
        {1.0000005960464478, "1.0000005960464478"}, /* libvmaf log */
        {0.0000003382048419, "0.0000003382048419"}, /* libvmaf log */
        {2.0000004768371582, "2.0000004768371582"}, /* libvmaf log: any integer */
        {1.0000012, "1.000001"},                    /* 1.2e-6 away: six digits */
        {0.999998, "0.999998"},
        {1.0, "1.000000"},
        {0.0, "0.000000"},
        {60.0, "60.000000"},
        {-1e-9, "-0.0000000010000000"},
        {42.5, "42.500000"},
        {1e-6, "0.000001"},                         /* the bound itself: six */
    };
    VdnnFeatureCollector *fc = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_EQ_INT(vdnn_feature_collector_append(fc, "x", i, cases[i].x), 0);
    char *got = NULL;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_CSV, NULL, &got), 0);
    for (unsigned i = 0; got && i < sizeof(cases) / sizeof(cases[0]); i++) {
        char row[64];
        snprintf(row, sizeof(row), "\n%u,%s,\n", i, cases[i].text);
        CHECK_STR_CONTAINS(got, row);
    }
    free(got);

    /* exact: every number reads back as the same double. */
    VdnnReportInfo info;
    vdnn_report_info_default(&info);
    info.exact = true;
    info.fps = 1.0 / 3.0;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, &info, &got), 0);
    CHECK_STR_CONTAINS(got, "\"fps\": 0.33333333333333331,");
    CHECK_STR_CONTAINS(got, "\"x\": 1.0000005960464478\n");
    CHECK_STR_CONTAINS(got, "\"x\": 1.0000012\n");
    free(got);
    vdnn_feature_collector_free(fc);
}

typedef struct Pieces {
    char text[4096];
    size_t length;
    int calls;
    bool stop; /* refuse every piece */
} Pieces;

static int take_piece(void *opaque, const char *data, size_t size)
{
    Pieces *p = opaque;
    if (p->stop)
        return 1;
    p->calls++;
    if (p->length + size < sizeof(p->text)) {
        memcpy(p->text + p->length, data, size);
        p->length += size;
        p->text[p->length] = '\0';
    }
    return 0;
}

/* The callback writer gives the same bytes as the FILE writer; a callback
 * that says stop ends the report with -ECANCELED. */
static void test_callback(void)
{
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    Pieces p = {0};
    CHECK_EQ_INT(vdnn_write_report_callback(fc, VDNN_REPORT_XML, take_piece, &p, &info), 0);
    CHECK(strcmp(p.text, golden_xml) == 0);
    CHECK(p.calls >= 1);

    Pieces stop = {.stop = true};
    CHECK_EQ_INT(vdnn_write_report_callback(fc, VDNN_REPORT_JSON, take_piece, &stop, &info),
                 -ECANCELED);
    CHECK_STR_CONTAINS(vdnn_last_error(), "callback stopped it");
    CHECK_EQ_INT(vdnn_write_report_callback(fc, VDNN_REPORT_JSON, NULL, &p, &info), -EINVAL);

    /* qualityWidth / qualityHeight come from the size; a param cannot
     * repeat them. */
    static const VdnnReportParam clash[] = {{"qualityWidth", "1"}};
    info.params = clash;
    info.n_params = 1;
    check_refused(fc, VDNN_REPORT_XML, &info, -EINVAL, "\"qualityWidth\" is reserved");
    vdnn_feature_collector_free(fc);
}


/* The public in-memory writers: snprintf-like buffer (size query, exact
 * fit, truncation), callback, exact flag, fps override, refusals. */
static void test_context_buffer(void)
{
    VmafDnnContext *ctx = NULL;
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.fps = 12.5;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "tiny", 0, 3.382048419e-7), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "tiny", 1, 0.1), 0);

    size_t length = 0;
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 0, NULL, 0, &length),
                 -ENOBUFS);
    static const char csv[] = "Frame,tiny,\n0,0.0000003382048419,\n1,0.100000,\n";
    CHECK_EQ_INT(length, strlen(csv));
    char buf[2048];
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 0, buf, length + 1,
                                              &length), 0);
    CHECK(strcmp(buf, csv) == 0);
    memset(buf, 'x', sizeof(buf));
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 0, buf, 8, &length),
                 -ENOBUFS);
    CHECK(strcmp(buf, "Frame,t") == 0);
    CHECK_EQ_INT(length, strlen(csv));
    CHECK_STR_CONTAINS(vdnn_last_error(), "holds 8");

    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_JSON, VMAF_DNN_OUTPUT_EXACT,
                                              buf, sizeof(buf), &length), 0);
    CHECK_STR_CONTAINS(buf, "\"fps\": 12.5,");
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "whole", 0, 60.0), 0);
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_JSON, VMAF_DNN_OUTPUT_EXACT,
                                              buf, sizeof(buf), &length), 0);
    CHECK_STR_CONTAINS(buf, "\"whole\": 60.0\n");
    CHECK_STR_CONTAINS(buf, "\"tiny\": 3.3820484190000002e-07,\n");

    Pieces p = {0};
    CHECK_EQ_INT(vmaf_dnn_write_output_callback(ctx, VMAF_DNN_OUTPUT_XML, 0, take_piece, &p), 0);
    CHECK_STR_CONTAINS(p.text, "<VMAF version=");
    CHECK_STR_CONTAINS(p.text, "  <params />\n  <fyi fps=\"12.50\" />\n");
    Pieces stop = {.stop = true};
    CHECK_EQ_INT(vmaf_dnn_write_output_callback(ctx, VMAF_DNN_OUTPUT_XML, 0, take_piece, &stop),
                 -ECANCELED);

    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 0, NULL, 4, &length),
                 -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 0, buf, 4, NULL),
                 -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, VMAF_DNN_OUTPUT_CSV, 2, buf, 4, &length),
                 -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "unknown flags 0x2");
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(ctx, (VmafDnnOutputFormat)7, 0, buf, 4, &length),
                 -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_callback(ctx, VMAF_DNN_OUTPUT_CSV, 0, NULL, NULL),
                 -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_write_output_buffer(NULL, VMAF_DNN_OUTPUT_CSV, 0, buf, 4, &length),
                 -EINVAL);
    vmaf_dnn_context_close(ctx);
}

/* ----------------------------------------------------------- path writer -- */

static char *read_all(const char *path)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = fopen(path, "rb");
    FILE *m = open_memstream(&text, &size);
    int c;
    while (f && m && (c = fgetc(f)) != EOF)
        fputc(c, m);
    if (m)
        fclose(m);
    if (f)
        fclose(f);
    if (!f) {
        free(text);
        return NULL;
    }
    return text;
}

static void check_file(const char *path, const char *want)
{
    char *got = read_all(path);
    CHECK(got && strcmp(got, want) == 0);
    free(got);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Names in `dir` other than . and .., sorted and joined by spaces: what a
 * writer left behind. */
static void dir_listing(const char *dir, char *out, size_t size)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            size_t used = strlen(out);
            snprintf(out + used, size - used, "%s%s", used ? " " : "", name);
        }
        free(names[i]);
    }
    free(names);
}

#define CHECK_LISTING(dir, want)                                                   \
    do {                                                                           \
        char listing_[1024];                                                       \
        dir_listing(dir, listing_, sizeof(listing_));                              \
        if (strcmp(listing_, want) != 0)                                           \
            printf("%s:%d: directory has \"%s\", expected \"%s\"\n", __FILE__,     \
                   __LINE__, listing_, want);                                      \
        CHECK(strcmp(listing_, want) == 0);                                        \
    } while (0)

static mode_t mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

static char *make_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/vdnn_test_output_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    return dir;
}

/* A fresh directory, and `path` set to `name` in it. */
static const char *make_dir_for(const char *name, char *path, size_t size)
{
    const char *dir = make_dir();
    snprintf(path, size, "%s/%s", dir, name);
    return dir;
}

static void remove_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

static void test_path(void)
{
    char path[256], tmp[300], missing[256];
    const char *dir = make_dir_for("report.json", path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    snprintf(missing, sizeof(missing), "%s/no/such/dir/report.json", dir);

    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();

    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, &info), 0);
    check_file(path, golden_json);
    CHECK_LISTING(dir, "report.json");
    /* Replacing an existing report. */
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, &info), 0);
    check_file(path, golden_csv);
    CHECK_LISTING(dir, "report.json");

    /* Every failure below leaves the good report as it was, and nothing else. */
    VdnnFeatureCollector *bad = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&bad), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(bad, "not xml", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_write_report_path(bad, VDNN_REPORT_XML, path, NULL), -EINVAL);
    check_file(path, golden_csv);
    CHECK_LISTING(dir, "report.json");
    vdnn_feature_collector_free(bad);

    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, missing, NULL), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "no/such/dir\": No such file or directory");
    CHECK_LISTING(dir, "report.json");

    /* The old fixed temporary name means nothing any more: a directory or a
     * planted link there is neither used nor touched. */
    CHECK_EQ_INT(mkdir(tmp, 0700), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, NULL), 0);
    CHECK_EQ_INT(rmdir(tmp), 0);
    CHECK_EQ_INT(symlink("elsewhere", tmp), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, &info), 0);
    check_file(path, golden_csv);
    CHECK_LISTING(dir, "report.json report.json.tmp");
    CHECK_EQ_INT(unlink(tmp), 0);

    /* A write failing half-way (file size limit: EFBIG, as a full disk would
     * give ENOSPC) leaves no partial file behind. */
    struct rlimit saved;
    CHECK_EQ_INT(getrlimit(RLIMIT_FSIZE, &saved), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 100;
    CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
    int err = vdnn_write_report_path(fc, VDNN_REPORT_XML, path, &info);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    CHECK_EQ_INT(err, -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "cannot write the XML report to");
    CHECK_STR_CONTAINS(vdnn_last_error(), "File too large");
    check_file(path, golden_csv);
    CHECK_LISTING(dir, "report.json");

    /* A directory cannot be replaced by a report. */
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    CHECK_EQ_INT(mkdir(sub, 0700), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, sub, NULL), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "cannot rename over");
    CHECK_LISTING(dir, "report.json sub");
    CHECK_EQ_INT(rmdir(sub), 0);

    /* A character device is written in place, never replaced. */
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, "/dev/null", NULL), 0);
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(!exists("/dev/null.tmp"));

    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, NULL, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, "", NULL), -EINVAL);
    snprintf(sub, sizeof(sub), "%s/..", dir);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, sub, NULL), -EINVAL);

    vdnn_feature_collector_free(fc);
    remove_dir(dir);
}

/* A link is followed: its target gets the report, the link stays a link. */
static void test_symlinks(void)
{
    const char *dir = make_dir();
    char sub[256], link[256], chain[256], target[256], dangling[256], loop[256];
    snprintf(sub, sizeof(sub), "%s/data", dir);
    snprintf(target, sizeof(target), "%s/data/report.json", dir);
    snprintf(link, sizeof(link), "%s/link.json", dir);
    snprintf(chain, sizeof(chain), "%s/chain.json", dir);
    snprintf(dangling, sizeof(dangling), "%s/dangling.json", dir);
    snprintf(loop, sizeof(loop), "%s/loop.json", dir);
    CHECK_EQ_INT(mkdir(sub, 0700), 0);
    CHECK_EQ_INT(symlink("data/report.json", link), 0); /* relative to the link */
    CHECK_EQ_INT(symlink(link, chain), 0);              /* absolute, to a link */

    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, link, &info), 0);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    check_file(target, golden_json);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, chain, &info), 0);
    CHECK(lstat(chain, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    check_file(target, golden_csv);
    CHECK_LISTING(dir, "chain.json data link.json");
    CHECK_LISTING(sub, "report.json");

    /* A dangling link creates what it names. */
    CHECK_EQ_INT(symlink("data/new.json", dangling), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, dangling, &info), 0);
    CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    check_file(dangling, golden_csv);
    CHECK_LISTING(sub, "new.json report.json");

    /* A loop is refused with ELOOP, touching nothing. */
    CHECK_EQ_INT(symlink("loop.json", loop), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, loop, &info), -ELOOP);
    CHECK_STR_CONTAINS(vdnn_last_error(), "more than 40 symbolic links");
    CHECK_LISTING(dir, "chain.json dangling.json data link.json loop.json");

    vdnn_feature_collector_free(fc);
    remove_dir(dir);
}

/* An existing report keeps its permission bits; a new one gets the umask's. */
static void test_modes(void)
{
    char path[256], link[256];
    const char *dir = make_dir_for("report.csv", path, sizeof(path));
    snprintf(link, sizeof(link), "%s/link.csv", dir);
    VdnnFeatureCollector *fc = sample_collector();

    mode_t saved = umask(022);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, NULL), 0);
    CHECK_EQ_INT(mode_of(path), 0644);
    CHECK_EQ_INT(chmod(path, 0600), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, NULL), 0);
    CHECK_EQ_INT(mode_of(path), 0600);
    CHECK_EQ_INT(chmod(path, 0640), 0);
    CHECK_EQ_INT(symlink("report.csv", link), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, link, NULL), 0);
    CHECK_EQ_INT(mode_of(path), 0640);
    CHECK_EQ_INT(unlink(path), 0);
    umask(077);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, NULL), 0);
    CHECK_EQ_INT(mode_of(path), 0600);
    umask(saved);

    vdnn_feature_collector_free(fc);
    remove_dir(dir);
}

/* Two processes write 200 reports each to one path, alternating between two
 * different texts, while this one reads it: every read is one whole report,
 * and at the end only the report is in the directory. */
static void test_concurrent_writers(void)
{
    char path[256];
    const char *dir = make_dir_for("report.json", path, sizeof(path));
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, &info), 0);

    pid_t child[2];
    for (int c = 0; c < 2; c++) {
        child[c] = fork();
        if (child[c] == 0) {
            int failures = 0;
            for (int i = 0; i < 200; i++) {
                VdnnReportFormat fmt = (i + c) % 2 ? VDNN_REPORT_CSV : VDNN_REPORT_JSON;
                failures += vdnn_write_report_path(fc, fmt, path, &info) != 0;
            }
            _exit(failures ? 1 : 0);
        }
        CHECK(child[c] > 0);
    }
    int reads = 0, torn = 0, running = 2;
    while (running > 0) {
        char *got = read_all(path);
        reads++;
        torn += !got || (strcmp(got, golden_json) != 0 && strcmp(got, golden_csv) != 0);
        free(got);
        for (int c = 0; c < 2; c++) {
            int status;
            if (child[c] > 0 && waitpid(child[c], &status, WNOHANG) == child[c]) {
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                child[c] = 0;
                running--;
            }
        }
    }
    CHECK(reads > 0);
    CHECK_EQ_INT(torn, 0);
    CHECK_LISTING(dir, "report.json");
    vdnn_feature_collector_free(fc);
    remove_dir(dir);
}

/* SIGTERM (default action: die) at any moment of a stream of writes never
 * leaves a temporary file: O_TMPFILE has no name while written, and the
 * signal is held during the naming calls. */
static void test_killed_writer(void)
{
    char path[256];
    const char *dir = make_dir_for("report.json", path, sizeof(path));
    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, &info);
        }
        CHECK(pid > 0);
        const struct timespec pause = {0, (round % 5 + 1) * 1000 * 1000L};
        nanosleep(&pause, NULL);
        kill(pid, SIGTERM);
        int status;
        CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
              WTERMSIG(status) == SIGTERM);
        char listing[1024];
        dir_listing(dir, listing, sizeof(listing));
        CHECK(strcmp(listing, "report.json") == 0 || strcmp(listing, "") == 0);
        if (exists(path))
            check_file(path, golden_json);
    }
    vdnn_feature_collector_free(fc);
    remove_dir(dir);
}

/* The named-temporary fallback (file systems without O_TMPFILE): the same
 * guarantees for links, modes and racing writers, and the stale files of a
 * killed writer are removed by the next write, but not a live writer's. */
static void test_fallback(void)
{
    vdnn_output_use_tmpfile(false);
    test_path();
    test_symlinks();
    test_modes();
    test_concurrent_writers();

    char path[256], stale[256], young[256], locked[256], other[256];
    const char *dir = make_dir_for("report.json", path, sizeof(path));
    snprintf(stale, sizeof(stale), "%s/report.json.Ab3dEf", dir);
    snprintf(young, sizeof(young), "%s/report.json.young1", dir);
    snprintf(locked, sizeof(locked), "%s/report.json.locked", dir);
    snprintf(other, sizeof(other), "%s/report.json.not-a-tmp", dir);
    const char *files[] = {stale, young, locked, other};
    for (size_t i = 0; i < 4; i++) {
        FILE *f = fopen(files[i], "w");
        CHECK(f != NULL);
        if (f)
            fclose(f);
    }
    const struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    CHECK_EQ_INT(utimensat(AT_FDCWD, stale, old, 0), 0);
    CHECK_EQ_INT(utimensat(AT_FDCWD, locked, old, 0), 0);
    CHECK_EQ_INT(utimensat(AT_FDCWD, other, old, 0), 0);
    int held = open(locked, O_RDONLY);
    CHECK(held >= 0 && flock(held, LOCK_EX) == 0);

    VdnnFeatureCollector *fc = sample_collector();
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, NULL), 0);
    CHECK_LISTING(dir, "report.json report.json.locked report.json.not-a-tmp "
                       "report.json.young1");
    close(held);
    vdnn_feature_collector_free(fc);
    remove_dir(dir);
    vdnn_output_use_tmpfile(true);
}

/* CSV cells: a formula-like name is written after a quote mark (the rule
 * of output.h, shared with the Python batch writer); numbers-as-names are
 * not; "Frame" and names equal once written are refused. */
static void test_csv_formulas(void)
{
    VdnnFeatureCollector *fc = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "=HYPERLINK(\"http://x\",\"y\")", 0, 1.0),
                 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "@SUM(A1)", 0, 2.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "+cmd|' /C calc'!A0", 0, 3.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "-2+3", 0, -4.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "-5", 0, 5.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "+1.5e3", 0, 6.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "ok-name", 0, 7.0), 0);
    check_render(fc, VDNN_REPORT_CSV, NULL,
                 "Frame,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'@SUM(A1),"
                 "'+cmd|' /C calc'!A0,'-2+3,-5,+1.5e3,ok-name,\n"
                 "0,1.000000,2.000000,3.000000,-4.000000,5.000000,6.000000,7.000000,\n");
    vdnn_feature_collector_free(fc);

    /* TAB and CR cannot start a feature name (control characters are
     * refused when a value is stored): the rule covers them for other cells. */
    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "psnr_y", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "Frame", 0, 2.0), 0);
    check_refused(fc, VDNN_REPORT_CSV, NULL, -EINVAL,
                  "feature name \"Frame\" clashes with the CSV frame number column");
    char *got = NULL;
    CHECK_EQ_INT(render(fc, VDNN_REPORT_JSON, NULL, &got), 0); /* JSON can carry it */
    free(got);
    vdnn_feature_collector_free(fc);

    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "=x", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "'=x", 0, 2.0), 0);
    check_refused(fc, VDNN_REPORT_CSV, NULL, -EINVAL, "would be the same CSV column");
    vdnn_feature_collector_free(fc);
}

/* The writers' name rules, checked before any frame is scored: by name
 * (vdnn_report_check_features) and for a context (vmaf_dnn_check_output,
 * its stored features here; tests/c/test_context.c checks the keys of an
 * attached model). Before, a clashing name was found only when the report
 * was written, after every frame had been scored. */
static void test_check_before_scoring(void)
{
    static const char *const fine[] = {"psnr_y", "=x", "-5", "psnr_y"};
    for (int fmt = VDNN_REPORT_JSON; fmt <= VDNN_REPORT_CSV; fmt++)
        CHECK_EQ_INT(vdnn_report_check_features(fine, fmt == VDNN_REPORT_XML ? 1 : 4, fmt),
                     0);
    static const char *const frame[] = {"psnr_y", "Frame"};
    CHECK_EQ_INT(vdnn_report_check_features(frame, 2, VDNN_REPORT_CSV), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(),
                       "feature name \"Frame\" clashes with the CSV frame number column");
    CHECK_EQ_INT(vdnn_report_check_features(frame, 2, VDNN_REPORT_JSON), 0);
    CHECK_EQ_INT(vdnn_report_check_features(frame, 2, VDNN_REPORT_XML), 0);
    static const char *const quoted[] = {"=x", "a", "'=x"};
    CHECK_EQ_INT(vdnn_report_check_features(quoted, 3, VDNN_REPORT_CSV), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "\"=x\" and \"'=x\" would be the same CSV column");
    static const char *const frame_num[] = {"frameNum"};
    CHECK_EQ_INT(vdnn_report_check_features(frame_num, 1, VDNN_REPORT_XML), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "clashes with the XML frame number attribute");
    static const char *const not_xml[] = {"a b"};
    CHECK_EQ_INT(vdnn_report_check_features(not_xml, 1, VDNN_REPORT_XML), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), "cannot be an XML attribute name");
    CHECK_EQ_INT(vdnn_report_check_features(NULL, 1, VDNN_REPORT_CSV), -EINVAL);
    CHECK_EQ_INT(vdnn_report_check_features(NULL, 0, VDNN_REPORT_CSV), 0);
    CHECK_EQ_INT(vdnn_report_check_features(fine, 1, (VdnnReportFormat)3), -EINVAL);

    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, NULL), 0);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_CSV, NULL, 0), 0); /* nothing yet */
    /* Names the caller will append (a features file's) count too. */
    static const char *const later[] = {"vmaf", "Frame"};
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_CSV, later, 1), 0);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_CSV, later, 2), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "\"Frame\" clashes with the CSV frame number");
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, later, 2), 0);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, NULL, 2), -EINVAL);
    static const char *const null_name[] = {NULL};
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, null_name, 1), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, later, SIZE_MAX), -ENOMEM);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "'@SUM(A1)", 0, 1.0), 0);
    CHECK_EQ_INT(vmaf_dnn_feature_append(ctx, "@SUM(A1)", 0, 2.0), 0);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_CSV, NULL, 0), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "would be the same CSV column");
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_JSON, NULL, 0), 0);
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, VMAF_DNN_OUTPUT_XML, NULL, 0), -EINVAL); /* not XML names */
    CHECK_EQ_INT(vmaf_dnn_check_output(ctx, (VmafDnnOutputFormat)7, NULL, 0), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_check_output(NULL, VMAF_DNN_OUTPUT_JSON, NULL, 0), -EINVAL);
    vmaf_dnn_context_close(ctx);
}

int main(void)
{
    test_check_before_scoring();
    test_golden();
    test_range_and_defaults();
    test_sparse_frames();
    test_awkward_names();
    test_csv_formulas();
    test_number_rule();
    test_callback();
    test_context_buffer();
    test_refusals();
    test_stream_errors();
    test_locale();
    test_path();
    test_symlinks();
    test_modes();
    test_concurrent_writers();
    test_killed_writer();
    test_fallback();
    return check_report();
}
