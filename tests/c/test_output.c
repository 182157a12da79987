/* Tests of csrc/output.c: exact JSON/XML/CSV text for a small collector,
 * escaping, refusals, and the atomic path writer's failure behaviour. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "error.h"
#include "feature_collector.h"
#include "output.h"

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
    "      \"min\": null,\n"
    "      \"max\": null,\n"
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
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<VMAF version=\"libvmafdnn 0.1.0\">\n"
    "  <params model=\"a&lt;&amp;&gt;&quot;&apos;b\" />\n"
    "  <fyi fps=\"25.00\" />\n"
    "  <frames>\n"
    "    <frame frameNum=\"0\" psnr_y=\"34.123456\" ssim_y=\"0.900000\" />\n"
    "    <frame frameNum=\"1\" psnr_y=\"32.000000\" mymodel_score=\"1.500000\" />\n"
    "    <frame frameNum=\"3\" psnr_y=\"30.500000\" ssim_y=\"nan\" />\n"
    "  </frames>\n"
    "  <pooled_metrics>\n"
    "    <metric name=\"psnr_y\" min=\"30.500000\" max=\"34.123456\" mean=\"32.207819\" "
    "harmonic_mean=\"32.141824\" />\n"
    "    <metric name=\"ssim_y\" min=\"nan\" max=\"nan\" mean=\"nan\" harmonic_mean=\"nan\" />\n"
    "    <metric name=\"mymodel_score\" min=\"1.500000\" max=\"1.500000\" mean=\"1.500000\" "
    "harmonic_mean=\"1.500000\" />\n"
    "  </pooled_metrics>\n"
    "  <aggregate_metrics mymodel_agg=\"2.000000\" inf_agg=\"inf\" />\n"
    "</VMAF>\n";

static const char golden_csv[] =
    "Frame,psnr_y,ssim_y,mymodel_score\n"
    "0,34.123456,0.900000,\n"
    "1,32.000000,,1.500000\n"
    "3,30.500000,nan,\n";

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
                 "Frame,psnr_y,mymodel_score\n1,32.000000,1.500000\n");
    check_render(fc, VDNN_REPORT_XML, &info,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
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
    check_render(fc, VDNN_REPORT_CSV, &info, "Frame\n");

    VdnnFeatureCollector *empty = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&empty), 0);
    check_render(empty, VDNN_REPORT_JSON, NULL, empty_json);
    check_render(empty, VDNN_REPORT_CSV, NULL, "Frame\n");
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
                            "        \"qualit\xc3\xa9\": 0.000000\n");
    CHECK_STR_CONTAINS(got, "    \"a\\\"b\\\\c\": {\n");
    free(got);
    check_render(fc, VDNN_REPORT_CSV, NULL,
                 "Frame,\"a\"\"b\\c\",\"my,model\",qualit\xc3\xa9\n"
                 "0,1.000000,,\n"
                 "1,,-0.250000,0.000000\n");
    /* XML attribute names cannot carry these: refused before writing. */
    check_refused(fc, VDNN_REPORT_XML, NULL, -EINVAL,
                  "feature name \"a\"b\\c\" cannot be an XML attribute name");
    vdnn_feature_collector_free(fc);

    CHECK_EQ_INT(vdnn_feature_collector_init(&fc), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(fc, "frameNum", 0, 1.0), 0);
    check_refused(fc, VDNN_REPORT_XML, NULL, -EINVAL, "\"frameNum\" clashes");
    check_render(fc, VDNN_REPORT_CSV, NULL, "Frame,frameNum\n0,1.000000\n");
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

static void test_path(void)
{
    char dir[] = "/tmp/vdnn_test_output_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], tmp[300], missing[256], target[256];
    snprintf(path, sizeof(path), "%s/report.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    snprintf(missing, sizeof(missing), "%s/no/such/dir/report.json", dir);
    snprintf(target, sizeof(target), "%s/target", dir);

    VdnnFeatureCollector *fc = sample_collector();
    VdnnReportInfo info = sample_info();

    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, &info), 0);
    check_file(path, golden_json);
    CHECK(!exists(tmp));
    /* Replacing an existing report. */
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_CSV, path, &info), 0);
    check_file(path, golden_csv);
    CHECK(!exists(tmp));

    /* Every failure below leaves the good report as it was, and no .tmp. */
    VdnnFeatureCollector *bad = NULL;
    CHECK_EQ_INT(vdnn_feature_collector_init(&bad), 0);
    CHECK_EQ_INT(vdnn_feature_collector_append(bad, "not xml", 0, 1.0), 0);
    CHECK_EQ_INT(vdnn_write_report_path(bad, VDNN_REPORT_XML, path, NULL), -EINVAL);
    check_file(path, golden_csv);
    CHECK(!exists(tmp));
    vdnn_feature_collector_free(bad);

    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, missing, NULL), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "report.json.tmp\": No such file or directory");
    snprintf(missing, sizeof(missing), "%s/no", dir);
    CHECK(!exists(missing));

    /* The temporary name is taken by a directory: cannot create. */
    CHECK_EQ_INT(mkdir(tmp, 0700), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, NULL), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "cannot create");
    check_file(path, golden_csv);
    CHECK_EQ_INT(rmdir(tmp), 0);

    /* A symbolic link at the temporary name is refused, not followed. */
    FILE *t = fopen(target, "w");
    CHECK(t != NULL);
    if (t)
        fclose(t);
    CHECK_EQ_INT(symlink(target, tmp), 0);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, path, NULL), -EIO);
    check_file(path, golden_csv);
    check_file(target, "");
    CHECK_EQ_INT(unlink(tmp), 0);

    /* A write failing half-way (file size limit: EFBIG, as a full disk would
     * give ENOSPC) removes the partial temporary file. */
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
    CHECK(!exists(tmp));

    /* A directory cannot be replaced by a report. */
    char tmp_dir[300];
    snprintf(tmp_dir, sizeof(tmp_dir), "%s.tmp", dir);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, dir, NULL), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "cannot rename over");
    CHECK(!exists(tmp_dir));

    /* A character device is written in place, never replaced. */
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, "/dev/null", NULL), 0);
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(!exists("/dev/null.tmp"));

    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, NULL, NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_write_report_path(fc, VDNN_REPORT_JSON, "", NULL), -EINVAL);

    vdnn_feature_collector_free(fc);
    unlink(path);
    unlink(target);
    CHECK_EQ_INT(rmdir(dir), 0);
}

int main(void)
{
    test_golden();
    test_range_and_defaults();
    test_awkward_names();
    test_refusals();
    test_stream_errors();
    test_locale();
    test_path();
    return check_report();
}
