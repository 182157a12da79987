/* Internal: device-resident I/O of a specialised session (VmafDnnDeviceIo).
 * Part of the ORT backend: only ort_backend.c and ort_device_io.c include
 * ORT's header, and only ort_backend.c calls this.
 *
 * A session created with every input dim fixed keeps, through one
 * OrtIoBinding:
 *   - per input ORT wants in device memory, a device tensor of the
 *     specialised session's fixed shape, made with the binding; each run
 *     copies the caller's host data into it (ORT's CopyTensors, the EP's
 *     data transfer), so the address ORT sees never changes;
 *   - inputs in host memory, and inputs with a dim the session leaves free
 *     (an unnamed one), bound per run to the caller's data;
 *   - outputs bound per run to host memory (the caller's buffer, or one ORT
 *     allocates), except on a session created with graph capture: there
 *     every output has a device tensor of fixed address, bound once, and the
 *     outputs asked for are copied back after the run (a recorded graph
 *     writes where it wrote when it was recorded); its device inputs, which
 *     it reads where it read them, are bound once too, and its inputs in
 *     host memory (values: a shape, a flag) are held by value, bound once
 *     to a host tensor the first run fills: a later run that brings another
 *     value fails with -ESTALE, for the session to be made without capture.
 * Between runs a binding holds nothing of the caller's and no output: the
 * per-run bindings are cleared once the outputs are collected (or the run
 * failed), so outputs ORT allocated go with the caller's values and count
 * against the memory budget no longer.
 */
#ifndef VMAFDNN_ORT_DEVICE_IO_H
#define VMAFDNN_ORT_DEVICE_IO_H

#include <stddef.h>

#include <onnxruntime_c_api.h>

typedef struct VdnnDeviceIo VdnnDeviceIo;

/* What a binding is made for; every pointer is borrowed and must outlive it
 * (the session's, ORT's env and API). */
typedef struct VdnnDeviceIoSpec {
    const OrtApi *api;
    int api_version;                 /* ORT's, as loaded */
    OrtEnv *env;
    OrtSession *session;             /* every input dim fixed */
    size_t n_inputs, n_outputs;
    const char *const *input_names;  /* slot order */
    const char *const *output_names; /* slot order */
    int force;                       /* bind where every slot is in host memory too */
    int captured;                    /* the session was created with graph capture */
} VdnnDeviceIoSpec;

/* Makes the binding for spec->session. On success *out owns it, or is NULL
 * when the session keeps ORT's own copies: then *why says why (static
 * text): no slot in device memory and !force, or an ORT before 1.23 that
 * cannot tell where slots live (force then binds every slot as host
 * memory). A captured session with a slot that cannot stay at a fixed
 * address (a dim not fixed, an output in host memory, an input in host
 * memory of more than 4096 bytes) fails with -EAGAIN and a message (create
 * it without capture).
 * Returns 0, -EAGAIN, -ENOMEM or -EIO (ORT refused a step; the message
 * carries ORT's text). */
int vdnn_device_io_create(const VdnnDeviceIoSpec *spec, VdnnDeviceIo **out, const char **why);

/* Before a run: copies inputs[i] (host tensors over the run's data, slot
 * order) into the device tensors (made at the first run), binds the host
 * ones, and binds the n_outputs outputs of output_slots: to out_values[k]
 * where it is not NULL (a host tensor over the caller's buffer), else to
 * host memory ORT allocates (captured sessions: their device tensors, bound
 * once). 0, -ENOMEM, -EIO (a copy or a binding ORT refused; the message
 * names the slot) or, on a captured session, -ESTALE (an input held by value
 * changed; the message names it). */
int vdnn_device_io_stage(VdnnDeviceIo *io, OrtValue *const *inputs, const size_t *output_slots,
                         size_t n_outputs, OrtValue *const *out_values);

/* Whether input `index` is copied into a device tensor of the binding each
 * run (not bound as host memory, not held by value). */
int vdnn_device_io_copies_input(const VdnnDeviceIo *io, size_t index);

/* The binding to run (OrtApi::RunWithBinding) after vdnn_device_io_stage. */
OrtIoBinding *vdnn_device_io_binding(VdnnDeviceIo *io);

/* After a successful run: out_values[k] holds the result of output_slots[k]
 * as a host tensor the caller releases: a value it passed in, filled, or a
 * new one in place of NULL (or of the caller's, released, where ORT
 * answered with a buffer of its own). On failure the values made so far
 * stay in out_values for the caller to release with the rest. 0, -ENOMEM
 * or -EIO. */
int vdnn_device_io_collect(VdnnDeviceIo *io, const size_t *output_slots, size_t n_outputs,
                           OrtValue **out_values);

/* Drops the per-run bindings (the caller's inputs and the outputs) of a
 * session without graph capture; the next stage binds them again. Done by
 * collect, and by the caller after a failed stage or run. */
void vdnn_device_io_unbind(VdnnDeviceIo *io);

/* NULL-safe. Releases the device tensors and the binding; the session must
 * still exist. */
void vdnn_device_io_destroy(VdnnDeviceIo *io);

#endif
