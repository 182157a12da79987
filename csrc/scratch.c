#include <errno.h>
#include <stdlib.h>

#include "error.h"
#include "scratch.h"

int vdnn_grow_float_pair(float **a, float **b, size_t *capacity, size_t n, const char *what)
{
    if (n <= *capacity)
        return 0;
    float *grown_a = realloc(*a, n * sizeof(float));
    if (grown_a)
        *a = grown_a;
    float *grown_b = realloc(*b, n * sizeof(float));
    if (grown_b)
        *b = grown_b;
    if (!grown_a || !grown_b)
        return vdnn_fail(-ENOMEM, "out of memory for a %zu-sample %s", n, what);
    *capacity = n;
    return 0;
}
