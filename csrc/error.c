#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

/* One buffer per thread: the message belongs to the call that just failed on
 * this thread, exactly like errno. */
static _Thread_local char last_error[VDNN_ERROR_BYTES];

int vdnn_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return err;
}

void vdnn_clear_error(void)
{
    last_error[0] = '\0';
}

const char *vdnn_last_error(void)
{
    return last_error;
}

void vdnn_save_error(char *saved)
{
    memcpy(saved, last_error, sizeof(last_error));
}

void vdnn_restore_error(const char *saved)
{
    memcpy(last_error, saved, sizeof(last_error));
}
