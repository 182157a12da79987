/* PLACEHOLDER while the kernel is written: not built into a release. */
#include <errno.h>

#include "vmaf_kernels.h"

int vdnn_adm_integer(const VdnnKernelEnv *env, const VdnnPlane *ref, const VdnnPlane *dist,
                     double enhn_gain_limit, double *adm2, double scales[4])
{
    (void)env; (void)ref; (void)dist; (void)enhn_gain_limit; (void)adm2; (void)scales;
    return -ENOSYS;
}
