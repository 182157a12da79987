/* libvmafdnn is never unloaded: a dlclose leaves it mapped (-z nodelete,
 * csrc/meson.build), because ORT stays loaded for the life of the process
 * and the library's fork handlers and a forked child's exit handler point
 * into it (a child that had dlclosed the library died of SIGSEGV at exit).
 * usage: test_nodelete LIBVMAFDNN.so */
#include <dlfcn.h>
#include <stdio.h>

#include "check.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBVMAFDNN.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return check_report();
    }
    CHECK(dlsym(lib, "vmaf_dnn_available") != NULL);
    CHECK_EQ_INT(dlclose(lib), 0);
    void *still = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    CHECK(still != NULL); /* without nodelete: NULL, the library unmapped */
    if (still)
        dlclose(still);
    return check_report();
}
