/* Tests of the model sidecar (csrc/sidecar.c): key types and values, the
 * top-level-only rule, the path next to the model, and reading the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "error.h"
#include "model_file.h"
#include "sidecar.h"

#define ORIGIN "/x/foo.json"

/* Parses from an exact-size heap copy (no NUL) so over-reads are caught. */
static int parse_len(const char *text, size_t len, VdnnSidecar **out)
{
    char *copy = malloc(len ? len : 1);
    if (!copy)
        abort();
    memcpy(copy, text, len);
    int rc = vdnn_sidecar_parse(copy, len, ORIGIN, out);
    free(copy);
    return rc;
}

static int parse(const char *text, VdnnSidecar **out)
{
    return parse_len(text, strlen(text), out);
}

/* Expects text to fail with rc and a message holding both parts. */
static void expect_fail(int line, const char *text, int rc, const char *part1, const char *part2)
{
    VdnnSidecar *sc = NULL;
    int got = parse(text, &sc);
    const char *msg = vdnn_last_error();
    if (got != rc || !strstr(msg, part1) || !strstr(msg, part2))
        fprintf(stderr, "  (input from line %d: %s)\n", line, text);
    CHECK_EQ_INT(got, rc);
    CHECK_STR_CONTAINS(msg, part1);
    CHECK_STR_CONTAINS(msg, part2);
    CHECK(sc == NULL);
}

#define EXPECT_INVALID(text, part) \
    expect_fail(__LINE__, text, -EINVAL, "sidecar " ORIGIN ": key ", part)
#define EXPECT_BADMSG(text, part) \
    expect_fail(__LINE__, text, -EBADMSG, "sidecar " ORIGIN ": ", part)

static const char full[] =
    "{\n"
    "  \"kind\": \"fr\",\n"
    "  \"name\": \"tiny_vmaf\",\n"
    "  \"input_names\": [\"ref\", \"dis\"],\n"
    "  \"output_name\": \"score\",\n"
    "  \"output_names\": [\"mean\", \"std\", \"p5\"],\n"
    "  \"features\": [\"adm2\", \"motion2\", \"vif_scale0\"],\n"
    "  \"feature_mean\": [0.5, -1e-3, 2],\n"
    "  \"feature_std\": [0.25, 1E2, 3.5],\n"
    "  \"native_resolution\": true,\n"
    "  \"resize\": \"bicubic\",\n"
    "  \"opset\": 17,\n"
    "  \"description\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\n\",\n"
    "  \"higher_is_better\": false,\n"
    "  \"range\": [0, 100.5],\n"
    "  \"cap_db_per_bpc\": [6, 12],\n"
    "  \"unknown\": {\"anything\": [1, {\"kind\": \"nr\"}], \"name\": 3},\n"
    "  \"future_key\": null\n"
    "}\n";

static void test_full(void)
{
    VdnnSidecar *sc = NULL;

    CHECK_EQ_INT(parse(full, &sc), 0);
    if (!sc)
        return;
    CHECK_EQ_INT(sc->present, 1);
    CHECK(strcmp(sc->path, ORIGIN) == 0);
    CHECK(sc->kind == VDNN_SIDECAR_KIND_FR);
    CHECK(strcmp(sc->name, "tiny_vmaf") == 0);
    CHECK(sc->input_names.present && sc->input_names.count == 2);
    CHECK(strcmp(sc->input_names.items[0], "ref") == 0);
    CHECK(strcmp(sc->input_names.items[1], "dis") == 0);
    CHECK(strcmp(sc->output_name, "score") == 0);
    CHECK(sc->output_names.present && sc->output_names.count == 3);
    CHECK(strcmp(sc->output_names.items[2], "p5") == 0);
    CHECK(sc->features.present && sc->features.count == 3);
    CHECK(strcmp(sc->features.items[1], "motion2") == 0);
    CHECK(sc->feature_mean && sc->feature_mean[0] == 0.5 && sc->feature_mean[1] == -1e-3 &&
          sc->feature_mean[2] == 2.0);
    CHECK(sc->feature_std && sc->feature_std[0] == 0.25 && sc->feature_std[1] == 100.0 &&
          sc->feature_std[2] == 3.5);
    CHECK(sc->has_native_resolution && sc->native_resolution == 1);
    CHECK(sc->resize == VDNN_SIDECAR_RESIZE_BICUBIC);
    CHECK(sc->has_opset && sc->opset == 17);
    CHECK(sc->description &&
          strcmp(sc->description, "caf\xC3\xA9 \xF0\x9F\x98\x80 \"q\" \\ / \n") == 0);
    CHECK(sc->has_higher_is_better && sc->higher_is_better == 0);
    CHECK(sc->has_range && sc->range[0] == 0.0 && sc->range[1] == 100.5);
    CHECK(sc->has_cap_db_per_bpc && sc->cap_db_per_bpc[0] == 6.0 &&
          sc->cap_db_per_bpc[1] == 12.0);
    vdnn_sidecar_free(sc);
    vdnn_sidecar_free(NULL);
}

static void test_defaults_and_values(void)
{
    VdnnSidecar *sc = NULL;

    /* An empty object: present, every key at its default. */
    CHECK_EQ_INT(parse(" {} ", &sc), 0);
    CHECK(sc && sc->present == 1 && sc->kind == VDNN_SIDECAR_KIND_UNSET && !sc->name &&
          !sc->input_names.present && !sc->output_name && !sc->output_names.present &&
          !sc->features.present && !sc->feature_mean && !sc->feature_std &&
          !sc->has_native_resolution && sc->resize == VDNN_SIDECAR_RESIZE_UNSET &&
          !sc->has_opset && !sc->description && !sc->has_higher_is_better && !sc->has_range);
    vdnn_sidecar_free(sc);

    /* Each enumerated value maps to its own constant. */
    static const struct {
        const char *text;
        VdnnSidecarKind kind;
        VdnnSidecarResize resize;
    } enums[] = {
        {"{\"kind\":\"nr\",\"resize\":\"none\"}", VDNN_SIDECAR_KIND_NR, VDNN_SIDECAR_RESIZE_NONE},
        {"{\"kind\":\"fr\",\"resize\":\"bilinear\"}", VDNN_SIDECAR_KIND_FR,
         VDNN_SIDECAR_RESIZE_BILINEAR},
        {"{\"resize\":\"nearest\"}", VDNN_SIDECAR_KIND_UNSET, VDNN_SIDECAR_RESIZE_NEAREST},
        {"{\"kind\":\"\\u006er\"}", VDNN_SIDECAR_KIND_NR, VDNN_SIDECAR_RESIZE_UNSET},
    };
    for (size_t i = 0; i < sizeof(enums) / sizeof(enums[0]); i++) {
        sc = NULL;
        CHECK_EQ_INT(parse(enums[i].text, &sc), 0);
        CHECK(sc && sc->kind == enums[i].kind && sc->resize == enums[i].resize);
        vdnn_sidecar_free(sc);
    }

    /* Empty lists and an empty description are allowed; opset 0 is. */
    CHECK_EQ_INT(parse("{\"input_names\":[],\"output_names\":[],\"description\":\"\","
                       "\"opset\":0,\"native_resolution\":false,\"higher_is_better\":true,"
                       "\"range\":[-1e3,-5e-1]}",
                       &sc),
                 0);
    CHECK(sc && sc->input_names.present && sc->input_names.count == 0 &&
          !sc->input_names.items && sc->output_names.present && strcmp(sc->description, "") == 0 &&
          sc->has_opset && sc->opset == 0 && sc->has_native_resolution &&
          !sc->native_resolution && sc->higher_is_better == 1 && sc->range[0] == -1000.0 &&
          sc->range[1] == -0.5);
    vdnn_sidecar_free(sc);
}

/* The reference implementation used strstr: the first "name" anywhere in
 * the text won, inside string values and nested objects included. */
static void test_top_level_only(void)
{
    VdnnSidecar *sc = NULL;

    CHECK_EQ_INT(parse("{\"description\": \"\\\"name\\\": \\\"evil\\\"\", "
                       "\"meta\": {\"name\": \"nested\"}, \"name\": \"real\"}",
                       &sc),
                 0);
    CHECK(sc && sc->name && strcmp(sc->name, "real") == 0);
    CHECK(sc && strcmp(sc->description, "\"name\": \"evil\"") == 0);
    vdnn_sidecar_free(sc);

    sc = NULL;
    CHECK_EQ_INT(parse("{\"meta\": {\"kind\": \"fr\", \"features\": [\"x\"]}, "
                       "\"description\": \"\\\"kind\\\": \\\"nr\\\"\", "
                       "\"list\": [{\"name\": \"in_array\"}], \"kinds\": \"fr\", \"Name\": \"N\"}",
                       &sc),
                 0);
    CHECK(sc && sc->kind == VDNN_SIDECAR_KIND_UNSET && !sc->name && !sc->features.present);
    vdnn_sidecar_free(sc);

    /* Escaped key names are the same key once decoded. */
    sc = NULL;
    CHECK_EQ_INT(parse("{\"\\u006eame\": \"escaped\"}", &sc), 0);
    CHECK(sc && sc->name && strcmp(sc->name, "escaped") == 0);
    vdnn_sidecar_free(sc);
}

static void test_escapes(void)
{
    VdnnSidecar *sc = NULL;

    CHECK_EQ_INT(parse("{\"name\": \"a\\\"b\\\\c\\/d\\ne\\u00e9\\ud83d\\ude00\", "
                       "\"features\": [\"\\u00e9t\\u00e9\", \"raw \xC3\xA9\"]}",
                       &sc),
                 0);
    CHECK(sc && strcmp(sc->name, "a\"b\\c/d\ne\xC3\xA9\xF0\x9F\x98\x80") == 0);
    CHECK(sc && strcmp(sc->features.items[0], "\xC3\xA9t\xC3\xA9") == 0);
    CHECK(sc && strcmp(sc->features.items[1], "raw \xC3\xA9") == 0);
    vdnn_sidecar_free(sc);
}

/* Every known key with values of the wrong type or out of its domain. */
static void test_wrong_values(void)
{
    static const struct {
        const char *text;
        const char *part; /* expected in the message, after the origin */
    } cases[] = {
        {"{\"kind\": 1}", "\"kind\" must be \"fr\" or \"nr\", got number"},
        {"{\"kind\": \"xr\"}", "\"kind\" must be \"fr\" or \"nr\", not \"xr\""},
        {"{\"kind\": \"FR\"}", "not \"FR\""},
        {"{\"kind\": null}", "\"kind\" must be \"fr\" or \"nr\", got null"},
        {"{\"kind\": [\"fr\"]}", "got array"},
        {"{\"kind\": \"fr\\n\\u0000\"}", "not \"fr\\u000A\\u0000\""},
        {"{\"name\": 1}", "\"name\" must be a non-empty string, got number"},
        {"{\"name\": \"\"}", "\"name\" must not be empty"},
        {"{\"name\": null}", "\"name\" must be a non-empty string, got null"},
        {"{\"name\": [\"a\"]}", "got array"},
        {"{\"name\": true}", "got boolean"},
        {"{\"name\": {}}", "got object"},
        {"{\"input_names\": \"ref\"}",
         "\"input_names\" must be an array of non-empty strings, got string"},
        {"{\"input_names\": [1]}",
         "\"input_names\" entry 0 must be a non-empty string, got number"},
        {"{\"input_names\": [\"a\", \"\"]}", "\"input_names\" entry 1 must not be empty"},
        {"{\"input_names\": [[\"a\"]]}", "entry 0 must be a non-empty string, got array"},
        {"{\"input_names\": {}}", "got object"},
        {"{\"output_name\": 1}", "\"output_name\" must be a non-empty string, got number"},
        {"{\"output_name\": \"\"}", "\"output_name\" must not be empty"},
        {"{\"output_names\": \"a\"}", "\"output_names\" must be an array of non-empty strings"},
        {"{\"output_names\": [\"a\", null]}",
         "\"output_names\" entry 1 must be a non-empty string, got null"},
        {"{\"features\": \"a\"}", "\"features\" must be an array of non-empty strings, got string"},
        {"{\"features\": []}", "\"features\" must not be empty"},
        {"{\"features\": [1]}", "\"features\" entry 0 must be a non-empty string, got number"},
        {"{\"features\": [\"a\", 2]}", "\"features\" entry 1 must be"},
        {"{\"features\": [\"a\",\"b\"], \"feature_mean\": [1]}",
         "\"feature_mean\" must have one entry per feature (2), not 1"},
        {"{\"features\": [\"a\",\"b\"], \"feature_mean\": [1,2,3]}",
         "\"feature_mean\" must have one entry per feature (2), not 3"},
        {"{\"features\": [\"a\",\"b\"], \"feature_mean\": [\"1\",2]}",
         "\"feature_mean\" entry 0 must be a number, got string"},
        {"{\"features\": [\"a\",\"b\"], \"feature_mean\": \"x\"}",
         "\"feature_mean\" must be an array of numbers, got string"},
        {"{\"features\": [\"a\",\"b\"], \"feature_mean\": 1}", "got number"},
        {"{\"feature_mean\": [1]}", "\"feature_mean\" needs key \"features\" beside it"},
        {"{\"feature_std\": []}", "\"feature_std\" needs key \"features\""},
        {"{\"features\": [\"a\",\"b\"], \"feature_std\": [1, 0]}",
         "\"feature_std\" entry 1 must be a finite number > 0, not 0"},
        {"{\"features\": [\"a\",\"b\"], \"feature_std\": [-1, 1]}",
         "\"feature_std\" entry 0 must be a finite number > 0, not -1"},
        {"{\"features\": [\"a\",\"b\"], \"feature_std\": [-0, 1]}", "entry 0 must be a finite"},
        {"{\"features\": [\"a\",\"b\"], \"feature_std\": [1]}",
         "\"feature_std\" must have one entry per feature (2), not 1"},
        {"{\"features\": [\"a\",\"b\"], \"feature_std\": [1, \"2\"]}",
         "\"feature_std\" entry 1 must be a number, got string"},
        {"{\"features\": [\"a\",\"b\"], \"feature_std\": {\"a\":1}}",
         "\"feature_std\" must be an array of positive numbers, got object"},
        {"{\"native_resolution\": 1}", "\"native_resolution\" must be true or false, got number"},
        {"{\"native_resolution\": \"true\"}", "got string"},
        {"{\"native_resolution\": null}", "got null"},
        {"{\"resize\": \"linear\"}",
         "\"resize\" must be \"none\", \"bilinear\", \"nearest\" or \"bicubic\", not \"linear\""},
        {"{\"resize\": \"Bilinear\"}", "not \"Bilinear\""},
        {"{\"resize\": 1}",
         "\"resize\" must be \"none\", \"bilinear\", \"nearest\" or \"bicubic\", got number"},
        {"{\"opset\": 1.5}", "\"opset\" must be a non-negative integer, not 1.5"},
        {"{\"opset\": -1}", "\"opset\" must be a non-negative integer, not -1"},
        {"{\"opset\": 1e10}", "not 10000000000"},
        {"{\"opset\": \"17\"}", "\"opset\" must be a non-negative integer, got string"},
        {"{\"opset\": true}", "got boolean"},
        {"{\"description\": 1}", "\"description\" must be a string, got number"},
        {"{\"description\": [\"x\"]}", "got array"},
        {"{\"description\": null}", "got null"},
        {"{\"higher_is_better\": 0}", "\"higher_is_better\" must be true or false, got number"},
        {"{\"higher_is_better\": \"yes\"}", "got string"},
        {"{\"range\": [1]}", "\"range\" must have 2 entries, not 1"},
        {"{\"range\": []}", "\"range\" must have 2 entries, not 0"},
        {"{\"range\": [1, 2, 3]}", "\"range\" must have 2 entries, not 3"},
        {"{\"range\": [2, 1]}", "\"range\" must be [min, max] with min < max, not [2, 1]"},
        {"{\"range\": [1, 1]}", "not [1, 1]"},
        {"{\"range\": [\"a\", 1]}", "\"range\" entry 0 must be a number, got string"},
        {"{\"range\": [0, null]}", "\"range\" entry 1 must be a number, got null"},
        {"{\"range\": {}}", "\"range\" must be an array of numbers, got object"},
        {"{\"range\": 1}", "got number"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_fail(__LINE__, cases[i].text, -EINVAL, "sidecar " ORIGIN ": key ", cases[i].part);
}

static void test_caps(void)
{
    enum { MAX = VDNN_SIDECAR_MAX_STRING, ENTRIES = VDNN_SIDECAR_MAX_ENTRIES };
    char *text = malloc(16 * (MAX + ENTRIES) + 64);
    VdnnSidecar *sc = NULL;

    /* A string of exactly the cap passes; one byte more does not. */
    size_t n = (size_t)sprintf(text, "{\"name\": \"");
    memset(text + n, 'x', MAX);
    strcpy(text + n + MAX, "\"}");
    CHECK_EQ_INT(parse(text, &sc), 0);
    CHECK(sc && strlen(sc->name) == MAX);
    vdnn_sidecar_free(sc);
    memset(text + n, 'x', MAX + 1);
    strcpy(text + n + MAX + 1, "\"}");
    EXPECT_INVALID(text, "\"name\" is longer than 4096 bytes");

    /* The cap is on decoded bytes: 2048 two-byte characters fit. */
    n = (size_t)sprintf(text, "{\"description\": \"");
    for (int i = 0; i < MAX / 2; i++)
        n += (size_t)sprintf(text + n, "\\u00e9");
    strcpy(text + n, "\"}");
    sc = NULL;
    CHECK_EQ_INT(parse(text, &sc), 0);
    CHECK(sc && strlen(sc->description) == MAX);
    vdnn_sidecar_free(sc);

    /* Arrays: 256 entries pass, 257 do not. */
    n = (size_t)sprintf(text, "{\"features\": [");
    for (int i = 0; i < ENTRIES; i++)
        n += (size_t)sprintf(text + n, "%s\"f%d\"", i ? "," : "", i);
    strcpy(text + n, "]}");
    sc = NULL;
    CHECK_EQ_INT(parse(text, &sc), 0);
    CHECK(sc && sc->features.count == ENTRIES && strcmp(sc->features.items[255], "f255") == 0);
    vdnn_sidecar_free(sc);
    strcpy(text + n, ",\"f256\"]}");
    EXPECT_INVALID(text, "\"features\" has 257 entries, more than 256");

    n = (size_t)sprintf(text, "{\"range\": [");
    for (int i = 0; i <= ENTRIES; i++)
        n += (size_t)sprintf(text + n, "%s%d", i ? "," : "", i);
    strcpy(text + n, "]}");
    EXPECT_INVALID(text, "\"range\" has 257 entries, more than 256");
    free(text);

    /* A NUL would silently shorten every C string use. */
    EXPECT_INVALID("{\"name\": \"a\\u0000b\"}", "\"name\" must not contain \\u0000");
    EXPECT_INVALID("{\"features\": [\"a\", \"\\u0000\"]}",
                   "\"features\" entry 1 must not contain \\u0000");
}

static void test_bad_documents(void)
{
    EXPECT_BADMSG("[]", "the top level must be an object, got array");
    EXPECT_BADMSG("1", "the top level must be an object, got number");
    EXPECT_BADMSG("\"x\"", "got string");
    EXPECT_BADMSG("null", "got null");
    EXPECT_BADMSG("", "line 1, column 1: expected a value, found end of input");
    EXPECT_BADMSG("{\"name\": \"a\",}", "line 1, column 14: expected a string key in object");
    EXPECT_BADMSG("{\"name\": \"a\", \"name\": \"b\"}", "duplicate key \"name\" in object");
    EXPECT_BADMSG("{\"meta\": {\"x\": 1, \"x\": 2}}", "duplicate key \"x\"");
    EXPECT_BADMSG("{\"name\": \"a\"} x", "expected nothing after the top-level value, found 'x'");
    EXPECT_BADMSG("{\"name\": \"a\"}\n}", "line 2, column 1");
    EXPECT_BADMSG("{\"name\": 'a'}", "expected a value, found '''");
    EXPECT_BADMSG("{\"name\": \"a\" // comment\n}", "found '/'");
    EXPECT_BADMSG("{\"opset\": 017}", "leading zeros");
    EXPECT_BADMSG("{\"range\": [0, Infinity]}", "expected a value, found 'I'");
    EXPECT_BADMSG("{\"range\": [0, 1e999]}", "too large for a double");
    EXPECT_BADMSG("{\"name\": \"\\ud800\"}", "high surrogate");

    /* Nesting past the cap, even under an unknown key: the top-level object
     * is the first level, so 63 arrays inside it fit and 64 do not. */
    VdnnSidecar *sc = NULL;
    for (int arrays = 63; arrays <= 64; arrays++) {
        char deep[256];
        size_t n = (size_t)sprintf(deep, "{\"x\": ");
        memset(deep + n, '[', (size_t)arrays);
        memset(deep + n + arrays, ']', (size_t)arrays);
        strcpy(deep + n + 2 * arrays, "}");
        sc = NULL;
        CHECK_EQ_INT(parse(deep, &sc), arrays == 63 ? 0 : -EBADMSG);
        vdnn_sidecar_free(sc);
    }
    CHECK_STR_CONTAINS(vdnn_last_error(), "line 1, column 70: more than 64 nested");

    /* The 1 MiB cap applies to memory too. */
    size_t big = VDNN_SIDECAR_MAX_BYTES + 1;
    char *text = malloc(big);
    memset(text, ' ', big);
    memcpy(text, "{}", 2);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_parse(text, big, ORIGIN, &sc), -E2BIG);
    CHECK_STR_CONTAINS(vdnn_last_error(),
                       "sidecar " ORIGIN ": 1048577 bytes is over the 1048576-byte limit");
    CHECK_EQ_INT(vdnn_sidecar_parse(text, big - 1, ORIGIN, &sc), 0);
    vdnn_sidecar_free(sc);
    free(text);

    /* Arguments. */
    CHECK_EQ_INT(vdnn_sidecar_parse("{}", 2, ORIGIN, NULL), -EINVAL);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_parse("{}", 2, NULL, &sc), 0);
    CHECK(sc && strcmp(sc->path, "(memory)") == 0);
    vdnn_sidecar_free(sc);
    CHECK_EQ_INT(vdnn_sidecar_parse("[", 1, NULL, &sc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "sidecar (memory): line 1, column 2");
}

/* Every proper prefix of a valid sidecar is malformed JSON. */
static void test_truncation(void)
{
    size_t closing = (size_t)(strrchr(full, '}') - full);
    int bad = 0;

    for (size_t n = 0; n <= closing; n++) {
        VdnnSidecar *sc = NULL;
        if (parse_len(full, n, &sc) != -EBADMSG || sc) {
            fprintf(stderr, "  prefix of %zu bytes was not refused\n", n);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void expect_path(const char *onnx, const char *want)
{
    char *got = NULL;
    CHECK_EQ_INT(vdnn_sidecar_path(onnx, &got), 0);
    if (!got || strcmp(got, want) != 0)
        fprintf(stderr, "  sidecar path of \"%s\": \"%s\", expected \"%s\"\n", onnx,
                got ? got : "(null)", want);
    CHECK(got && strcmp(got, want) == 0);
    free(got);
}

static void test_path(void)
{
    expect_path("/models/foo.onnx", "/models/foo.json");
    expect_path("foo.onnx", "foo.json");
    expect_path("a.b.onnx", "a.b.json");
    expect_path("foo", "foo.json");
    expect_path("foo.ONNX", "foo.ONNX.json");
    expect_path("foo.onnx.bak", "foo.onnx.bak.json");
    expect_path("dir.onnx/model", "dir.onnx/model.json");
    expect_path(".onnx", ".onnx.json");
    expect_path("dir/.onnx", "dir/.onnx.json");
    expect_path("x.onnx", "x.json");
    expect_path("", ".json");

    char *out = NULL;
    CHECK_EQ_INT(vdnn_sidecar_path(NULL, &out), -EINVAL);
    CHECK_EQ_INT(vdnn_sidecar_path("a", NULL), -EINVAL);
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_EQ_INT(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Runs the load as an unprivileged user in a child (root reads any file, so
 * a permission test run as root would otherwise prove nothing). Returns the
 * child's load result. */
static int load_unprivileged(const char *onnx)
{
    pid_t pid = fork();
    if (pid == 0) {
        VdnnSidecar *sc = NULL;
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(100);
        int rc = vdnn_sidecar_load(onnx, NULL, &sc);
        vdnn_sidecar_free(sc);
        _exit(-rc & 0x7F);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1000;
    return -WEXITSTATUS(status);
}

static void test_load(void)
{
    char dir[] = "/tmp/test_sidecar_XXXXXX", onnx[128], json[128];
    VdnnSidecar *sc = NULL;

    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ_INT(chmod(dir, 0755), 0);
    snprintf(onnx, sizeof(onnx), "%s/foo.onnx", dir);
    snprintf(json, sizeof(json), "%s/foo.json", dir);
    write_file(onnx, "x", 1); /* the model it belongs to: the sidecar is looked up beside it */

    /* Absent: defaults, with the path that was looked for. */
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), 0);
    CHECK(sc && sc->present == 0 && strcmp(sc->path, json) == 0 && !sc->name &&
          sc->kind == VDNN_SIDECAR_KIND_UNSET && !sc->features.present && !sc->has_range);
    vdnn_sidecar_free(sc);

    /* Present. */
    write_file(json, full, sizeof(full) - 1);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), 0);
    CHECK(sc && sc->present == 1 && strcmp(sc->path, json) == 0 &&
          strcmp(sc->name, "tiny_vmaf") == 0 && sc->features.count == 3);
    vdnn_sidecar_free(sc);

    /* Errors name the file. */
    write_file(json, "{\"name\": 5}", 11);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -EINVAL);
    CHECK_STR_CONTAINS(vdnn_last_error(), json);
    CHECK_STR_CONTAINS(vdnn_last_error(), "key \"name\" must be a non-empty string");
    CHECK(sc == NULL);
    write_file(json, "{\n\"name\": \"a\"\n\"kind\": \"fr\"}", 26);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "line 3, column 1: expected ',' or '}' in object");
    CHECK_STR_CONTAINS(vdnn_last_error(), json);
    write_file(json, "", 0);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "found end of input");

    /* Size cap: exactly 1 MiB loads, one byte more is refused unread. */
    size_t cap = VDNN_SIDECAR_MAX_BYTES;
    char *big = malloc(cap + 1);
    memset(big, '\n', cap + 1);
    memcpy(big, "{\"opset\": 9}", 12);
    write_file(json, big, cap);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), 0);
    CHECK(sc && sc->has_opset && sc->opset == 9);
    vdnn_sidecar_free(sc);
    write_file(json, big, cap + 1);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -E2BIG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "1048577 bytes is over the 1048576-byte limit");
    free(big);

    /* Permissions. */
    write_file(json, "{}", 2);
    CHECK_EQ_INT(chmod(json, 0600), 0);
    CHECK_EQ_INT(load_unprivileged(onnx), -EACCES);
    CHECK_EQ_INT(chmod(json, 0644), 0);
    CHECK_EQ_INT(load_unprivileged(onnx), 0);
    CHECK_EQ_INT(chmod(json, 0000), 0);
    CHECK_EQ_INT(load_unprivileged(onnx), -EACCES);
    CHECK_EQ_INT(unlink(json), 0);

    /* Not a regular file: a directory, and a FIFO (which must not block). */
    CHECK_EQ_INT(mkdir(json, 0755), 0);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -EISDIR);
    CHECK_STR_CONTAINS(vdnn_last_error(), "is not a regular file");
    CHECK_EQ_INT(rmdir(json), 0);
    CHECK_EQ_INT(mkfifo(json, 0644), 0);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -EISDIR);
    CHECK_EQ_INT(unlink(json), 0);

    /* A relative symlink to a sidecar in the model's directory is followed;
     * an absolute one is not, even to the same file; a dangling one reads as
     * absent. */
    char target[160];
    snprintf(target, sizeof(target), "%s/real.json", dir);
    write_file(target, "{\"kind\": \"nr\"}", 14);
    CHECK_EQ_INT(symlink(target, json), 0);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -EACCES);
    CHECK_STR_CONTAINS(vdnn_last_error(), "leads outside the model's directory");
    CHECK_EQ_INT(unlink(json), 0);
    CHECK_EQ_INT(symlink("real.json", json), 0);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), 0);
    CHECK(sc && sc->present && sc->kind == VDNN_SIDECAR_KIND_NR);
    vdnn_sidecar_free(sc);
    CHECK_EQ_INT(unlink(target), 0);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), 0);
    CHECK(sc && sc->present == 0);
    vdnn_sidecar_free(sc);
    CHECK_EQ_INT(unlink(json), 0);

    /* A model name without ".onnx" gets ".json" appended. */
    char plain[160], plain_json[170];
    snprintf(plain, sizeof(plain), "%s/model", dir);
    snprintf(plain_json, sizeof(plain_json), "%s/model.json", dir);
    write_file(plain, "x", 1);
    write_file(plain_json, "{\"name\": \"p\"}", 13);
    sc = NULL;
    CHECK_EQ_INT(vdnn_sidecar_load(plain, NULL, &sc), 0);
    CHECK(sc && sc->present && strcmp(sc->name, "p") == 0);
    vdnn_sidecar_free(sc);
    CHECK_EQ_INT(unlink(plain_json), 0);
    CHECK_EQ_INT(unlink(plain), 0);

    /* A path through a regular file is an error, not "absent". */
    snprintf(plain, sizeof(plain), "%s/file", dir);
    write_file(plain, "x", 1);
    snprintf(plain_json, sizeof(plain_json), "%s/file/foo.onnx", dir);
    CHECK_EQ_INT(vdnn_sidecar_load(plain_json, NULL, &sc), -ENOTDIR);
    CHECK_EQ_INT(unlink(plain), 0);

    CHECK_EQ_INT(vdnn_sidecar_load(NULL, NULL, &sc), -EINVAL);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, NULL), -EINVAL);
    /* No model, no sidecar: the model's own error. */
    CHECK_EQ_INT(unlink(onnx), 0);
    CHECK_EQ_INT(vdnn_sidecar_load(onnx, NULL, &sc), -ENOENT);
    CHECK_EQ_INT(rmdir(dir), 0);
}

/* The sidecar belongs to the file actually opened, and is opened beneath its
 * directory: a symlinked model gets its target's sidecar, a sidecar link
 * cannot leave the directory (jail or not), and the jail applies to the
 * model it is found through. Both resolution mechanisms answer the same. */
static void test_load_beside_opened(void)
{
    char dir[] = "/tmp/test_sidecar_XXXXXX", p[256], link[256], jail[256];
    VdnnSidecar *sc = NULL;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(jail, sizeof(jail), "%s/jail", dir);
    snprintf(p, sizeof(p), "%s/jail", dir);
    CHECK_EQ_INT(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/jail/sub", dir);
    CHECK_EQ_INT(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/jail/sub/real.onnx", dir);
    write_file(p, "x", 1);
    snprintf(p, sizeof(p), "%s/jail/sub/real.json", dir);
    write_file(p, "{\"name\": \"real\"}", 16);
    snprintf(p, sizeof(p), "%s/jail/alias.json", dir); /* the link's own: never read */
    write_file(p, "{\"name\": \"alias\"}", 17);
    snprintf(link, sizeof(link), "%s/jail/alias.onnx", dir);
    CHECK_EQ_INT(symlink("sub/real.onnx", link), 0);
    snprintf(p, sizeof(p), "%s/secret.json", dir);
    write_file(p, "{\"name\": \"secret\"}", 18);
    snprintf(p, sizeof(p), "%s/jail/m.onnx", dir);
    write_file(p, "x", 1);
    snprintf(p, sizeof(p), "%s/jail/m.json", dir);
    CHECK_EQ_INT(symlink("../secret.json", p), 0);

    for (int mode = VDNN_WALK_OPENAT2; mode <= VDNN_WALK_FALLBACK; mode++) {
        vdnn_model_file_walk_mode(mode);
        for (int jailed = 0; jailed < 2; jailed++) {
            const char *j = jailed ? jail : NULL;
            sc = NULL;
            CHECK_EQ_INT(vdnn_sidecar_load(link, j, &sc), 0);
            CHECK(sc && sc->present && sc->name && strcmp(sc->name, "real") == 0);
            CHECK(sc && strstr(sc->path, "real.json") != NULL);
            vdnn_sidecar_free(sc);

            /* m.json -> ../secret.json climbs out of the model's directory. */
            snprintf(p, sizeof(p), "%s/jail/m.onnx", dir);
            sc = NULL;
            CHECK_EQ_INT(vdnn_sidecar_load(p, j, &sc), -EACCES);
            CHECK(sc == NULL);
            CHECK_STR_CONTAINS(vdnn_last_error(), "leads outside the model's directory");
            CHECK(strstr(vdnn_last_error(), "secret") == NULL);
        }
        /* Under a jail, a model outside it gets no sidecar either. */
        snprintf(p, sizeof(p), "%s/jail/../secret.onnx", dir);
        CHECK_EQ_INT(vdnn_sidecar_load(p, jail, &sc), -EACCES);
    }
    vdnn_model_file_walk_mode(VDNN_WALK_AUTO);

    static const char *const files[] = { "jail/m.json", "jail/m.onnx", "secret.json",
                                         "jail/alias.onnx", "jail/alias.json",
                                         "jail/sub/real.json", "jail/sub/real.onnx" };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        CHECK_EQ_INT(unlink(p), 0);
    }
    snprintf(p, sizeof(p), "%s/jail/sub", dir);
    CHECK_EQ_INT(rmdir(p), 0);
    CHECK_EQ_INT(rmdir(jail), 0);
    CHECK_EQ_INT(rmdir(dir), 0);
}

/* Messages show at most a 40-character excerpt of the file's contents, with
 * control characters and non-ASCII bytes escaped. */
static void test_excerpts(void)
{
    VdnnSidecar *sc = NULL;
    char doc[600];
    /* A value of 200 bytes: an escape sequence, UTF-8, then filler. */
    char value[201];
    memset(value, 'A', 200);
    value[200] = '\0';
    memcpy(value, "\\u001b[31m\xC3\xA9", 12);
    int n = snprintf(doc, sizeof(doc), "{\"kind\": \"%s\"}", value);
    CHECK_EQ_INT(vdnn_sidecar_parse(doc, (size_t)n, "x.json", &sc), -EINVAL);
    const char *msg = vdnn_last_error();
    CHECK_STR_CONTAINS(msg, "\"\\u001B[31m\\xC3\\xA9AAAA");
    CHECK(strstr(msg, "\x1b") == NULL && strstr(msg, "\xC3") == NULL);
    for (const char *c = msg; *c; c++)
        CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7F);
    const char *q = strstr(msg, "not \"");
    CHECK(q != NULL);
    if (q) {
        const char *end = strstr(q + 5, "...\"");
        CHECK(end != NULL && end - (q + 5) <= 40);
    }

    /* A duplicate key is quoted the same way. */
    n = snprintf(doc, sizeof(doc), "{\"%s\": 1, \"%s\": 2}", value, value);
    CHECK_EQ_INT(vdnn_sidecar_parse(doc, (size_t)n, "x.json", &sc), -EBADMSG);
    msg = vdnn_last_error();
    CHECK_STR_CONTAINS(msg, "duplicate key \"\\u001B[31m\\xC3\\xA9");
    CHECK(strstr(msg, "\xC3") == NULL);
    CHECK(strlen(msg) < 160);
}

/* Expects got to be the string want (got may be NULL). */
static void check_str(int line, const char *got, const char *want)
{
    if (!got || strcmp(got, want) != 0)
        fprintf(stderr, "  line %d: got \"%s\", expected \"%s\"\n", line,
                got ? got : "(null)", want);
    CHECK(got && strcmp(got, want) == 0);
}
#define CHECK_STR_EQ_NULLABLE(got, want) check_str(__LINE__, got, want)

/* "forms": an EP's own key first (any case), then "*" for every EP but
 * ORT's CPU EP; nothing for NULL, "" or "*" itself. */
static void test_forms(void)
{
    VdnnSidecar *sc = NULL;

    CHECK_EQ_INT(parse("{\"forms\": {\"CPU\": \"c.onnx\", \"*\": \"a.onnx\", "
                       "\"OpenVINO:CPU\": \"o.onnx\"}}", &sc), 0);
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "CPU"), "c.onnx");
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "cpu"), "c.onnx");
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "CUDA"), "a.onnx");
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "OpenVINO:GPU"), "a.onnx");
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "openvino:cpu"), "o.onnx");
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "ROCm"), "a.onnx");
    CHECK(vdnn_sidecar_form(sc, NULL) == NULL);
    CHECK(vdnn_sidecar_form(sc, "") == NULL);
    CHECK(vdnn_sidecar_form(sc, "*") == NULL);
    vdnn_sidecar_free(sc);

    /* "*" alone: never ORT's CPU EP, whatever the case */
    sc = NULL;
    CHECK_EQ_INT(parse("{\"forms\": {\"*\": \"accel.onnx\"}}", &sc), 0);
    CHECK(vdnn_sidecar_form(sc, "CPU") == NULL);
    CHECK(vdnn_sidecar_form(sc, "Cpu") == NULL);
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "CUDA"), "accel.onnx");
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "OpenVINO:CPU"), "accel.onnx");
    vdnn_sidecar_free(sc);

    /* no "*": only the keys named */
    sc = NULL;
    CHECK_EQ_INT(parse("{\"forms\": {\"CPU\": \"c.onnx\"}}", &sc), 0);
    CHECK_STR_EQ_NULLABLE(vdnn_sidecar_form(sc, "CPU"), "c.onnx");
    CHECK(vdnn_sidecar_form(sc, "CUDA") == NULL);
    vdnn_sidecar_free(sc);

    /* "*" is a key like the others: a path inside the directory */
    EXPECT_INVALID("{\"forms\": {\"*\": \"../x.onnx\"}}", "must be a path inside");
    EXPECT_INVALID("{\"forms\": {\"*\": \"\"}}", "forms");
    CHECK(vdnn_sidecar_form(NULL, "CUDA") == NULL);
}

int main(void)
{
    test_full();
    test_defaults_and_values();
    test_top_level_only();
    test_escapes();
    test_wrong_values();
    test_caps();
    test_bad_documents();
    test_truncation();
    test_path();
    test_load();
    test_load_beside_opened();
    test_excerpts();
    test_forms();
    return check_report();
}
