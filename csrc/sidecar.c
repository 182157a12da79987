/* The model sidecar: finds `foo.json` beside `foo.onnx`, reads it once, and
 * turns its top-level members into a VdnnSidecar. See sidecar.h for the keys
 * and their types. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "json.h"
#include "model_file.h"
#include "sidecar.h"
#include "vmafdnn/vmafdnn.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The parsed document and the sidecar's name, for messages. */
typedef struct Reader {
    const VdnnJson *doc;
    const char *origin;
} Reader;

/* ---- messages ------------------------------------------------------------ */

/* "sidecar O: key "K" ..." or, for one entry of an array, "... key "K" entry N ...". */
static int fail_key(const Reader *r, const char *key, long entry, const char *fmt, ...)
    VDNN_PRINTF(4, 5);

static int fail_key(const Reader *r, const char *key, long entry, const char *fmt, ...)
{
    char what[256], where[32] = "";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (entry >= 0)
        snprintf(where, sizeof(where), " entry %ld", entry);
    return vdnn_fail(-EINVAL, "sidecar %s: key \"%s\"%s %s", r->origin, key, where, what);
}

static int fail_nomem(const char *origin)
{
    return vdnn_fail(-ENOMEM, "sidecar %s: out of memory", origin);
}

/* ---- one value each ------------------------------------------------------ */

/* Copies string v (key's value, or its entry `entry` when >= 0) into *out.
 * A NUL would silently cut the name short in every C string use, so it is
 * refused rather than kept. */
static int copy_string(const Reader *r, const char *key, long entry, const VdnnJson *v,
                       int nonempty, char **out)
{
    size_t len;
    const char *s = vdnn_json_string(v, &len);

    if (!s)
        return fail_key(r, key, entry, "must be a %sstring, got %s", nonempty ? "non-empty " : "",
                        vdnn_json_type_name(v));
    if (nonempty && len == 0)
        return fail_key(r, key, entry, "must not be empty");
    if (len > VDNN_SIDECAR_MAX_STRING)
        return fail_key(r, key, entry, "is longer than %d bytes", VDNN_SIDECAR_MAX_STRING);
    if (memchr(s, '\0', len))
        return fail_key(r, key, entry, "must not contain \\u0000");
    if (!(*out = strdup(s)))
        return fail_nomem(r->origin);
    return 0;
}

/* Every read_* below leaves its output untouched when the key is absent. */

static int read_string(const Reader *r, const char *key, int nonempty, char **out)
{
    const VdnnJson *v = vdnn_json_member(r->doc, key);
    return v ? copy_string(r, key, -1, v, nonempty, out) : 0;
}

static int read_bool(const Reader *r, const char *key, int *has, int *out)
{
    const VdnnJson *v = vdnn_json_member(r->doc, key);
    if (!v)
        return 0;
    if (vdnn_json_type(v) != VDNN_JSON_BOOL)
        return fail_key(r, key, -1, "must be true or false, got %s", vdnn_json_type_name(v));
    *has = 1;
    *out = vdnn_json_bool(v);
    return 0;
}

/* Stores in *out 1 + the index in names[] of key's value. */
static int read_choice(const Reader *r, const char *key, const char *const *names, size_t count,
                       int *out)
{
    const VdnnJson *v = vdnn_json_member(r->doc, key);
    char expected[128] = "", quoted[VDNN_JSON_EXCERPT_SIZE];
    size_t len;

    if (!v)
        return 0;
    const char *s = vdnn_json_string(v, &len);
    for (size_t i = 0; i < count; i++) {
        if (s && strlen(names[i]) == len && memcmp(s, names[i], len) == 0) {
            *out = (int)i + 1;
            return 0;
        }
        size_t used = strlen(expected);
        snprintf(expected + used, sizeof(expected) - used, "%s\"%s\"",
                 i == 0 ? "" : i + 1 < count ? ", " : " or ", names[i]);
    }
    if (!s)
        return fail_key(r, key, -1, "must be %s, got %s", expected, vdnn_json_type_name(v));
    return fail_key(r, key, -1, "must be %s, not %s", expected,
                    vdnn_json_excerpt(s, len, &quoted));
}

/* Reads an integer in [lo, hi] (opset, minimum frame sizes); `what` says
 * that range in messages. */
static int read_int(const Reader *r, const char *key, int lo, int hi, const char *what,
                    int *has, int *out)
{
    const VdnnJson *v = vdnn_json_member(r->doc, key);
    if (!v)
        return 0;
    double x = vdnn_json_number(v);
    if (vdnn_json_type(v) != VDNN_JSON_NUMBER)
        return fail_key(r, key, -1, "must be %s, got %s", what, vdnn_json_type_name(v));
    if (!(x >= lo && x <= hi) || x != (double)(int)x)
        return fail_key(r, key, -1, "must be %s, not %.17g", what, x);
    *has = 1;
    *out = (int)x;
    return 0;
}

/* ---- arrays -------------------------------------------------------------- */

/* Returns key's value when it is an array of at most VDNN_SIDECAR_MAX_ENTRIES
 * entries (and at least one when `nonempty`); NULL with *rc = 0 when the key
 * is absent, NULL with *rc < 0 when it is wrong. `of` names the entries for
 * messages. */
static const VdnnJson *find_array(const Reader *r, const char *key, const char *of,
                                  int nonempty, int *rc)
{
    const VdnnJson *v = vdnn_json_member(r->doc, key);
    size_t count = vdnn_json_count(v);

    *rc = 0;
    if (!v)
        return NULL;
    if (vdnn_json_type(v) != VDNN_JSON_ARRAY)
        *rc = fail_key(r, key, -1, "must be an array of %s, got %s", of, vdnn_json_type_name(v));
    else if (nonempty && count == 0)
        *rc = fail_key(r, key, -1, "must not be empty");
    else if (count > VDNN_SIDECAR_MAX_ENTRIES)
        *rc = fail_key(r, key, -1, "has %zu entries, more than %d", count,
                       VDNN_SIDECAR_MAX_ENTRIES);
    return *rc ? NULL : v;
}

static int read_strings(const Reader *r, const char *key, int nonempty,
                        VdnnSidecarStrings *out)
{
    int rc;
    const VdnnJson *v = find_array(r, key, "non-empty strings", nonempty, &rc);
    size_t count = vdnn_json_count(v);

    if (!v)
        return rc;
    out->present = 1;
    if (count == 0)
        return 0;
    if (!(out->items = calloc(count, sizeof(*out->items))))
        return fail_nomem(r->origin);
    /* count grows with each copy, so vdnn_sidecar_free() releases exactly
     * what exists when a later entry fails. */
    for (size_t i = 0; i < count; i++, out->count++)
        if ((rc = copy_string(r, key, (long)i, vdnn_json_at(v, i), 1, &out->items[i])))
            return rc;
    return 0;
}

/* Reads an array of exactly `count` numbers (positive ones when `positive`)
 * into a new array *out. */
static int read_numbers(const Reader *r, const char *key, size_t count, int positive,
                        double **out)
{
    int rc;
    const VdnnJson *v = find_array(r, key, positive ? "positive numbers" : "numbers", 0, &rc);

    if (!v)
        return rc;
    if (vdnn_json_count(v) != count)
        return fail_key(r, key, -1, "must have %zu entries, not %zu", count, vdnn_json_count(v));
    double *values = malloc(count * sizeof(*values));
    if (!values)
        return fail_nomem(r->origin);
    for (size_t i = 0; i < count; i++) {
        const VdnnJson *e = vdnn_json_at(v, i);
        values[i] = vdnn_json_number(e);
        if (vdnn_json_type(e) != VDNN_JSON_NUMBER)
            rc = fail_key(r, key, (long)i, "must be a number, got %s", vdnn_json_type_name(e));
        /* The JSON layer already refuses overflow; a zero, negative or
         * infinite scale would still poison every score, so say so here. */
        else if (positive && !(values[i] > 0 && isfinite(values[i])))
            rc = fail_key(r, key, (long)i, "must be a finite number > 0, not %.17g", values[i]);
        if (rc) {
            free(values);
            return rc;
        }
    }
    *out = values;
    return 0;
}

/* Normalisation vectors only make sense against the feature list they
 * scale, one value per feature. */
static int read_feature_scale(const Reader *r, const VdnnSidecar *sc, const char *key,
                              int positive, double **out)
{
    const VdnnJson *v = vdnn_json_member(r->doc, key);
    size_t count = sc->features.count;

    if (!v)
        return 0;
    if (!sc->features.present)
        return fail_key(r, key, -1, "needs key \"features\" beside it");
    if (vdnn_json_type(v) == VDNN_JSON_ARRAY && vdnn_json_count(v) != count)
        return fail_key(r, key, -1, "must have one entry per feature (%zu), not %zu", count,
                        vdnn_json_count(v));
    return read_numbers(r, key, count, positive, out);
}

/* Reads an array of exactly two numbers into out[2], setting *has. */
static int read_pair(const Reader *r, const char *key, int *has, double out[2])
{
    double *pair = NULL;
    int rc = read_numbers(r, key, 2, 0, &pair);

    if (rc || !pair)
        return rc;
    *has = 1;
    out[0] = pair[0];
    out[1] = pair[1];
    free(pair);
    return 0;
}

static int read_range(const Reader *r, VdnnSidecar *sc)
{
    int rc = read_pair(r, "range", &sc->has_range, sc->range);

    if (!rc && sc->has_range && !(sc->range[0] < sc->range[1])) {
        sc->has_range = 0;
        return fail_key(r, "range", -1, "must be [min, max] with min < max, not [%.17g, %.17g]",
                        sc->range[0], sc->range[1]);
    }
    return rc;
}

/* ---- input sources ------------------------------------------------------- */

/* Reads integer member "offset" of a source object (0 when absent) into
 * [lo, hi]. */
static int read_source_offset(const Reader *r, const VdnnJson *obj, const char *input, int lo,
                              int hi, int *out)
{
    const VdnnJson *v = vdnn_json_member(obj, "offset");
    *out = 0;
    if (!v)
        return 0;
    double x = vdnn_json_number(v);
    if (vdnn_json_type(v) != VDNN_JSON_NUMBER || !(x >= lo && x <= hi) || x != (double)(int)x)
        return fail_key(r, "input_sources", -1, "input \"%s\": \"offset\" must be an integer "
                        "in [%d, %d]", input, lo, hi);
    *out = (int)x;
    return 0;
}

/* One entry: exactly one of "picture", "value", "feature", plus "offset"
 * where it applies; any other member is refused so that a typo ("ofset")
 * cannot silently feed the current frame. */
static int read_source(const Reader *r, const VdnnJson *obj, VdnnSidecarSource *src)
{
    static const char *const pictures[] = {"reference", "distorted"};
    static const char *const planes[] = {"y", "u", "v"};
    static const char *const values[] = {"bpc", "width", "height", "device_type"};
    const char *input = src->input;
    if (vdnn_json_type(obj) != VDNN_JSON_OBJECT)
        return fail_key(r, "input_sources", -1, "input \"%s\" must map to an object, got %s",
                        input, vdnn_json_type_name(obj));
    int kinds = 0, has_offset = 0, has_plane = 0;
    for (size_t i = 0; i < vdnn_json_count(obj); i++) {
        size_t len;
        const char *k = vdnn_json_key_at(obj, i, &len);
        char quoted[VDNN_JSON_EXCERPT_SIZE];
        if (strcmp(k, "picture") == 0 || strcmp(k, "value") == 0 || strcmp(k, "feature") == 0)
            kinds++;
        else if (strcmp(k, "offset") == 0)
            has_offset = 1;
        else if (strcmp(k, "plane") == 0)
            has_plane = 1;
        else
            return fail_key(r, "input_sources", -1, "input \"%s\": unknown member %s (known: "
                            "picture, plane, value, feature, offset)", input,
                            vdnn_json_excerpt(k, len, &quoted));
    }
    if (kinds != 1)
        return fail_key(r, "input_sources", -1, "input \"%s\" needs exactly one of \"picture\", "
                        "\"value\" and \"feature\"", input);
    const VdnnJson *v;
    size_t len;
    const char *s;
    if (has_plane && !vdnn_json_member(obj, "picture"))
        return fail_key(r, "input_sources", -1, "input \"%s\": \"plane\" belongs to a "
                        "\"picture\" source", input);
    if ((v = vdnn_json_member(obj, "value"))) {
        src->kind = VDNN_SOURCE_VALUE;
        if (has_offset)
            return fail_key(r, "input_sources", -1, "input \"%s\": a \"value\" has no "
                            "\"offset\"", input);
        s = vdnn_json_string(v, &len);
        for (size_t i = 0; s && i < COUNT(values); i++)
            if (strlen(values[i]) == len && memcmp(s, values[i], len) == 0) {
                src->value = (VdnnSourceValue)i;
                return 0;
            }
        return fail_key(r, "input_sources", -1, "input \"%s\": \"value\" must be \"bpc\", "
                        "\"width\", \"height\" or \"device_type\"", input);
    }
    if ((v = vdnn_json_member(obj, "picture"))) {
        src->kind = VDNN_SOURCE_PICTURE;
        s = vdnn_json_string(v, &len);
        int found = 0;
        for (size_t i = 0; s && i < COUNT(pictures); i++)
            if (strlen(pictures[i]) == len && memcmp(s, pictures[i], len) == 0) {
                src->picture = (VdnnSourcePicture)i;
                found = 1;
            }
        if (!found)
            return fail_key(r, "input_sources", -1, "input \"%s\": \"picture\" must be "
                            "\"reference\" or \"distorted\"", input);
        src->plane = VDNN_PLANE_Y;
        if ((v = vdnn_json_member(obj, "plane"))) {
            s = vdnn_json_string(v, &len);
            found = 0;
            for (size_t i = 0; s && i < COUNT(planes); i++)
                if (strlen(planes[i]) == len && memcmp(s, planes[i], len) == 0) {
                    src->plane = (VdnnSourcePlane)i;
                    found = 1;
                }
            if (!found)
                return fail_key(r, "input_sources", -1, "input \"%s\": \"plane\" must be "
                                "\"y\", \"u\" or \"v\"", input);
        }
        /* Future pictures would hold every frame back; features can look
         * ahead instead (their models run late, see context.h). */
        return read_source_offset(r, obj, input, -VMAF_DNN_MAX_FRAME_OFFSET, 0, &src->offset);
    }
    src->kind = VDNN_SOURCE_FEATURE;
    v = vdnn_json_member(obj, "feature");
    int rc = copy_string(r, "input_sources", -1, v, 1, &src->feature);
    return rc ? rc
              : read_source_offset(r, obj, input, -VMAF_DNN_MAX_FRAME_OFFSET,
                                   VMAF_DNN_MAX_FRAME_OFFSET, &src->offset);
}

static int read_sources(const Reader *r, VdnnSidecar *sc)
{
    const VdnnJson *v = vdnn_json_member(r->doc, "input_sources");
    if (!v)
        return 0;
    if (vdnn_json_type(v) != VDNN_JSON_OBJECT)
        return fail_key(r, "input_sources", -1, "must be an object, got %s",
                        vdnn_json_type_name(v));
    const size_t count = vdnn_json_count(v);
    if (count > VDNN_SIDECAR_MAX_ENTRIES)
        return fail_key(r, "input_sources", -1, "has %zu entries, more than %d", count,
                        VDNN_SIDECAR_MAX_ENTRIES);
    if (!count)
        return 0;
    if (!(sc->sources = calloc(count, sizeof(*sc->sources))))
        return fail_nomem(r->origin);
    /* n_sources grows with each entry so that vdnn_sidecar_free() releases
     * exactly what exists when a later one fails. */
    for (size_t i = 0; i < count; i++) {
        VdnnSidecarSource *src = &sc->sources[sc->n_sources++];
        size_t len;
        const char *k = vdnn_json_key_at(v, i, &len);
        if (!len || len > VDNN_SIDECAR_MAX_STRING || memchr(k, '\0', len))
            return fail_key(r, "input_sources", (long)i, "needs an input name of 1..%d bytes "
                            "without \\u0000", VDNN_SIDECAR_MAX_STRING);
        if (!(src->input = strdup(k)))
            return fail_nomem(r->origin);
        int rc = read_source(r, vdnn_json_at(v, i), src);
        if (rc)
            return rc;
    }
    return 0;
}

int vdnn_sidecar_path_inside(const char *file)
{
    const size_t n = strlen(file);
    return file[0] != '/' && strcmp(file, "..") != 0 && strncmp(file, "../", 3) != 0 &&
           !strstr(file, "/../") && !(n >= 3 && strcmp(file + n - 3, "/..") == 0);
}

#define MAX_FORMS 16
#define MAX_FORM_CHOICES 4

/* One file of "forms" (of entry i of the object, a string or one of a
 * list's) as the (key, file) pair that follows the last one. */
static int add_form(const Reader *r, VdnnSidecar *sc, size_t i, const char *key,
                    const VdnnJson *file)
{
    const size_t n = sc->form_files.count;
    if (!(sc->form_eps.items[n] = strdup(key)))
        return fail_nomem(r->origin);
    sc->form_eps.count++;
    int rc = copy_string(r, "forms", (long)i, file, 1, &sc->form_files.items[n]);
    if (rc)
        return rc;
    sc->form_files.count++;
    if (!vdnn_sidecar_path_inside(sc->form_files.items[n]))
        return fail_key(r, "forms", (long)i, "\"%s\" must be a path inside the model's "
                        "directory", sc->form_files.items[n]);
    return 0;
}

static int read_forms(const Reader *r, VdnnSidecar *sc)
{
    const VdnnJson *v = vdnn_json_member(r->doc, "forms");
    if (!v)
        return 0;
    if (vdnn_json_type(v) != VDNN_JSON_OBJECT)
        return fail_key(r, "forms", -1, "must be an object, got %s", vdnn_json_type_name(v));
    const size_t count = vdnn_json_count(v);
    if (count > MAX_FORMS)
        return fail_key(r, "forms", -1, "has %zu entries, more than %d", count, MAX_FORMS);
    sc->form_eps.present = sc->form_files.present = 1;
    if (!count)
        return 0;
    const size_t most = count * MAX_FORM_CHOICES;
    if (!(sc->form_eps.items = calloc(most, sizeof(char *))) ||
        !(sc->form_files.items = calloc(most, sizeof(char *))))
        return fail_nomem(r->origin);
    for (size_t i = 0; i < count; i++) {
        size_t len;
        const char *k = vdnn_json_key_at(v, i, &len);
        if (!len || len > 64 || memchr(k, '\0', len))
            return fail_key(r, "forms", (long)i, "needs an EP name of 1..64 bytes");
        /* EP names match in any case: "CUDA" and "cuda" would be one EP's
         * two lists, read as one (past MAX_FORM_CHOICES), in an order no
         * reader of the file could tell */
        for (size_t j = 0; j < i; j++) {
            size_t len_j;
            const char *kj = vdnn_json_key_at(v, j, &len_j);
            if (len_j == len && strncasecmp(kj, k, len) == 0)
                return fail_key(r, "forms", (long)i, "names the EP of entry %zu again (EP "
                                "names match in any case)", j);
        }
        const VdnnJson *e = vdnn_json_at(v, i);
        int rc;
        if (vdnn_json_type(e) != VDNN_JSON_ARRAY) {
            if ((rc = add_form(r, sc, i, k, e)))
                return rc;
            continue;
        }
        const size_t choices = vdnn_json_count(e);
        if (choices < 1 || choices > MAX_FORM_CHOICES)
            return fail_key(r, "forms", (long)i, "lists %zu files: 1..%d, in order of "
                            "preference", choices, MAX_FORM_CHOICES);
        for (size_t c = 0; c < choices; c++)
            if ((rc = add_form(r, sc, i, k, vdnn_json_at(e, c))))
                return rc;
    }
    return 0;
}

char *vdnn_sidecar_beside(const char *onnx_path, const char *file)
{
    const char *slash = strrchr(onnx_path, '/');
    const int dir_len = slash ? (int)(slash - onnx_path) + 1 : 0;
    const size_t len = (size_t)dir_len + strlen(file) + 1;
    char *path = malloc(len);
    if (path)
        snprintf(path, len, "%.*s%s", dir_len, onnx_path, file);
    return path;
}

const char *vdnn_sidecar_form_choice(const VdnnSidecar *sc, const char *ep, size_t index)
{
    if (!sc || !ep || !ep[0])
        return NULL;
    size_t own = 0;
    for (size_t i = 0; i < sc->form_files.count; i++)
        if (strcasecmp(sc->form_eps.items[i], ep) == 0 && own++ == index)
            return sc->form_files.items[i];
    /* "*": every EP without a key of its own, except ORT's CPU EP, for which
     * the model's own file is the CPU form unless "CPU" names another; after
     * an EP's own choices, its last resort: every file "*" lists, in order
     * (a "*" list's second file is as much a choice as an EP list's) */
    if (strcmp(ep, "*") == 0 || strcasecmp(ep, "CPU") == 0 || index < own)
        return NULL;
    return vdnn_sidecar_form_choice(sc, "*", index - own);
}

const char *vdnn_sidecar_form(const VdnnSidecar *sc, const char *attached_ep)
{
    if (attached_ep && strcmp(attached_ep, "*") == 0)
        return NULL;
    return vdnn_sidecar_form_choice(sc, attached_ep, 0);
}

/* ---- the document -------------------------------------------------------- */

#define STR_(x) #x
#define STR(x) STR_(x)
#define MIN_SIZE "an integer in [1, " STR(VMAF_DNN_MAX_DIMENSION) "]"

static int read_members(const Reader *r, VdnnSidecar *sc)
{
    /* In the order of VdnnSidecarKind and VdnnSidecarResize, from 1. */
    static const char *const kinds[] = {"fr", "nr"};
    static const char *const resizes[] = {"none", "bilinear", "nearest", "bicubic"};
    int kind = 0, resize = 0, rc;

    if ((rc = read_choice(r, "kind", kinds, COUNT(kinds), &kind)) ||
        (rc = read_string(r, "name", 1, &sc->name)) ||
        (rc = read_strings(r, "input_names", 0, &sc->input_names)) ||
        (rc = read_string(r, "output_name", 1, &sc->output_name)) ||
        (rc = read_strings(r, "output_names", 0, &sc->output_names)) ||
        (rc = read_strings(r, "features", 1, &sc->features)) ||
        (rc = read_feature_scale(r, sc, "feature_mean", 0, &sc->feature_mean)) ||
        (rc = read_feature_scale(r, sc, "feature_std", 1, &sc->feature_std)) ||
        (rc = read_bool(r, "native_resolution", &sc->has_native_resolution,
                        &sc->native_resolution)) ||
        (rc = read_choice(r, "resize", resizes, COUNT(resizes), &resize)) ||
        (rc = read_int(r, "opset", 0, INT_MAX, "a non-negative integer", &sc->has_opset,
                       &sc->opset)) ||
        (rc = read_string(r, "description", 0, &sc->description)) ||
        (rc = read_string(r, "meaning", 0, &sc->meaning)) ||
        (rc = read_int(r, "min_width", 1, VMAF_DNN_MAX_DIMENSION, MIN_SIZE,
                       &sc->has_min_width, &sc->min_width)) ||
        (rc = read_int(r, "min_height", 1, VMAF_DNN_MAX_DIMENSION, MIN_SIZE,
                       &sc->has_min_height, &sc->min_height)) ||
        (rc = read_bool(r, "higher_is_better", &sc->has_higher_is_better,
                        &sc->higher_is_better)) ||
        (rc = read_range(r, sc)) ||
        /* [slope, intercept] of a per-bit-depth cap on the model's scores */
        (rc = read_pair(r, "cap_db_per_bpc", &sc->has_cap_db_per_bpc, sc->cap_db_per_bpc)) ||
        (rc = read_sources(r, sc)) ||
        (rc = read_strings(r, "output_keys", 1, &sc->output_keys)) ||
        (rc = read_strings(r, "requires", 1, &sc->requires)) ||
        (rc = read_forms(r, sc)))
        return rc;
    sc->kind = (VdnnSidecarKind)kind;
    sc->resize = (VdnnSidecarResize)resize;
    return 0;
}

static int new_sidecar(const char *path, VdnnSidecar **out)
{
    VdnnSidecar *sc = calloc(1, sizeof(*sc));
    if (sc && !(sc->path = strdup(path))) {
        free(sc);
        sc = NULL;
    }
    if (!sc)
        return fail_nomem(path);
    *out = sc;
    return 0;
}

int vdnn_sidecar_parse(const char *text, size_t len, const char *origin, VdnnSidecar **out)
{
    VdnnSidecar *sc = NULL;
    VdnnJson *doc;
    char where[1024];

    if (!out)
        return vdnn_fail(-EINVAL, "vdnn_sidecar_parse: out is NULL");
    if (!origin)
        origin = "(memory)";
    snprintf(where, sizeof(where), "sidecar %s", origin);
    int rc = vdnn_json_parse(text, len, VDNN_SIDECAR_MAX_BYTES, where, &doc);
    if (rc)
        return rc;
    if ((rc = new_sidecar(origin, &sc))) {
        vdnn_json_free(doc);
        return rc;
    }

    Reader r = {doc, sc->path};
    if (vdnn_json_type(doc) != VDNN_JSON_OBJECT)
        rc = vdnn_fail(-EBADMSG, "%s: the top level must be an object, got %s", where,
                       vdnn_json_type_name(doc));
    else
        rc = read_members(&r, sc);
    vdnn_json_free(doc);
    if (rc) {
        vdnn_sidecar_free(sc);
        return rc;
    }
    sc->present = 1;
    *out = sc;
    return 0;
}

/* ---- the file ------------------------------------------------------------ */

int vdnn_sidecar_path(const char *onnx_path, char **out)
{
    if (!onnx_path || !out)
        return vdnn_fail(-EINVAL, "vdnn_sidecar_path: NULL argument");

    const char *slash = strrchr(onnx_path, '/');
    const char *base = slash ? slash + 1 : onnx_path;
    size_t len = strlen(onnx_path), stem = len;
    /* "dir/.onnx" is a hidden file with no extension, not an empty stem. */
    if (strlen(base) > 5 && strcmp(onnx_path + len - 5, ".onnx") == 0)
        stem = len - 5;

    char *path = malloc(stem + sizeof(".json"));
    if (!path)
        return vdnn_fail(-ENOMEM, "sidecar of %s: out of memory", onnx_path);
    memcpy(path, onnx_path, stem);
    memcpy(path + stem, ".json", sizeof(".json"));
    *out = path;
    return 0;
}

static int fail_errno(const char *path, const char *doing, int err)
{
    return vdnn_fail(-err, "sidecar %s: %s: %s", path, doing, strerror(err));
}

/* Reads the whole of the regular file open on fd into a new buffer. */
static int read_regular(int fd, const char *path, char **text, size_t *len)
{
    struct stat st;

    if (fstat(fd, &st) != 0)
        return fail_errno(path, "cannot stat", errno);
    if (!S_ISREG(st.st_mode))
        return vdnn_fail(-EISDIR, "sidecar %s is not a regular file", path);
    if ((unsigned long long)st.st_size > VDNN_SIDECAR_MAX_BYTES)
        return vdnn_fail(-E2BIG, "sidecar %s: %lld bytes is over the %zu-byte limit", path,
                         (long long)st.st_size, VDNN_SIDECAR_MAX_BYTES);

    /* One byte of room beyond the size fstat gave shows a file that grew. */
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return fail_nomem(path);
    for (;;) {
        ssize_t n = read(fd, buf + got, size + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(buf);
            return fail_errno(path, "cannot read", err);
        }
        got += (size_t)n;
        if (n == 0 || got == size + 1)
            break;
    }
    if (got != size) {
        free(buf);
        return vdnn_fail(-EIO, "sidecar %s changed size while it was read", path);
    }
    *text = buf;
    *len = size;
    return 0;
}

/* "<name>.json" for the model file `name` (".onnx" replaced). */
static int json_name(const char *name, char (*out)[NAME_MAX + 1])
{
    char *p = NULL;
    int rc = vdnn_sidecar_path(name, &p);
    if (rc)
        return rc;
    if (strlen(p) > NAME_MAX) {
        rc = vdnn_fail(-ENAMETOOLONG, "sidecar name of model file %s is too long", name);
    } else {
        strcpy(*out, p);
    }
    free(p);
    return rc;
}

int vdnn_sidecar_load_at(int dir_fd, const char *model_name, const char *shown,
                         VdnnSidecar **out)
{
    char name[NAME_MAX + 1], *text = NULL;
    size_t len = 0;
    int fd, rc;

    if (!out || !model_name || !shown)
        return vdnn_fail(-EINVAL, "vdnn_sidecar_load_at: NULL argument");
    if ((rc = json_name(model_name, &name)))
        return rc;
    /* Beneath the model's directory: a FIFO cannot hang the open (it is then
     * refused as not a regular file), a link cannot lead out. */
    rc = vdnn_open_beneath(dir_fd, name, &fd);
    if (rc == -ENOENT)
        return new_sidecar(shown, out);
    if (rc == -EXDEV)
        return vdnn_fail(-EACCES, "sidecar %s leads outside the model's directory (an absolute "
                         "symbolic link, or one that climbs out of it)", shown);
    if (rc)
        return fail_errno(shown, "cannot open", -rc);
    rc = read_regular(fd, shown, &text, &len);
    close(fd);
    if (!rc)
        rc = vdnn_sidecar_parse(text, len, shown, out);
    free(text);
    return rc;
}

int vdnn_sidecar_load(const char *onnx_path, const char *jail, VdnnSidecar **out)
{
    char name[NAME_MAX + 1], *shown = NULL;
    int dir_fd, rc;

    if (!out || !onnx_path)
        return vdnn_fail(-EINVAL, "vdnn_sidecar_load: NULL argument");
    if ((rc = vdnn_model_file_locate(onnx_path, jail, &dir_fd, &name)))
        return rc;
    /* Named after the path given when that is the file opened; otherwise
     * the path would name the sidecar of a symbolic link, not the one read. */
    const char *slash = strrchr(onnx_path, '/');
    if (strcmp(slash ? slash + 1 : onnx_path, name) == 0) {
        rc = vdnn_sidecar_path(onnx_path, &shown);
    } else {
        char json[NAME_MAX + 1];
        size_t n = strlen(onnx_path) + sizeof(json) + 32;
        if (!(rc = json_name(name, &json)) && !(shown = malloc(n)))
            rc = vdnn_fail(-ENOMEM, "out of memory");
        if (!rc)
            snprintf(shown, n, "%s (beside the file %s links to)", json, onnx_path);
    }
    if (!rc)
        rc = vdnn_sidecar_load_at(dir_fd, name, shown, out);
    free(shown);
    close(dir_fd);
    return rc;
}

static void free_strings(VdnnSidecarStrings *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i]);
    free(list->items);
}

void vdnn_sidecar_free(VdnnSidecar *sidecar)
{
    if (!sidecar)
        return;
    free(sidecar->path);
    free(sidecar->name);
    free_strings(&sidecar->input_names);
    free(sidecar->output_name);
    free_strings(&sidecar->output_names);
    free_strings(&sidecar->features);
    free(sidecar->feature_mean);
    free(sidecar->feature_std);
    free(sidecar->description);
    free(sidecar->meaning);
    for (size_t i = 0; i < sidecar->n_sources; i++) {
        free(sidecar->sources[i].input);
        free(sidecar->sources[i].feature);
    }
    free(sidecar->sources);
    free_strings(&sidecar->output_keys);
    free_strings(&sidecar->requires);
    free_strings(&sidecar->form_eps);
    free_strings(&sidecar->form_files);
    free(sidecar);
}
