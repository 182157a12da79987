/* Internal: the library's own ONNX operators (custom_ops.h) as ONNX Runtime
 * custom ops. Part of the ORT backend: only ort_backend.c and
 * ort_custom_ops.c include ORT's header, and only ort_backend.c calls this.
 */
#ifndef VMAFDNN_ORT_CUSTOM_OPS_H
#define VMAFDNN_ORT_CUSTOM_OPS_H

#include <stddef.h>

#include <onnxruntime_c_api.h>

/* Creates the domain VDNN_CUSTOM_OP_DOMAIN with every operator, for API
 * `api` of version `api_version` (the ops declare that version to ORT), on
 * ORT's CPU EP and, with with_cuda, VifInteger, AdmInteger and
 * MotionInteger also on its CUDA EP (the kernels of csrc/gpu through
 * cuda_kernels.h, which the caller has found ready). Called once when ORT is
 * loaded (without CUDA) and once when a session first goes to CUDA with the
 * kernels ready (with); a domain lives as long as the process, since every
 * session's options are given one (AddCustomOpDomain) and a domain must
 * outlive the sessions made with it. 0 or a negative errno with a
 * message. */
int vdnn_ort_custom_ops_create(const OrtApi *api, int api_version, int with_cuda,
                               OrtCustomOpDomain **out);

/* What the ops need from the backend, for the session whose Run is on the
 * calling thread (ORT's sequential executor computes every node on the
 * thread that called Run):
 *   vdnn_ort_kernel_alloc  a block charged to that session's memory budget;
 *                          NULL (and the refusal recorded, so that the run
 *                          fails with -EDQUOT) past the budget or when the
 *                          host is out of memory. 64-byte aligned.
 *   vdnn_ort_kernel_free   gives such a block back (NULL-safe; any thread).
 *   vdnn_ort_kernel_stopped nonzero once the run was cancelled or ran past
 *                          its time budget: the kernel stops early and the
 *                          run reports -ECANCELED / -ETIMEDOUT.
 * Defined in ort_backend.c. */
void *vdnn_ort_kernel_alloc(size_t size);
void vdnn_ort_kernel_free(void *block);
int vdnn_ort_kernel_stopped(void);

#endif
