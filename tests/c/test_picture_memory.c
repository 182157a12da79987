/* Picture buffers (vmaf_dnn_picture_buffer_alloc / _free,
 * vmaf_dnn_picture_memory): the argument and ownership rules of the header
 * (a buffer freed twice, one never allocated, one freed after its context
 * closed, buffers kept for reuse), many threads allocating and freeing at
 * once, and pictures scored from buffers: the same scores as from the
 * caller's own memory, fed from where they lie (VmafDnnStaticRuns.pictures)
 * where the model's device has host-accessible memory. No GPU here: the
 * library's test hook VMAFDNN_TEST_HOST_ACCESSIBLE=1 stands ORT's CPU
 * allocator in for a device's pinned memory.
 *
 * usage: test_picture_memory BUILTIN_MODEL_DIR */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vmafdnn/context.h>

#include "check.h"

enum { W = 96, H = 54, FRAMES = 5, KEPT = 16 };

static const char *builtin_dir;

static VmafDnnContext *open_context(int threads, int host_accessible)
{
    if (host_accessible)
        setenv("VMAFDNN_TEST_HOST_ACCESSIBLE", "1", 1);
    else
        unsetenv("VMAFDNN_TEST_HOST_ACCESSIBLE");
    VmafDnnContextConfig cfg;
    vmaf_dnn_default_context_config(&cfg);
    cfg.threads = threads;
    cfg.session.device = VMAF_DNN_DEVICE_CPU;
    cfg.session.static_shapes = VMAF_DNN_STATIC_SHAPES_ON;
    cfg.session.device_io = VMAF_DNN_DEVICE_IO_ON;
    VmafDnnContext *ctx = NULL;
    CHECK_EQ_INT(vmaf_dnn_context_open(&ctx, &cfg), 0);
    return ctx;
}

static int attach(VmafDnnContext *ctx, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.onnx", builtin_dir, name);
    VmafDnnModelConfig mcfg;
    memset(&mcfg, 0, sizeof(mcfg));
    int rc = vmaf_dnn_use_tiny_model(ctx, path, &mcfg);
    if (rc)
        fprintf(stderr, "attach %s: %s\n", path, vmaf_dnn_last_error());
    return rc;
}

static void test_arguments(void)
{
    VmafDnnContext *ctx = open_context(0, 0);
    void *buf = (void *)&buf;
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(NULL, 64, &buf), -EINVAL);
    CHECK(buf == NULL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "context is NULL");
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 64, NULL), -EINVAL);
    buf = (void *)&buf;
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 0, &buf), -EINVAL);
    CHECK(buf == NULL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "size is 0");
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, SIZE_MAX, &buf), -ENOMEM);
    CHECK(buf == NULL);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(NULL), 0);

    /* no model: plain memory, aligned, every byte the caller's */
    CHECK(vmaf_dnn_picture_memory(ctx) == NULL);
    CHECK(vmaf_dnn_picture_memory(NULL) == NULL);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 1000, &buf), 0);
    CHECK(buf && (uintptr_t)buf % 64 == 0);
    memset(buf, 0xab, 1000);

    /* what the library did not hand out, or handed back already */
    char *foreign = malloc(64);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(foreign), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "not a buffer of vmaf_dnn_picture_buffer_alloc");
    free(foreign);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free((char *)buf + 64), -EINVAL);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(buf), 0);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(buf), -EINVAL);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "freed already");
    vmaf_dnn_context_close(ctx);
}

static int holds(void *const *set, size_t n, const void *p)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == p)
            return 1;
    return 0;
}

static void test_kept_for_reuse_and_outliving_the_context(void)
{
    VmafDnnContext *ctx = open_context(0, 0);
    void *first[KEPT + 4], *again[KEPT + 4];
    for (int i = 0; i < KEPT + 4; i++)
        CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 4096, &first[i]), 0);
    for (int i = 0; i < KEPT + 4; i++)
        CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(first[i]), 0);
    /* the context keeps some of them (16) for the next allocations of that
     * size (the rest went back to the allocator, which may hand their
     * addresses out again: only the first is sure to be a kept one) */
    for (int i = 0; i < KEPT + 4; i++) {
        CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 4096, &again[i]), 0);
        CHECK(!holds(again, (size_t)i, again[i])); /* never handed out twice */
    }
    CHECK(holds(first, KEPT + 4, again[0]));
    void *other = NULL;
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(again[0]), 0);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 8192, &other), 0);
    CHECK(other != again[0]); /* another size: a new buffer */

    /* buffers out when the context closes stay the caller's */
    vmaf_dnn_context_close(ctx);
    memset(other, 1, 8192);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(other), 0);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(other), -EINVAL);
    for (int i = 1; i < KEPT + 4; i++) {
        memset(again[i], 2, 4096);
        CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(again[i]), 0);
    }
    /* the one kept for reuse went back at close */
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(again[0]), -EINVAL);
}

typedef struct Churn {
    VmafDnnContext *ctx;
    int seed, failures;
} Churn;

static void *churn(void *arg)
{
    Churn *c = arg;
    void *held[8] = {0};
    for (int i = 0; i < 2000; i++) {
        const int k = (i * 7 + c->seed) % 8;
        if (held[k]) {
            c->failures += ((unsigned char *)held[k])[0] != (unsigned char)(c->seed + k);
            c->failures += vmaf_dnn_picture_buffer_free(held[k]) != 0;
            held[k] = NULL;
        } else {
            c->failures += vmaf_dnn_picture_buffer_alloc(c->ctx, 256 + 64 * (size_t)k, &held[k]) != 0;
            if (held[k])
                memset(held[k], c->seed + k, 256 + 64 * (size_t)k);
        }
    }
    for (int k = 0; k < 8; k++)
        c->failures += vmaf_dnn_picture_buffer_free(held[k]) != 0;
    return NULL;
}

/* Contexts opened, given a buffer and closed: each close may leave the
 * registry empty (and free it) while other threads allocate. */
static void *open_and_close(void *arg)
{
    int *failures = arg;
    for (int i = 0; i < 300; i++) {
        VmafDnnContextConfig cfg;
        vmaf_dnn_default_context_config(&cfg);
        VmafDnnContext *ctx = NULL;
        void *buf = NULL;
        *failures += vmaf_dnn_context_open(&ctx, &cfg) != 0;
        *failures += vmaf_dnn_picture_buffer_alloc(ctx, 64, &buf) != 0;
        *failures += vmaf_dnn_picture_buffer_free(buf) != 0;
        vmaf_dnn_context_close(ctx);
    }
    return NULL;
}

/* Threads allocating and freeing on two contexts while a third opens and
 * closes contexts: no buffer handed out twice (each thread's bytes stay its
 * own), every free of a live buffer 0. TSan and ASan runs see the rest. */
static void test_threads(void)
{
    VmafDnnContext *ctx[2] = {open_context(0, 0), open_context(0, 0)};
    Churn c[4];
    pthread_t t[5];
    int failures = 0;
    for (int i = 0; i < 4; i++) {
        c[i] = (Churn){ctx[i % 2], 17 * i + 1, 0};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, churn, &c[i]), 0);
    }
    CHECK_EQ_INT(pthread_create(&t[4], NULL, open_and_close, &failures), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(c[i].failures, 0);
    }
    pthread_join(t[4], NULL);
    CHECK_EQ_INT(failures, 0);
    vmaf_dnn_context_close(ctx[0]);
    vmaf_dnn_context_close(ctx[1]);
}

static atomic_int churning;

static void *churn_until_told(void *arg)
{
    VmafDnnContext *ctx = arg;
    while (atomic_load(&churning)) {
        void *buf = NULL;
        if (!vmaf_dnn_picture_buffer_alloc(ctx, 4096, &buf))
            vmaf_dnn_picture_buffer_free(buf);
    }
    return NULL;
}

/* fork() while another thread takes and gives buffers: the child (which
 * has that thread no more) allocates and frees as any process does, never
 * waiting on a lock held by a thread it does not have (a child hung so, 1
 * in 20, before the registry started afresh in children). A child still at
 * it after 5 s is killed by its alarm. The parent's buffers are not the
 * child's: freeing one there is -EINVAL. */
static void test_fork(void)
{
    VmafDnnContext *ctx = open_context(0, 0);
    void *parents = NULL;
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, 100, &parents), 0);
    atomic_store(&churning, 1);
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, churn_until_told, ctx), 0);
    int failed = 0;
    for (int i = 0; i < 60; i++) {
        const pid_t pid = fork();
        if (pid == 0) {
            alarm(5);
            VmafDnnContextConfig cfg;
            vmaf_dnn_default_context_config(&cfg);
            VmafDnnContext *mine = NULL;
            void *buf = NULL;
            int bad = vmaf_dnn_context_open(&mine, &cfg) != 0;
            bad |= vmaf_dnn_picture_buffer_alloc(mine, 4096, &buf) != 0;
            bad |= vmaf_dnn_picture_buffer_free(buf) != 0;
            bad |= vmaf_dnn_picture_buffer_free(parents) != -EINVAL;
            vmaf_dnn_context_close(mine);
            _exit(bad);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    atomic_store(&churning, 0);
    pthread_join(t, NULL);
    CHECK_EQ_INT(failed, 0);
    CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(parents), 0);
    vmaf_dnn_context_close(ctx);
}

/* Frame f's W x H 10-bit samples of picture p, into dst (rows `stride`
 * samples apart). */
static void fill(uint16_t *dst, size_t stride, int f, int p)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            dst[(size_t)y * stride + (size_t)x] =
                (uint16_t)((x * 7 + y * 13 + f * 31 + p * (x ^ y) * 3) & 1023);
}

typedef struct KeptPair {
    void *plane[2];
    int buffers; /* the planes are picture buffers, not malloc'ed */
    int *released;
} KeptPair;

/* A frame's release: both its planes given back. */
static void release_pair(void *opaque)
{
    KeptPair *k = opaque;
    for (int p = 0; p < 2; p++)
        if (k->buffers)
            CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(k->plane[p]), 0);
        else
            free(k->plane[p]);
    (*k->released)++;
    free(k);
}

/* psnr_y of FRAMES frames read from the caller's memory (where 0), from
 * picture buffers (1), or from a crop of one whose rows are apart (2); with
 * `kept`, read with vmaf_dnn_read_pictures_kept, each frame's buffers freed
 * by its release. The runs fed from the buffers in *pictures. */
static void score(int threads, int host_accessible, int where, int kept, double *out,
                  uint64_t *pictures)
{
    VmafDnnContext *ctx = open_context(threads, host_accessible);
    CHECK_EQ_INT(attach(ctx, "psnr_y"), 0);
    const size_t stride = where == 2 ? W + 8 : W, bytes = stride * H * sizeof(uint16_t);
    int released = 0;
    for (int f = 0; f < FRAMES; f++) {
        void *plane[2];
        VmafDnnPicture pic[2];
        for (int p = 0; p < 2; p++) {
            if (where)
                CHECK_EQ_INT(vmaf_dnn_picture_buffer_alloc(ctx, bytes, &plane[p]), 0);
            else
                plane[p] = malloc(bytes);
            fill(plane[p], stride, f, p);
            memset(&pic[p], 0, sizeof(pic[p]));
            pic[p].data[0] = plane[p];
            pic[p].stride[0] = (ptrdiff_t)(stride * sizeof(uint16_t));
            pic[p].w[0] = W;
            pic[p].h[0] = H;
            pic[p].bpc = 10;
        }
        if (kept) {
            KeptPair *k = malloc(sizeof(*k));
            *k = (KeptPair){{plane[0], plane[1]}, where != 0, &released};
            CHECK_EQ_INT(vmaf_dnn_read_pictures_kept(ctx, &pic[0], &pic[1], (unsigned)f,
                                                     release_pair, k),
                         0);
            continue;
        }
        CHECK_EQ_INT(vmaf_dnn_read_pictures(ctx, &pic[0], &pic[1], (unsigned)f), 0);
        for (int p = 0; p < 2; p++)
            if (where)
                CHECK_EQ_INT(vmaf_dnn_picture_buffer_free(plane[p]), 0);
            else
                free(plane[p]);
    }
    CHECK_EQ_INT(vmaf_dnn_flush(ctx), 0);
    CHECK_EQ_INT(released, kept ? FRAMES : 0);
    for (int f = 0; f < FRAMES; f++)
        CHECK_EQ_INT(vmaf_dnn_feature_get(ctx, "psnr_y", (unsigned)f, &out[f]), 0);
    VmafDnnStaticRuns runs;
    CHECK_EQ_INT(vmaf_dnn_tiny_model_static_runs(ctx, 0, &runs), 0);
    *pictures = runs.pictures;
    const char *memory = vmaf_dnn_picture_memory(ctx);
    if (host_accessible)
        CHECK(memory != NULL && *memory);
    else
        CHECK(memory == NULL);
    vmaf_dnn_context_close(ctx);
}

/* The same scores from the caller's memory and from buffers, whatever the
 * threads; fed from where they lie only where the memory is the device's
 * host-accessible memory and the rows lie back to back (frames in flight
 * that the library copies: its copies in slots of that memory). */
static void test_scores(void)
{
    double want[FRAMES], got[FRAMES];
    uint64_t pictures = 0;
    score(0, 0, 0, 0, want, &pictures);
    CHECK_EQ_INT(pictures, 0);
    for (int threads = 0; threads <= 3; threads += 3)
        for (int host = 0; host <= 1; host++)
            for (int where = 0; where <= 2; where++)
                for (int kept = 0; kept <= 1; kept++) {
                    score(threads, host, where, kept, got, &pictures);
                    for (int f = 0; f < FRAMES; f++)
                        CHECK(got[f] == want[f]);
                    /* a frame in flight not kept: from the library's copy
                     * in a slot, which lies in that memory too */
                    const int in_place = host && (where == 1 || (threads > 1 && !kept));
                    if (pictures != (in_place ? FRAMES : 0))
                        fprintf(stderr, "threads %d host %d where %d kept %d: %llu runs fed "
                                        "from the buffers\n",
                                threads, host, where, kept, (unsigned long long)pictures);
                    CHECK_EQ_INT(pictures, in_place ? FRAMES : 0);
                }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUILTIN_MODEL_DIR\n", argv[0]);
        return 2;
    }
    builtin_dir = argv[1];
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "ONNX Runtime unavailable: %s\n", vmaf_dnn_last_error());
        return 1;
    }
    test_arguments();
    test_kept_for_reuse_and_outliving_the_context();
    test_threads();
    test_fork();
    test_scores();
    return check_report();
}
