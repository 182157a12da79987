/* What the attack review (docs/security.md, "Attack review") found in the C
 * library, each case as it was reproduced:
 *   - a FIFO (or a device) named as the ONNX Runtime library or as a plugin
 *     EP library hung the process forever inside dlopen();
 *   - VMAFDNN_MAX_RUN_MS past 32 bits was cut to the field's width:
 *     4294967296 became 0 (the time budget silently off), 4294967297 1 ms.
 * A hang is caught by alarm(): SIGALRM ends the test as a failure.
 * argv[1]: a directory the test may create files in (default /tmp). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmafdnn/vmafdnn.h"

#include "check.h"

static char fifo_path[4096];

static void remove_fifo(void)
{
    if (fifo_path[0])
        unlink(fifo_path);
}

/* Loading ORT from a FIFO must fail at once, not wait for a writer; then ORT
 * is loaded the documented way (VMAFDNN_ORT_LIBRARY) for what follows. */
static void test_ort_library_fifo(void)
{
    alarm(20);
    CHECK_EQ_INT(vmaf_dnn_load_ort(fifo_path), -ENOSYS);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "not a regular file");
    CHECK_EQ_INT(vmaf_dnn_load_ort("/dev/zero"), -ENOSYS);
    CHECK(vmaf_dnn_ort_version() == NULL);
    alarm(0);
}

/* Plugin EP libraries, from VMAFDNN_EP_LIBRARIES (read on the first EP
 * query) and through the API: a FIFO or a device is refused as not a regular
 * file, without blocking, and kept in the list with that reason. */
static void test_ep_library_fifo(void)
{
    alarm(20);
    size_t n = vmaf_dnn_ep_library_count();
    alarm(0);
    if (vmaf_dnn_ort_api_version() < 22) {
        printf("ORT %s has no plugin EPs: the registrations are refused before any open\n",
               vmaf_dnn_ort_version());
        return;
    }
    CHECK_EQ_INT(n, 1);
    VmafDnnEpLibraryInfo info;
    CHECK_EQ_INT(vmaf_dnn_ep_library_info(0, &info), 0);
    CHECK_EQ_INT(info.status, -EISDIR);
    CHECK_STR_CONTAINS(info.reason, "not a regular file");
    CHECK_STR_CONTAINS(info.source, "env");

    alarm(20);
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("zero", "/dev/zero"), -EISDIR);
    CHECK_STR_CONTAINS(vmaf_dnn_last_error(), "not a regular file");
    CHECK_EQ_INT(vmaf_dnn_register_ep_library("fifo2", fifo_path), -EISDIR);
    alarm(0);
}

static unsigned run_ms_with_env(const char *value)
{
    setenv("VMAFDNN_MAX_RUN_MS", value, 1);
    VmafDnnModelPolicy p;
    vmaf_dnn_default_model_policy(&p);
    unsetenv("VMAFDNN_MAX_RUN_MS");
    return p.max_run_ms;
}

static uint64_t memory_with_env(const char *value)
{
    setenv("VMAFDNN_MAX_MEMORY_BYTES", value, 1);
    VmafDnnModelPolicy p;
    vmaf_dnn_default_model_policy(&p);
    unsetenv("VMAFDNN_MAX_MEMORY_BYTES");
    return p.max_memory_bytes;
}

/* A value that does not fit the policy field is garbage, ignored like
 * "abc": never cut to a different budget (0 = no limit). */
static void test_env_budgets(void)
{
    CHECK_EQ_INT(run_ms_with_env("4294967295"), 4294967295u);
    CHECK_EQ_INT(run_ms_with_env("4294967296"), VMAF_DNN_DEFAULT_MAX_RUN_MS);
    CHECK_EQ_INT(run_ms_with_env("4294967297"), VMAF_DNN_DEFAULT_MAX_RUN_MS);
    CHECK_EQ_INT(run_ms_with_env("99999999999999999999999"), VMAF_DNN_DEFAULT_MAX_RUN_MS);
    CHECK_EQ_INT(run_ms_with_env("-1"), VMAF_DNN_DEFAULT_MAX_RUN_MS);
    CHECK_EQ_INT(run_ms_with_env("0"), 0);
    CHECK_EQ_INT(run_ms_with_env("250"), 250);
    CHECK(memory_with_env("18446744073709551615") == UINT64_MAX);
    CHECK(memory_with_env("18446744073709551616") == VMAF_DNN_DEFAULT_MAX_MEMORY_BYTES);
    CHECK(memory_with_env("1G") == VMAF_DNN_DEFAULT_MAX_MEMORY_BYTES);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    snprintf(fifo_path, sizeof(fifo_path), "%s/attack-fifo-%ld", dir, (long)getpid());
    unlink(fifo_path);
    if (mkfifo(fifo_path, 0600) != 0) {
        perror("mkfifo");
        return 1;
    }
    atexit(remove_fifo);
    setenv("VMAFDNN_EP_LIBRARIES", fifo_path, 1);

    test_env_budgets();
    test_ort_library_fifo();
    if (!vmaf_dnn_available()) {
        fprintf(stderr, "ONNX Runtime unavailable (%s): set VMAFDNN_ORT_LIBRARY\n",
                vmaf_dnn_last_error());
        return 1;
    }
    test_ep_library_fifo();
    return check_report();
}
