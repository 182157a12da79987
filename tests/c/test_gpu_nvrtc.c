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
    size_t ptx_size = 0;
    const int rc = vdnn_nvrtc_compile("compute_90", &ptx, &ptx_size);
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
    CHECK(ptx && ptx_size == strlen(ptx) + 1);

    /* SASS for sm_90, what a device of that capability loads: PTX of the
     * wheels' NVRTC (ISA 8.8 from 12.9) needs a driver as new as NVRTC, a
     * CUBIN any of its major release. An ELF image with every kernel. */
    char *cubin = NULL;
    size_t cubin_size = 0;
    CHECK_EQ_INT(vdnn_nvrtc_compile("sm_90", &cubin, &cubin_size), 0);
    CHECK(cubin && cubin_size > 4 && memcmp(cubin, "\x7f" "ELF", 4) == 0);
    int in_cubin = 0;
    for (const char *p = vdnn_gpu_source; cubin && (p = strstr(p, "\nVK_KERNEL ")); p++) {
        char name[128];
        if (sscanf(p + 11, "%127[A-Za-z0-9_]", name) != 1)
            continue;
        const size_t n = strlen(name) + 1; /* the symbol, NUL-terminated */
        int found = 0;
        for (size_t i = 0; i + n <= cubin_size && !found; i++)
            found = memcmp(cubin + i, name, n) == 0;
        CHECK(found);
        in_cubin += found;
    }
    CHECK_EQ_INT(in_cubin, kernels);
    free(cubin);
    free(ptx);

    /* what a device gets: its own SASS where NVRTC knows it, else PTX for
     * the newest architecture below it */
    char arch[32];
    CHECK_EQ_INT(vdnn_nvrtc_target(9, 0, arch, sizeof(arch)), 0);
    CHECK(strcmp(arch, "sm_90") == 0);
    CHECK_EQ_INT(vdnn_nvrtc_target(8, 6, arch, sizeof(arch)), 0);
    CHECK(strcmp(arch, "sm_86") == 0);
    CHECK_EQ_INT(vdnn_nvrtc_target(99, 9, arch, sizeof(arch)), 0); /* a device from the future */
    CHECK(strncmp(arch, "compute_", 8) == 0 && atoi(arch + 8) >= 90 && atoi(arch + 8) < 999);
    CHECK_EQ_INT(vdnn_nvrtc_target(1, 0, arch, sizeof(arch)), -ENODEV); /* older than any */
    CHECK_EQ_INT(vdnn_nvrtc_target(9, 10, arch, sizeof(arch)), -EINVAL);

    /* an architecture NVRTC does not know: its words come back */
    CHECK_EQ_INT(vdnn_nvrtc_compile("compute_1", &ptx, &ptx_size), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "NVRTC");
    CHECK(ptx == NULL);
    CHECK_EQ_INT(vdnn_nvrtc_compile("sm_1", &ptx, &ptx_size), -EIO);
    CHECK(ptx == NULL);
    return check_report();
}
