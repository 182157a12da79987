/* The device self-check (csrc/gpu/self_check.h) on the emulator, which must
 * pass it, and on faulty backends, which must fail it naming what differs:
 * a kernel that never ran, a score corrupted on its way back, memory or a
 * copy refused. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "gpu/self_check.h"

/* The emulator, but: launches of `skip` do nothing; the `flip`th float of a
 * download has its lowest bit flipped; alloc or upload fail on request. */
typedef struct Faulty {
    const char *skip;
    int flip; /* -1: none */
    int fail_alloc, fail_upload;
} Faulty;

static int faulty_launch(void *self, const VkKernelRef *k, unsigned w, unsigned h, unsigned d,
                         void *const *args)
{
    const Faulty *f = self;
    if (f->skip && strcmp(k->name, f->skip) == 0)
        return 0;
    return vk_emulator.launch(vk_emulator.self, k, w, h, d, args);
}

static int faulty_alloc(void *self, size_t bytes, void **out)
{
    const Faulty *f = self;
    if (f->fail_alloc) {
        *out = NULL;
        return -ENOMEM;
    }
    return vk_emulator.alloc(vk_emulator.self, bytes, out);
}

static void faulty_release(void *self, void *block)
{
    (void)self;
    vk_emulator.release(vk_emulator.self, block);
}

static int faulty_upload(void *self, void *dst, const void *src, size_t bytes)
{
    const Faulty *f = self;
    if (f->fail_upload)
        return vdnn_fail(-EIO, "upload refused");
    return vk_emulator.upload(vk_emulator.self, dst, src, bytes);
}

static int faulty_download(void *self, void *dst, const void *src, size_t bytes)
{
    const Faulty *f = self;
    int rc = vk_emulator.download(vk_emulator.self, dst, src, bytes);
    if (!rc && f->flip >= 0 && (size_t)(f->flip + 1) * sizeof(float) <= bytes)
        ((unsigned char *)dst)[f->flip * sizeof(float)] ^= 1;
    return rc;
}

static int check_with(Faulty f, int w, int h, int bpc)
{
    const VkBackend b = {faulty_launch, faulty_alloc, faulty_release, faulty_upload,
                         faulty_download, &f};
    return vk_self_check(&b, w, h, bpc, 100.0);
}

static const Faulty sound = {NULL, -1, 0, 0};

int main(void)
{
    /* the emulator is the CPU kernels' twin: it passes, at every depth, both
     * gain limits, odd sizes */
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 64, 36, 16, 100.0), 0);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 97, 61, 8, 1.0), 0);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 33, 33, 10, 100.0), 0);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 353, 199, 12, 1.0), 0);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 400, 385, 8, 1.0), 0); /* float_ssim decimates */
    CHECK_EQ_INT(check_with(sound, 64, 36, 10), 0);

    /* a kernel that never runs: the scores it feeds differ, and the message
     * names the first of them */
    static const struct {
        const char *kernel, *names;
    } skipped[] = {{"vif_rows", "vif_scale0"},    {"adm_cm", "adm2"},
                   {"motion_horizontal", "motion"}, {"vif_subsample", "vif_scale1"},
                   {"adm_finish", "adm2"},        {"ssim_map", "ssim_y"},
                   {"psnr_finish", "psnr_y"},     {"sharp_finish", "sharpness_nr"}};
    for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++) {
        Faulty f = sound;
        f.skip = skipped[i].kernel;
        CHECK_EQ_INT(check_with(f, 64, 36, 10), -EIO);
        CHECK_STR_CONTAINS(vdnn_last_error(), skipped[i].names);
        CHECK_STR_CONTAINS(vdnn_last_error(), "64x36 10-bit");
    }
    /* float_ssim's own kernels, on a frame it decimates (below 384 lines it
     * runs ssim_y's, above) */
    static const char *const decimating[] = {"fssim_decimate", "fssim_map"};
    for (size_t i = 0; i < sizeof(decimating) / sizeof(decimating[0]); i++) {
        Faulty f = sound;
        f.skip = decimating[i];
        CHECK_EQ_INT(check_with(f, 384, 384, 10), -EIO);
        CHECK_STR_CONTAINS(vdnn_last_error(), "float_ssim of a 384x384 10-bit frame");
        CHECK_EQ_INT(check_with(f, 64, 36, 10), 0);
    }
    /* one bit of one score on its way back */
    Faulty f = sound;
    f.flip = 9;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "motion of a 64x36 8-bit frame");
    f.flip = 2;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "vif_scale2");
    f.flip = 10;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "ssim_y of a 64x36 8-bit frame");
    f.flip = 13;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "float_ssim of a 64x36 8-bit frame");
    /* psnr_y within a float step passes (log10 is the GPU's own); further
     * (a skipped kernel, above) does not */
    f.flip = 11;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), 0);
    /* the backend's own failures come back as they are */
    f = sound;
    f.fail_alloc = 1;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), -ENOMEM);
    f = sound;
    f.fail_upload = 1;
    CHECK_EQ_INT(check_with(f, 64, 36, 8), -EIO);
    CHECK_STR_CONTAINS(vdnn_last_error(), "upload refused");

    /* arguments */
    CHECK_EQ_INT(vk_self_check(NULL, 64, 36, 8, 100.0), -EINVAL);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 32, 36, 8, 100.0), -EINVAL);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 64, 8193, 8, 100.0), -EINVAL);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 64, 36, 7, 100.0), -EINVAL);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 64, 36, 17, 100.0), -EINVAL);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 64, 36, 8, 0.5), -EINVAL);
    CHECK_EQ_INT(vk_self_check(&vk_emulator, 64, 36, 8, 0.0 / 0.0), -EINVAL);
    return check_report();
}
