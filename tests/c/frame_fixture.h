/* What the frames-in-flight tests share (test_frame_pool.c, test_batch.c):
 * the models of tests/models/factory.py by name, and 8-bit luma pictures
 * whose samples depend on a seed. One test program includes it once. */
#ifndef VMAFDNN_TEST_FRAME_FIXTURE_H
#define VMAFDNN_TEST_FRAME_FIXTURE_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vmafdnn/context.h>

static char model_dir[1024]; /* MODEL_DIR, set by main */

/* MODEL_DIR/<name>.onnx, in one of 4 rotating buffers. */
static inline const char *model(const char *name)
{
    static char path[4][PATH_MAX];
    static int turn;
    turn = (turn + 1) % 4;
    snprintf(path[turn], sizeof(path[turn]), "%s/%s.onnx", model_dir, name);
    return path[turn];
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
