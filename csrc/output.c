#define _GNU_SOURCE /* O_TMPFILE, linkat of /proc/self/fd, getrandom */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "output.h"
#include "vmafdnn/vmafdnn.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define DEFAULT_VERSION                                                        \
    "libvmafdnn " STR(VMAF_DNN_VERSION_MAJOR) "." STR(VMAF_DNN_VERSION_MINOR) "." \
        STR(VMAF_DNN_VERSION_PATCH)

/* Longest version string or XML param value, in bytes: room for a path. */
#define REPORT_TEXT_MAX 4096

static const char *const format_name[] = {
    [VDNN_REPORT_JSON] = "JSON",
    [VDNN_REPORT_XML] = "XML",
    [VDNN_REPORT_CSV] = "CSV",
};

static const char *const pool_stat_name[4] = {"min", "max", "mean", "harmonic_mean"};

/* One feature that appears in the report. */
typedef struct Column {
    size_t feature;       /* its number in the collector */
    const char *name;     /* owned by the collector */
    VdnnFeaturePool pool; /* over the report's frame range; count > 0 */
    double value;         /* the current frame's value, when present */
    bool present;
    unsigned at;          /* its next frame with a value, from next_frame()'s
                             cursor on; VDNN_FEATURE_MAX_FRAMES: none left */
} Column;

/* Everything a writer needs, checked and computed before the first byte is
 * written so that validation errors never leave partial output. */
typedef struct Report {
    const VdnnFeatureCollector *fc;
    VdnnReportInfo info; /* the caller's, defaults filled in */
    Column *col;         /* n columns, owned */
    size_t n;
    unsigned next;       /* frame cursor of next_frame() */
    unsigned end;        /* one past the last frame to visit */
} Report;

void vdnn_report_info_default(VdnnReportInfo *info)
{
    *info = (VdnnReportInfo){
        .version = DEFAULT_VERSION,
        .fps = 0.0,
        .first_frame = 0,
        .last_frame = VDNN_REPORT_LAST_FRAME,
    };
}

/* The CSV cell rule (output.h, "CSV cells"), shared with the Python batch
 * writer (python/vmafdnn/results.py csv_text): a text cell starting with one
 * of = + - @ TAB CR, a formula to a spreadsheet, gets a single quote before
 * it, unless the whole cell is a decimal number ("-5", "+1.5e3"). */
static bool csv_is_decimal(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    bool digits = false;
    while (*s >= '0' && *s <= '9') {
        s++;
        digits = true;
    }
    if (*s == '.') {
        s++;
        while (*s >= '0' && *s <= '9') {
            s++;
            digits = true;
        }
    }
    if (!digits)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static bool csv_needs_quote_mark(const char *s)
{
    return s[0] && strchr("=+-@\t\r", s[0]) && !csv_is_decimal(s);
}

/* Whether two names are the same cell once written (the rule above can make
 * "=x" and "'=x" equal): such a header would have two equal columns. */
static bool csv_same_cell(const char *a, const char *b)
{
    bool qa = csv_needs_quote_mark(a), qb = csv_needs_quote_mark(b);
    if (qa == qb)
        return strcmp(a, b) == 0;
    if (qa)
        return b[0] == '\'' && strcmp(b + 1, a) == 0;
    return a[0] == '\'' && strcmp(a + 1, b) == 0;
}

/* XML attribute names, restricted to ASCII and without ':' so the result is
 * also namespace-well-formed. Not ctype: that depends on the locale. */
static bool is_xml_name(const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                  (i > 0 && ((c >= '0' && c <= '9') || c == '.' || c == '-'));
        if (!ok)
            return false;
    }
    return s[0] != '\0';
}

/* Checks a name the report carries; in XML it becomes an attribute name. */
static int check_name(const char *name, VdnnReportFormat fmt, const char *what)
{
    int err = vdnn_text_check(name, VDNN_FEATURE_NAME_MAX, what);
    if (!err && fmt == VDNN_REPORT_XML && !is_xml_name(name))
        err = vdnn_fail(-EINVAL, "%s \"%s\" cannot be an XML attribute name (it must match "
                        "[A-Za-z_][A-Za-z0-9._-]*); write a JSON or CSV report instead",
                        what, name);
    return err;
}

/* Checks the names of an array of VdnnReportParam or VdnnReportMetric (both
 * start with `const char *name`, asserted below): each valid, none repeated,
 * since a repeated XML attribute or JSON key would make the report invalid or
 * ambiguous. */
_Static_assert(offsetof(VdnnReportParam, name) == 0, "name must come first");
_Static_assert(offsetof(VdnnReportMetric, name) == 0, "name must come first");

static int check_names(const void *array, size_t stride, size_t n, VdnnReportFormat fmt,
                       const char *what)
{
    if (n > 0 && !array)
        return vdnn_fail(-EINVAL, "%zu %ss announced but the array is NULL", n, what);
    const char *base = array;
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)(base + i * stride);
        int err = check_name(name, fmt, what);
        if (err)
            return err;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(name, *(const char *const *)(base + j * stride)) == 0)
                return vdnn_fail(-EINVAL, "%s \"%s\" is given twice", what, name);
        }
    }
    return 0;
}

/* A feature name's rules in `fmt`: a valid name (an attribute name in XML),
 * not the frame number's own name ("frameNum" in XML, "Frame" in CSV). */
static int check_feature_name(const char *name, VdnnReportFormat fmt)
{
    int err = check_name(name, fmt, "feature name");
    if (!err && fmt == VDNN_REPORT_XML && strcmp(name, "frameNum") == 0)
        err = vdnn_fail(-EINVAL, "feature name \"frameNum\" clashes with the XML frame "
                        "number attribute; write a JSON or CSV report instead");
    if (!err && fmt == VDNN_REPORT_CSV && csv_same_cell(name, "Frame"))
        err = vdnn_fail(-EINVAL, "feature name \"%s\" clashes with the CSV frame "
                        "number column \"Frame\"; write a JSON or XML report instead", name);
    return err;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The pair check over names[0, n) (each checked by check_feature_name
 * already) in O(n log n): only CSV has pairs to find, and a pair is a
 * formula-like name and the same name after a quote mark, so each
 * formula-like name looks its quoted form up among the sorted names. A
 * report may carry tens of thousands of features (a libvmaf features file):
 * comparing every pair took seconds. */
static int check_feature_pairs(const char *const *names, size_t n, VdnnReportFormat fmt)
{
    if (fmt != VDNN_REPORT_CSV || n < 2)
        return 0;
    const char **sorted = malloc(n * sizeof(*sorted));
    if (!sorted)
        return vdnn_fail(-ENOMEM, "out of memory checking %zu feature names", n);
    memcpy(sorted, names, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), compare_names);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        if (!csv_needs_quote_mark(names[i]))
            continue;
        char quoted[VDNN_FEATURE_NAME_MAX + 2];
        quoted[0] = '\'';
        snprintf(quoted + 1, sizeof(quoted) - 1, "%s", names[i]);
        const char *key = quoted;
        if (!bsearch(&key, sorted, n, sizeof(*sorted), compare_names))
            continue;
        size_t j = 0;
        while (strcmp(names[j], quoted) != 0)
            j++;
        /* The message names the earlier one first. */
        err = vdnn_fail(-EINVAL, "feature names \"%s\" and \"%s\" would be the same CSV column "
                        "(a formula-like name is written after a quote mark); write a JSON "
                        "report instead", names[j < i ? j : i], names[j < i ? i : j]);
    }
    free(sorted);
    return err;
}

int vdnn_report_check_features(const char *const *names, size_t n, VdnnReportFormat fmt)
{
    if ((unsigned)fmt > VDNN_REPORT_CSV)
        return vdnn_fail(-EINVAL, "unknown report format %d", (int)fmt);
    if (n > 0 && !names)
        return vdnn_fail(-EINVAL, "%zu feature names announced but the array is NULL", n);
    for (size_t i = 0; i < n; i++) {
        int err = check_feature_name(names[i], fmt);
        if (err)
            return err;
    }
    return check_feature_pairs(names, n, fmt);
}

static int check_info(const VdnnReportInfo *info, VdnnReportFormat fmt)
{
    if (info->first_frame > info->last_frame)
        return vdnn_fail(-EINVAL, "report frame range %u..%u is empty (first > last)",
                         info->first_frame, info->last_frame);
    int err = vdnn_text_check(info->version, REPORT_TEXT_MAX, "report version");
    if (!err)
        err = check_names(info->aggregates, sizeof(*info->aggregates), info->n_aggregates,
                          fmt, "aggregate metric name");
    if (err || fmt != VDNN_REPORT_XML)
        return err;
    err = check_names(info->params, sizeof(*info->params), info->n_params, fmt,
                      "report param name");
    for (size_t i = 0; !err && i < info->n_params; i++) {
        if (strcmp(info->params[i].name, "qualityWidth") == 0 ||
            strcmp(info->params[i].name, "qualityHeight") == 0)
            err = vdnn_fail(-EINVAL, "report param name \"%s\" is reserved: the report "
                            "writes it from the frame size", info->params[i].name);
    }
    for (size_t i = 0; !err && i < info->n_params; i++) {
        char what[VDNN_FEATURE_NAME_MAX + 32];
        snprintf(what, sizeof(what), "value of report param \"%s\"", info->params[i].name);
        err = vdnn_text_check(info->params[i].value, REPORT_TEXT_MAX, what);
    }
    return err;
}

static void report_close(Report *r)
{
    free(r->col);
    r->col = NULL;
}

static int report_open(Report *r, const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                       const VdnnReportInfo *info)
{
    *r = (Report){.fc = fc};
    if (!fc)
        return vdnn_fail(-EINVAL, "feature collector is NULL");
    if ((unsigned)fmt > VDNN_REPORT_CSV)
        return vdnn_fail(-EINVAL, "unknown report format %d", (int)fmt);
    if (info)
        r->info = *info;
    else
        vdnn_report_info_default(&r->info);
    if (!r->info.version)
        r->info.version = DEFAULT_VERSION;
    int err = check_info(&r->info, fmt);
    if (err)
        return err;

    size_t total = vdnn_feature_collector_feature_count(fc);
    r->col = calloc(total ? total : 1, sizeof(*r->col));
    if (!r->col)
        return vdnn_fail(-ENOMEM, "out of memory preparing a report of %zu features", total);
    for (size_t k = 0; k < total; k++) {
        Column *c = &r->col[r->n];
        err = vdnn_feature_pool_at(fc, k, r->info.first_frame, r->info.last_frame, &c->pool);
        if (err)
            break;
        if (c->pool.count == 0)
            continue;
        c->feature = k;
        c->name = vdnn_feature_collector_feature_name(fc, k);
        r->n++;
    }
    if (!err) { /* the columns' names, by the rules vmaf_dnn_check_output applies */
        const char **names = malloc((r->n ? r->n : 1) * sizeof(*names));
        if (!names)
            err = vdnn_fail(-ENOMEM, "out of memory checking %zu feature names", r->n);
        for (size_t j = 0; names && j < r->n; j++)
            names[j] = r->col[j].name;
        if (names)
            err = vdnn_report_check_features(names, r->n, fmt);
        free(names);
    }
    if (err) {
        report_close(r);
        return err;
    }

    /* last_frame < frame count <= 2^24 whenever it limits the range, so the
     * + 1 cannot wrap. */
    unsigned count = vdnn_feature_collector_frame_count(fc);
    r->end = r->info.last_frame < count ? r->info.last_frame + 1 : count;
    r->next = r->info.first_frame;
    for (size_t j = 0; j < r->n; j++)
        r->col[j].at = vdnn_feature_collector_next_frame(fc, r->col[j].feature, r->next);
    return 0;
}

/* Advances to the next frame in range with at least one value, loading every
 * column's value for it; false when no frame is left. Each column knows its
 * own next frame (the store skips what it never allocated), so the walk
 * costs the values stored, not the frame count: probing every index up to
 * the highest one took 0.4 s per feature stored at frame 2^24 - 1. */
static bool next_frame(Report *r, unsigned *frame)
{
    if (r->next >= r->end)
        return false;
    unsigned i = VDNN_FEATURE_MAX_FRAMES;
    for (size_t j = 0; j < r->n; j++) {
        Column *c = &r->col[j];
        if (c->at < r->next) /* consumed (or never looked up): find its next */
            c->at = vdnn_feature_collector_next_frame(r->fc, c->feature, r->next);
        if (c->at < i)
            i = c->at;
    }
    if (i >= r->end) {
        r->next = r->end;
        return false;
    }
    r->next = i + 1;
    for (size_t j = 0; j < r->n; j++) {
        Column *c = &r->col[j];
        c->present = c->at == i && vdnn_feature_collector_value_at(r->fc, c->feature, i,
                                                                   &c->value);
    }
    *frame = i;
    return true;
}

static void pool_values(const VdnnFeaturePool *p, double v[4])
{
    v[0] = p->min;
    v[1] = p->max;
    v[2] = p->mean;
    v[3] = p->harmonic_mean;
}

/* libvmaf writes scores "%.6f", except a value within 1e-6 of an integer
 * and not equal to it, which gets "%.16f" (seen in its logs: 1.0000005960464478
 * and 0.0000003382048419 beside 1.000001 and 0.999998): six decimals would
 * flatten it to the integer, hiding a tiny difference or a tiny score. */
#define NEAR_INTEGER 1e-6

/* "%.17g", kept a float to JSON readers: 60 becomes "60.0". */
static void put_exact(FILE *f, double x)
{
    char buf[40];
    snprintf(buf, sizeof(buf), "%.17g", x);
    fputs(buf, f);
    if (!strpbrk(buf, ".e"))
        fputs(".0", f);
}

/* A score, or the format's spelling of NaN / Inf (see output.h). `exact`:
 * "%.17g", which reads back as the very same double. */
static void put_number(FILE *f, const Report *r, VdnnReportFormat fmt, double x)
{
    if (!isfinite(x)) {
        if (fmt == VDNN_REPORT_JSON)
            fputs("null", f);
        else
            fputs(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf", f);
        return;
    }
    if (r->info.exact) {
        put_exact(f, x);
        return;
    }
    double off = fabs(x - rint(x));
    fprintf(f, off > 0.0 && off < NEAR_INTEGER ? "%.16f" : "%.6f", x);
}

/* The processing speed: "%.2f" as libvmaf (null in JSON when not finite). */
static void put_fps(FILE *f, const Report *r, VdnnReportFormat fmt)
{
    if (r->info.exact && isfinite(r->info.fps))
        put_exact(f, r->info.fps);
    else if (isfinite(r->info.fps))
        fprintf(f, "%.2f", r->info.fps);
    else
        put_number(f, r, fmt, r->info.fps);
}

/* ----------------------------------------------------------------- JSON -- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7F)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_member(FILE *f, const Report *r, const char *indent, const char *name,
                        double x)
{
    fputs(indent, f);
    json_string(f, name);
    fputs(": ", f);
    put_number(f, r, VDNN_REPORT_JSON, x);
}

static void write_json(Report *r, FILE *f)
{
    fputs("{\n  \"version\": ", f);
    json_string(f, r->info.version);
    fputs(",\n  \"fps\": ", f);
    put_fps(f, r, VDNN_REPORT_JSON);

    /* Separators go before each entry so that no entry needs to know whether
     * another follows it (libvmaf's "i > 0" test breaks when frame 0 is
     * missing). */
    fputs(",\n  \"frames\": [", f);
    const char *sep = "\n";
    unsigned frame;
    while (next_frame(r, &frame)) {
        fprintf(f, "%s    {\n      \"frameNum\": %u,\n      \"metrics\": {", sep, frame);
        const char *msep = "\n";
        for (size_t j = 0; j < r->n; j++) {
            if (!r->col[j].present)
                continue;
            fputs(msep, f);
            json_member(f, r, "        ", r->col[j].name, r->col[j].value);
            msep = ",\n";
        }
        fputs("\n      }\n    }", f);
        sep = ",\n";
    }

    fputs("\n  ],\n  \"pooled_metrics\": {", f);
    for (size_t j = 0; j < r->n; j++) {
        fputs(j ? ",\n    " : "\n    ", f);
        json_string(f, r->col[j].name);
        fputs(": {", f);
        double v[4];
        pool_values(&r->col[j].pool, v);
        for (size_t k = 0; k < 4; k++) {
            fputs(k ? ",\n" : "\n", f);
            json_member(f, r, "      ", pool_stat_name[k], v[k]);
        }
        fputs("\n    }", f);
    }

    fputs("\n  },\n  \"aggregate_metrics\": {", f);
    for (size_t k = 0; k < r->info.n_aggregates; k++) {
        fputs(k ? ",\n" : "\n", f);
        json_member(f, r, "    ", r->info.aggregates[k].name, r->info.aggregates[k].value);
    }
    fputs("\n  }\n}\n", f);
}

/* ------------------------------------------------------------------ XML -- */

static void xml_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f); break;
        }
    }
}

/* ` name="text"` and ` name="number"`: names were checked by check_name(). */
static void xml_text_attr(FILE *f, const char *name, const char *text)
{
    fprintf(f, " %s=\"", name);
    xml_escaped(f, text);
    fputc('"', f);
}

static void xml_number_attr(FILE *f, const Report *r, const char *name, double x)
{
    fprintf(f, " %s=\"", name);
    put_number(f, r, VDNN_REPORT_XML, x);
    fputc('"', f);
}

static void write_xml(Report *r, FILE *f)
{
    /* No "<?xml ...?>" prolog: libvmaf writes none, and a document without
     * one is UTF-8 XML 1.0 by definition. */
    fputs("<VMAF", f);
    xml_text_attr(f, "version", r->info.version);
    fputs(">\n  <params", f);
    if (r->info.width && r->info.height)
        fprintf(f, " qualityWidth=\"%u\" qualityHeight=\"%u\"", r->info.width, r->info.height);
    for (size_t k = 0; k < r->info.n_params; k++)
        xml_text_attr(f, r->info.params[k].name, r->info.params[k].value);
    fputs(" />\n  <fyi fps=\"", f);
    put_fps(f, r, VDNN_REPORT_XML);
    fputc('"', f);
    fputs(" />\n  <frames>\n", f);

    unsigned frame;
    while (next_frame(r, &frame)) {
        fprintf(f, "    <frame frameNum=\"%u\"", frame);
        for (size_t j = 0; j < r->n; j++) {
            if (r->col[j].present)
                xml_number_attr(f, r, r->col[j].name, r->col[j].value);
        }
        fputs(" />\n", f);
    }

    fputs("  </frames>\n  <pooled_metrics>\n", f);
    for (size_t j = 0; j < r->n; j++) {
        fputs("    <metric", f);
        xml_text_attr(f, "name", r->col[j].name);
        double v[4];
        pool_values(&r->col[j].pool, v);
        for (size_t k = 0; k < 4; k++)
            xml_number_attr(f, r, pool_stat_name[k], v[k]);
        fputs(" />\n", f);
    }

    fputs("  </pooled_metrics>\n  <aggregate_metrics", f);
    for (size_t k = 0; k < r->info.n_aggregates; k++)
        xml_number_attr(f, r, r->info.aggregates[k].name,
                        r->info.aggregates[k].value);
    fputs(" />\n</VMAF>\n", f);
}

/* ------------------------------------------------------------------ CSV -- */

/* A text cell: the quote-mark rule (csv_needs_quote_mark), then RFC 4180 (a field with a
 * comma, quote or line break is quoted, quotes doubled). */
static void csv_field(FILE *f, const char *s)
{
    bool mark = csv_needs_quote_mark(s);
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    if (quote)
        fputc('"', f);
    if (mark)
        fputc('\'', f);
    for (; *s; s++) {
        if (quote && *s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    if (quote)
        fputc('"', f);
}

/* Every line ends with a separator, as libvmaf's: readers that split on ','
 * and drop the last (empty) field read both alike. */
static void write_csv(Report *r, FILE *f)
{
    fputs("Frame,", f);
    for (size_t j = 0; j < r->n; j++) {
        csv_field(f, r->col[j].name);
        fputc(',', f);
    }
    fputc('\n', f);

    unsigned frame;
    while (next_frame(r, &frame)) {
        fprintf(f, "%u,", frame);
        for (size_t j = 0; j < r->n; j++) {
            if (r->col[j].present)
                put_number(f, r, VDNN_REPORT_CSV, r->col[j].value);
            fputc(',', f);
        }
        fputc('\n', f);
    }
}

/* --------------------------------------------------------------- output -- */

/* _GNU_SOURCE (above) selects GNU strerror_r, which returns the text. */
static const char *errno_text(int e, char *buf, size_t size)
{
    if (e == 0) {
        snprintf(buf, size, "unknown error %d", e);
        return buf;
    }
    return strerror_r(e, buf, size);
}

/* Writes the whole report and flushes it. `target` names the file for the
 * message (NULL: a caller's stream). Numbers go through the "C" locale for
 * this thread only: under a locale with a decimal comma, "%.6f" would
 * otherwise break every format. */
static int emit(Report *r, VdnnReportFormat fmt, FILE *f, const char *target)
{
    static void (*const writer[])(Report *, FILE *) = {
        [VDNN_REPORT_JSON] = write_json,
        [VDNN_REPORT_XML] = write_xml,
        [VDNN_REPORT_CSV] = write_csv,
    };
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_locale)
        return vdnn_fail(-ENOMEM, "cannot create the C locale to write a report");
    locale_t previous = uselocale(c_locale);
    errno = 0;
    writer[fmt](r, f);
    int failed = ferror(f) || fflush(f) != 0;
    int e = errno;
    uselocale(previous);
    freelocale(c_locale);
    if (!failed)
        return 0;

    char buf[128];
    if (target)
        return vdnn_fail(-EIO, "cannot write the %s report to \"%s\": %s", format_name[fmt],
                         target, errno_text(e, buf, sizeof(buf)));
    return vdnn_fail(-EIO, "cannot write the %s report: %s", format_name[fmt],
                     errno_text(e, buf, sizeof(buf)));
}

int vdnn_write_report(const VdnnFeatureCollector *fc, VdnnReportFormat fmt, FILE *f,
                      const VdnnReportInfo *info)
{
    if (!f)
        return vdnn_fail(-EINVAL, "report stream is NULL");
    Report r;
    int err = report_open(&r, fc, fmt, info);
    if (err)
        return err;
    err = emit(&r, fmt, f, NULL);
    report_close(&r);
    return err;
}

/* fopencookie's write: all or nothing, so that a callback that says stop
 * ends the report at once (stdio then sees an error and emit() returns). */
typedef struct Sink {
    VdnnReportWrite write;
    void *opaque;
    bool stopped;
} Sink;

static ssize_t sink_write(void *cookie, const char *data, size_t size)
{
    Sink *sink = cookie;
    if (size == 0)
        return 0;
    if (sink->stopped || sink->write(sink->opaque, data, size) != 0) {
        sink->stopped = true;
        errno = ECANCELED;
        return -1;
    }
    return (ssize_t)size;
}

int vdnn_write_report_callback(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                               VdnnReportWrite write, void *opaque, const VdnnReportInfo *info)
{
    if (!write)
        return vdnn_fail(-EINVAL, "report write callback is NULL");
    Report r;
    int err = report_open(&r, fc, fmt, info);
    if (err)
        return err;
    Sink sink = {.write = write, .opaque = opaque};
    FILE *f = fopencookie(&sink, "w", (cookie_io_functions_t){.write = sink_write});
    if (!f) {
        report_close(&r);
        return vdnn_fail(-ENOMEM, "out of memory writing the %s report", format_name[fmt]);
    }
    err = emit(&r, fmt, f, NULL);
    if (fclose(f) != 0 && !err)
        err = -EIO; /* only the callback can fail: sink.stopped says so below */
    report_close(&r);
    if (sink.stopped)
        err = vdnn_fail(-ECANCELED, "the %s report's write callback stopped it",
                        format_name[fmt]);
    return err;
}

static int io_fail(const char *what, const char *file)
{
    char buf[128];
    int e = errno;
    return vdnn_fail(-EIO, "cannot %s \"%s\": %s", what, file, errno_text(e, buf, sizeof(buf)));
}

/* A device, FIFO or socket (/dev/stdout, a pipe) has no contents to keep
 * valid and must never be replaced by a regular file, so it is written in
 * place. */
static int write_in_place(Report *r, VdnnReportFormat fmt, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return io_fail("open", path);
    int err = emit(r, fmt, f, path);
    if (fclose(f) != 0 && !err)
        err = io_fail("close", path);
    return err;
}

/* Off only in tests, to run the named-temporary fallback on a file system
 * that has O_TMPFILE. */
static _Atomic bool use_tmpfile = true;

void vdnn_output_use_tmpfile(bool enabled)
{
    use_tmpfile = enabled;
}

/* Where a report at a given path really goes: the directory that will hold
 * it (opened, so that every later step is relative to this one directory
 * even if its path is renamed meanwhile) and the name in it. */
typedef struct Target {
    char *path; /* the path with every symbolic link in its last component
                   followed: what messages name */
    int dir;    /* descriptor of its directory */
    const char *name; /* points into path */
} Target;

static void target_close(Target *t)
{
    if (t->dir >= 0)
        close(t->dir);
    free(t->path);
    *t = (Target){.dir = -1};
}

/* Follows a chain of symbolic links at the last component, as open() would,
 * so that the report replaces the link's target and the link stays. A
 * dangling link resolves to the path it names (created like `echo > link`
 * would). Directory components are left to the kernel. */
static int resolve_target(const char *path, Target *t)
{
    *t = (Target){.dir = -1};
    char *cur = strdup(path);
    if (!cur)
        return vdnn_fail(-ENOMEM, "out of memory writing report \"%s\"", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            break;
        if (hops == 40) {
            free(cur);
            return vdnn_fail(-ELOOP, "cannot write report \"%s\": more than 40 symbolic links "
                             "to follow (a loop?)", path);
        }
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof(link) - 1);
        if (n < 0 || (size_t)n >= sizeof(link) - 1) {
            int err = n < 0 ? io_fail("read the symbolic link", cur)
                            : vdnn_fail(-ENAMETOOLONG, "symbolic link \"%s\" is too long", cur);
            free(cur);
            return err;
        }
        link[n] = '\0';
        /* A relative link is relative to the link's own directory. */
        const char *slash = strrchr(cur, '/');
        size_t keep = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(keep + (size_t)n + 1);
        if (!next) {
            free(cur);
            return vdnn_fail(-ENOMEM, "out of memory writing report \"%s\"", path);
        }
        memcpy(next, cur, keep);
        memcpy(next + keep, link, (size_t)n + 1);
        free(cur);
        cur = next;
    }

    size_t len = strlen(cur);
    while (len > 1 && cur[len - 1] == '/') /* "dir/report.json/" */
        cur[--len] = '\0';
    char *slash = strrchr(cur, '/');
    t->path = cur;
    t->name = slash ? slash + 1 : cur;
    if (!*t->name || strcmp(t->name, ".") == 0 || strcmp(t->name, "..") == 0) {
        target_close(t);
        return vdnn_fail(-EINVAL, "report path \"%s\" does not name a file", path);
    }
    const char *dir = ".";
    if (slash == cur) {
        dir = "/";
    } else if (slash) {
        *slash = '\0';
        dir = cur;
    }
    t->dir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = t->dir < 0 ? io_fail("open the directory", dir) : 0;
    if (slash && slash != cur)
        *slash = '/';
    if (err)
        target_close(t);
    return err;
}

/* Bytes of the random part of a temporary name, and its alphabet. */
#define TMP_RANDOM 6
static const char tmp_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* "<name>.XXXXXX", with the name cut so that the whole fits NAME_MAX; the
 * caller fills the X's. */
static char *tmp_name_for(const char *name)
{
    size_t len = strlen(name);
    if (len > NAME_MAX - 1 - TMP_RANDOM)
        len = NAME_MAX - 1 - TMP_RANDOM;
    char *tmp = malloc(len + 1 + TMP_RANDOM + 1);
    if (tmp) {
        memcpy(tmp, name, len);
        tmp[len] = '.';
        memset(tmp + len + 1, 'X', TMP_RANDOM);
        tmp[len + 1 + TMP_RANDOM] = '\0';
    }
    return tmp;
}

static void randomise_tmp_name(char *tmp)
{
    static _Atomic unsigned long counter;
    unsigned char bytes[TMP_RANDOM];
    if (getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) != (ssize_t)sizeof(bytes)) {
        /* No entropy yet: unique per process and call is all O_EXCL needs. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long x = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 16) ^
                          (counter++ * 2654435761UL);
        for (size_t i = 0; i < sizeof(bytes); i++, x >>= 5)
            bytes[i] = (unsigned char)x;
    }
    char *x = tmp + strlen(tmp) - TMP_RANDOM;
    for (size_t i = 0; i < TMP_RANDOM; i++)
        x[i] = tmp_alphabet[bytes[i] % (sizeof(tmp_alphabet) - 1)];
}

/* Does `entry` look like a temporary name made by tmp_name_for(prefix)? */
static bool is_tmp_name(const char *entry, const char *tmp_template)
{
    size_t stem = strlen(tmp_template) - TMP_RANDOM;
    if (strlen(entry) != stem + TMP_RANDOM || strncmp(entry, tmp_template, stem) != 0)
        return false;
    return strspn(entry + stem, tmp_alphabet) == TMP_RANDOM;
}

/* A temporary file last modified longer ago than this whose lock is free was
 * left by a writer that died (SIGKILL, power loss) in the fallback path:
 * removed. The age spares a file that another writer has just created and
 * not yet locked. */
#define STALE_TMP_SECONDS 60

/* Removes the stale temporaries of earlier fallback writes of this report.
 * A live writer holds flock() on its temporary until it is renamed, and the
 * kernel drops the lock when that writer dies, so a free lock on an old file
 * means its writer is gone. Best effort: failures are ignored. */
static void remove_stale_tmps(const Target *t, const char *tmp_template)
{
    int fd = openat(t->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!is_tmp_name(e->d_name, tmp_template) ||
            fstatat(t->dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            now.tv_sec - st.st_mtim.tv_sec < STALE_TMP_SECONDS)
            continue;
        int f = openat(t->dir, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (f < 0)
            continue;
        if (flock(f, LOCK_EX | LOCK_NB) == 0)
            unlinkat(t->dir, e->d_name, 0);
        close(f);
    }
    closedir(d);
}

/* Creates the file the report is written into, in the target's directory:
 * unnamed (O_TMPFILE) where the file system allows it, so that no name is
 * visible while it is written; else under a fresh "<name>.XXXXXX"
 * (O_EXCL, never a name another writer holds), locked for
 * remove_stale_tmps(). Mode 0666 & ~umask, as open(2) gives a new file. */
static int create_tmp(const Target *t, char *tmp, bool *named)
{
    int fd = -1;
    *named = false;
    /* Without /proc (some containers) the unnamed file could not be linked
     * in later: take the fallback from the start. */
    if (use_tmpfile && access("/proc/self/fd", X_OK) == 0) {
        fd = openat(t->dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
        if (fd >= 0)
            return fd;
        /* Anything but "not supported here" is a real failure (EACCES,
         * ENOSPC, EROFS...) the fallback would only meet again. */
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
            return io_fail("create a file in the directory of", t->path);
    }
    remove_stale_tmps(t, tmp);
    for (int attempt = 0; attempt < 100; attempt++) {
        randomise_tmp_name(tmp);
        fd = openat(t->dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *named = true;
            flock(fd, LOCK_EX);
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    return io_fail("create a temporary file beside", t->path);
}

/* Gives the new file what the report it replaces had: permission bits (so a
 * private 0600 report stays private) and, where permitted (root, or a group
 * the caller belongs to), owner and group. Done before a single byte is
 * written, so the contents are never readable under looser bits. */
static int keep_attributes(const Target *t, int fd)
{
    struct stat st;
    if (fstatat(t->dir, t->name, &st, 0) != 0 || !S_ISREG(st.st_mode))
        return 0; /* a new report: 0666 & ~umask from create_tmp() */
    struct stat mine;
    if (fstat(fd, &mine) == 0 && (mine.st_uid != st.st_uid || mine.st_gid != st.st_gid)) {
        /* chown first: it may clear set-id bits that fchmod then restores. */
        if (fchown(fd, st.st_uid, st.st_gid) != 0 && fchown(fd, (uid_t)-1, st.st_gid) != 0) {
            /* Not permitted: the report becomes the caller's. */
        }
    }
    if (fchmod(fd, st.st_mode & 07777) != 0)
        return io_fail("set the permissions of the new", t->path);
    return 0;
}

/* Gives the finished file its name. The catchable termination signals are
 * blocked for the few system calls in between, so that SIGINT or SIGTERM
 * cannot kill the process half-way and leave a temporary name behind (the
 * signal is delivered right after). */
static int put_in_place(const Target *t, int fd, char *tmp, bool named)
{
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    int err = 0;
    if (!named) {
        /* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the /proc link
         * of the descriptor needs nothing. */
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        for (int attempt = 0; attempt < 100; attempt++) {
            randomise_tmp_name(tmp);
            if (linkat(AT_FDCWD, proc, t->dir, tmp, AT_SYMLINK_FOLLOW) == 0) {
                named = true;
                break;
            }
            if (errno != EEXIST)
                break;
        }
        if (!named)
            err = io_fail("give a name to the new", t->path);
    }
    if (!err && renameat(t->dir, tmp, t->dir, t->name) != 0)
        err = io_fail("rename over", t->path);
    if (err && named)
        unlinkat(t->dir, tmp, 0);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return err;
}

/* The atomic path: a new file in the target's directory, written, synced,
 * renamed over the target, then the directory synced so that the rename
 * itself survives a crash. */
static int write_replacing(Report *r, VdnnReportFormat fmt, const Target *t)
{
    char *tmp = tmp_name_for(t->name);
    if (!tmp)
        return vdnn_fail(-ENOMEM, "out of memory writing report \"%s\"", t->path);
    bool named = false;
    int fd = create_tmp(t, tmp, &named);
    if (fd < 0) {
        free(tmp);
        return fd;
    }
    int err = keep_attributes(t, fd);
    FILE *f = err ? NULL : fdopen(fd, "w");
    if (!err && !f)
        err = io_fail("open the new", t->path);
    if (!err)
        err = emit(r, fmt, f, t->path);
    if (!err && fsync(fd) != 0)
        err = io_fail("sync", t->path);
    if (!err)
        err = put_in_place(t, fd, tmp, named);
    else if (named)
        unlinkat(t->dir, tmp, 0);
    /* Closing after the rename keeps the lock until the name is gone. */
    if (f ? fclose(f) != 0 : close(fd) != 0) {
        /* The data was synced: a close error cannot lose it. */
    }
    if (!err)
        fsync(t->dir);
    free(tmp);
    return err;
}

int vdnn_write_report_path(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                           const char *path, const VdnnReportInfo *info)
{
    if (!path || !*path)
        return vdnn_fail(-EINVAL, "report path is NULL or empty");
    Report r;
    int err = report_open(&r, fc, fmt, info);
    if (err)
        return err;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        err = write_in_place(&r, fmt, path);
    } else {
        Target t;
        err = resolve_target(path, &t);
        if (!err)
            err = write_replacing(&r, fmt, &t);
        target_close(&t);
    }
    report_close(&r);
    return err;
}
