/* The catalog of models: the search path, name resolution, enumeration and
 * the default model sets (catalog.h). */
#define _GNU_SOURCE /* dladdr() */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog.h"
#include "error.h"
#include "sidecar.h"
#include "vdnn_config.h"
#include "vmafdnn/catalog.h"

/* ---- the search path ----------------------------------------------------- */

/* A list of owned strings. */
typedef struct Strings {
    char **items;
    size_t count, capacity;
} Strings;

static void strings_free(Strings *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->items[i]);
    free(s->items);
    *s = (Strings){0};
}

static int strings_push_n(Strings *s, const char *text, size_t len)
{
    if (s->count == s->capacity) {
        size_t cap = s->capacity ? 2 * s->capacity : 8;
        char **grown = realloc(s->items, cap * sizeof(*grown));
        if (!grown)
            return vdnn_fail(-ENOMEM, "out of memory");
        s->items = grown;
        s->capacity = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return vdnn_fail(-ENOMEM, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    s->items[s->count++] = copy;
    return 0;
}

static int strings_has(const Strings *s, const char *text)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->items[i], text) == 0)
            return 1;
    return 0;
}

/* Directories added by callers: process-wide, so every front end in the
 * process (a Python package and a C host, say) sees the same path. */
static pthread_mutex_t added_lock = PTHREAD_MUTEX_INITIALIZER;
static Strings added;

/* fork() copies only the calling thread: the lock is taken around it so the
 * child never inherits it held by a thread it does not have. */
static void added_lock_take(void)
{
    pthread_mutex_lock(&added_lock);
}

static void added_lock_give(void)
{
    pthread_mutex_unlock(&added_lock);
}

static void register_fork_handlers(void)
{
    pthread_atfork(added_lock_take, added_lock_give, added_lock_give);
}

static void added_enter(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handlers);
    added_lock_take();
}

int vmaf_dnn_model_path_add(const char *dir)
{
    vdnn_clear_error();
    if (!dir || !*dir)
        return vdnn_fail(-EINVAL, "model_path_add: the directory is NULL or empty");
    size_t len = strlen(dir);
    if (len >= PATH_MAX)
        return vdnn_fail(-ENAMETOOLONG, "model_path_add: the directory is %zu bytes long "
                                        "(the limit is %d)", len, PATH_MAX - 1);
    int rc = 0;
    added_enter();
    if (!strings_has(&added, dir))
        rc = strings_push_n(&added, dir, len);
    added_lock_give();
    return rc;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The installed data directory: relative to the library's own file first,
 * so that a moved install (or a wheel, whose prefix means nothing) finds
 * its models; the directory compiled in otherwise. */
static const char where_am_i = 0; /* an object inside the library, for dladdr */

static int push_data_dir(Strings *dirs)
{
    Dl_info info;
    char lib[PATH_MAX], dir[PATH_MAX];

    if (VDNN_MODELS_FROM_LIBDIR[0] && dladdr(&where_am_i, &info) &&
        info.dli_fname && realpath(info.dli_fname, lib)) {
        char *slash = strrchr(lib, '/');
        if (slash) {
            *slash = '\0';
            char found[PATH_MAX];
            int n = snprintf(dir, sizeof(dir), "%s/%s", lib, VDNN_MODELS_FROM_LIBDIR);
            /* Shown to users and compared: without the "lib/../share". */
            if (n > 0 && (size_t)n < sizeof(dir) && is_dir(dir) && realpath(dir, found))
                return strings_push_n(dirs, found, strlen(found));
        }
    }
    if (VDNN_MODELS_DIR[0])
        return strings_push_n(dirs, VDNN_MODELS_DIR, strlen(VDNN_MODELS_DIR));
    return 0;
}

/* The whole search path, in lookup order, into *dirs (caller frees). */
static int search_path(Strings *dirs)
{
    int rc = 0;
    const char *env = getenv("VMAFDNN_MODEL_PATH");

    *dirs = (Strings){0};
    for (const char *p = env; p && *p && !rc;) {
        size_t len = strcspn(p, ":");
        if (len)
            rc = strings_push_n(dirs, p, len);
        p += len + (p[len] == ':');
    }
    if (!rc)
        rc = push_data_dir(dirs);
    added_enter();
    for (size_t i = 0; i < added.count && !rc; i++)
        rc = strings_push_n(dirs, added.items[i], strlen(added.items[i]));
    added_lock_give();
    if (rc)
        strings_free(dirs);
    return rc;
}

int vmaf_dnn_model_search_path(char *buf, size_t size)
{
    vdnn_clear_error();
    if (!buf || !size)
        return vdnn_fail(-EINVAL, "model_search_path: buf is NULL or size is 0");
    Strings dirs;
    int rc = search_path(&dirs);
    if (rc)
        return rc;
    size_t need = 1;
    for (size_t i = 0; i < dirs.count; i++)
        need += strlen(dirs.items[i]) + (i > 0);
    if (need > size) {
        buf[0] = '\0';
        rc = vdnn_fail(-ENAMETOOLONG, "model_search_path: needs %zu bytes, got %zu", need, size);
    } else {
        char *p = buf;
        for (size_t i = 0; i < dirs.count; i++)
            p += sprintf(p, "%s%s", i ? ":" : "", dirs.items[i]);
        *p = '\0';
    }
    strings_free(&dirs);
    return rc;
}

/* ---- names --------------------------------------------------------------- */

static int ends_with_onnx(const char *s, size_t len)
{
    return len >= 5 && memcmp(s + len - 5, ".onnx", 5) == 0;
}

int vdnn_catalog_is_path(const char *name)
{
    return strchr(name, '/') || ends_with_onnx(name, strlen(name));
}

static int is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* One model found on the search path. */
typedef struct Found {
    char *name, *path;
    size_t order; /* position of its directory on the search path */
} Found;

static int by_name_then_order(const void *a, const void *b)
{
    const Found *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int by_order_then_name(const void *a, const void *b)
{
    const Found *x = a, *y = b;
    if (x->order != y->order)
        return (x->order > y->order) - (x->order < y->order);
    return strcmp(x->name, y->name);
}

static void found_free(Found *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(f[i].name);
        free(f[i].path);
    }
    free(f);
}

/* Appends the models of directory `dir` (position `order`) to *f. */
static int scan_dir(const char *dir, size_t order, Found **f, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* a directory that is not there holds no models */
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || !ends_with_onnx(e->d_name, len))
            continue;
        char path[PATH_MAX];
        int w = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (w < 0 || (size_t)w >= sizeof(path) || !is_regular(path))
            continue;
        if (*n == *cap) {
            size_t c = *cap ? 2 * *cap : 16;
            Found *grown = realloc(*f, c * sizeof(*grown));
            if (!grown) {
                rc = vdnn_fail(-ENOMEM, "out of memory");
                break;
            }
            *f = grown;
            *cap = c;
        }
        Found *it = &(*f)[*n];
        it->order = order;
        it->path = strdup(path);
        it->name = strndup(e->d_name, len - 5);
        if (!it->path || !it->name) {
            free(it->path);
            free(it->name);
            rc = vdnn_fail(-ENOMEM, "out of memory");
        } else {
            (*n)++;
        }
    }
    closedir(d);
    return rc;
}

/* Every model on the search path, shadowed names left out, in search order
 * and by name within a directory. O(n log n) in the number of files. */
static int list_models(const Strings *dirs, Found **out, size_t *count)
{
    Found *f = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    for (size_t i = 0; i < dirs->count && !rc; i++)
        rc = scan_dir(dirs->items[i], i, &f, &n, &cap);
    if (rc) {
        found_free(f, n);
        return rc;
    }
    if (n) {
        qsort(f, n, sizeof(*f), by_name_then_order);
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            if (kept && strcmp(f[kept - 1].name, f[i].name) == 0) {
                free(f[i].name);
                free(f[i].path);
            } else {
                f[kept++] = f[i];
            }
        }
        n = kept;
        qsort(f, n, sizeof(*f), by_order_then_name);
    }
    *out = f;
    *count = n;
    return 0;
}

/* The -ENOENT of a name that is nowhere: lists what is there, and where. */
static int fail_unknown(const char *name, const Strings *dirs)
{
    Found *f = NULL;
    size_t n = 0;
    char known[512] = "", where[512] = "";
    size_t k = 0, w = 0;

    if (list_models(dirs, &f, &n) == 0) {
        for (size_t i = 0; i < n && k < sizeof(known); i++)
            k += (size_t)snprintf(known + k, sizeof(known) - k, "%s%s", i ? ", " : "",
                                  f[i].name);
        found_free(f, n);
    }
    for (size_t i = 0; i < dirs->count && w < sizeof(where); i++)
        w += (size_t)snprintf(where + w, sizeof(where) - w, "%s%s", i ? ":" : "",
                              dirs->items[i]);
    vdnn_clear_error();
    return vdnn_fail(-ENOENT,
                     "no model named \"%.255s\" (a name is a file name without .onnx; a "
                     "path contains '/' or ends in .onnx); known models: %s; search path: %s "
                     "(add directories with VMAFDNN_MODEL_PATH)",
                     name, n ? known : "none", dirs->count ? where : "(empty)");
}

int vdnn_catalog_resolve(const char *name, char **out)
{
    if (!name || !out)
        return vdnn_fail(-EINVAL, "model_resolve: NULL argument");
    if (!*name)
        return vdnn_fail(-EINVAL, "model_resolve: the name is empty");
    size_t len = strlen(name);
    if (len >= PATH_MAX)
        return vdnn_fail(-ENAMETOOLONG, "model_resolve: a name or path of %zu bytes is too "
                                        "long (the limit is %d)", len, PATH_MAX - 1);
    if (vdnn_catalog_is_path(name)) {
        if (!(*out = strdup(name)))
            return vdnn_fail(-ENOMEM, "out of memory");
        return 0;
    }
    Strings dirs;
    int rc = search_path(&dirs);
    if (rc)
        return rc;
    char path[PATH_MAX];
    rc = 1;
    for (size_t i = 0; i < dirs.count && rc == 1; i++) {
        int w = snprintf(path, sizeof(path), "%s/%s.onnx", dirs.items[i], name);
        if (w > 0 && (size_t)w < sizeof(path) && is_regular(path))
            rc = (*out = strdup(path)) ? 0 : vdnn_fail(-ENOMEM, "out of memory");
    }
    if (rc == 1)
        rc = fail_unknown(name, &dirs);
    strings_free(&dirs);
    return rc;
}

int vmaf_dnn_model_resolve(const char *name, char *buf, size_t size)
{
    vdnn_clear_error();
    if (!buf || !size)
        return vdnn_fail(-EINVAL, "model_resolve: buf is NULL or size is 0");
    char *path = NULL;
    int rc = vdnn_catalog_resolve(name, &path);
    if (rc)
        return rc;
    size_t len = strlen(path);
    if (len >= size)
        rc = vdnn_fail(-ENAMETOOLONG, "model_resolve: the path of \"%.255s\" needs %zu bytes, "
                                      "the buffer has %zu", name, len + 1, size);
    else
        memcpy(buf, path, len + 1);
    free(path);
    return rc;
}

/* ---- the catalog --------------------------------------------------------- */

typedef struct Entry {
    VmafDnnCatalogEntry pub;
    char *name, *path;
    VdnnSidecar *sidecar; /* NULL when it did not load */
    const char *one_output[1];
} Entry;

struct VmafDnnCatalog {
    Entry *entries;
    size_t count;
};

static VmafDnnModelKind kind_of(const VdnnSidecar *sc)
{
    if (sc->kind == VDNN_SIDECAR_KIND_FR)
        return VMAF_DNN_MODEL_FR;
    if (sc->kind == VDNN_SIDECAR_KIND_NR)
        return VMAF_DNN_MODEL_NR;
    if (sc->features.present)
        return VMAF_DNN_MODEL_FEATURES;
    if (sc->input_names.count == 2)
        return VMAF_DNN_MODEL_FR;
    if (sc->input_names.count == 1)
        return VMAF_DNN_MODEL_NR;
    return VMAF_DNN_MODEL_INVALID;
}

/* Fills e->pub from the names and the sidecar (which may be NULL). */
static void describe(Entry *e)
{
    VmafDnnCatalogEntry *p = &e->pub;
    const VdnnSidecar *sc = e->sidecar;

    *p = (VmafDnnCatalogEntry){.name = e->name, .path = e->path, .description = "",
                               .meaning = "", .higher_is_better = -1};
    if (!sc)
        return;
    p->kind = kind_of(sc);
    p->n_inputs = sc->input_names.count;
    p->inputs = (const char *const *)sc->input_names.items;
    if (sc->output_names.present) {
        p->n_outputs = sc->output_names.count;
        p->outputs = (const char *const *)sc->output_names.items;
    } else if (sc->output_name || sc->name) {
        e->one_output[0] = sc->output_name ? sc->output_name : sc->name;
        p->n_outputs = 1;
        p->outputs = e->one_output;
    }
    if (sc->description)
        p->description = sc->description;
    if (sc->meaning)
        p->meaning = sc->meaning;
    p->has_range = sc->has_range;
    p->range[0] = sc->range[0];
    p->range[1] = sc->range[1];
    if (sc->has_higher_is_better)
        p->higher_is_better = sc->higher_is_better;
    p->min_width = sc->has_min_width ? (unsigned)sc->min_width : 0;
    p->min_height = sc->has_min_height ? (unsigned)sc->min_height : 0;
}

void vmaf_dnn_catalog_close(VmafDnnCatalog *catalog)
{
    if (!catalog)
        return;
    for (size_t i = 0; i < catalog->count; i++) {
        free(catalog->entries[i].name);
        free(catalog->entries[i].path);
        vdnn_sidecar_free(catalog->entries[i].sidecar);
    }
    free(catalog->entries);
    free(catalog);
}

/* "dir/name.onnx" -> "name". */
static char *stem_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    return strndup(base, ends_with_onnx(base, len) && len > 5 ? len - 5 : len);
}

/* The catalog of one named model, whose sidecar must load. */
static int open_one(VmafDnnCatalog *cat, const char *name)
{
    char *path = NULL;
    int rc = vdnn_catalog_resolve(name, &path);
    if (rc)
        return rc;
    if (!(cat->entries = calloc(1, sizeof(*cat->entries)))) {
        free(path);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    Entry *e = &cat->entries[0];
    e->path = path;
    cat->count = 1;
    if (!(e->name = stem_of(path)))
        return vdnn_fail(-ENOMEM, "out of memory");
    if ((rc = vdnn_sidecar_load(path, NULL, &e->sidecar)))
        return rc;
    describe(e);
    return 0;
}

static int open_all(VmafDnnCatalog *cat)
{
    Strings dirs;
    Found *f = NULL;
    size_t n = 0;
    int rc = search_path(&dirs);
    if (rc)
        return rc;
    rc = list_models(&dirs, &f, &n);
    strings_free(&dirs);
    if (rc)
        return rc;
    if (n && !(cat->entries = calloc(n, sizeof(*cat->entries)))) {
        found_free(f, n);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    /* The catalog owns every name and path from here on. */
    for (size_t i = 0; i < n; i++) {
        cat->entries[i].name = f[i].name;
        cat->entries[i].path = f[i].path;
    }
    cat->count = n;
    free(f);
    for (size_t i = 0; i < n; i++) {
        Entry *e = &cat->entries[i];
        /* A model whose sidecar is broken is still on the path: it is listed
         * (name and path), and attaching it is what reports the fault. */
        if ((rc = vdnn_sidecar_load(e->path, NULL, &e->sidecar)) == -ENOMEM)
            return rc;
        describe(e);
    }
    vdnn_clear_error();
    return 0;
}

int vmaf_dnn_catalog_open(VmafDnnCatalog **out, const char *name)
{
    vdnn_clear_error();
    if (!out)
        return vdnn_fail(-EINVAL, "catalog_open: out is NULL");
    VmafDnnCatalog *cat = calloc(1, sizeof(*cat));
    if (!cat)
        return vdnn_fail(-ENOMEM, "out of memory");
    int rc = name ? open_one(cat, name) : open_all(cat);
    if (rc) {
        vmaf_dnn_catalog_close(cat);
        return rc;
    }
    *out = cat;
    return 0;
}

size_t vmaf_dnn_catalog_count(const VmafDnnCatalog *catalog)
{
    return catalog ? catalog->count : 0;
}

const VmafDnnCatalogEntry *vmaf_dnn_catalog_entry(const VmafDnnCatalog *catalog, size_t index)
{
    return catalog && index < catalog->count ? &catalog->entries[index].pub : NULL;
}

/* ---- defaults ------------------------------------------------------------ */

/* Whether `name` resolves on the search path, quietly (no error recorded):
 * VMAF is generated only where the build could fetch libvmaf's model files. */
static int resolves(const char *name)
{
    Strings dirs;
    if (search_path(&dirs))
        return 0;
    int found = 0;
    for (size_t i = 0; i < dirs.count && !found; i++) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%s.onnx", dirs.items[i], name);
        found = n > 0 && (size_t)n < sizeof(path) && is_regular(path);
    }
    strings_free(&dirs);
    return found;
}

const char *const *vmaf_dnn_default_models(VmafDnnModelKind kind)
{
    static const char *const fr_vmaf[] = {"psnr_y", "ssim_y", "vmaf", NULL};
    static const char *const fr[] = {"psnr_y", "ssim_y", NULL};
    static const char *const nr[] = {"sharpness_nr", NULL};
    if (kind == VMAF_DNN_MODEL_FR)
        return resolves("vmaf") ? fr_vmaf : fr;
    return kind == VMAF_DNN_MODEL_NR ? nr : NULL;
}

const char *vmaf_dnn_version(void)
{
    return VDNN_VERSION;
}

extern const char vdnn_source_digest[]; /* source_digest.c, made by csrc/source_digest.py */

const char *vmaf_dnn_source_digest(void)
{
    return vdnn_source_digest;
}
