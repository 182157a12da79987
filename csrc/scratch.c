#include <errno.h>
#include <stdlib.h>

#include "error.h"
#include "scratch.h"

int vdnn_grow_floats(float **a, size_t *capacity, size_t n, const char *what)
{
    if (n <= *capacity)
        return 0;
    float *grown = realloc(*a, n * sizeof(float));
    if (!grown)
        return vdnn_fail(-ENOMEM, "out of memory for a %zu-sample %s", n, what);
    *a = grown;
    *capacity = n;
    return 0;
}

int vdnn_grow_float_pair(float **a, float **b, size_t *capacity, size_t n, const char *what)
{
    size_t cap_a = *capacity, cap_b = *capacity;
    int rc = vdnn_grow_floats(a, &cap_a, n, what);
    if (!rc)
        rc = vdnn_grow_floats(b, &cap_b, n, what);
    if (!rc)
        *capacity = n;
    return rc;
}
