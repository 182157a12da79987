/* The GPU kernels' source as the library embeds it (csrc/gpu/embed_source.py),
 * compiled by NVRTC as cuda_kernels.c compiles it on a GPU machine: no
 * error, no warning, and every kernel of the source (each VK_KERNEL) an entry
 * of the PTX. No GPU is needed; NVRTC is: VMAFDNN_NVRTC_LIBRARY names it
 * (tests/python/test_ort_wheels.py passes the one of the gpu-cu12
 * environment). Without one the test is skipped (exit 77), unless
 * VMAFDNN_TEST_NVRTC_REQUIRED=1.
 *
 * Also: without a CUDA driver, vdnn_cuda_kernels_open says so (-ENOENT) and
 * keeps saying it. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_kernels.h"
#include "error.h"

extern const char vdnn_gpu_source[];
extern const size_t vdnn_gpu_source_size;

int main(void)
{
    CHECK_EQ_INT(strlen(vdnn_gpu_source), vdnn_gpu_source_size);
    CHECK_STR_CONTAINS(vdnn_gpu_source, "#define VK_KERNEL extern \"C\" __global__ void");

    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        for (int i = 0; i < 2; i++) {
            CHECK_EQ_INT(vdnn_cuda_kernels_open(0), -ENOENT);
            CHECK_STR_CONTAINS(vdnn_last_error(), "no CUDA driver");
        }
        VdnnCudaStream s;
        CHECK_EQ_INT(vdnn_cuda_stream_init(&s, 0, NULL), -ENOENT);
    } else
        dlclose(driver);
    CHECK_EQ_INT(vdnn_cuda_kernels_open(-1), -EINVAL);

    char *ptx = NULL;
    const int rc = vdnn_nvrtc_compile("compute_90", &ptx);
    const char *required = getenv("VMAFDNN_TEST_NVRTC_REQUIRED");
    if (rc == -ENOENT && !(required && strcmp(required, "1") == 0)) {
        printf("skipped: %s\n", vdnn_last_error());
        check_report();
        return 77;
    }
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "%s\n", vdnn_last_error());
    int kernels = 0;
    for (const char *p = vdnn_gpu_source; ptx && (p = strstr(p, "\nVK_KERNEL ")); p++) {
        char name[128], entry[160];
        if (sscanf(p + 11, "%127[A-Za-z0-9_]", name) != 1)
            continue;
        snprintf(entry, sizeof(entry), ".entry %s(", name);
        CHECK_STR_CONTAINS(ptx, entry);
        kernels++;
    }
    printf("%d kernels in the PTX for compute_90\n", kernels);
    CHECK(kernels >= 3);
    free(ptx);
    /* an architecture NVRTC does not know: its words come back */
    CHECK_EQ_INT(vdnn_nvrtc_compile("compute_1", &ptx), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "NVRTC");
    CHECK(ptx == NULL);
    return check_report();
}
