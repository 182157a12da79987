/* libFuzzer harness for the VMAF kernels (csrc/vmaf_kernels.h), ssim_y's,
 * float_ssim's and psnr_y's (csrc/fr_kernels.h) and sharpness_nr's
 * (nr_kernels.h), which the library's own ONNX operators run on planes a
 * third-party model may feed; built and run by tools/fuzz.sh with ASan +
 * UBSan.
 *
 * The input's first bytes choose the geometry: width and height (1..96, so
 * sizes around each kernel's minimum and its filters' borders come up),
 * the bit depth (8..16), a stride padding, whether the samples are masked to
 * the depth, and the enhancement-gain limit; the rest fills the two planes
 * (repeated when short). One bit instead makes the frame 384..447 on each
 * side and runs float_ssim alone on it: the scale is 2 there, so its
 * decimation (mirrored boxes, iqa's counts, the samples no box takes) is
 * fuzzed too, not only ssim_y's path below 384. Besides memory errors and
 * UB, the harness aborts when a contract of the header is broken: a return
 * other than 0 or -EINVAL, a failure that wrote its outputs, a success with
 * a non-finite value, a success on a sample above the depth, or a block not
 * given back.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fr_kernels.h"
#include "nr_kernels.h"
#include "vmaf_kernels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long live_blocks;

static void *counted_alloc(void *opaque, size_t n)
{
    (void)opaque;
    void *p = vdnn_kernel_env_malloc.alloc(NULL, n);
    if (p)
        live_blocks++;
    return p;
}

static void counted_release(void *opaque, void *p)
{
    (void)opaque;
    if (p)
        live_blocks--;
    vdnn_kernel_env_malloc.release(NULL, p);
}

static const VdnnKernelEnv env = {counted_alloc, counted_release, NULL, NULL};

static void check(int rc, const double *v, size_t n, int out_of_range)
{
    if (rc != 0 && rc != -EINVAL)
        abort();
    if (live_blocks != 0)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (rc && v[i] != -1234.5) /* a failure leaves the outputs alone */
            abort();
        if (!rc && !isfinite(v[i]))
            abort();
    }
    if (!rc && out_of_range)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    const unsigned decimated = (data[3] & 16) != 0;
    const unsigned w = decimated ? 384 + data[0] % 64 : 1 + data[0] % 96;
    const unsigned h = decimated ? 384 + data[1] % 64 : 1 + data[1] % 96;
    const unsigned bpc = 8 + data[2] % 9, pad = data[3] & 3, masked = !(data[3] & 4);
    const double egl = (data[3] & 8) ? 1.0 : 100.0;
    data += 4;
    size -= 4;
    const size_t stride = w + pad, n = stride * h;
    uint16_t *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    const unsigned peak = (1u << bpc) - 1;
    int out_of_range = 0, b_out_of_range = 0; /* in either plane; in b */
    for (size_t i = 0; i < 2 * n; i++) {
        const size_t k = (2 * i) % (size - 1);
        unsigned s = (unsigned)data[k] | (unsigned)data[k + 1] << 8;
        if (masked)
            s &= peak;
        uint16_t *dst = i < n ? &a[i] : &b[i - n];
        *dst = (uint16_t)s;
        const size_t col = (i % n) % stride;
        if (col < w && s > peak) {
            out_of_range = 1;
            b_out_of_range |= i >= n;
        }
    }
    const VdnnPlane pa = {a, (ptrdiff_t)stride, w, h, bpc}, pb = {b, (ptrdiff_t)stride, w, h, bpc};
    double fs = -1234.5;
    check(vdnn_float_ssim(&env, &pa, &pb, &fs), &fs, 1, out_of_range);
    if (decimated) {
        free(a);
        free(b);
        return 0;
    }
    double v[5] = {-1234.5, -1234.5, -1234.5, -1234.5, -1234.5};
    check(vdnn_vif_integer(&env, &pa, &pb, egl, v), v, 4, out_of_range);
    double adm[5] = {-1234.5, -1234.5, -1234.5, -1234.5, -1234.5};
    check(vdnn_adm_integer(&env, &pa, &pb, egl, &adm[0], &adm[1]), adm, 5, out_of_range);
    double m = -1234.5;
    check(vdnn_motion_integer(&env, &pa, &pb, &m), &m, 1, out_of_range);
    double ssim = -1234.5, psnr = -1234.5;
    check(vdnn_ssim_y(&env, &pa, &pb, &ssim), &ssim, 1, out_of_range);
    check(vdnn_psnr_y(&env, &pa, &pb, &psnr), &psnr, 1, out_of_range);
    double sharpness = -1234.5;
    check(vdnn_sharpness_nr(&env, &pb, &sharpness), &sharpness, 1, b_out_of_range);
    free(a);
    free(b);
    return 0;
}
