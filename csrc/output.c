#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
        err = check_name(c->name, fmt, "feature name");
        if (!err && fmt == VDNN_REPORT_XML && strcmp(c->name, "frameNum") == 0)
            err = vdnn_fail(-EINVAL, "feature name \"frameNum\" clashes with the XML frame "
                            "number attribute; write a JSON or CSV report instead");
        if (err)
            break;
        r->n++;
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
    return 0;
}

/* Advances to the next frame in range with at least one value, loading every
 * column's value for it; false when no frame is left. */
static bool next_frame(Report *r, unsigned *frame)
{
    while (r->next < r->end) {
        unsigned i = r->next++;
        bool any = false;
        for (size_t j = 0; j < r->n; j++) {
            Column *c = &r->col[j];
            c->present = vdnn_feature_collector_value_at(r->fc, c->feature, i, &c->value);
            any |= c->present;
        }
        if (any) {
            *frame = i;
            return true;
        }
    }
    return false;
}

static void pool_values(const VdnnFeaturePool *p, double v[4])
{
    v[0] = p->min;
    v[1] = p->max;
    v[2] = p->mean;
    v[3] = p->harmonic_mean;
}

/* A number with `decimals` digits, or the format's spelling of NaN / Inf (see
 * output.h). */
static void put_number(FILE *f, VdnnReportFormat fmt, int decimals, double x)
{
    if (isfinite(x))
        fprintf(f, "%.*f", decimals, x);
    else if (fmt == VDNN_REPORT_JSON)
        fputs("null", f);
    else
        fputs(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf", f);
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

static void json_member(FILE *f, const char *indent, const char *name, double x)
{
    fputs(indent, f);
    json_string(f, name);
    fputs(": ", f);
    put_number(f, VDNN_REPORT_JSON, 6, x);
}

static void write_json(Report *r, FILE *f)
{
    fputs("{\n  \"version\": ", f);
    json_string(f, r->info.version);
    fputs(",\n  \"fps\": ", f);
    put_number(f, VDNN_REPORT_JSON, 2, r->info.fps);

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
            json_member(f, "        ", r->col[j].name, r->col[j].value);
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
            json_member(f, "      ", pool_stat_name[k], v[k]);
        }
        fputs("\n    }", f);
    }

    fputs("\n  },\n  \"aggregate_metrics\": {", f);
    for (size_t k = 0; k < r->info.n_aggregates; k++) {
        fputs(k ? ",\n" : "\n", f);
        json_member(f, "    ", r->info.aggregates[k].name, r->info.aggregates[k].value);
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

static void xml_number_attr(FILE *f, const char *name, int decimals, double x)
{
    fprintf(f, " %s=\"", name);
    put_number(f, VDNN_REPORT_XML, decimals, x);
    fputc('"', f);
}

static void write_xml(Report *r, FILE *f)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<VMAF", f);
    xml_text_attr(f, "version", r->info.version);
    fputs(">\n  <params", f);
    for (size_t k = 0; k < r->info.n_params; k++)
        xml_text_attr(f, r->info.params[k].name, r->info.params[k].value);
    fputs(" />\n  <fyi", f);
    xml_number_attr(f, "fps", 2, r->info.fps);
    fputs(" />\n  <frames>\n", f);

    unsigned frame;
    while (next_frame(r, &frame)) {
        fprintf(f, "    <frame frameNum=\"%u\"", frame);
        for (size_t j = 0; j < r->n; j++) {
            if (r->col[j].present)
                xml_number_attr(f, r->col[j].name, 6, r->col[j].value);
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
            xml_number_attr(f, pool_stat_name[k], 6, v[k]);
        fputs(" />\n", f);
    }

    fputs("  </pooled_metrics>\n  <aggregate_metrics", f);
    for (size_t k = 0; k < r->info.n_aggregates; k++)
        xml_number_attr(f, r->info.aggregates[k].name, 6, r->info.aggregates[k].value);
    fputs(" />\n</VMAF>\n", f);
}

/* ------------------------------------------------------------------ CSV -- */

/* RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_csv(Report *r, FILE *f)
{
    fputs("Frame", f);
    for (size_t j = 0; j < r->n; j++) {
        fputc(',', f);
        csv_field(f, r->col[j].name);
    }
    fputc('\n', f);

    unsigned frame;
    while (next_frame(r, &frame)) {
        fprintf(f, "%u", frame);
        for (size_t j = 0; j < r->n; j++) {
            fputc(',', f);
            if (r->col[j].present)
                put_number(f, VDNN_REPORT_CSV, 6, r->col[j].value);
        }
        fputc('\n', f);
    }
}

/* --------------------------------------------------------------- output -- */

static const char *errno_text(int e, char *buf, size_t size)
{
    if (e == 0 || strerror_r(e, buf, size) != 0)
        snprintf(buf, size, "unknown error %d", e);
    return buf;
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

static int io_fail(const char *what, const char *file)
{
    char buf[128];
    return vdnn_fail(-EIO, "cannot %s \"%s\": %s", what, file,
                     errno_text(errno, buf, sizeof(buf)));
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

/* The atomic path: write "<path>.tmp", sync it, rename it over path. */
static int write_replacing(Report *r, VdnnReportFormat fmt, const char *path)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + sizeof(".tmp"));
    if (!tmp)
        return vdnn_fail(-ENOMEM, "out of memory writing report \"%s\"", path);
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", sizeof(".tmp"));

    int err = 0;
    /* O_NOFOLLOW: a link planted at the temporary name must not redirect
     * the write elsewhere. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        err = io_fail("create", tmp);
        goto done;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        err = io_fail("open", tmp);
        close(fd);
        unlink(tmp);
        goto done;
    }
    err = emit(r, fmt, f, tmp);
    if (!err && fsync(fd) != 0)
        err = io_fail("sync", tmp);
    if (fclose(f) != 0 && !err)
        err = io_fail("close", tmp);
    if (!err && rename(tmp, path) != 0)
        err = io_fail("rename over", path);
    if (err)
        unlink(tmp);
done:
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
    bool special = stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
    err = special ? write_in_place(&r, fmt, path) : write_replacing(&r, fmt, path);
    report_close(&r);
    return err;
}
