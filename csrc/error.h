/* Internal: the thread-local "last error" message behind vmaf_dnn_last_error().
 *
 * Every failing path in the library returns a negative errno and records one
 * readable sentence about what went wrong; vdnn_fail() does both in one
 * expression so the two can never disagree:
 *
 *     if (w == 0) return vdnn_fail(-EINVAL, "width must be > 0");
 */
#ifndef VMAFDNN_ERROR_H
#define VMAFDNN_ERROR_H

#if defined(__GNUC__)
#define VDNN_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define VDNN_PRINTF(fmt_idx, arg_idx)
#endif

/* Records the formatted message for the calling thread and returns err
 * (a negative errno). Messages longer than the buffer are truncated. */
int vdnn_fail(int err, const char *fmt, ...) VDNN_PRINTF(2, 3);

/* Forgets the calling thread's message (called on entry to public functions
 * so a stale message never describes a later success). */
void vdnn_clear_error(void);

/* The calling thread's message, "" when none. */
const char *vdnn_last_error(void);

/* The longest message kept, with its terminating NUL. */
#define VDNN_ERROR_BYTES 1024

/* Copies the calling thread's message into saved (VDNN_ERROR_BYTES), and
 * makes it the message again: around a caller's callback, which may call
 * the library (and so clear or replace the message of the call it runs
 * in). */
void vdnn_save_error(char *saved);
void vdnn_restore_error(const char *saved);

#endif
