/* libFuzzer harness for the strict JSON parser (csrc/json.h) and the sidecar
 * reader on top of it (csrc/sidecar.h); built and run by tools/fuzz.sh with
 * ASan + UBSan. The input is the sidecar text, exactly as a file would hold
 * it (libFuzzer's buffer is not NUL-terminated, so any read past the end is
 * caught).
 *
 * Each input goes through vdnn_json_parse() (the whole tree is then walked
 * with every accessor and vdnn_json_quote()), vdnn_sidecar_parse() and
 * vdnn_sidecar_path(). Besides memory errors, UB and leaks, the harness
 * aborts when a contract in the headers is broken:
 *   - an undocumented return value, or a failure without a message;
 *   - a tree that contradicts itself: a string not NUL-terminated at its
 *     length, a non-finite number, deeper than VDNN_JSON_MAX_DEPTH, a member
 *     lookup by key that does not find the member at that key's index (keys
 *     are unique), a quoted string that overruns its buffer;
 *   - the two layers disagreeing: text the JSON parser refuses that the
 *     sidecar reader accepts (or refuses with a different error), or a
 *     sidecar accepted from a document whose top level is not an object;
 *   - an accepted sidecar whose fields break sidecar.h's promises (strings
 *     non-empty and NUL-free, list sizes, feature_std > 0, range min < max,
 *     "name" equal to the document's string).
 */
/* sidecar.c opens files through model_file.c; tools/fuzz.sh links only
 * json.c and sidecar.c, so it is compiled in here (first: it sets
 * _GNU_SOURCE). The harness fuzzes parsing, not file access. */
#include "model_file.c"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "sidecar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char origin[] = "fuzz.json";

static void die(const char *what)
{
    fprintf(stderr, "fuzz_sidecar: %s (last error: \"%s\")\n", what, vdnn_last_error());
    abort();
}

static void check_quote(const char *s, size_t len)
{
    static const size_t caps[] = { 16, 17, 23, 96 };
    char buf[96 + 16];
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        /* A canary after the declared capacity shows any overrun. */
        memset(buf, 0x5A, sizeof(buf));
        const char *q = vdnn_json_quote(s, len, buf, caps[i]);
        if (q != buf)
            die("vdnn_json_quote did not return buf");
        size_t n = strnlen(buf, caps[i]);
        if (n == caps[i])
            die("vdnn_json_quote output is not NUL-terminated within cap");
        for (size_t j = caps[i]; j < sizeof(buf); j++)
            if (buf[j] != 0x5A)
                die("vdnn_json_quote wrote past cap");
        if (n < 2 || buf[0] != '"' || buf[n - 1] != '"')
            die("vdnn_json_quote output is not quoted");
    }
}

static void walk(const VdnnJson *v, int depth)
{
    if (depth > VDNN_JSON_MAX_DEPTH)
        die("tree deeper than VDNN_JSON_MAX_DEPTH");
    size_t len = 0, count = vdnn_json_count(v);
    const char *s;
    (void)vdnn_json_type_name(v);

    switch (vdnn_json_type(v)) {
    case VDNN_JSON_NUMBER:
        if (!isfinite(vdnn_json_number(v)))
            die("non-finite number");
        break;
    case VDNN_JSON_STRING:
        s = vdnn_json_string(v, &len);
        if (!s || s[len] != '\0')
            die("string not NUL-terminated at its length");
        check_quote(s, len);
        break;
    case VDNN_JSON_ARRAY:
        if (vdnn_json_key_at(v, 0, NULL))
            die("array has a key");
        for (size_t i = 0; i < count; i++)
            walk(vdnn_json_at(v, i), depth + 1);
        break;
    case VDNN_JSON_OBJECT:
        for (size_t i = 0; i < count; i++) {
            const char *key = vdnn_json_key_at(v, i, &len);
            if (!key || key[len] != '\0')
                die("key not NUL-terminated at its length");
            if (strlen(key) == len && vdnn_json_member(v, key) != vdnn_json_at(v, i))
                die("member lookup by key does not find that key's member");
            check_quote(key, len);
            walk(vdnn_json_at(v, i), depth + 1);
        }
        break;
    default:
        break;
    }
    if (vdnn_json_at(v, count) != NULL)
        die("vdnn_json_at past the end is not NULL");
}

static void check_strings(const VdnnSidecarStrings *l, int nonempty_list)
{
    if (!l->present && l->count)
        die("absent string list has entries");
    if (nonempty_list && l->present && l->count == 0)
        die("list that must not be empty is empty");
    if (l->count > VDNN_SIDECAR_MAX_ENTRIES || (l->count && !l->items))
        die("string list size out of range");
    for (size_t i = 0; i < l->count; i++) {
        size_t n = l->items[i] ? strlen(l->items[i]) : 0;
        if (n == 0 || n > VDNN_SIDECAR_MAX_STRING)
            die("string list entry empty or too long");
    }
}

static void check_sidecar(const VdnnSidecar *sc, const VdnnJson *doc)
{
    if (!sc->present || !sc->path || strcmp(sc->path, origin) != 0)
        die("accepted sidecar without present = 1 and path = origin");
    if (vdnn_json_type(doc) != VDNN_JSON_OBJECT)
        die("sidecar accepted from a document that is not an object");
    if ((unsigned)sc->kind > VDNN_SIDECAR_KIND_NR ||
        (unsigned)sc->resize > VDNN_SIDECAR_RESIZE_BICUBIC)
        die("enumeration out of range");
    if (sc->name && (sc->name[0] == '\0' || strlen(sc->name) > VDNN_SIDECAR_MAX_STRING))
        die("name empty or too long");
    const char *doc_name = vdnn_json_string(vdnn_json_member(doc, "name"), NULL);
    if ((sc->name == NULL) != (doc_name == NULL) || (sc->name && strcmp(sc->name, doc_name) != 0))
        die("name differs from the document's");
    check_strings(&sc->input_names, 0);
    check_strings(&sc->output_names, 0);
    check_strings(&sc->features, 1);
    if ((sc->feature_mean || sc->feature_std) && !sc->features.present)
        die("feature scale without features");
    for (size_t i = 0; sc->feature_std && i < sc->features.count; i++)
        if (!(sc->feature_std[i] > 0 && isfinite(sc->feature_std[i])))
            die("feature_std entry not finite and > 0");
    if (sc->has_range && !(sc->range[0] < sc->range[1]))
        die("range with min >= max");
    if (sc->has_opset && sc->opset < 0)
        die("negative opset");
}

static void check_path(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1), *out = NULL;
    if (!in)
        return;
    memcpy(in, data, size);
    in[size] = '\0';
    if (vdnn_sidecar_path(in, &out) != 0)
        die("vdnn_sidecar_path failed on a valid string");
    size_t n = strlen(out);
    if (n < 5 || strcmp(out + n - 5, ".json") != 0)
        die("sidecar path does not end in .json");
    free(out);
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    VdnnJson *doc = NULL;
    VdnnSidecar *sc = NULL;

    vdnn_clear_error();
    int rj = vdnn_json_parse(text, size, VDNN_SIDECAR_MAX_BYTES, origin, &doc);
    if (rj != 0 && rj != -EBADMSG && rj != -E2BIG && rj != -ENOMEM)
        die("undocumented vdnn_json_parse result");
    if ((rj != 0) != (doc == NULL))
        die("vdnn_json_parse result and tree disagree");
    if (rj && vdnn_last_error()[0] == '\0')
        die("vdnn_json_parse failed without a message");
    if (doc)
        walk(doc, 0);

    vdnn_clear_error();
    int rs = vdnn_sidecar_parse(text, size, origin, &sc);
    if (rs != 0 && rs != -EINVAL && rs != -EBADMSG && rs != -E2BIG && rs != -ENOMEM)
        die("undocumented vdnn_sidecar_parse result");
    if ((rs != 0) != (sc == NULL))
        die("vdnn_sidecar_parse result and output disagree");
    if (rs && vdnn_last_error()[0] == '\0')
        die("vdnn_sidecar_parse failed without a message");
    if (rj != 0 && rs != rj)
        die("the sidecar reader and the JSON parser disagree about the text");
    if (rj == 0 && vdnn_json_type(doc) != VDNN_JSON_OBJECT && rs != -EBADMSG)
        die("a document that is not an object was not refused with -EBADMSG");
    if (rj == 0 && vdnn_json_type(doc) == VDNN_JSON_OBJECT && rs != 0 && rs != -EINVAL &&
        rs != -ENOMEM)
        die("an object document failed with an error other than -EINVAL");
    if (sc)
        check_sidecar(sc, doc);

    vdnn_sidecar_free(sc);
    vdnn_json_free(doc);
    check_path(data, size);
    return 0;
}
