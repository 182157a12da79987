/* Strict RFC 8259 JSON parser: recursive descent over a length-bounded
 * buffer, building a tree whose containers hold their children inline.
 * See json.h for the accepted language and the API contract. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"

typedef struct JsonKey {
    char *bytes;   /* decoded, NUL-terminated */
    size_t len;
    size_t offset; /* of the key's opening quote, to report duplicates */
} JsonKey;

struct VdnnJson {
    VdnnJsonType type;
    union {
        int boolean;
        double number;
        struct {
            char *bytes; /* decoded, NUL-terminated */
            size_t len;
        } string;
        struct {
            VdnnJson *items;
            JsonKey *keys; /* objects only: keys[i] names items[i] */
            size_t count;
        } list;
    } u;
};

typedef struct Parser {
    const char *text;
    size_t len;
    size_t pos; /* never beyond len; every read checks it */
    const char *origin;
} Parser;

static int parse_value(Parser *p, int depth, VdnnJson *dst);

/* ---- errors -------------------------------------------------------------- */

/* Columns count code points, not bytes, so they match what an editor shows;
 * every byte before pos has already been validated as UTF-8. */
static void locate(const Parser *p, size_t pos, size_t *line, size_t *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < pos; i++) {
        unsigned char c = (unsigned char)p->text[i];
        if (c == '\n') {
            ++*line;
            *column = 1;
        } else if ((c & 0xC0) != 0x80) {
            ++*column;
        }
    }
}

static int fail_at(const Parser *p, size_t pos, const char *fmt, ...) VDNN_PRINTF(3, 4);

static int fail_at(const Parser *p, size_t pos, const char *fmt, ...)
{
    char what[512];
    size_t line, column;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    locate(p, pos, &line, &column);
    return vdnn_fail(-EBADMSG, "%s: line %zu, column %zu: %s", p->origin, line, column,
                     what);
}

/* "'x'" for printable ASCII, "byte 0xHH" otherwise: raw bytes in a message
 * could break the terminal or the log line. */
static const char *describe_byte(int c, char *buf, size_t cap)
{
    if (c < 0)
        snprintf(buf, cap, "end of input");
    else if (c >= 0x20 && c < 0x7F)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02X", (unsigned)c);
    return buf;
}

static int peek(const Parser *p)
{
    return p->pos < p->len ? (unsigned char)p->text[p->pos] : -1;
}

static int fail_expected(const Parser *p, const char *what)
{
    char found[32];
    return fail_at(p, p->pos, "expected %s, found %s", what,
                   describe_byte(peek(p), found, sizeof(found)));
}

static int fail_nomem(const Parser *p)
{
    return vdnn_fail(-ENOMEM, "%s: out of memory while parsing", p->origin);
}

/* ---- tree ---------------------------------------------------------------- */

/* Releases what v owns (not v itself) and leaves it an empty null. */
static void free_value(VdnnJson *v)
{
    if (v->type == VDNN_JSON_STRING) {
        free(v->u.string.bytes);
    } else if (v->type == VDNN_JSON_ARRAY || v->type == VDNN_JSON_OBJECT) {
        for (size_t i = 0; i < v->u.list.count; i++) {
            free_value(&v->u.list.items[i]);
            if (v->u.list.keys)
                free(v->u.list.keys[i].bytes);
        }
        free(v->u.list.items);
        free(v->u.list.keys);
    }
    memset(v, 0, sizeof(*v));
}

/* Makes room for one more child (and key, for objects), doubling. */
static int grow(Parser *p, VdnnJson *list, size_t *cap)
{
    if (list->u.list.count < *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 4;
    VdnnJson *items = realloc(list->u.list.items, n * sizeof(*items));
    if (!items)
        return fail_nomem(p);
    list->u.list.items = items;
    if (list->type == VDNN_JSON_OBJECT) {
        JsonKey *keys = realloc(list->u.list.keys, n * sizeof(*keys));
        if (!keys)
            return fail_nomem(p);
        list->u.list.keys = keys;
    }
    *cap = n;
    return 0;
}

/* ---- scalars ------------------------------------------------------------- */

static void skip_whitespace(Parser *p)
{
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        p->pos++;
    }
}

static int parse_literal(Parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return fail_at(p, p->pos, "invalid literal, expected '%s'", word);
    p->pos += n;
    return 0;
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static size_t skip_digits(Parser *p)
{
    size_t start = p->pos;
    while (is_digit(peek(p)))
        p->pos++;
    return p->pos - start;
}

/* The grammar is checked here, so strtod only ever sees a valid JSON number;
 * the caller has switched this thread to the "C" locale, so '.' is the
 * decimal point whatever LC_NUMERIC the process uses. */
static int parse_number(Parser *p, VdnnJson *dst)
{
    size_t start = p->pos;

    if (peek(p) == '-')
        p->pos++;
    if (peek(p) == '0') {
        p->pos++;
        if (is_digit(peek(p)))
            return fail_at(p, start, "a number must not have leading zeros");
    } else if (skip_digits(p) == 0) {
        return fail_expected(p, "a digit");
    }
    if (peek(p) == '.') {
        p->pos++;
        if (skip_digits(p) == 0)
            return fail_expected(p, "a digit after '.'");
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++;
        if (peek(p) == '+' || peek(p) == '-')
            p->pos++;
        if (skip_digits(p) == 0)
            return fail_expected(p, "a digit in the exponent");
    }

    /* strtod needs a terminated copy; short numbers stay on the stack. */
    size_t n = p->pos - start;
    char small[64];
    char *copy = n < sizeof(small) ? small : malloc(n + 1);
    if (!copy)
        return fail_nomem(p);
    memcpy(copy, p->text + start, n);
    copy[n] = '\0';
    double value = strtod(copy, NULL);
    if (copy != small)
        free(copy);
    if (isinf(value))
        return fail_at(p, start, "number is too large for a double");
    dst->type = VDNN_JSON_NUMBER;
    dst->u.number = value;
    return 0;
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int read_hex4(Parser *p, unsigned *value)
{
    *value = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_value(peek(p));
        if (d < 0)
            return fail_expected(p, "four hex digits after \\u");
        *value = *value << 4 | (unsigned)d;
        p->pos++;
    }
    return 0;
}

static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the escape at p->pos (a backslash) into out; a \uXXXX high
 * surrogate must be followed by a \uXXXX low surrogate. */
static int decode_escape(Parser *p, char *out, size_t *n)
{
    static const char names[] = "\"\\/bfnrt";
    static const char bytes[] = "\"\\/\b\f\n\r\t";
    size_t at = p->pos;
    char found[32];

    p->pos++;
    int e = peek(p);
    const char *hit = e > 0 ? strchr(names, e) : NULL;
    if (hit) {
        out[(*n)++] = bytes[hit - names];
        p->pos++;
        return 0;
    }
    if (e != 'u')
        return fail_at(p, at, "invalid escape: '\\' followed by %s",
                       describe_byte(e, found, sizeof(found)));
    p->pos++;

    unsigned cp, low;
    int rc = read_hex4(p, &cp);
    if (rc)
        return rc;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail_at(p, at, "low surrogate \\u%04X without a high surrogate before it", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->len - p->pos < 2 || memcmp(p->text + p->pos, "\\u", 2) != 0)
            return fail_at(p, at, "high surrogate \\u%04X is not followed by a low surrogate",
                           cp);
        p->pos += 2;
        if ((rc = read_hex4(p, &low)))
            return rc;
        if (low < 0xDC00 || low > 0xDFFF)
            return fail_at(p, at, "high surrogate \\u%04X is not followed by a low surrogate",
                           cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    *n += put_utf8(out + *n, cp);
    return 0;
}

/* Copies one raw UTF-8 sequence, refusing what RFC 3629 forbids: stray
 * continuation bytes, overlong forms, surrogates and code points beyond
 * U+10FFFF. end bounds the sequence (the closing quote). */
static int copy_utf8(Parser *p, size_t end, char *out, size_t *n)
{
    const unsigned char *s = (const unsigned char *)p->text + p->pos;
    size_t avail = end - p->pos, need;
    unsigned cp, min;

    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        need = 2, cp = s[0] & 0x1Fu, min = 0x80;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        need = 3, cp = s[0] & 0x0Fu, min = 0x800;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        need = 4, cp = s[0] & 0x07u, min = 0x10000;
    } else {
        return fail_at(p, p->pos, "invalid UTF-8: byte 0x%02X cannot start a character",
                       s[0]);
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= avail || (s[i] & 0xC0) != 0x80)
            return fail_at(p, p->pos, "invalid UTF-8: truncated character");
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fail_at(p, p->pos, "invalid UTF-8: overlong form, surrogate or code point "
                                  "beyond U+10FFFF");
    memcpy(out + *n, s, need);
    *n += need;
    p->pos += need;
    return 0;
}

/* Reads the string whose opening quote is at p->pos into a new buffer. A
 * first pass finds the closing quote, which bounds both the decoding and the
 * buffer: no escape or UTF-8 sequence decodes longer than its source. The
 * decoder never steps past that quote: it starts an escape only where the
 * first pass skipped a backslash pair too, and every byte it consumes after
 * one (hex digits, a second "\u") is a byte the first pass stepped over,
 * never an unescaped '"'. */
static int parse_string(Parser *p, char **bytes, size_t *len)
{
    size_t open = p->pos, end = open + 1;

    while (end < p->len && p->text[end] != '"')
        end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->len) {
        p->pos = p->len;
        return fail_expected(p, "'\"' to close the string");
    }

    char *out = malloc(end - open);
    size_t n = 0;
    int rc = 0;
    if (!out)
        return fail_nomem(p);
    p->pos = open + 1;
    while (!rc && p->pos < end) {
        unsigned char c = (unsigned char)p->text[p->pos];
        if (c == '\\') {
            rc = decode_escape(p, out, &n);
        } else if (c < 0x20) {
            rc = fail_at(p, p->pos, "control character 0x%02X must be escaped in a string", c);
        } else if (c < 0x80) {
            out[n++] = (char)c;
            p->pos++;
        } else {
            rc = copy_utf8(p, end, out, &n);
        }
    }
    if (rc) {
        free(out);
        return rc;
    }
    out[n] = '\0';
    p->pos = end + 1;
    *bytes = out;
    *len = n;
    return 0;
}

/* ---- containers ---------------------------------------------------------- */

static int parse_array(Parser *p, int depth, VdnnJson *dst)
{
    size_t cap = 0;
    int rc;

    dst->type = VDNN_JSON_ARRAY;
    p->pos++;
    skip_whitespace(p);
    if (peek(p) == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if ((rc = grow(p, dst, &cap)))
            break;
        if ((rc = parse_value(p, depth, &dst->u.list.items[dst->u.list.count])))
            break;
        dst->u.list.count++;
        skip_whitespace(p);
        if (peek(p) == ']') {
            p->pos++;
            return 0;
        }
        if (peek(p) != ',') {
            rc = fail_expected(p, "',' or ']' in array");
            break;
        }
        p->pos++;
        skip_whitespace(p);
    }
    free_value(dst);
    return rc;
}

/* Parses `"key": value` into the next free slot of obj. */
static int parse_member(Parser *p, int depth, VdnnJson *obj)
{
    JsonKey *key = &obj->u.list.keys[obj->u.list.count];
    int rc;

    if (peek(p) != '"')
        return fail_expected(p, "a string key in object");
    key->offset = p->pos;
    if ((rc = parse_string(p, &key->bytes, &key->len)))
        return rc;
    skip_whitespace(p);
    if (peek(p) != ':') {
        rc = fail_expected(p, "':' after object key");
    } else {
        p->pos++;
        skip_whitespace(p);
        rc = parse_value(p, depth, &obj->u.list.items[obj->u.list.count]);
    }
    if (rc) {
        free(key->bytes);
        return rc;
    }
    obj->u.list.count++;
    return 0;
}

/* Orders keys by bytes, then by position, so equal keys end up adjacent with
 * their first occurrence first. */
static int compare_keys(const void *a, const void *b)
{
    const JsonKey *x = *(const JsonKey *const *)a;
    const JsonKey *y = *(const JsonKey *const *)b;
    int c = memcmp(x->bytes, y->bytes, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Sorting keeps hostile objects with many keys at O(n log n). The reported
 * duplicate is the earliest repeated key in the document. */
static int check_duplicates(Parser *p, const VdnnJson *obj)
{
    size_t count = obj->u.list.count;
    if (count < 2)
        return 0;

    const JsonKey **order = malloc(count * sizeof(*order));
    if (!order)
        return fail_nomem(p);
    for (size_t i = 0; i < count; i++)
        order[i] = &obj->u.list.keys[i];
    qsort(order, count, sizeof(*order), compare_keys);

    const JsonKey *dup = NULL;
    for (size_t i = 1; i < count; i++) {
        const JsonKey *a = order[i - 1], *b = order[i];
        if (a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0 &&
            (!dup || b->offset < dup->offset))
            dup = b;
    }
    int rc = 0;
    if (dup) {
        char quoted[VDNN_JSON_EXCERPT_SIZE];
        rc = fail_at(p, dup->offset, "duplicate key %s in object",
                     vdnn_json_excerpt(dup->bytes, dup->len, &quoted));
    }
    free(order);
    return rc;
}

static int parse_object(Parser *p, int depth, VdnnJson *dst)
{
    size_t cap = 0;
    int rc;

    dst->type = VDNN_JSON_OBJECT;
    p->pos++;
    skip_whitespace(p);
    if (peek(p) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if ((rc = grow(p, dst, &cap)) || (rc = parse_member(p, depth, dst)))
            break;
        skip_whitespace(p);
        if (peek(p) == '}') {
            p->pos++;
            if ((rc = check_duplicates(p, dst)))
                break;
            return 0;
        }
        if (peek(p) != ',') {
            rc = fail_expected(p, "',' or '}' in object");
            break;
        }
        p->pos++;
        skip_whitespace(p);
    }
    free_value(dst);
    return rc;
}

/* On failure *dst owns nothing. depth counts the containers around dst. */
static int parse_value(Parser *p, int depth, VdnnJson *dst)
{
    int c = peek(p), rc = 0;

    memset(dst, 0, sizeof(*dst));
    if ((c == '[' || c == '{') && depth >= VDNN_JSON_MAX_DEPTH)
        return fail_at(p, p->pos, "more than %d nested arrays and objects",
                       VDNN_JSON_MAX_DEPTH);
    switch (c) {
    case '[':
        return parse_array(p, depth + 1, dst);
    case '{':
        return parse_object(p, depth + 1, dst);
    case '"':
        rc = parse_string(p, &dst->u.string.bytes, &dst->u.string.len);
        if (!rc)
            dst->type = VDNN_JSON_STRING;
        return rc;
    case 't':
    case 'f':
        rc = parse_literal(p, c == 't' ? "true" : "false");
        if (!rc) {
            dst->type = VDNN_JSON_BOOL;
            dst->u.boolean = c == 't';
        }
        return rc;
    case 'n':
        return parse_literal(p, "null");
    default:
        if (c == '-' || is_digit(c))
            return parse_number(p, dst);
        return fail_expected(p, "a value");
    }
}

int vdnn_json_parse(const char *text, size_t len, size_t max_len, const char *origin,
                    VdnnJson **out)
{
    Parser p = {text, len, 0, origin ? origin : "JSON"};

    if (!out || (!text && len))
        return vdnn_fail(-EINVAL, "%s: no text to parse", p.origin);
    if (len > max_len)
        return vdnn_fail(-E2BIG, "%s: %zu bytes is over the %zu-byte limit", p.origin, len,
                         max_len);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        return fail_at(&p, 0, "a byte order mark is not allowed");

    VdnnJson *root = malloc(sizeof(*root));
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!root || !c_locale) {
        free(root);
        if (c_locale)
            freelocale(c_locale);
        return fail_nomem(&p);
    }
    locale_t previous = uselocale(c_locale);

    skip_whitespace(&p);
    int rc = parse_value(&p, 0, root);
    if (!rc) {
        skip_whitespace(&p);
        if (p.pos < p.len) {
            rc = fail_expected(&p, "nothing after the top-level value");
            free_value(root);
        }
    }

    uselocale(previous);
    freelocale(c_locale);
    if (rc) {
        free(root);
        return rc;
    }
    *out = root;
    return 0;
}

void vdnn_json_free(VdnnJson *root)
{
    if (!root)
        return;
    free_value(root);
    free(root);
}

/* ---- accessors ----------------------------------------------------------- */

VdnnJsonType vdnn_json_type(const VdnnJson *v)
{
    return v ? v->type : VDNN_JSON_NULL;
}

const char *vdnn_json_type_name(const VdnnJson *v)
{
    static const char *const names[] = {
        [VDNN_JSON_NULL] = "null",     [VDNN_JSON_BOOL] = "boolean",
        [VDNN_JSON_NUMBER] = "number", [VDNN_JSON_STRING] = "string",
        [VDNN_JSON_ARRAY] = "array",   [VDNN_JSON_OBJECT] = "object",
    };
    return v ? names[v->type] : "nothing";
}

const VdnnJson *vdnn_json_member(const VdnnJson *v, const char *key)
{
    if (!v || v->type != VDNN_JSON_OBJECT || !key)
        return NULL;
    size_t len = strlen(key);
    for (size_t i = 0; i < v->u.list.count; i++) {
        const JsonKey *k = &v->u.list.keys[i];
        if (k->len == len && memcmp(k->bytes, key, len) == 0)
            return &v->u.list.items[i];
    }
    return NULL;
}

size_t vdnn_json_count(const VdnnJson *v)
{
    if (!v || (v->type != VDNN_JSON_ARRAY && v->type != VDNN_JSON_OBJECT))
        return 0;
    return v->u.list.count;
}

const VdnnJson *vdnn_json_at(const VdnnJson *v, size_t i)
{
    return i < vdnn_json_count(v) ? &v->u.list.items[i] : NULL;
}

const char *vdnn_json_key_at(const VdnnJson *v, size_t i, size_t *len)
{
    if (!v || v->type != VDNN_JSON_OBJECT || i >= v->u.list.count)
        return NULL;
    if (len)
        *len = v->u.list.keys[i].len;
    return v->u.list.keys[i].bytes;
}

const char *vdnn_json_string(const VdnnJson *v, size_t *len)
{
    if (!v || v->type != VDNN_JSON_STRING)
        return NULL;
    if (len)
        *len = v->u.string.len;
    return v->u.string.bytes;
}

double vdnn_json_number(const VdnnJson *v)
{
    return v && v->type == VDNN_JSON_NUMBER ? v->u.number : 0.0;
}

int vdnn_json_bool(const VdnnJson *v)
{
    return v && v->type == VDNN_JSON_BOOL ? v->u.boolean : 0;
}

/* ascii: bytes >= 0x80 are escaped one by one instead of passed through. */
static const char *quote(const char *s, size_t len, char *buf, size_t cap, bool ascii)
{
    /* Room is kept for "...", the closing quote and the NUL. */
    size_t limit = cap - 5, n = 0, i;

    buf[n++] = '"';
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char piece[8];
        size_t w = 1;
        if (c == '"' || c == '\\') {
            piece[0] = '\\';
            piece[1] = (char)c;
            w = 2;
        } else if (c < 0x20 || c == 0x7F) {
            w = (size_t)snprintf(piece, sizeof(piece), "\\u%04X", c);
        } else if (c >= 0x80 && ascii) {
            w = (size_t)snprintf(piece, sizeof(piece), "\\x%02X", c);
        } else {
            piece[0] = (char)c;
        }
        if (n + w > limit)
            break;
        memcpy(buf + n, piece, w);
        n += w;
    }
    if (i < len) {
        /* Drop the copied head of a UTF-8 character cut in two (passed
         * through bytes only: escaped ones are whole as they are). */
        while (!ascii && i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80 &&
               ((unsigned char)s[i - 1] & 0x80)) {
            i--;
            n--;
        }
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

const char *vdnn_json_quote(const char *s, size_t len, char *buf, size_t cap)
{
    return quote(s, len, buf, cap, false);
}

const char *vdnn_json_excerpt(const char *s, size_t len, char (*buf)[VDNN_JSON_EXCERPT_SIZE])
{
    /* 40 characters: the size less the quotes, "..." and the NUL, rounded */
    return quote(s, len, *buf, 46, true);
}
