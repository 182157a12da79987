/* What the context tests share (test_frame_pool.c, test_batch.c,
 * test_kept_pictures.c, test_temporal.c): the models of
 * tests/models/factory.py by name, staged copies of them beside a sidecar,
 * and 8-bit luma pictures whose samples depend on a seed. One test program
 * includes it once. */
#ifndef VMAFDNN_TEST_FRAME_FIXTURE_H
#define VMAFDNN_TEST_FRAME_FIXTURE_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vmafdnn/context.h>

static char model_dir[PATH_MAX]; /* MODEL_DIR, set by main */

/* MODEL_DIR/<name>.onnx, in one of 4 rotating buffers. */
static inline const char *model(const char *name)
{
    static char path[4][PATH_MAX + 64];
    static int turn;
    turn = (turn + 1) % 4;
    snprintf(path[turn], sizeof(path[turn]), "%s/%s.onnx", model_dir, name);
    return path[turn];
}

/* Copies the file src to dst (what fails shows in the test that reads it). */
static inline void copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    char buf[1 << 16];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

/* Copies model `name` to <dir>/<as>.onnx with `sidecar` (NULL: none) as
 * <dir>/<as>.json and returns the .onnx path (in one of 8 rotating
 * buffers). */
static inline const char *stage_model(const char *dir, const char *name, const char *as,
                                      const char *sidecar)
{
    static char ring[8][PATH_MAX + 64];
    static unsigned next;
    char *path = ring[next++ % 8], json[PATH_MAX + 64];
    snprintf(path, sizeof(ring[0]), "%s/%s.onnx", dir, as);
    snprintf(json, sizeof(json), "%s/%s.json", dir, as);
    copy_file(model(name), path);
    unlink(json);
    FILE *f = sidecar ? fopen(json, "w") : NULL;
    if (f) {
        fputs(sidecar, f);
        fclose(f);
    }
    return path;
}

/* A w x h 8-bit picture whose samples depend on seed (free f->y). */
typedef struct Frame {
    uint8_t *y;
    VmafDnnPicture pic;
} Frame;

static inline void frame_make(Frame *f, unsigned w, unsigned h, unsigned seed)
{
    f->y = malloc((size_t)w * h);
    for (size_t i = 0; i < (size_t)w * h; i++)
        f->y[i] = (uint8_t)((i * 7 + seed * 31 + (i / w) * seed) & 0xff);
    memset(&f->pic, 0, sizeof(f->pic));
    f->pic.data[0] = f->y;
    f->pic.stride[0] = w;
    f->pic.w[0] = w;
    f->pic.h[0] = h;
    f->pic.bpc = 8;
}

/* Reads frame `index` of w x h pictures made from the two seeds; the
 * read's return code. */
static inline int read_pair(VmafDnnContext *ctx, unsigned w, unsigned h, unsigned ref_seed,
                            unsigned dist_seed, unsigned index)
{
    Frame ref, dist;
    frame_make(&ref, w, h, ref_seed);
    frame_make(&dist, w, h, dist_seed);
    int rc = vmaf_dnn_read_pictures(ctx, &ref.pic, &dist.pic, index);
    free(ref.y);
    free(dist.y);
    return rc;
}

#endif
