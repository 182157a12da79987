/* Internal: the GPU kernels of csrc/gpu on CUDA, with nothing of CUDA needed
 * to build the library: the driver (libcuda.so.1) and NVRTC (libnvrtc.so.N,
 * which ONNX Runtime's CUDA packages bring) are loaded when first asked for,
 * and the kernels' source, embedded in the library (csrc/gpu/
 * embed_source.py), is compiled by NVRTC once per process for each device.
 * ONNX Runtime is not touched here: ort_custom_ops.c hands over the device
 * and the stream its CUDA EP computes on.
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef VMAFDNN_CUDA_KERNELS_H
#define VMAFDNN_CUDA_KERNELS_H

#include <stddef.h>

#include "gpu/backend.h"

/* Makes the kernels ready on CUDA device `device` (an ordinal, as ORT's
 * device_id): the driver and NVRTC loaded, the source compiled for the
 * device's compute capability, the module loaded in the device's primary
 * context (the one ORT's CUDA EP runs in), and its VMAF programs held to the
 * CPU kernels before anything is scored with them. The outcome, success or not, is
 * kept for the process: later calls answer at once.
 *   0        ready
 *   -ENOENT  no CUDA driver, or no NVRTC library (VMAFDNN_NVRTC_LIBRARY
 *            names one, a regular file: a FIFO or a folder is not opened; else libnvrtc.so.<the driver's major>, 13, 12, 11.2
 *            are tried by name, so a copy already loaded by its soname, as
 *            the Python package loads the pip wheels', is found)
 *   -ENODEV  no such device (none at all: cuInit's CUDA_ERROR_NO_DEVICE), or
 *            one without stream-ordered memory pools
 *   -EIO     the driver or NVRTC failed (the message quotes it: a compile
 *            log, an unsupported PTX version), or the device failed the
 *            self-check (gpu/self_check.h: three synthetic frames whose
 *            scores must be the CPU kernels' to the bit; the message names
 *            the first that differs)
 *   -ENOMEM  the device had no memory for the self-check
 *   -EINVAL  device < 0 */
int vdnn_cuda_kernels_open(int device);

/* A backend (backend.h) that launches on `stream` (a CUstream, which is a
 * cudaStream_t) of an open device, its memory stream-ordered
 * (cuMemAllocFromPoolAsync from a pool of the library's own on the device,
 * which keeps what it took between frames; the device's default pool is
 * left as it is).
 * Errors of a launch come back from it as -EIO with the driver's words.
 * `holder` is the storage of the backend's state, valid while it is used. */
typedef struct VdnnCudaStream {
    VkBackend backend;
    int device;
    void *stream;
} VdnnCudaStream;

int vdnn_cuda_stream_init(VdnnCudaStream *holder, int device, void *stream);

/* NVRTC alone (no GPU needed): compiles the embedded source for `arch`:
 * "compute_XY" gives PTX (NUL-terminated), "sm_XY" a CUBIN (the device's
 * SASS, what vdnn_cuda_kernels_open loads where NVRTC knows the device);
 * *image malloc'ed (the caller frees it), *size its bytes. 0, -ENOENT (no
 * NVRTC library), or -EIO with NVRTC's log as the message. For the tests and
 * for vdnn_cuda_kernels_open. */
int vdnn_nvrtc_compile(const char *arch, char **image, size_t *size);

/* The arch vdnn_cuda_kernels_open compiles for on a device of compute
 * capability major.minor (into arch, at least 16 bytes): "sm_XY" where the
 * loaded NVRTC knows it, else "compute_" the newest architecture below it
 * that NVRTC knows (PTX, which the driver compiles). 0, -ENOENT (no NVRTC),
 * -ENODEV (NVRTC knows nothing up to it), -EINVAL. */
int vdnn_nvrtc_target(int major, int minor, char *arch, size_t size);

#endif
