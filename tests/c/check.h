/* Minimal assertion helpers shared by the C tests. Each test program is a
 * plain executable: it runs every check, prints "N passed, N failed" as its
 * last line and exits non-zero when anything failed. */
#ifndef VMAFDNN_TEST_CHECK_H
#define VMAFDNN_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (cond) {                                                          \
            check_passed++;                                                  \
        } else {                                                             \
            check_failed++;                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
                    #cond);                                                  \
        }                                                                    \
    } while (0)

#define CHECK_EQ_INT(got, want)                                                   \
    do {                                                                          \
        long long got_ = (long long)(got), want_ = (long long)(want);             \
        if (got_ == want_) {                                                      \
            check_passed++;                                                       \
        } else {                                                                  \
            check_failed++;                                                       \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, \
                    __LINE__, #got, got_, #want, want_);                          \
        }                                                                         \
    } while (0)

#define CHECK_STR_CONTAINS(haystack, needle)                                       \
    do {                                                                           \
        const char *h_ = (haystack);                                               \
        if (h_ && strstr(h_, (needle))) {                                          \
            check_passed++;                                                        \
        } else {                                                                   \
            check_failed++;                                                        \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,   \
                    __LINE__, h_ ? h_ : "(null)", (needle));                       \
        }                                                                          \
    } while (0)

#define CHECK_NEAR(got, want, tol)                                                         \
    do {                                                                                   \
        double g_ = (got), w_ = (want);                                                    \
        if (fabs(g_ - w_) <= (tol)) {                                                      \
            check_passed++;                                                                \
        } else {                                                                           \
            check_failed++;                                                                \
            fprintf(stderr, "%s:%d: %s == %.9g, expected %.9g\n", __FILE__, __LINE__, #got, \
                    g_, w_);                                                               \
        }                                                                                  \
    } while (0)

/* Prints the summary line and returns the process exit status. */
static inline int check_report(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
