/* Internal: writes a feature collector as a libvmaf-compatible report, so
 * tools that read libvmaf's JSON, XML or CSV logs read ours.
 *
 * Common rules (all formats):
 *   - Frames are written in index order from info->first_frame to
 *     info->last_frame; a frame with no value for any feature is left out,
 *     and a frame without a value for one feature leaves that metric out
 *     (JSON, XML) or its cell empty (CSV). Missing is never written as 0.
 *   - A feature with no value in the frame range is left out of the report
 *     altogether (no column, no pooled entry).
 *   - Numbers are written as libvmaf writes them: "%.6f", but "%.16f" for a
 *     value within 1e-6 of an integer and not equal to it (1.0000005960464478,
 *     0.0000003382048419), so a tiny value is not flattened to 0 or 1; fps
 *     "%.2f". With info->exact every number is "%.17g" instead (reads back as
 *     the same double; ".0" added to an integral one, so it stays a float). Always '.' as the decimal point whatever the locale.
 *   - Pooled metrics (JSON, XML) cover the same frame range, over the frames
 *     that have a value; see vdnn_feature_pool_at() for NaN and gaps.
 *   - fps is what the caller gives: libvmaf's meaning is the processing speed
 *     (frames scored per second), not the clip's frame rate.
 *
 * Non-finite values, per format:
 *   - JSON: null (JSON has no NaN/Inf; libvmaf does the same).
 *   - XML and CSV: nan, inf, -inf (what libvmaf's printf gives, minus the
 *     sign of NaN), so strtod() and Python's float() read them back and a
 *     NaN stays distinguishable from a missing value.
 *
 * Layouts (two-space indents as in libvmaf's output.c):
 *   JSON: {"version", "fps", "frames": [{"frameNum", "metrics": {...}}],
 *          "pooled_metrics": {name: {min, max, mean, harmonic_mean}},
 *          "aggregate_metrics": {name: value}}; strings escaped per RFC 8259
 *          (control characters as \u00XX).
 *   XML:  <VMAF version> (no "<?xml" prolog, as libvmaf), <params
 *          qualityWidth="W" qualityHeight="H" name="value" ... /> (the size
 *          when info gives it, then the caller's params), <fyi fps />, <frames><frame frameNum="0"
 *          psnr_y="..." ... /></frames>, <pooled_metrics><metric name min
 *          max mean harmonic_mean /></pooled_metrics>, <aggregate_metrics
 *          name="value" ... />, </VMAF>. Feature, aggregate and param names
 *          become attribute names, so they must match [A-Za-z_][A-Za-z0-9._-]*
 *          and must not be "frameNum"; otherwise the XML writer refuses with
 *          -EINVAL before writing anything (use JSON or CSV for such names).
 *          Attribute values escape & < > " '.
 *   CSV:  "Frame,<name>,...,\n" then "<frame>,<value>,...,\n" per frame:
 *          every line ends with ',' as libvmaf's; a missing value is an empty
 *          cell (libvmaf's rows shift left instead); names containing ',' or
 *          '"' are quoted per RFC 4180.
 *          CSV carries no version, fps, params, pooled or aggregate metrics.
 *
 * CSV cells (the rule every CSV writer of the project follows; the Python
 * batch writer, python/vmafdnn/results.py csv_text, applies the same): a
 * text cell -- a feature name in the header -- whose first character is
 * '=', '+', '-', '@', TAB or CR is written after a single quote ('), so a
 * spreadsheet shows it as text instead of running it as a formula (OWASP,
 * "CSV injection"), unless the whole name is a decimal number ("-5",
 * "+1.5e3"). Numbers the writer formats are never changed. Then RFC 4180
 * quoting. A feature whose header cell would equal "Frame", or another
 * feature's, is refused with -EINVAL before writing anything (a CSV with
 * two equal column names is ambiguous to every reader).
 *
 * Thread-safety: the writers only read the collector; write after the last
 * append (see feature_collector.h). Distinct reports may be written
 * concurrently.
 */
#ifndef VMAFDNN_OUTPUT_H
#define VMAFDNN_OUTPUT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "feature_collector.h"

typedef enum VdnnReportFormat {
    VDNN_REPORT_JSON = 0,
    VDNN_REPORT_XML = 1,
    VDNN_REPORT_CSV = 2,
} VdnnReportFormat;

/* last_frame value meaning "through the collector's last frame". */
#define VDNN_REPORT_LAST_FRAME UINT_MAX

/* A name="value" attribute of the XML <params> element. */
typedef struct VdnnReportParam {
    const char *name;  /* caller-owned, an XML attribute name (see above) */
    const char *value; /* caller-owned; vdnn_text_check() rules, up to 4096 bytes */
} VdnnReportParam;

/* One entry of "aggregate_metrics": a number about the whole run. */
typedef struct VdnnReportMetric {
    const char *name;  /* caller-owned; feature-name rules (vdnn_text_check), unique */
    double value;
} VdnnReportMetric;

/* What a report says besides the collector's scores. All pointers are
 * caller-owned and only read during the call. */
typedef struct VdnnReportInfo {
    const char *version;     /* NULL: "libvmafdnn MAJOR.MINOR.PATCH"; else
                                vdnn_text_check() rules, up to 4096 bytes */
    double fps;              /* processing speed, frames per second (libvmaf's
                                meaning); 0 when unknown (written as 0.00) */
    unsigned width, height;  /* XML qualityWidth / qualityHeight: the luma size
                                of the frames scored; 0: left out */
    bool exact;              /* every number "%.17g" (lossless), for callers
                                that parse the report back */
    unsigned first_frame;    /* first frame written and pooled */
    unsigned last_frame;     /* last one, inclusive; VDNN_REPORT_LAST_FRAME: all */
    const VdnnReportParam *params; /* n_params entries, XML only; unique names */
    size_t n_params;
    const VdnnReportMetric *aggregates; /* n_aggregates entries */
    size_t n_aggregates;
} VdnnReportInfo;

/* Fills `info` with the defaults: our version, fps 0, every frame, no params,
 * no aggregates. A NULL info given to a writer means these defaults. */
void vdnn_report_info_default(VdnnReportInfo *info);

/* Checks, before any frame is scored, that a report in `fmt` can carry
 * features of these names: the rules the writers apply to every feature
 * with a value (a valid name, an XML attribute name in XML, not "frameNum"
 * in XML nor "Frame" in CSV, no two names one CSV header cell once
 * written: see "CSV cells"). A name given twice is one feature. Returns 0,
 * or -EINVAL with the message the writer would give (also for an unknown
 * format or a NULL array of n > 0). */
int vdnn_report_check_features(const char *const *names, size_t n, VdnnReportFormat fmt);

/* Writes the report to `f` (left open and flushed). Everything is checked
 * before the first byte is written, so -EINVAL never leaves partial output.
 * Returns 0, -EINVAL (NULL fc or f, unknown format, first_frame > last_frame,
 * a name or value the format cannot carry: the message names it), -ENOMEM,
 * -EIO (writing or flushing failed; the message has the system's reason). */
int vdnn_write_report(const VdnnFeatureCollector *fc, VdnnReportFormat fmt, FILE *f,
                      const VdnnReportInfo *info);

/* Receives the report in pieces, in order: returns 0, or non-zero to stop
 * the report (the writer then returns -ECANCELED). */
typedef int (*VdnnReportWrite)(void *opaque, const char *data, size_t size);

/* Writes the report through `write`, which gets `opaque` with every piece.
 * Returns the codes of vdnn_write_report (-EINVAL also for a NULL write),
 * -ECANCELED when the callback stopped it (the pieces before stay given). */
int vdnn_write_report_callback(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                               VdnnReportWrite write, void *opaque, const VdnnReportInfo *info);

/* Writes the report to `path` atomically, as a careful tool replaces a file:
 *   - A symbolic link at `path` (a chain of them, up to 40) is followed: the
 *     file it points to is replaced and the link itself stays. A dangling
 *     link creates the file it names.
 *   - The new contents go to a file created in the target's own directory:
 *     unnamed (O_TMPFILE) where the file system supports it, else named
 *     "<name>.XXXXXX" (random, created with O_EXCL: two writers never share
 *     one). It is synced, given a unique name (O_TMPFILE: linked in through
 *     /proc/self/fd), renamed over the target, and the directory is synced.
 *     Readers see either the whole old report or the whole new one; of two
 *     writers racing on one path, the last rename wins, whole.
 *   - An existing report keeps its permission bits (0600 stays 0600) and,
 *     where permitted, its owner and group; a new one gets 0666 & ~umask.
 *     Other hard links to the old file keep the old contents.
 *   - SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked during the few calls
 *     that name the file and rename it, so such a signal never leaves a
 *     temporary name behind. With O_TMPFILE no name exists before that, so
 *     not even SIGKILL leaves one while the report is written. In the
 *     fallback a kill during the write leaves "<name>.XXXXXX"; the next write
 *     of the same report removes such files once they are 60 s old and no
 *     writer holds their lock (each writer flock()s its own).
 *   - On any failure the new file is removed and an existing report is left
 *     exactly as it was: a report is either complete or absent.
 *   - An existing device, FIFO or socket at `path` (/dev/stdout, a pipe) is
 *     written in place instead, since renaming over it would destroy it.
 * Returns the codes of vdnn_write_report (-EINVAL also for a NULL or empty
 * path or one ending in "." or ".."), -ELOOP (more than 40 links),
 * -ENAMETOOLONG (a link's text of PATH_MAX bytes or more), and -EIO for
 * failures to open the directory, create, sync, name or rename the file
 * (the message names the file and the system's reason). */
int vdnn_write_report_path(const VdnnFeatureCollector *fc, VdnnReportFormat fmt,
                           const char *path, const VdnnReportInfo *info);

/* Tests only: false makes vdnn_write_report_path() take its named-temporary
 * fallback as on a file system without O_TMPFILE (process-wide). */
void vdnn_output_use_tmpfile(bool enabled);

#endif
