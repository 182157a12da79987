#include <stdarg.h>
#include <stdio.h>

#include "error.h"

/* One buffer per thread: the message belongs to the call that just failed on
 * this thread, exactly like errno. */
static _Thread_local char last_error[1024];

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
