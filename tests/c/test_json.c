/* Tests of the strict JSON parser (csrc/json.c). Every document is parsed
 * from an exact-size heap copy without a terminating NUL, so ASan or
 * valgrind flag any read past its end. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "json.h"

#define CAP ((size_t)1 << 20)

static int parse_len(const char *text, size_t len, VdnnJson **out)
{
    char *copy = malloc(len ? len : 1);
    if (!copy)
        abort();
    memcpy(copy, text, len);
    int rc = vdnn_json_parse(copy, len, CAP, "t", out);
    free(copy);
    return rc;
}

static int parse(const char *text, VdnnJson **out)
{
    return parse_len(text, strlen(text), out);
}

/* Expects text (of len bytes) to be refused with -EBADMSG and a message
 * containing `part`. */
static void expect_bad_len(int line, const char *text, size_t len, const char *part)
{
    VdnnJson *doc = NULL;
    int rc = parse_len(text, len, &doc);
    if (rc != -EBADMSG || !strstr(vdnn_last_error(), part))
        fprintf(stderr, "  (input from line %d: %.*s)\n", line, (int)len, text);
    CHECK_EQ_INT(rc, -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), part);
    CHECK(doc == NULL);
}

#define EXPECT_BAD(text, part) expect_bad_len(__LINE__, text, sizeof(text) - 1, part)

/* Parses a one-string document and compares the decoded bytes. */
static void expect_string(int line, const char *text, const char *want, size_t want_len)
{
    VdnnJson *doc = NULL;
    size_t len = 0;
    int rc = parse(text, &doc);
    const char *s = vdnn_json_string(doc, &len);
    if (rc || !s || len != want_len || memcmp(s, want, want_len) != 0)
        fprintf(stderr, "  (string test from line %d: %s)\n", line, text);
    CHECK_EQ_INT(rc, 0);
    CHECK(s && len == want_len && memcmp(s, want, want_len) == 0 && s[len] == '\0');
    vdnn_json_free(doc);
}

#define EXPECT_STRING(text, want) expect_string(__LINE__, text, want, sizeof(want) - 1)

static void expect_number(int line, const char *text, double want)
{
    VdnnJson *doc = NULL;
    int rc = parse(text, &doc);
    double got = vdnn_json_number(doc);
    if (rc || vdnn_json_type(doc) != VDNN_JSON_NUMBER || got != want)
        fprintf(stderr, "  (number test from line %d: %s gave %.17g)\n", line, text, got);
    CHECK_EQ_INT(rc, 0);
    CHECK(vdnn_json_type(doc) == VDNN_JSON_NUMBER && got == want);
    vdnn_json_free(doc);
}

#define EXPECT_NUMBER(text, want) expect_number(__LINE__, text, want)

static void test_values(void)
{
    VdnnJson *doc = NULL;
    const char *text = "{\"a\": [1, -2.5, 3e2, true, false, null, \"s\", {}, []],\n"
                       " \"b\": {\"c\": \"d\"}, \"\": 0}";
    size_t len = 0;

    CHECK_EQ_INT(parse(text, &doc), 0);
    CHECK(vdnn_json_type(doc) == VDNN_JSON_OBJECT);
    CHECK_EQ_INT(vdnn_json_count(doc), 3);

    const VdnnJson *a = vdnn_json_member(doc, "a");
    CHECK(vdnn_json_type(a) == VDNN_JSON_ARRAY);
    CHECK_EQ_INT(vdnn_json_count(a), 9);
    CHECK(vdnn_json_number(vdnn_json_at(a, 0)) == 1.0);
    CHECK(vdnn_json_number(vdnn_json_at(a, 1)) == -2.5);
    CHECK(vdnn_json_number(vdnn_json_at(a, 2)) == 300.0);
    CHECK(vdnn_json_type(vdnn_json_at(a, 3)) == VDNN_JSON_BOOL);
    CHECK_EQ_INT(vdnn_json_bool(vdnn_json_at(a, 3)), 1);
    CHECK_EQ_INT(vdnn_json_bool(vdnn_json_at(a, 4)), 0);
    CHECK(vdnn_json_type(vdnn_json_at(a, 4)) == VDNN_JSON_BOOL);
    CHECK(vdnn_json_type(vdnn_json_at(a, 5)) == VDNN_JSON_NULL);
    CHECK(vdnn_json_at(a, 5) != NULL);
    CHECK(strcmp(vdnn_json_string(vdnn_json_at(a, 6), NULL), "s") == 0);
    CHECK(vdnn_json_type(vdnn_json_at(a, 7)) == VDNN_JSON_OBJECT);
    CHECK_EQ_INT(vdnn_json_count(vdnn_json_at(a, 7)), 0);
    CHECK(vdnn_json_type(vdnn_json_at(a, 8)) == VDNN_JSON_ARRAY);
    CHECK(vdnn_json_at(a, 9) == NULL);

    const char *c = vdnn_json_string(vdnn_json_member(vdnn_json_member(doc, "b"), "c"), &len);
    CHECK(c && strcmp(c, "d") == 0 && len == 1);
    CHECK(vdnn_json_member(doc, "") == vdnn_json_at(doc, 2));
    CHECK(vdnn_json_member(doc, "c") == NULL); /* only this object's own keys */
    CHECK(strcmp(vdnn_json_key_at(doc, 1, &len), "b") == 0 && len == 1);
    CHECK(vdnn_json_key_at(doc, 3, NULL) == NULL);
    CHECK(vdnn_json_key_at(a, 0, NULL) == NULL);

    /* Wrong-type and NULL queries answer "nothing" rather than crash. */
    CHECK(vdnn_json_member(a, "a") == NULL);
    CHECK(vdnn_json_string(a, &len) == NULL);
    CHECK(vdnn_json_number(a) == 0.0);
    CHECK_EQ_INT(vdnn_json_bool(vdnn_json_at(a, 0)), 0);
    CHECK_EQ_INT(vdnn_json_count(vdnn_json_at(a, 0)), 0);
    CHECK(vdnn_json_at(vdnn_json_at(a, 0), 0) == NULL);
    CHECK(vdnn_json_member(NULL, "a") == NULL);
    CHECK(vdnn_json_member(doc, NULL) == NULL);
    CHECK(vdnn_json_type(NULL) == VDNN_JSON_NULL);
    CHECK(strcmp(vdnn_json_type_name(NULL), "nothing") == 0);
    CHECK(strcmp(vdnn_json_type_name(a), "array") == 0);
    CHECK(strcmp(vdnn_json_type_name(doc), "object") == 0);
    vdnn_json_free(doc);
    vdnn_json_free(NULL);

    /* Top-level scalars are valid JSON texts (RFC 8259, unlike RFC 4627). */
    CHECK_EQ_INT(parse(" \t\r\n\"x\" \n", &doc), 0);
    CHECK(strcmp(vdnn_json_string(doc, NULL), "x") == 0);
    vdnn_json_free(doc);
    CHECK_EQ_INT(parse("null", &doc), 0);
    CHECK(vdnn_json_type(doc) == VDNN_JSON_NULL);
    vdnn_json_free(doc);
}

static void test_escapes(void)
{
    EXPECT_STRING("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t");
    EXPECT_STRING("\"\\u00e9\"", "\xC3\xA9");
    EXPECT_STRING("\"\\u00E9\\u20aC\"", "\xC3\xA9\xE2\x82\xAC");
    EXPECT_STRING("\"\\u0041\\u007f\\u0080\\u07FF\\u0800\\uFFFF\"",
                  "A\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF");
    EXPECT_STRING("\"\\ud83d\\ude00\"", "\xF0\x9F\x98\x80");
    EXPECT_STRING("\"\\uD800\\uDC00\\uDBFF\\uDFFF\"", "\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
    EXPECT_STRING("\"a\\u0000b\"", "a\0b");
    EXPECT_STRING("\"\"", "");
    /* Raw UTF-8 passes through, boundaries of each sequence length included. */
    EXPECT_STRING("\"\xC2\x80 \xDF\xBF \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80 \xEF\xBF\xBF\"",
                  "\xC2\x80 \xDF\xBF \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80 \xEF\xBF\xBF");
    EXPECT_STRING("\"\xF0\x90\x80\x80 \xF4\x8F\xBF\xBF \x7F\"",
                  "\xF0\x90\x80\x80 \xF4\x8F\xBF\xBF \x7F");
}

static void test_bad_strings(void)
{
    EXPECT_BAD("\"\\ud800\"", "high surrogate \\uD800 is not followed by a low surrogate");
    EXPECT_BAD("\"\\ud800\\u0041\"", "is not followed by a low surrogate");
    EXPECT_BAD("\"\\ud800\\ud800\"", "is not followed by a low surrogate");
    EXPECT_BAD("\"\\ud800x\"", "is not followed by a low surrogate");
    EXPECT_BAD("\"\\ud800\\\\\"", "is not followed by a low surrogate");
    EXPECT_BAD("\"\\udc00\"", "low surrogate \\uDC00 without a high surrogate");
    EXPECT_BAD("\"\\x\"", "invalid escape: '\\' followed by 'x'");
    EXPECT_BAD("\"\\U00e9\"", "invalid escape");
    EXPECT_BAD("\"\\u12\"", "expected four hex digits after \\u, found '\"'");
    EXPECT_BAD("\"\\u12G4\"", "expected four hex digits after \\u, found 'G'");
    EXPECT_BAD("\"\\ud83d\\u12\"", "expected four hex digits");
    EXPECT_BAD("\"a\tb\"", "control character 0x09 must be escaped");
    EXPECT_BAD("\"a\nb\"", "control character 0x0A must be escaped");
    EXPECT_BAD("\"\x1f\"", "control character 0x1F");
    EXPECT_BAD("\"a\0b\"", "control character 0x00");
    EXPECT_BAD("\"abc", "expected '\"' to close the string, found end of input");
    EXPECT_BAD("\"abc\\\"", "expected '\"' to close the string");
    EXPECT_BAD("\"abc\\", "expected '\"' to close the string");
    /* Invalid UTF-8: stray continuation, overlong forms, surrogates, beyond
     * U+10FFFF, bytes that never occur, sequences cut by the quote. */
    EXPECT_BAD("\"\x80\"", "byte 0x80 cannot start a character");
    EXPECT_BAD("\"\xC0\x80\"", "byte 0xC0 cannot start");
    EXPECT_BAD("\"\xC1\xBF\"", "byte 0xC1 cannot start");
    EXPECT_BAD("\"\xE0\x80\x80\"", "overlong");
    EXPECT_BAD("\"\xE0\x9F\xBF\"", "overlong");
    EXPECT_BAD("\"\xF0\x8F\xBF\xBF\"", "overlong");
    EXPECT_BAD("\"\xED\xA0\x80\"", "surrogate");
    EXPECT_BAD("\"\xED\xBF\xBF\"", "surrogate");
    EXPECT_BAD("\"\xF4\x90\x80\x80\"", "beyond U+10FFFF");
    EXPECT_BAD("\"\xF5\x80\x80\x80\"", "byte 0xF5 cannot start");
    EXPECT_BAD("\"\xFF\"", "byte 0xFF cannot start");
    EXPECT_BAD("\"\xC3\"", "truncated character");
    EXPECT_BAD("\"\xE2\x82\"", "truncated character");
    EXPECT_BAD("\"\xF0\x9F\x98\"", "truncated character");
    EXPECT_BAD("\"\xC3\x41\"", "truncated character");
    /* Keys are strings too. */
    EXPECT_BAD("{\"\\ud800\": 1}", "surrogate");
    EXPECT_BAD("{\"\xFF\": 1}", "cannot start");
}

static void test_numbers(void)
{
    EXPECT_NUMBER("0", 0.0);
    EXPECT_NUMBER("-0", 0.0);
    EXPECT_NUMBER("1", 1.0);
    EXPECT_NUMBER("-1", -1.0);
    EXPECT_NUMBER("12.5", 12.5);
    EXPECT_NUMBER("0.1", 0.1);
    EXPECT_NUMBER("-0.0", 0.0);
    EXPECT_NUMBER("1e3", 1000.0);
    EXPECT_NUMBER("1E3", 1000.0);
    EXPECT_NUMBER("1e+3", 1000.0);
    EXPECT_NUMBER("1E-3", 0.001);
    EXPECT_NUMBER("0e0", 0.0);
    EXPECT_NUMBER("-12.5e-1", -1.25);
    EXPECT_NUMBER("0.30000000000000004", 0.1 + 0.2);
    EXPECT_NUMBER("123456789012345678901234567890", 1.2345678901234568e29);
    EXPECT_NUMBER("1.7976931348623157e308", 1.7976931348623157e308);
    EXPECT_NUMBER("2.2250738585072014e-308", 2.2250738585072014e-308);
    EXPECT_NUMBER("4.9e-324", 4.9e-324);
    EXPECT_NUMBER("1e-400", 0.0); /* underflow is accepted */
    EXPECT_NUMBER("  7  ", 7.0);

    VdnnJson *doc = NULL;
    CHECK_EQ_INT(parse("-0", &doc), 0);
    CHECK(signbit(vdnn_json_number(doc)));
    vdnn_json_free(doc);

    /* Longer than the parser's stack buffer: the heap copy path. */
    char longnum[200] = "0.";
    memset(longnum + 2, '5', 150);
    longnum[152] = '\0';
    EXPECT_NUMBER(longnum, 0.5555555555555556);

    EXPECT_BAD("01", "leading zeros");
    EXPECT_BAD("-01", "leading zeros");
    EXPECT_BAD("00", "leading zeros");
    EXPECT_BAD("-", "expected a digit, found end of input");
    EXPECT_BAD("- 1", "expected a digit, found ' '");
    EXPECT_BAD("+1", "expected a value, found '+'");
    EXPECT_BAD(".5", "expected a value, found '.'");
    EXPECT_BAD("1.", "expected a digit after '.'");
    EXPECT_BAD("1.e3", "expected a digit after '.'");
    EXPECT_BAD("1e", "expected a digit in the exponent");
    EXPECT_BAD("1e+", "expected a digit in the exponent");
    EXPECT_BAD("1E-x", "expected a digit in the exponent");
    EXPECT_BAD("0x10", "found 'x'");
    EXPECT_BAD("NaN", "expected a value, found 'N'");
    EXPECT_BAD("Infinity", "expected a value");
    EXPECT_BAD("-Infinity", "expected a digit, found 'I'");
    EXPECT_BAD("1e400", "too large for a double");
    EXPECT_BAD("[-1e400]", "line 1, column 2: number is too large");
    EXPECT_BAD("1.5.2", "expected nothing after the top-level value, found '.'");
    EXPECT_BAD("1_000", "found '_'");
}

/* strtod follows LC_NUMERIC; the parser must not. This needs a locale whose
 * decimal point is ',' (generate one with localedef and LOCPATH if the
 * system has none); without it there is nothing to show and the test says
 * so rather than pretending. */
static void test_locale(void)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                        "fr_FR.utf8"};
    const char *used = NULL;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !used; i++)
        if (setlocale(LC_NUMERIC, names[i]) && strcmp(localeconv()->decimal_point, ",") == 0)
            used = names[i];
    if (!used) {
        setlocale(LC_NUMERIC, "C");
        printf("note: no locale with a ',' decimal point; locale independence not exercised\n");
        return;
    }
    printf("locale independence exercised under LC_NUMERIC=%s\n", used);
    VdnnJson *doc = NULL;
    CHECK_EQ_INT(parse("[1.5, 2.25e1, 0.1]", &doc), 0);
    CHECK(vdnn_json_number(vdnn_json_at(doc, 0)) == 1.5);
    CHECK(vdnn_json_number(vdnn_json_at(doc, 1)) == 22.5);
    CHECK(vdnn_json_number(vdnn_json_at(doc, 2)) == 0.1);
    vdnn_json_free(doc);
    /* The thread's locale is restored afterwards. */
    CHECK(strcmp(localeconv()->decimal_point, ",") == 0);
    EXPECT_BAD("1,5", "expected nothing after the top-level value, found ','");
    setlocale(LC_NUMERIC, "C");
}

static void test_literals(void)
{
    VdnnJson *doc = NULL;
    CHECK_EQ_INT(parse("[true,false,null]", &doc), 0);
    CHECK_EQ_INT(vdnn_json_count(doc), 3);
    vdnn_json_free(doc);

    EXPECT_BAD("tru", "invalid literal, expected 'true'");
    EXPECT_BAD("nul", "invalid literal, expected 'null'");
    EXPECT_BAD("fals", "invalid literal, expected 'false'");
    EXPECT_BAD("True", "expected a value, found 'T'");
    EXPECT_BAD("nulll", "expected nothing after the top-level value, found 'l'");
    EXPECT_BAD("truefalse", "found 'f'");
    EXPECT_BAD("[nan]", "invalid literal, expected 'null'");
    EXPECT_BAD("undefined", "expected a value, found 'u'");
}

static void test_structure(void)
{
    VdnnJson *doc = NULL;
    CHECK_EQ_INT(parse(" \t\r\n{ \t\r\n\"a\" \n: \r[ 1 \t, 2 ] \n} \r\n\t", &doc), 0);
    vdnn_json_free(doc);

    EXPECT_BAD("", "line 1, column 1: expected a value, found end of input");
    EXPECT_BAD(" \n\t ", "line 2, column 3: expected a value, found end of input");
    EXPECT_BAD("\f1", "found byte 0x0C");
    EXPECT_BAD("\v1", "found byte 0x0B");
    EXPECT_BAD("\xC2\xA0" "1", "found byte 0xC2");
    EXPECT_BAD("\xEF\xBB\xBF{}", "byte order mark is not allowed");
    EXPECT_BAD("[1,]", "expected a value, found ']'");
    EXPECT_BAD("{\"a\":1,}", "expected a string key in object, found '}'");
    EXPECT_BAD("[,1]", "expected a value, found ','");
    EXPECT_BAD("[1 2]", "expected ',' or ']' in array, found '2'");
    EXPECT_BAD("[1,,2]", "expected a value, found ','");
    EXPECT_BAD("{\"a\" 1}", "expected ':' after object key, found '1'");
    EXPECT_BAD("{\"a\":}", "expected a value, found '}'");
    EXPECT_BAD("{\"a\"}", "expected ':' after object key, found '}'");
    EXPECT_BAD("{a:1}", "expected a string key in object, found 'a'");
    EXPECT_BAD("{'a':1}", "found '''");
    EXPECT_BAD("{1:1}", "expected a string key in object, found '1'");
    EXPECT_BAD("{\"a\":1 \"b\":2}", "expected ',' or '}' in object, found '\"'");
    EXPECT_BAD("{\"a\":1]", "expected ',' or '}' in object, found ']'");
    EXPECT_BAD("[1}", "expected ',' or ']' in array, found '}'");
    EXPECT_BAD("[1]x", "line 1, column 4: expected nothing after the top-level value");
    EXPECT_BAD("1 2", "expected nothing after the top-level value, found '2'");
    EXPECT_BAD("{}{}", "found '{'");
    EXPECT_BAD("{} \0", "found byte 0x00");
    EXPECT_BAD("/* c */ 1", "expected a value, found '/'");
    EXPECT_BAD("// c\n1", "expected a value, found '/'");
    EXPECT_BAD("[1] // c", "found '/'");
    EXPECT_BAD("{\"a\":1 /* c */}", "found '/'");
    EXPECT_BAD("# c\n1", "found '#'");
    EXPECT_BAD("[", "expected a value, found end of input");
    EXPECT_BAD("]", "expected a value, found ']'");
    EXPECT_BAD("{", "expected a string key in object, found end of input");
    EXPECT_BAD("}", "expected a value, found '}'");
    EXPECT_BAD("{\"a\":1", "expected ',' or '}' in object, found end of input");
}

static void test_messages(void)
{
    /* The brief's example, with origin, line and column. */
    EXPECT_BAD("{\n  \"a\": 1\n  \"b\": 2\n}",
               "t: line 3, column 3: expected ',' or '}' in object, found '\"'");
    /* Columns count code points: "é" is two bytes but one column. */
    EXPECT_BAD("[\"\xC3\xA9\" x]", "line 1, column 6: expected ',' or ']' in array");
    EXPECT_BAD("[\"\xF0\x9F\x98\x80\xC3\xA9\", \"\\q\"]", "line 1, column 9: invalid escape");
    /* CRLF line ends count once. */
    EXPECT_BAD("[1,\r\n2,\r\n@]", "line 3, column 1: expected a value, found '@'");

    /* No origin gives a generic prefix. */
    VdnnJson *doc = NULL;
    CHECK_EQ_INT(vdnn_json_parse("[", 1, CAP, NULL, &doc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "JSON: line 1, column 2:");
}

static void test_depth(void)
{
    enum { N = VDNN_JSON_MAX_DEPTH };
    char text[4 * (N + 2) + 8];
    VdnnJson *doc = NULL;

    /* N nested arrays parse; N + 1 do not. */
    memset(text, '[', N);
    memset(text + N, ']', N);
    CHECK_EQ_INT(parse_len(text, 2 * N, &doc), 0);
    const VdnnJson *v = doc;
    for (int i = 1; i < N; i++)
        v = vdnn_json_at(v, 0);
    CHECK(vdnn_json_type(v) == VDNN_JSON_ARRAY && vdnn_json_count(v) == 0);
    vdnn_json_free(doc);

    memset(text, '[', N + 1);
    memset(text + N + 1, ']', N + 1);
    doc = NULL;
    CHECK_EQ_INT(parse_len(text, 2 * (N + 1), &doc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "line 1, column 65: more than 64 nested");
    CHECK(doc == NULL);

    /* Objects count the same, mixed with arrays. */
    size_t n = 0;
    for (int i = 0; i <= N; i++) {
        const char *open = i % 2 ? "[" : "{\"a\":";
        memcpy(text + n, open, strlen(open));
        n += strlen(open);
    }
    CHECK_EQ_INT(parse_len(text, n, &doc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "more than 64 nested");

    /* A hostile depth fails fast at the cap, never by exhausting the stack. */
    size_t deep = (size_t)1 << 20;
    char *big = malloc(deep);
    memset(big, '[', deep);
    CHECK_EQ_INT(vdnn_json_parse(big, deep, deep, "t", &doc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "more than 64 nested");
    free(big);
}

static void test_duplicates(void)
{
    VdnnJson *doc = NULL;

    EXPECT_BAD("{\"a\":1,\"a\":2}", "line 1, column 8: duplicate key \"a\" in object");
    /* Compared after decoding: \u0061 is "a". */
    EXPECT_BAD("{\"a\":1,\"b\":2,\"\\u0061\":3}", "column 14: duplicate key \"a\"");
    /* The earliest repeat in the document is the one reported. */
    EXPECT_BAD("{\"b\":1,\"a\":2,\"b\":3,\"a\":4}", "column 14: duplicate key \"b\"");
    EXPECT_BAD("{\"x\":{\"k\":1,\"k\":1}}", "column 13: duplicate key \"k\"");
    /* A key needing escapes is shown escaped in the message. */
    EXPECT_BAD("{\"q\\\"\\n\":1,\"q\\\"\\n\":2}", "duplicate key \"q\\\"\\u000A\"");

    CHECK_EQ_INT(parse("{\"a\":{\"a\":1},\"b\":{\"a\":2},\"A\":3,\"a\\u0000\":4,\"ab\":5}", &doc),
                 0);
    CHECK_EQ_INT(vdnn_json_count(doc), 5);
    vdnn_json_free(doc);

    /* Many keys: the check is O(n log n) and still finds a repeat at the end. */
    enum { KEYS = 20000 };
    char *text = malloc(KEYS * 16 + 32);
    size_t n = 0;
    text[n++] = '{';
    for (int i = 0; i < KEYS; i++)
        n += (size_t)sprintf(text + n, "\"k%d\":%d,", i, i);
    text[n - 1] = '}';
    CHECK_EQ_INT(parse_len(text, n, &doc), 0);
    CHECK_EQ_INT(vdnn_json_count(doc), KEYS);
    CHECK(vdnn_json_number(vdnn_json_member(doc, "k19999")) == 19999.0);
    vdnn_json_free(doc);
    n += (size_t)sprintf(text + n - 1, ",\"k7\":0}") - 1;
    CHECK_EQ_INT(parse_len(text, n, &doc), -EBADMSG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "duplicate key \"k7\"");
    free(text);
}

static void test_arguments(void)
{
    VdnnJson *doc = NULL;
    CHECK_EQ_INT(vdnn_json_parse("[1]", 3, 2, "t", &doc), -E2BIG);
    CHECK_STR_CONTAINS(vdnn_last_error(), "t: 3 bytes is over the 2-byte limit");
    CHECK_EQ_INT(vdnn_json_parse("[1]", 3, 3, "t", &doc), 0);
    vdnn_json_free(doc);
    doc = NULL;
    CHECK_EQ_INT(vdnn_json_parse("[1]", 3, CAP, "t", NULL), -EINVAL);
    CHECK_EQ_INT(vdnn_json_parse(NULL, 3, CAP, "t", &doc), -EINVAL);
    CHECK_EQ_INT(vdnn_json_parse(NULL, 0, CAP, "t", &doc), -EBADMSG);
    CHECK(doc == NULL);
}

/* A document that uses every construct; no proper prefix of it is valid. */
static const char sample[] =
    "{\n"
    "  \"str\": \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\xC3\xA9\xE2\x82\xAC\",\n"
    "  \"num\": [0, -0.5, 12e3, 1.25E-2, -7],\n"
    "  \"lit\": [true, false, null],\n"
    "  \"nest\": {\"a\": [[], {}, [{\"b\": \"\"}]]}\n"
    "}\n";

static void test_truncation(void)
{
    size_t len = sizeof(sample) - 1;
    VdnnJson *doc = NULL;
    int bad = 0;

    CHECK_EQ_INT(parse_len(sample, len, &doc), 0);
    size_t slen = 0;
    const char *s = vdnn_json_string(vdnn_json_member(doc, "str"), &slen);
    CHECK(s && slen == 23 &&
          memcmp(s, "a\"b\\c/d\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80\xC3\xA9\xE2\x82\xAC", 23) == 0);
    vdnn_json_free(doc);

    /* Every prefix up to the closing brace is refused as malformed. */
    size_t closing = (size_t)(strrchr(sample, '}') - sample);
    for (size_t n = 0; n <= closing; n++) {
        doc = NULL;
        if (parse_len(sample, n, &doc) != -EBADMSG || doc) {
            fprintf(stderr, "  prefix of %zu bytes was not refused\n", n);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(parse_len(sample, closing + 1, &doc), 0);
    vdnn_json_free(doc);
}

/* Visits every node through the accessors, so a mutated document that
 * parses is also read end to end. */
static size_t walk(const VdnnJson *v)
{
    size_t nodes = 1, len;
    vdnn_json_string(v, &len);
    vdnn_json_number(v);
    vdnn_json_bool(v);
    for (size_t i = 0; i < vdnn_json_count(v); i++) {
        const char *key = vdnn_json_key_at(v, i, &len);
        if (key && strlen(key) == len)
            CHECK(vdnn_json_member(v, key) == vdnn_json_at(v, i));
        nodes += walk(vdnn_json_at(v, i));
    }
    return nodes;
}

static void test_mutations(void)
{
    static const unsigned char bytes[] = {0x00, '"', '\\', '{', '}', '[', ']', ',', ':', '0',
                                          '9',  'e', 'E',  '-', '+', '.', ' ', 'u', 'D', 'n',
                                          0x80, 0xC3, 0xED, 0xF4, 0xFF, 0x1F};
    size_t len = sizeof(sample) - 1;
    char *copy = malloc(len);
    int unexpected = 0, accepted = 0;

    for (size_t at = 0; at < len; at++) {
        for (size_t b = 0; b < sizeof(bytes); b++) {
            VdnnJson *doc = NULL;
            memcpy(copy, sample, len);
            copy[at] = (char)bytes[b];
            int rc = parse_len(copy, len, &doc);
            if (rc == 0) {
                accepted++;
                walk(doc);
            } else if (rc != -EBADMSG) {
                unexpected++;
            }
            vdnn_json_free(doc);
        }
    }
    CHECK_EQ_INT(unexpected, 0);
    CHECK(accepted > 0);
    free(copy);
}

static void test_quote(void)
{
    char buf[64];
    CHECK(strcmp(vdnn_json_quote("ab", 2, buf, sizeof(buf)), "\"ab\"") == 0);
    CHECK(strcmp(vdnn_json_quote("a\"\\\n\0", 5, buf, sizeof(buf)),
                 "\"a\\\"\\\\\\u000A\\u0000\"") == 0);
    CHECK(strcmp(vdnn_json_quote("", 0, buf, sizeof(buf)), "\"\"") == 0);

    /* Cut short at the cap, never inside a UTF-8 character. */
    char e[200];
    for (int i = 0; i < 100; i++)
        memcpy(e + 2 * i, "\xC3\xA9", 2);
    vdnn_json_quote(e, 200, buf, 16);
    CHECK(strlen(buf) < 16);
    CHECK(strcmp(buf, "\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9...\"") == 0);
    vdnn_json_quote(e + 1, 199, buf, 16); /* starts mid-character */
    CHECK(strlen(buf) < 16);
    CHECK_STR_CONTAINS(buf, "...\"");
    vdnn_json_quote("0123456789abcdefghij", 20, buf, 16);
    CHECK(strcmp(buf, "\"0123456789...\"") == 0);
}

static void test_large(void)
{
    /* Half a million array elements, "[0,0,...,0]" just under one MiB. */
    size_t count = (CAP - 1) / 2, n = 2 * count + 1;
    char *text = malloc(n);
    VdnnJson *doc = NULL;
    text[0] = '[';
    for (size_t i = 0; i < count; i++) {
        text[2 * i + 1] = '0';
        text[2 * i + 2] = i + 1 < count ? ',' : ']';
    }
    CHECK_EQ_INT(vdnn_json_parse(text, n, CAP, "t", &doc), 0);
    CHECK_EQ_INT(vdnn_json_count(doc), count);
    vdnn_json_free(doc);
    free(text);
}

int main(void)
{
    test_values();
    test_escapes();
    test_bad_strings();
    test_numbers();
    test_locale();
    test_literals();
    test_structure();
    test_messages();
    test_depth();
    test_duplicates();
    test_arguments();
    test_truncation();
    test_mutations();
    test_quote();
    test_large();
    return check_report();
}
