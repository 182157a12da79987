/* PLACEHOLDER while the kernel is written: not built into a release. */
#include <errno.h>

#include "vmaf_kernels.h"

int vdnn_vif_integer(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                     double enhn_gain_limit, double scores[4])
{
    (void)env; (void)ref; (void)dist; (void)enhn_gain_limit; (void)scores;
    return -ENOSYS;
}
