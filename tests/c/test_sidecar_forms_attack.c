/* The attack review of sidecar "forms" lists (csrc/sidecar.c): the choices
 * vdnn_sidecar_form_choice hands out, in order, for an EP with a list of its
 * own, with none, and for "*" itself; a "*" list is the last resort of every
 * EP but ORT's CPU EP, all of it (its second file was never reached: an EP
 * whose "*" form was passed over had no next choice); keys naming one EP in
 * two spellings are refused (they were read as one list of up to 8). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "sidecar.h"

static int parse(const char *text, VdnnSidecar **out)
{
    const size_t len = strlen(text);
    char *copy = malloc(len ? len : 1); /* no NUL: over-reads are caught */
    if (!copy)
        abort();
    memcpy(copy, text, len);
    int rc = vdnn_sidecar_parse(copy, len, "/x/m.json", out);
    free(copy);
    return rc;
}

/* Expects ep's choices to be want[0..] and then none. */
static void expect_choices(int line, const VdnnSidecar *sc, const char *ep,
                           const char *const *want, size_t n)
{
    for (size_t i = 0; i <= n; i++) {
        const char *got = vdnn_sidecar_form_choice(sc, ep, i);
        const int ok = i < n ? got && strcmp(got, want[i]) == 0 : got == NULL;
        if (!ok)
            fprintf(stderr, "  line %d: %s choice %zu is %s, expected %s\n", line, ep, i,
                    got ? got : "(null)", i < n ? want[i] : "(null)");
        CHECK(ok);
    }
}
#define EXPECT_CHOICES(sc, ep, ...)                                                          \
    do {                                                                                     \
        static const char *const want_[] = {__VA_ARGS__};                                   \
        expect_choices(__LINE__, sc, ep, want_, sizeof(want_) / sizeof(want_[0]));           \
    } while (0)

static void check_str(int line, const char *got, const char *want)
{
    if (!got || strcmp(got, want) != 0)
        fprintf(stderr, "  line %d: got \"%s\", expected \"%s\"\n", line, got ? got : "(null)",
                want);
    CHECK(got && strcmp(got, want) == 0);
}
#define CHECK_STR_EQ(got, want) check_str(__LINE__, got, want)

static void expect_refused(int line, const char *text, const char *part)
{
    VdnnSidecar *sc = NULL;
    const int rc = parse(text, &sc);
    const char *msg = vdnn_last_error();
    if (rc != -EINVAL || !strstr(msg, part))
        fprintf(stderr, "  line %d: rc %d, message \"%s\", expected -EINVAL with \"%s\"\n",
                line, rc, msg, part);
    CHECK(rc == -EINVAL && strstr(msg, part) != NULL);
    CHECK(sc == NULL);
    vdnn_sidecar_free(sc);
}
#define EXPECT_REFUSED(text, part) expect_refused(__LINE__, text, part)

static void test_star_list_is_every_eps_last_resort(void)
{
    VdnnSidecar *sc = NULL;
    CHECK_EQ_INT(parse("{\"forms\": {\"*\": [\"k.onnx\", \"a.onnx\"], "
                       "\"CUDA\": [\"ck.onnx\", \"cs.onnx\"], \"CPU\": \"c.onnx\"}}", &sc), 0);
    /* an EP without a key: "*"'s files, both */
    EXPECT_CHOICES(sc, "OpenVINO:GPU", "k.onnx", "a.onnx");
    EXPECT_CHOICES(sc, "webgpu:gpu", "k.onnx", "a.onnx");
    /* an EP with a list: its own, then all of "*" */
    EXPECT_CHOICES(sc, "CUDA", "ck.onnx", "cs.onnx", "k.onnx", "a.onnx");
    EXPECT_CHOICES(sc, "cuda", "ck.onnx", "cs.onnx", "k.onnx", "a.onnx");
    /* ORT's CPU EP never takes "*"; "*" itself: its own list */
    EXPECT_CHOICES(sc, "CPU", "c.onnx");
    EXPECT_CHOICES(sc, "*", "k.onnx", "a.onnx");
    CHECK_STR_EQ(vdnn_sidecar_form(sc, "ROCm"), "k.onnx");
    CHECK(vdnn_sidecar_form_choice(sc, NULL, 0) == NULL);
    CHECK(vdnn_sidecar_form_choice(sc, "", 0) == NULL);
    CHECK(vdnn_sidecar_form_choice(sc, "CUDA", (size_t)-1) == NULL);
    vdnn_sidecar_free(sc);

    /* no "*": an EP's list and nothing after it; an EP without a key: none */
    sc = NULL;
    CHECK_EQ_INT(parse("{\"forms\": {\"CUDA\": [\"a.onnx\", \"b.onnx\", \"a.onnx\"]}}", &sc), 0);
    EXPECT_CHOICES(sc, "CUDA", "a.onnx", "b.onnx", "a.onnx");
    CHECK(vdnn_sidecar_form_choice(sc, "ROCm", 0) == NULL);
    CHECK(vdnn_sidecar_form_choice(sc, "CPU", 0) == NULL);
    vdnn_sidecar_free(sc);

    /* CPU without a key: the model's own file, never "*" */
    sc = NULL;
    CHECK_EQ_INT(parse("{\"forms\": {\"*\": [\"k.onnx\", \"a.onnx\"]}}", &sc), 0);
    CHECK(vdnn_sidecar_form_choice(sc, "cpu", 0) == NULL);
    CHECK(vdnn_sidecar_form_choice(sc, "cpu", 1) == NULL);
    vdnn_sidecar_free(sc);
}

static void test_one_ep_in_two_spellings_is_refused(void)
{
    EXPECT_REFUSED("{\"forms\": {\"CUDA\": \"a.onnx\", \"cuda\": \"b.onnx\"}}",
                   "entry 1 names the EP of entry 0 again");
    EXPECT_REFUSED("{\"forms\": {\"CPU\": \"a.onnx\", \"*\": \"x.onnx\", "
                   "\"Cpu\": [\"b.onnx\", \"c.onnx\"]}}",
                   "entry 2 names the EP of entry 0 again");
    EXPECT_REFUSED("{\"forms\": {\"OpenVINO:GPU\": [\"a.onnx\"], "
                   "\"openvino:gpu\": [\"b.onnx\", \"c.onnx\", \"d.onnx\", \"e.onnx\"]}}",
                   "names the EP of entry 0 again");
    /* exact duplicates: the JSON reader's refusal */
    VdnnSidecar *sc = NULL;
    CHECK(parse("{\"forms\": {\"CUDA\": \"a.onnx\", \"CUDA\": \"b.onnx\"}}", &sc) < 0);
    CHECK(sc == NULL);
    /* names that only share a prefix are different EPs */
    CHECK_EQ_INT(parse("{\"forms\": {\"OpenVINO\": \"a.onnx\", \"OpenVINO:CPU\": \"b.onnx\", "
                       "\"C\": \"c.onnx\", \"CPU\": \"d.onnx\"}}", &sc), 0);
    CHECK_STR_EQ(vdnn_sidecar_form(sc, "openvino:cpu"), "b.onnx");
    CHECK_STR_EQ(vdnn_sidecar_form(sc, "CPU"), "d.onnx");
    vdnn_sidecar_free(sc);
}

static void test_lists_are_checked(void)
{
    EXPECT_REFUSED("{\"forms\": {\"CUDA\": []}}", "lists 0 files");
    EXPECT_REFUSED("{\"forms\": {\"CUDA\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}}", "lists 5 files");
    EXPECT_REFUSED("{\"forms\": {\"CUDA\": [[\"a.onnx\"]]}}", "must be a non-empty string");
    EXPECT_REFUSED("{\"forms\": {\"CUDA\": [\"a.onnx\", null]}}", "must be a non-empty string");
    EXPECT_REFUSED("{\"forms\": {\"*\": [\"a.onnx\", \"x/../../b.onnx\"]}}",
                   "must be a path inside");
    EXPECT_REFUSED("{\"forms\": {\"*\": [\"a.onnx\", \"/b.onnx\"]}}", "must be a path inside");
    EXPECT_REFUSED("{\"forms\": {\"*\": [\"a.onnx\", \"x/..\"]}}", "must be a path inside");
}

int main(void)
{
    test_star_list_is_every_eps_last_resort();
    test_one_ep_in_two_spellings_is_refused();
    test_lists_are_checked();
    return check_report();
}
