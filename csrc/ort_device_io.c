/* Device-resident I/O of a specialised session (see ort_device_io.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ort_device_io.h"

/* First ORT API that says where a session's inputs and outputs live
 * (SessionGetMemoryInfoForInputs) and copies tensors between devices
 * (CopyTensors, GetSharedAllocator). */
#define ORT_DEVICE_IO_API 23

/* Ranks a bound tensor may have (VMAF_DNN_MAX_RANK's bound on the slots). */
#define MAX_DIMS 8

/* The largest host-memory input a captured session keeps by value (see
 * hold_host_input): values, not pictures. */
#define MAX_HELD_BYTES 4096

/* One input or output: where ORT wants it and, in device memory, the tensor
 * the binding keeps there. */
typedef struct Slot {
    const OrtMemoryInfo *where; /* the session's; NULL: host memory */
    OrtAllocator *alloc;        /* what dev came from */
    int alloc_owned;            /* the session's allocator (released), not the env's */
    OrtValue *dev;              /* device tensor, bound at a fixed address */
    int held;                   /* captured session, host input: dev is a host tensor
                                   holding the value the graph was recorded with */
    int filled;                 /* held: dev has the first run's value */
} Slot;

struct VdnnDeviceIo {
    VdnnDeviceIoSpec spec;
    OrtIoBinding *binding;
    OrtMemoryInfo *host_memory; /* where ORT puts outputs it allocates */
    Slot *in, *out;
};

static int io_error(const OrtApi *a, OrtStatus *st, int err, const char *what, const char *name)
{
    int rc = vdnn_fail(err, "device I/O: %s \"%s\": %s", what, name, a->GetErrorMessage(st));
    a->ReleaseStatus(st);
    return rc;
}

static int in_device_memory(const OrtApi *a, const OrtMemoryInfo *where)
{
    if (!where)
        return 0;
    OrtMemoryInfoDeviceType type = OrtMemoryInfoDeviceType_CPU;
    a->MemoryInfoGetDeviceType(where, &type);
    return type != OrtMemoryInfoDeviceType_CPU;
}

/* The dims (MAX_DIMS at most), rank and element type `info` describes. */
static OrtStatus *read_dims(const OrtApi *a, const OrtTensorTypeAndShapeInfo *info,
                            int64_t *dims, size_t *rank, ONNXTensorElementDataType *type)
{
    OrtStatus *st = a->GetDimensionsCount(info, rank);
    if (!st && *rank > MAX_DIMS)
        st = a->CreateStatus(ORT_NOT_IMPLEMENTED, "rank above 8");
    if (!st)
        st = a->GetDimensions(info, dims, *rank);
    if (!st)
        st = a->GetTensorElementType(info, type);
    return st;
}

/* The data and size in bytes of a host tensor (ORT 1.23's GetTensorSizeInBytes:
 * held inputs exist only on captured sessions, which need 1.23). */
static OrtStatus *tensor_bytes(const OrtApi *a, OrtValue *value, void **data, size_t *bytes)
{
    OrtStatus *st = a->GetTensorSizeInBytes(value, bytes);
    if (!st)
        st = a->GetTensorMutableData(value, data);
    return st;
}

/* The fixed shape and type of a session slot. -EAGAIN when a dim is not
 * fixed. */
static int slot_shape(VdnnDeviceIo *io, size_t index, int output, int64_t *dims, size_t *rank,
                      ONNXTensorElementDataType *type)
{
    const OrtApi *a = io->spec.api;
    const char *name = output ? io->spec.output_names[index] : io->spec.input_names[index];
    OrtTypeInfo *info = NULL;
    const OrtTensorTypeAndShapeInfo *tensor = NULL;
    OrtStatus *st = output ? a->SessionGetOutputTypeInfo(io->spec.session, index, &info)
                           : a->SessionGetInputTypeInfo(io->spec.session, index, &info);
    if (!st)
        st = a->CastTypeInfoToTensorInfo(info, &tensor);
    if (!st && !tensor)
        st = a->CreateStatus(ORT_INVALID_ARGUMENT, "not a tensor");
    if (!st)
        st = read_dims(a, tensor, dims, rank, type);
    /* A slot the model declares no shape for reads as rank 0 (ORT 1.24 on
     * tells it from a scalar): its runs may bring any shape, so no tensor
     * of fixed shape holds it. Taken for a scalar, it was bound as one and
     * a recorded graph replayed the first run's value whatever was fed. */
    const int shapeless = !st && *rank == 0 && io->spec.api_version >= 24 &&
                          !a->TensorTypeAndShape_HasShape(tensor);
    a->ReleaseTypeInfo(info);
    if (st)
        return io_error(a, st, -EIO, "cannot read the shape of", name);
    if (shapeless)
        return vdnn_fail(-EAGAIN, "device I/O: %s \"%s\" declares no shape",
                         output ? "output" : "input", name);
    for (size_t d = 0; d < *rank; d++)
        if (dims[d] < 0)
            return vdnn_fail(-EAGAIN, "device I/O: %s \"%s\" has a dim the specialised session "
                             "does not fix", output ? "output" : "input", name);
    return 0;
}

/* An allocator for slot->where: the session's (what ORT's own device
 * tensors come from), else the env's shared one of a plugin EP's device. */
static int slot_allocator(VdnnDeviceIo *io, Slot *slot, const char *name)
{
    const OrtApi *a = io->spec.api;
    OrtStatus *st = a->CreateAllocator(io->spec.session, slot->where, &slot->alloc);
    if (!st) {
        slot->alloc_owned = 1;
        return 0;
    }
    a->ReleaseStatus(st);
    slot->alloc = NULL;
    if ((st = a->GetSharedAllocator(io->spec.env, slot->where, &slot->alloc)))
        return io_error(a, st, -EIO, "no allocator for the device memory of", name);
    if (!slot->alloc)
        return vdnn_fail(-EIO, "device I/O: no allocator for the device memory of \"%s\"", name);
    return 0;
}

/* A tensor of the slot's fixed shape in its device memory. For an input, one
 * copy from host memory is tried at once, so that an EP whose data transfer
 * ORT's env does not hold (CopyTensors) is known before the first run. */
static int make_device_tensor(VdnnDeviceIo *io, size_t index, int output)
{
    const OrtApi *a = io->spec.api;
    Slot *slot = output ? &io->out[index] : &io->in[index];
    const char *name = output ? io->spec.output_names[index] : io->spec.input_names[index];
    int64_t dims[MAX_DIMS];
    size_t rank = 0;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    int rc = slot_shape(io, index, output, dims, &rank, &type);
    if (rc || (rc = slot_allocator(io, slot, name)))
        return rc;
    OrtStatus *st = a->CreateTensorAsOrtValue(slot->alloc, dims, rank, type, &slot->dev);
    if (st)
        return io_error(a, st, -EIO, "cannot allocate device memory for", name);
    if (output)
        return 0;
    OrtAllocator *host = NULL;
    OrtValue *probe = NULL;
    if (!(st = a->GetAllocatorWithDefaultOptions(&host)) &&
        !(st = a->CreateTensorAsOrtValue(host, dims, rank, type, &probe)))
        st = a->CopyTensors(io->spec.env, (const OrtValue *const *)&probe, &slot->dev, NULL, 1);
    if (probe)
        a->ReleaseValue(probe);
    if (st)
        return io_error(a, st, -EIO, "ONNX Runtime cannot copy host data to the device for", name);
    return 0;
}

/* Where each slot lives: 1 when any is in device memory. */
static int locate_slots(VdnnDeviceIo *io)
{
    const OrtApi *a = io->spec.api;
    const VdnnDeviceIoSpec *sp = &io->spec;
    if (sp->api_version < ORT_DEVICE_IO_API)
        return 0;
    const OrtMemoryInfo **where = calloc(sp->n_inputs + sp->n_outputs + 1, sizeof(*where));
    if (!where)
        return vdnn_fail(-ENOMEM, "out of memory");
    OrtStatus *st = sp->n_inputs ? a->SessionGetMemoryInfoForInputs(sp->session, where,
                                                                    sp->n_inputs) : NULL;
    if (!st && sp->n_outputs)
        st = a->SessionGetMemoryInfoForOutputs(sp->session, where + sp->n_inputs, sp->n_outputs);
    int any = 0;
    for (size_t i = 0; !st && i < sp->n_inputs + sp->n_outputs; i++) {
        Slot *slot = i < sp->n_inputs ? &io->in[i] : &io->out[i - sp->n_inputs];
        if (in_device_memory(a, where[i])) {
            slot->where = where[i];
            any = 1;
        }
    }
    free(where);
    if (st)
        return io_error(a, st, -EIO, "cannot tell where the slots live of", "session");
    return any;
}

/* A captured session's input in host memory. ORT records a graph only where
 * its EP runs every node, so such an input is read by no node, or read on
 * the host by a node of the EP (a shape, a pad width) while it records: the
 * recorded graph keeps that value. So the input gets a host tensor of its
 * fixed shape, bound once; the first run copies the value into it and every
 * later run must bring the same value (vdnn_device_io_stage: -ESTALE, and
 * the session is made again without capture). Values only: -EAGAIN above
 * MAX_HELD_BYTES (a picture in host memory means the graph is not whole on
 * the EP). */
static int hold_host_input(VdnnDeviceIo *io, size_t index)
{
    const OrtApi *a = io->spec.api;
    Slot *slot = &io->in[index];
    const char *name = io->spec.input_names[index];
    int64_t dims[MAX_DIMS];
    size_t rank = 0;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    int rc = slot_shape(io, index, 0, dims, &rank, &type);
    if (rc)
        return rc;
    uint64_t elements = 1; /* each at least a byte: a picture is refused unallocated */
    for (size_t d = 0; d < rank && elements <= MAX_HELD_BYTES; d++)
        elements = dims[d] > MAX_HELD_BYTES ? MAX_HELD_BYTES + 1 : elements * (uint64_t)dims[d];
    if (elements > MAX_HELD_BYTES)
        return vdnn_fail(-EAGAIN, "device I/O: input \"%s\" lives in host memory (more than "
                         "the %d bytes a recorded graph may keep by value)", name, MAX_HELD_BYTES);
    OrtAllocator *host = NULL;
    OrtStatus *st = a->GetAllocatorWithDefaultOptions(&host);
    if (!st)
        st = a->CreateTensorAsOrtValue(host, dims, rank, type, &slot->dev);
    void *data = NULL;
    size_t bytes = 0;
    if (!st)
        st = tensor_bytes(a, slot->dev, &data, &bytes);
    if (st)
        return io_error(a, st, -EIO, "cannot hold the host input", name);
    if (bytes > MAX_HELD_BYTES)
        return vdnn_fail(-EAGAIN, "device I/O: input \"%s\" lives in host memory (%zu bytes, "
                         "more than the %d a recorded graph may keep by value)", name, bytes,
                         MAX_HELD_BYTES);
    slot->held = 1;
    return 0;
}

/* Stages a held input (see hold_host_input): 0, or -ESTALE where the run
 * brings another value than the one the graph was recorded with. */
static int stage_held(VdnnDeviceIo *io, size_t index, OrtValue *input)
{
    const OrtApi *a = io->spec.api;
    Slot *slot = &io->in[index];
    const char *name = io->spec.input_names[index];
    void *mine = NULL, *theirs = NULL;
    size_t held = 0, given = 0;
    OrtStatus *st = tensor_bytes(a, slot->dev, &mine, &held);
    if (!st)
        st = tensor_bytes(a, input, &theirs, &given);
    if (st)
        return io_error(a, st, -EIO, "cannot read the host input", name);
    if (held != given)
        return vdnn_fail(-EIO, "device I/O: input \"%s\" has %zu bytes, not the %zu of the "
                         "session's fixed shape", name, given, held);
    if (!slot->filled) {
        memcpy(mine, theirs, held);
        slot->filled = 1;
        return 0;
    }
    if (memcmp(mine, theirs, held) != 0)
        return vdnn_fail(-ESTALE, "device I/O: input \"%s\" changed after the graph was "
                         "recorded with its value in host memory", name);
    return 0;
}

int vdnn_device_io_create(const VdnnDeviceIoSpec *spec, VdnnDeviceIo **out, const char **why)
{
    const OrtApi *a = spec->api;
    *out = NULL;
    *why = "";
    VdnnDeviceIo *io = calloc(1, sizeof(*io));
    if (!io || !(io->in = calloc(spec->n_inputs + 1, sizeof(*io->in))) ||
        !(io->out = calloc(spec->n_outputs + 1, sizeof(*io->out)))) {
        vdnn_device_io_destroy(io);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    io->spec = *spec;
    int rc = locate_slots(io);
    if (rc < 0) {
        vdnn_device_io_destroy(io);
        return rc;
    }
    const int on_device = rc;
    if (!on_device && spec->captured) {
        vdnn_device_io_destroy(io);
        return vdnn_fail(-EAGAIN, "device I/O: no input or output of the session lives in "
                         "device memory, which a recorded graph reads and writes");
    }
    if (!on_device && !spec->force) {
        *why = spec->api_version < ORT_DEVICE_IO_API
                   ? "ONNX Runtime before 1.23 cannot tell where a session's inputs live"
                   : "every input and output of the session lives in host memory";
        vdnn_device_io_destroy(io);
        return 0;
    }
    OrtStatus *st = a->CreateIoBinding(spec->session, &io->binding);
    if (!st)
        st = a->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &io->host_memory);
    rc = st ? io_error(a, st, -EIO, "cannot bind the slots of", "session") : 0;
    for (size_t i = 0; !rc && i < spec->n_inputs; i++) {
        if (!io->in[i].where || (rc = make_device_tensor(io, i, 0)) != -EAGAIN || spec->captured)
            continue;
        /* a dim left free (an unnamed one): no tensor of fixed address can hold it, so
         * the caller's data is bound and ORT copies it, as without device I/O */
        io->in[i].where = NULL;
        rc = 0;
        vdnn_clear_error();
    }
    /* a recorded graph reads its inputs where they were when it was recorded:
     * they are bound once, and runs only copy into them */
    for (size_t i = 0; !rc && spec->captured && i < spec->n_inputs; i++) {
        if (!io->in[i].where)
            rc = hold_host_input(io, i);
        if (!rc && (st = a->BindInput(io->binding, spec->input_names[i], io->in[i].dev)))
            rc = io_error(a, st, -EIO, "cannot bind input", spec->input_names[i]);
    }
    for (size_t k = 0; !rc && spec->captured && k < spec->n_outputs; k++) {
        if (!io->out[k].where) /* not the whole graph on the EP */
            rc = vdnn_fail(-EAGAIN, "device I/O: output \"%s\" lives in host memory",
                           spec->output_names[k]);
        else if (!(rc = make_device_tensor(io, k, 1)) &&
                 (st = a->BindOutput(io->binding, spec->output_names[k], io->out[k].dev)))
            rc = io_error(a, st, -EIO, "cannot bind output", spec->output_names[k]);
    }
    if (rc) {
        vdnn_device_io_destroy(io);
        return rc;
    }
    *out = io;
    return 0;
}

int vdnn_device_io_stage(VdnnDeviceIo *io, OrtValue *const *inputs, const size_t *output_slots,
                         size_t n_outputs, OrtValue *const *out_values)
{
    const OrtApi *a = io->spec.api;
    OrtStatus *st = NULL;
    /* The binding holds nothing of the last run (vdnn_device_io_unbind) but,
     * on a captured session, the device tensors bound for good. */
    for (size_t i = 0; i < io->spec.n_inputs; i++) {
        const char *name = io->spec.input_names[i];
        OrtValue *bound = inputs[i];
        if (io->in[i].held) {
            int rc = stage_held(io, i, inputs[i]);
            if (rc)
                return rc;
            continue; /* bound for good */
        }
        if (io->in[i].dev) {
            if ((st = a->CopyTensors(io->spec.env, (const OrtValue *const *)&inputs[i],
                                     &io->in[i].dev, NULL, 1)))
                return io_error(a, st, -EIO, "cannot copy to the device input", name);
            bound = io->in[i].dev;
        }
        if (!io->spec.captured && (st = a->BindInput(io->binding, name, bound)))
            return io_error(a, st, -EIO, "cannot bind input", name);
    }
    if (io->spec.captured)
        return 0;
    for (size_t k = 0; k < n_outputs; k++) {
        const char *name = io->spec.output_names[output_slots[k]];
        st = out_values[k] ? a->BindOutput(io->binding, name, out_values[k])
                           : a->BindOutputToDevice(io->binding, name, io->host_memory);
        if (st)
            return io_error(a, st, -EIO, "cannot bind output", name);
    }
    return 0;
}

int vdnn_device_io_copies_input(const VdnnDeviceIo *io, size_t index)
{
    return io->in[index].dev && !io->in[index].held;
}

OrtIoBinding *vdnn_device_io_binding(VdnnDeviceIo *io)
{
    return io->binding;
}

/* A new host tensor of `dev`'s shape and type. */
static OrtStatus *host_like(const OrtApi *a, const OrtValue *dev, OrtValue **out)
{
    OrtTensorTypeAndShapeInfo *info = NULL;
    OrtAllocator *host = NULL;
    int64_t dims[MAX_DIMS];
    size_t rank = 0;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    OrtStatus *st = a->GetTensorTypeAndShape(dev, &info);
    if (!st && !(st = read_dims(a, info, dims, &rank, &type)) &&
        !(st = a->GetAllocatorWithDefaultOptions(&host)))
        st = a->CreateTensorAsOrtValue(host, dims, rank, type, out);
    if (info)
        a->ReleaseTensorTypeAndShapeInfo(info);
    return st;
}

/* Captured sessions: each output asked for copied from its device tensor. */
static int copy_back(VdnnDeviceIo *io, const size_t *output_slots, size_t n_outputs,
                     OrtValue **out_values)
{
    const OrtApi *a = io->spec.api;
    for (size_t k = 0; k < n_outputs; k++) {
        const Slot *slot = &io->out[output_slots[k]];
        const char *name = io->spec.output_names[output_slots[k]];
        OrtValue *made = NULL;
        OrtStatus *st = out_values[k] ? NULL : host_like(a, slot->dev, &made);
        if (!st)
            st = a->CopyTensors(io->spec.env, (const OrtValue *const *)&slot->dev,
                                out_values[k] ? &out_values[k] : &made, NULL, 1);
        if (st) {
            if (made)
                a->ReleaseValue(made);
            return io_error(a, st, -EIO, "cannot copy back from the device output", name);
        }
        if (made)
            out_values[k] = made;
    }
    return 0;
}

static int same_data(const OrtApi *a, OrtValue *x, OrtValue *y)
{
    void *px = NULL, *py = NULL;
    OrtStatus *st = a->GetTensorMutableData(x, &px);
    if (!st)
        st = a->GetTensorMutableData(y, &py);
    if (st)
        a->ReleaseStatus(st);
    return !st && px == py;
}

void vdnn_device_io_unbind(VdnnDeviceIo *io)
{
    if (io->spec.captured)
        return; /* its bindings are the device tensors, for good */
    io->spec.api->ClearBoundInputs(io->binding);
    io->spec.api->ClearBoundOutputs(io->binding);
}

int vdnn_device_io_collect(VdnnDeviceIo *io, const size_t *output_slots, size_t n_outputs,
                           OrtValue **out_values)
{
    const OrtApi *a = io->spec.api;
    if (io->spec.captured)
        return copy_back(io, output_slots, n_outputs, out_values);
    OrtAllocator *host = NULL;
    OrtValue **values = NULL;
    size_t count = 0;
    OrtStatus *st = a->GetAllocatorWithDefaultOptions(&host);
    if (!st)
        st = a->GetBoundOutputValues(io->binding, host, &values, &count);
    if (st)
        return io_error(a, st, -EIO, "cannot read the outputs of", "session");
    for (size_t k = 0; k < count; k++) {
        if (k < n_outputs && (!out_values[k] || !same_data(a, values[k], out_values[k]))) {
            /* ORT's value, or one that answers a caller's buffer with a
             * buffer of its own: the caller's wrapper goes */
            if (out_values[k])
                a->ReleaseValue(out_values[k]);
            out_values[k] = values[k];
        } else {
            a->ReleaseValue(values[k]); /* the caller's own, over the same buffer */
        }
    }
    if (values)
        host->Free(host, values);
    vdnn_device_io_unbind(io);
    if (count != n_outputs)
        return vdnn_fail(-EIO, "device I/O: ONNX Runtime returned %zu outputs for %zu bound",
                         count, n_outputs);
    return 0;
}

static void release_slot(const OrtApi *a, Slot *slot)
{
    if (slot->dev)
        a->ReleaseValue(slot->dev);
    if (slot->alloc && slot->alloc_owned)
        a->ReleaseAllocator(slot->alloc);
}

void vdnn_device_io_destroy(VdnnDeviceIo *io)
{
    if (!io)
        return;
    const OrtApi *a = io->spec.api;
    if (io->binding)
        a->ReleaseIoBinding(io->binding);
    for (size_t i = 0; io->in && i < io->spec.n_inputs; i++)
        release_slot(a, &io->in[i]);
    for (size_t k = 0; io->out && k < io->spec.n_outputs; k++)
        release_slot(a, &io->out[k]);
    if (io->host_memory)
        a->ReleaseMemoryInfo(io->host_memory);
    free(io->in);
    free(io->out);
    free(io);
}
