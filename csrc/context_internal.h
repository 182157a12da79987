/* Internal: what the C tests may observe of a context beyond the public API.
 * Not exported from the shared library (hidden visibility). */
#ifndef VMAFDNN_CONTEXT_INTERNAL_H
#define VMAFDNN_CONTEXT_INTERNAL_H

#include <stddef.h>

#include "vmafdnn/context.h"

/* Public calls on `ctx` that have started and not returned: the one that
 * owns the context plus those queued for it (vmaf_dnn_context_close waits
 * for all of them). Lets a test close a context exactly while calls are in
 * flight instead of sleeping and hoping. Thread-safe. */
size_t vdnn_context_calls_in_flight(const VmafDnnContext *ctx);

#endif
