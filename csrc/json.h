/* Internal: a small strict JSON (RFC 8259) parser into a read-only tree.
 *
 * Strict means: exactly one value, surrounded only by JSON whitespace (space,
 * tab, CR, LF); no comments, no trailing commas, no byte order mark; numbers
 * follow the JSON grammar (no leading zeros, hex, NaN, Infinity or '+');
 * strings are valid UTF-8 with no raw control characters, and every escape,
 * \uXXXX surrogate pairs included, is decoded to UTF-8 (a lone surrogate is
 * an error). Two further rules are this parser's choice, not the RFC's:
 *   - a key may appear only once in an object (compared after decoding, so
 *     "a" and "\u0061" are the same key): JSON leaves duplicates undefined
 *     and different parsers keep different copies, so we refuse to guess;
 *   - a number whose magnitude overflows a double is an error (underflow to
 *     zero or a subnormal is accepted).
 * Numbers are converted in the "C" locale whatever the process locale is.
 *
 * The input need not be NUL-terminated and is never read outside
 * [text, text + len). Nesting is capped at VDNN_JSON_MAX_DEPTH containers.
 */
#ifndef VMAFDNN_JSON_H
#define VMAFDNN_JSON_H

#include <stddef.h>

/* The most arrays/objects that may enclose one another: [[1]] has depth 2. */
#define VDNN_JSON_MAX_DEPTH 64

typedef enum VdnnJsonType {
    VDNN_JSON_NULL,
    VDNN_JSON_BOOL,
    VDNN_JSON_NUMBER,
    VDNN_JSON_STRING,
    VDNN_JSON_ARRAY,
    VDNN_JSON_OBJECT,
} VdnnJsonType;

/* One value of a parsed document. Opaque; read it with the accessors below.
 * Every node belongs to the root returned by vdnn_json_parse(): pointers to
 * nodes and strings inside it stay valid until vdnn_json_free(root). */
typedef struct VdnnJson VdnnJson;

/*
 * Parses text[0, len) into a new tree and stores its root in *out, which the
 * caller owns and releases with vdnn_json_free(). *out is written only on
 * success.
 *
 * origin prefixes every error message (e.g. "sidecar /x/foo.json"); NULL
 * means "JSON". Returns:
 *   0         success
 *   -EINVAL   out is NULL, or text is NULL while len > 0
 *   -E2BIG    len > max_len
 *   -EBADMSG  not valid JSON; the message reads
 *             "<origin>: line L, column C: <what was expected or wrong>"
 *             (lines and columns count from 1; columns count code points)
 *   -ENOMEM   an allocation failed
 */
int vdnn_json_parse(const char *text, size_t len, size_t max_len,
                    const char *origin, VdnnJson **out);

/* Releases a tree returned by vdnn_json_parse(). NULL-safe. Only roots may be
 * passed, never inner nodes. */
void vdnn_json_free(VdnnJson *root);

/* Accessors. Each tolerates NULL and a node of the wrong type, answering
 * NULL / 0 then, so lookups can be chained without checks in between. */

VdnnJsonType vdnn_json_type(const VdnnJson *v); /* VDNN_JSON_NULL for NULL */

/* "null", "boolean", "number", "string", "array" or "object" (static
 * storage), for messages; "nothing" for a NULL pointer. */
const char *vdnn_json_type_name(const VdnnJson *v);

/* The value of member `key` (a NUL-terminated key, matched byte for byte
 * against the decoded key) of object v, or NULL when v is not an object or
 * has no such member. */
const VdnnJson *vdnn_json_member(const VdnnJson *v, const char *key);

/* Number of elements of an array or members of an object; 0 otherwise. */
size_t vdnn_json_count(const VdnnJson *v);

/* Element i of an array, or the value of member i (in document order) of an
 * object; NULL when out of range or v is neither. */
const VdnnJson *vdnn_json_at(const VdnnJson *v, size_t i);

/* Key of member i of an object, NUL-terminated, its byte length (it may hold
 * a NUL from \u0000) in *len when len is not NULL; NULL when out of range or
 * v is not an object. */
const char *vdnn_json_key_at(const VdnnJson *v, size_t i, size_t *len);

/* The decoded UTF-8 bytes of a string, NUL-terminated, their length (which
 * counts any NUL decoded from \u0000) in *len when len is not NULL; NULL when
 * v is not a string. */
const char *vdnn_json_string(const VdnnJson *v, size_t *len);

/* The value of a number (always finite); 0.0 when v is not a number. */
double vdnn_json_number(const VdnnJson *v);

/* 1 for true, 0 for false or when v is not a boolean. */
int vdnn_json_bool(const VdnnJson *v);

/* Writes s[0, len) into buf[0, cap) as a double-quoted, printable string for
 * error messages: quotes, backslashes and control characters are escaped and
 * long strings are cut short with "..." (never inside a UTF-8 sequence).
 * Returns buf. cap must be at least 16. */
const char *vdnn_json_quote(const char *s, size_t len, char *buf, size_t cap);

/* The size of a buffer for vdnn_json_excerpt(). */
#define VDNN_JSON_EXCERPT_SIZE 48

/* The way file contents may appear in a message: like vdnn_json_quote() but
 * showing at most 40 characters between the quotes, with every byte outside
 * printable ASCII escaped (\u00XX for control characters, \xHH for bytes
 * >= 0x80), so nothing from the file can reach a terminal or log raw.
 * Returns buf. */
const char *vdnn_json_excerpt(const char *s, size_t len, char (*buf)[VDNN_JSON_EXCERPT_SIZE]);

#endif
