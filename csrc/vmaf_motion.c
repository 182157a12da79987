/* PLACEHOLDER while the kernel is written: not built into a release. */
#include <errno.h>

#include "vmaf_kernels.h"

int vdnn_motion_integer(const VdnnKernelEnv *env, const VdnnPlane *prev, const VdnnPlane *cur,
                        double *sad)
{
    (void)env; (void)prev; (void)cur; (void)sad;
    return -ENOSYS;
}
