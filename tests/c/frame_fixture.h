/* What the context tests share (test_frame_pool.c, test_batch.c,
 * test_kept_pictures.c, test_temporal.c): the models of
 * tests/models/factory.py by name, staged copies of them beside a sidecar,
 * main's start, contexts that differ by their frame threads, and 8-bit luma
 * pictures whose samples depend on a seed. One test program includes it
 * once. */
#ifndef VMAFDNN_TEST_FRAME_FIXTURE_H
#define VMAFDNN_TEST_FRAME_FIXTURE_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"

static char model_dir[PATH_MAX]; /* MODEL_DIR, set by main */

/* main's first steps for a test that runs models from a temporary
 * directory: model_dir from argv[1], tmp_dir (a mkdtemp template) made, ONNX
 * Runtime loaded. 0 when all is ready, else main's exit status (2: usage or
 * no directory, 1: no runtime), the reason on stderr. */
static inline int fixture_start(int argc, char **argv, char *tmp_dir)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
        return 2;
    }
    snprintf(model_dir, sizeof(model_dir), "%s", argv[1]);
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 2;
    }
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "ONNX Runtime unavailable: %s\n", vmaf_dnn_last_error());
        return 1;
    }
    return 0;
}

/* A context of the default configuration but for its frame threads (NULL
 * when it does not open, a failed check). */
static inline VmafDnnContext *open_context(int threads)
{
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.threads = threads;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    return ctx;
}

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
