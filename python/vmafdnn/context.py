"""The scoring context: attach tiny quality models, feed frames, read scores.

A thin mirror of the C flow in ``vmafdnn/context.h`` (which documents every
rule and error code)::

    with vmafdnn.Context(threads=1) as ctx:
        ctx.use_model("psnr_y")                 # a built-in name or a .onnx path
        for i, (ref, dist) in enumerate(zip(refs, dists)):
            ctx.read_pictures(ref, dist, i)     # Frames or 2-D numpy arrays
        ctx.flush()
        print(ctx.pool("psnr_y", "mean"))
        ctx.write("report.json")

Pictures are handed to C without copies: a C-contiguous plane (what the video
readers produce) goes through ``ffi.from_buffer``, a plane whose rows are
contiguous but spaced (a crop) by its address and row stride; only other
layouts are copied. Failures raise the DnnError subclass of the C code, with
the C message.
"""
import contextlib
import errno
import itertools
import json
import operator
import os
import sys
import threading
import traceback
import types
import weakref
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import models as _builtin
from . import names
from ._native import NativeHandle, c_name, c_path, check, decode_name, ensure_ort, ffi, lib
from .errors import InvalidArgumentError, OutOfMemoryError, RangeError
from .session import (MAX_BATCH, MAX_DEVICE_INDEX, MAX_THREADS, StaticRuns, config_int,
                      device_value, ep_nodes, model_policy, static_runs_from)
from .video import Frame

__all__ = ["Context", "ModelInfo", "RESIZE_MODES", "POOL_METHODS", "OUTPUT_FORMATS",
           "REPORT_VERSION", "format_for_path"]

#: Accepted ``resize`` names and their VmafDnnResize values (the C table).
RESIZE_MODES = names.table("resize")

#: Accepted ``method`` names of :meth:`Context.pool` (the C table).
POOL_METHODS = names.table("pool")

#: Report formats of :meth:`Context.write` (the C table).
OUTPUT_FORMATS = names.table("format")

#: The "version" the C report writer puts in every report.
REPORT_VERSION = "libvmafdnn " + ffi.string(lib.vmaf_dnn_version()).decode()

_LAST_FRAME = 0xFFFFFFFF  # "to the end" for the C pool's unsigned `last`

# Pictures the library keeps (Context.read_pictures(keep=True)), by token: what holds their
# memory, and the flag (C memory: vdnn_py_kept_*, _ffi_build.py) the library's release sets.
# Held here, not by the Context: the garbage collector may free a Context before its C
# object, whose close still waits for frames in flight that read them.
_kept: Dict[int, tuple] = {}
_kept_tokens = itertools.count(1)
_RELEASE = ffi.addressof(lib, "vdnn_py_kept_release")


def _take_released(tokens: Dict[int, None], every: bool = False) -> List[int]:
    """Takes the pictures of ``tokens`` (one context's kept ones, oldest first) that the
    library released (their flag set: it is done with them), or ``every`` one once the
    context's C object closed: out of ``tokens`` and ``_kept``, their arrays let go, their
    flags freed. Returns their tokens, oldest first, for the ``released`` still owed."""
    kept = _kept
    if kept is None:  # interpreter exit: the module is gone
        return []
    taken = []
    for token in list(tokens):
        entry = kept.get(token)
        if entry is not None and not every and not lib.vdnn_py_kept_released(entry[2]):
            continue  # still the library's
        tokens.pop(token, None)
        if entry is not None and kept.pop(token, None) is not None:
            lib.vdnn_py_kept_free(entry[2])
            taken.append(token)
    return taken


def _close_context(handle, tokens: Dict[int, None], closing: list) -> None:
    """The context handle's destructor (NativeHandle._adopt): Context.close() collects the
    released pictures itself, with their callbacks; the garbage collector's lets them go,
    their ``released`` dropped uncalled (the Context is gone)."""
    lib.vmaf_dnn_context_close(handle)
    if not closing:
        _take_released(tokens, every=True)


def _report_unraisable(error: BaseException, released) -> None:
    """An exception of a ``released`` callable, which has no caller to go to: to
    sys.unraisablehook, as the interpreter reports one of a __del__."""
    hook = sys.unraisablehook
    message = "Exception ignored in released= of vmafdnn.Context.read_pictures"
    if hook is sys.__unraisablehook__:
        print(f"{message}: {released!r}", file=sys.stderr)
        traceback.print_exception(error, file=sys.stderr)
    else:
        hook(types.SimpleNamespace(exc_type=type(error), exc_value=error,
                                   exc_traceback=error.__traceback__, err_msg=message,
                                   object=released))


class ModelInfo(NamedTuple):
    """An attached model, as the context reports it."""

    path: str                 # as given to use_model (a built-in name resolved)
    kind: str                 # "fr", "nr" or "features"
    features: Tuple[str, ...]  # the feature keys it writes, in output order
    attached_ep: str          # "CPU", "CUDA", "OpenVINO:GPU", ...
    fallback_reason: str      # why it does not run on the device asked for ("" if it does)
    # (nodes on attached_ep, all nodes); None where ONNX Runtime cannot tell (before 1.24)
    ep_nodes: Optional[Tuple[int, int]] = None
    # the file that scores when its sidecar names a form of the model for attached_ep
    # (VMAF's features: the fused CPU kernels on ORT's CPU EP); None: the model's own file
    form: Optional[str] = None


class Batching(NamedTuple):
    """What the context's ``batch`` did for one model (C: VmafDnnBatching)."""

    batchable: bool      # it can take several frames per Run (declared shapes, not temporal)
    batch: int           # frames per Run asked of it (1 when batch <= 1 or not batchable)
    refused: bool        # a checked batched Run disagreed with one Run per frame, failed,
    #                      or could not tell in 8 checks: one frame per Run from then on
    batched_frames: int  # frames scored by batched Runs since the context opened


def format_for_path(path, fmt: Optional[str] = None) -> str:
    """The report format: ``fmt`` when given, else from the file extension
    (.json, .xml, .csv), else "json"."""
    if fmt is not None:
        return names.name("format", names.value("format", fmt))
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".") if path is not None else ""
    return ext if ext in OUTPUT_FORMATS else "json"


def _nan_for_null(values: Dict[str, Optional[float]]) -> Dict[str, float]:
    """JSON has no NaN: the writer's null is a score that is not a number."""
    return {k: float("nan") if v is None else v for k, v in values.items()}


def _model_path(model) -> str:
    """A model path or name (C resolves a name through the catalog)."""
    if not isinstance(model, (str, bytes, os.PathLike)):
        raise TypeError(f"a model is a path or a model name (a built-in name: "
                        f"{', '.join(_builtin.MODEL_NAMES)}), got {type(model).__name__}")
    return model


def _session_config(cfg, device, device_index, threads, fp16_io, static_shapes=None,
                    device_io=None) -> None:
    """Fills a VmafDnnConfig; None leaves a field as it is."""
    if device is not None:
        cfg.device = device_value(device)
    if device_index is not None:
        cfg.device_index = config_int("device_index", device_index, MAX_DEVICE_INDEX)
    if threads is not None:
        cfg.threads = config_int("threads", threads, MAX_THREADS)
    if fp16_io is not None:
        cfg.fp16_io = bool(fp16_io)
    if static_shapes is not None:
        cfg.static_shapes = names.value("static_shapes", static_shapes)
    if device_io is not None:
        cfg.device_io = names.value("device_io", device_io)


class _Picture:
    """A reusable VmafDnnPicture filled from a Frame (Y, U and V: models may
    read chroma, such as psnr's psnr_cb and psnr_cr) or a 2-D luma array (U
    and V left NULL)."""

    def __init__(self):
        self.c = ffi.new("VmafDnnPicture *")
        self._keep = None  # the arrays (and buffers) whose memory c.data[] points at

    def fill(self, picture, bitdepth: Optional[int], what: str):
        if isinstance(picture, Frame):
            planes, bpc = picture.planes(), picture.bitdepth
        else:
            plane = picture if type(picture) is np.ndarray else np.asarray(picture)
            planes, bpc = (plane,), _array_bitdepth(plane, bitdepth, what)
        c = self.c
        keep = []
        for i in range(3):
            if i >= len(planes):
                c.data[i] = ffi.NULL
                continue
            plane, buf, stride = _plane_buffer(planes[i], bpc, what)
            keep.append((plane, buf))
            c.data[i] = buf
            c.stride[i] = stride
            c.w[i] = plane.shape[1]
            c.h[i] = plane.shape[0]
        self._keep = keep
        c.bpc = bpc
        return c

    def held(self):
        """What holds the memory c.data[] points at (for pictures kept after the call)."""
        return self._keep

    def release(self) -> None:
        self._keep = None
        for i in range(3):
            self.c.data[i] = ffi.NULL


def _plane_buffer(plane: np.ndarray, bpc: int, what: str):
    """(array, address, row stride in bytes) of one plane, copied only when its
    rows are not contiguous."""
    if plane.ndim != 2:
        raise InvalidArgumentError(
            errno.EINVAL, f"{what}: expected a 2-D luma plane, got shape {plane.shape}")
    itemsize = 1 if bpc == 8 else 2
    if plane.dtype.itemsize != itemsize or plane.dtype.kind != "u":
        raise InvalidArgumentError(
            errno.EINVAL, f"{what}: {bpc}-bit samples must be "
                          f"{'uint8' if bpc == 8 else 'uint16'}, got {plane.dtype}")
    if not plane.dtype.isnative:
        plane = plane.astype(plane.dtype.newbyteorder("="))
    if plane.flags.c_contiguous:
        return plane, ffi.from_buffer(plane), plane.shape[1] * itemsize
    if plane.strides[1] == itemsize and plane.strides[0] >= plane.shape[1] * itemsize:
        # Rows contiguous but spaced (a crop): the address and row stride are
        # enough; the array is kept alive by the caller for the call.
        return (plane, ffi.cast("const void *", plane.__array_interface__["data"][0]),
                plane.strides[0])
    plane = np.ascontiguousarray(plane)
    return plane, ffi.from_buffer(plane), plane.shape[1] * itemsize


def _frame_index(index, clamp: bool = False) -> int:
    """A frame index for C's unsigned: negative is EINVAL; one past 32 bits is
    ERANGE (C limits indices to 2^24 anyway), or the largest value with clamp."""
    index = operator.index(index)
    if index < 0:
        raise InvalidArgumentError(errno.EINVAL, f"frame index {index} is negative")
    if index > _LAST_FRAME:
        if clamp:
            return _LAST_FRAME
        raise RangeError(errno.ERANGE, f"frame index {index} is out of range (at most "
                                       f"{(1 << 24) - 1})")
    return index


def _array_bitdepth(plane: np.ndarray, bitdepth: Optional[int], what: str) -> int:
    if plane.dtype == np.uint8:
        if bitdepth not in (None, 8):
            raise InvalidArgumentError(
                errno.EINVAL, f"{what}: uint8 samples are 8-bit, not {bitdepth}-bit")
        return 8
    if plane.dtype.kind == "u" and plane.dtype.itemsize == 2:
        if bitdepth is None:
            raise InvalidArgumentError(
                errno.EINVAL, f"{what}: uint16 samples need bitdepth= (9..16)")
        if not 9 <= int(bitdepth) <= 16:
            raise InvalidArgumentError(
                errno.EINVAL, f"{what}: bit depth {bitdepth} is out of range for uint16 "
                              "samples: must be 9..16")
        # Samples above the bit depth are refused by the C library, for every way a
        # picture comes in (vmaf_dnn_read_pictures; arrays and Frame objects alike).
        return int(bitdepth)
    raise InvalidArgumentError(
        errno.EINVAL, f"{what}: dtype {plane.dtype} is not supported; use uint8, or uint16 "
                      "with bitdepth=")


class Context(NativeHandle):
    """A libvmafdnn scoring context (VmafDnnContext).

    ``device``, ``device_index``, ``threads``, ``fp16_io``, ``static_shapes``
    and ``device_io`` are the session settings of every model attached
    without its own (``static_shapes``, ``device_io``: see
    :class:`vmafdnn.Session`). ``threads`` is also
    the total the context may use: 0 (default) leaves each session its own
    count, 1 runs everything on one thread, N > 1 scores N frames at once
    (one worker thread per frame, each model copied per worker; at most 4
    when every model runs on a GPU or NPU, where more only contend) unless a
    model reads neighbouring frames; a failure of a frame scored that way
    is raised by a later :meth:`read_pictures` or by :meth:`flush`, and the
    frame given to that call is not taken. ``batch``: frames per ONNX
    Runtime Run, at most (0..``vmafdnn.MAX_BATCH``), for models that can
    score several at once (every input a picture of the frame scored with a
    symbolic first dim, every output likewise, nothing temporal); 0
    (default) is the library's choice, today one frame per Run everywhere
    (stacking was measured no faster on CPUs nor on CUDA fed from host
    memory: docs/throughput.md); frames that share Runs are in flight as
    above, also with ``threads`` 0 or 1. ``resize`` (none,
    bilinear, nearest, bicubic) applies to models whose sidecar names none;
    ``fps`` is written into reports instead of the measured processing speed
    (None: measured, frames scored per second, libvmaf's meaning). The
    keyword-only ``policy`` arguments are those of :class:`vmafdnn.Session`
    (``model_dir``, ``max_model_bytes``, ``allowed_ops``, ``max_loop_nodes``,
    ``max_nodes``, ``max_subgraph_depth``, ``max_memory_bytes``,
    ``max_run_ms``) and apply to every model attached.

    Calls on one context are serialised; the GIL is released while C runs.
    :meth:`cancel` stops the model run in flight from another thread;
    :meth:`close` waits for the call in flight, and every call after it
    raises :class:`vmafdnn.ClosedError` (a ValueError). A context cannot be
    copied or pickled, and a child made by fork() cannot use its parent's.
    """

    _what = "scoring context"

    def __init__(self, device: str = "auto", device_index: int = 0, threads: int = 0,
                 fp16_io: bool = False, resize: str = "none", fps: Optional[float] = None,
                 batch: int = 0, static_shapes: str = "auto", device_io: str = "auto",
                 **policy):
        ensure_ort(device)
        cfg = ffi.new("VmafDnnContextConfig *")
        lib.vmaf_dnn_default_context_config(cfg)
        _session_config(cfg.session, device, device_index, threads, fp16_io, static_shapes,
                        device_io)
        # The same number is the context's total: N > 1 scores N frames at
        # once (C: VmafDnnContextConfig.threads; docs/throughput.md).
        cfg.threads = cfg.session.threads
        cfg.batch = config_int("batch", batch, MAX_BATCH)
        cfg.resize = names.value("resize", resize)
        cfg.fps = 0.0 if fps is None else float(fps)
        # The context borrows the policy (and its strings) for its whole
        # life: the handle's destructor holds them (see NativeHandle).
        cfg.policy, keep_alive = model_policy(**policy)
        out = ffi.new("VmafDnnContext **")
        check(lib.vmaf_dnn_context_open(out, cfg))
        self._kept_order: Dict[int, None] = {}  # this context's kept tokens, oldest first
        self._released: Dict[int, Callable[[], None]] = {}  # read_pictures' released=
        self._closing: list = []  # set by close(), which calls released= itself
        self._collect_lock = threading.Lock()  # no collection reads a flag another frees
        tokens, closing = self._kept_order, self._closing  # not self: the destructor's
        self._adopt(out[0], lambda handle: _close_context(handle, tokens, closing),
                    lib.vmaf_dnn_context_cancel, keep_alive)
        # released pictures no call collected (a released= that raised ended close()'s
        # collection) go with the Context, their released= dropped
        weakref.finalize(self, _take_released, tokens)
        self._cfg = cfg  # C copied it; kept to derive per-model session configs
        self.fps = cfg.fps
        self._ref = _Picture()
        self._dist = _Picture()
        self._models: List[ModelInfo] = []

    # -- models -------------------------------------------------------------
    def use_model(self, model: Union[str, "os.PathLike[str]"], name: Optional[str] = None,
                  resize: Optional[str] = None, no_reference: bool = False,
                  device: Optional[str] = None, device_index: Optional[int] = None,
                  threads: Optional[int] = None, fp16_io: Optional[bool] = None) -> ModelInfo:
        """Attaches a model (a .onnx path, its sidecar beside it, or a built-in
        name such as "psnr_y"); returns its :class:`ModelInfo`. Models its sidecar
        "requires" are attached before it, once, and listed in :attr:`models` too.

        ``name`` overrides the feature key (else the sidecar's "name", else the
        file name); ``resize`` the resize mode (else the sidecar's, else the
        context's); ``no_reference=True`` refuses a full-reference model now
        instead of on the first frame. Session settings left None are the
        context's.
        """
        path = _model_path(model)
        c_model = c_path(path, "model path")
        mcfg = ffi.new("VmafDnnModelConfig *")
        keep = []
        if name is not None:
            keep.append(ffi.new("char[]", c_name(str(name), "model name")))
            mcfg.name = keep[-1]
        if any(v is not None for v in (device, device_index, threads, fp16_io)):
            if device is not None:
                ensure_ort(device)
            session = ffi.new("VmafDnnConfig *", self._cfg.session)
            _session_config(session, device, device_index, threads, fp16_io)
            keep.append(session)
            mcfg.session = session
        if resize is not None:
            mcfg.resize = names.value("resize", resize)
        mcfg.no_reference = bool(no_reference)
        with self._using() as handle:
            before = lib.vmaf_dnn_tiny_model_count(handle)
            check(lib.vmaf_dnn_use_tiny_model(handle, c_model, mcfg))
            # A sidecar's "requires" attaches those models first, the named one last: all of
            # them run and are listed (a VMAF model's features graph is most of its work).
            self._models.extend(self._model_info(handle, i)
                                for i in range(before, lib.vmaf_dnn_tiny_model_count(handle)))
        return self._models[-1]

    @staticmethod
    def _model_info(handle, i: int) -> ModelInfo:
        session = lib.vmaf_dnn_tiny_model_session(handle, i)
        path = os.fsdecode(ffi.string(lib.vmaf_dnn_tiny_model_path(handle, i)))
        form = os.fsdecode(ffi.string(lib.vmaf_dnn_tiny_model_form_path(handle, i)))
        return ModelInfo(
            path=path,
            form=None if form == path else form,
            kind=names.name("kind", lib.vmaf_dnn_tiny_model_kind(handle, i)),
            features=tuple(
                decode_name(lib.vmaf_dnn_tiny_model_feature_name(handle, i, k),
                            f"feature key {k} of model {i}")
                for k in range(lib.vmaf_dnn_tiny_model_feature_count(handle, i))),
            attached_ep=ffi.string(lib.vmaf_dnn_tiny_model_attached_ep(handle, i)).decode(),
            fallback_reason=ffi.string(
                lib.vmaf_dnn_session_fallback_reason(session)).decode("utf-8", "replace"),
            ep_nodes=ep_nodes(session),
        )

    @property
    def models(self) -> List[ModelInfo]:
        """The attached models, in attach (and run) order."""
        return list(self._models)

    def _model_index(self, model: int) -> int:
        """``model`` checked as an index into :attr:`models`."""
        if isinstance(model, bool):
            raise TypeError("model must be an index, got bool")
        model = operator.index(model)
        if not 0 <= model < len(self._models):
            raise IndexError(f"model {model} out of range ({len(self._models)} attached)")
        return model

    def batching(self, model: int) -> Batching:
        """What ``batch`` did for model number ``model`` (in :attr:`models` order), once the
        frames in flight are scored."""
        model = self._model_index(model)
        out = ffi.new("VmafDnnBatching *")
        with self._using() as handle:
            check(lib.vmaf_dnn_tiny_model_batching(handle, model, out))
        return Batching(bool(out.batchable), out.batch, bool(out.refused),
                        int(out.batched_frames))

    def static_runs(self, model: int) -> StaticRuns:
        """How the runs of model number ``model`` (in :attr:`models` order) went with static
        shapes and device-resident I/O (:attr:`vmafdnn.Session.static_runs`): the counts
        over the context's own session and the copies of it that score frames in flight;
        the reasons those of the context's own session (vmaf_dnn_tiny_model_static_runs)."""
        model = self._model_index(model)
        out = ffi.new("VmafDnnStaticRuns *")
        with self._using() as handle:
            check(lib.vmaf_dnn_tiny_model_static_runs(handle, model, out))
        return static_runs_from(out)

    # -- picture memory -----------------------------------------------------
    def picture_buffer(self, size: int) -> np.ndarray:
        """A writable 1-D uint8 array of ``size`` bytes (contents undefined) in the memory
        this context's models send pictures to their device from (C:
        vmaf_dnn_picture_buffer_alloc): a device's pinned memory where an attached model
        that takes the pictures' own samples runs on one that offers it
        (:attr:`picture_memory` names it), else plain memory. Planes read into it, rows
        back to back, and handed over with ``read_pictures(..., keep=True)`` go to the
        device without a copy on the host (``StaticRuns.pictures`` counts such runs).
        Freed when the array and every view of it are gone, also after the context is
        closed. Safe from any thread, and from a ``released`` callback."""
        if isinstance(size, bool):
            raise TypeError("picture buffer size must be an int, not bool")
        size = operator.index(size)
        if size <= 0:
            raise InvalidArgumentError(errno.EINVAL, f"picture buffer size must be > 0 (got "
                                                     f"{size})")
        if size > sys.maxsize:
            raise OutOfMemoryError(errno.ENOMEM, f"picture buffer size {size} is more than "
                                                 "this machine can address")
        out = ffi.new("void **")
        # Under the state lock, as cancel(): close() frees the handle only after it, and
        # the C call waits for nothing.
        with self._state_lock:
            check(lib.vmaf_dnn_picture_buffer_alloc(self._live(), size, out))
        pid = os.getpid()
        # A child made by fork() does not give back its parent's buffers (ORT's pinned
        # memory is not its to free): its copy goes with the process.
        data = ffi.gc(ffi.cast("unsigned char *", out[0]),
                      lambda p: os.getpid() == pid and lib.vmaf_dnn_picture_buffer_free(p))
        return np.frombuffer(ffi.buffer(data, size), dtype=np.uint8)

    @property
    def picture_memory(self) -> Optional[str]:
        """ONNX Runtime's name of the memory :meth:`picture_buffer` takes (``"CudaPinned"``,
        ...), or None for plain memory (C: vmaf_dnn_picture_memory)."""
        with self._state_lock:
            name = lib.vmaf_dnn_picture_memory(self._live())
        return None if name == ffi.NULL else ffi.string(name).decode("utf-8", "replace")

    # -- scoring ------------------------------------------------------------
    def read_pictures(self, reference, distorted, index: int,
                      bitdepth: Optional[int] = None, *, keep: bool = False,
                      released: Optional[Callable[[], None]] = None) -> None:
        """Scores frame ``index`` with every attached model.

        ``reference`` and ``distorted`` are :class:`vmafdnn.video.Frame`
        objects or 2-D luma arrays (uint8; uint16 with ``bitdepth``), or None
        where no model needs them (no reference for NR models, no picture at
        all for feature-vector models). The call runs without the GIL and
        models may read the arrays in place: another thread must not write
        them until it returns.

        ``keep=True`` (C: vmaf_dnn_read_pictures_kept) lets the context keep
        reading the arrays after the call, instead of copying them for frames
        in flight (``threads`` > 1, a batch) and for models that read past
        pictures: the context holds them until its last read, then drops
        them and calls ``released()`` (no arguments) on the thread of a later
        call on this context, once that call is out of the library -- at the
        latest :meth:`flush`, :meth:`reset` or :meth:`close`. Until then
        nothing may write them, so keep is for frames read into fresh buffers
        (the video readers' frames are). A call that raises keeps nothing and
        never calls ``released``. ``released`` runs as plain Python after the
        call's C work, so it may call this context too; an exception it
        raises goes to :func:`sys.unraisablehook` (printed by default) and is
        ignored, except a KeyboardInterrupt or SystemExit, which goes on up
        (the other pictures released are let go at the next call). A context
        left to the garbage collector instead of closed releases its pictures
        but drops ``released`` uncalled.
        """
        index = _frame_index(index)
        if released is not None and not keep:
            raise InvalidArgumentError(errno.EINVAL, "released= needs keep=True")
        with self._using() as handle:
            try:
                ref = ffi.NULL if reference is None else \
                    self._ref.fill(reference, bitdepth, "reference")
                dist = ffi.NULL if distorted is None else \
                    self._dist.fill(distorted, bitdepth, "distorted")
                if not keep:
                    rc = lib.vmaf_dnn_read_pictures(handle, ref, dist, index)
                else:
                    flag = lib.vdnn_py_kept_new()
                    if flag == ffi.NULL:
                        raise OutOfMemoryError(errno.ENOMEM, "out of memory for a kept frame")
                    token = next(_kept_tokens)
                    _kept[token] = (self._ref.held(), self._dist.held(), flag)
                    self._kept_order[token] = None
                    if released is not None:
                        self._released[token] = released
                    rc = lib.vmaf_dnn_read_pictures_kept(handle, ref, dist, index, _RELEASE,
                                                         flag)
                    if rc:
                        with self._collect_lock:
                            _kept.pop(token, None)
                            self._kept_order.pop(token, None)
                            self._released.pop(token, None)
                            lib.vdnn_py_kept_free(flag)
            finally:
                self._ref.release()
                self._dist.release()
        if rc:
            check(rc)

    @contextlib.contextmanager
    def _using(self):
        """NativeHandle._using, then the kept pictures the call released are let go."""
        try:
            with super()._using() as handle:
                yield handle
        finally:
            self._collect_released()

    def close(self) -> None:
        """Releases the native object now (also done when garbage collected): every kept
        picture is released, its ``released`` called. Waits for a call in flight on another
        thread (call cancel() first to make that short); every later call raises
        ClosedError. Idempotent."""
        try:
            super().close()
        finally:
            self._collect_released()

    def _on_unusable(self) -> None:
        # close() has the handle and frees it next: it collects the released pictures itself
        # (a fork child's handle is never freed there).
        self._closing.append(True)

    def _collect_released(self) -> None:
        """Lets go of the kept pictures the library released (the flags its release set)
        and calls their ``released``, oldest first, on this thread, out of every C call."""
        with self._collect_lock:
            taken = _take_released(self._kept_order)
        interrupted = None
        for token in taken:
            released = self._released.pop(token, None)
            if released is not None:
                try:
                    released()
                except Exception as e:
                    _report_unraisable(e, released)
                except BaseException as e:  # KeyboardInterrupt: after the others
                    interrupted = interrupted or e
        if interrupted is not None:
            raise interrupted

    def flush(self) -> None:
        """Ends the pictures: scores stay readable, nothing more can be fed."""
        with self._using() as handle:
            check(lib.vmaf_dnn_flush(handle))

    def reset(self) -> None:
        """Empties the context for the next clip, keeping its models.

        Dropped: every stored value (model outputs and appended features),
        the frame count, the first frame's size, the speed measurement, the
        flushed state and a frame failure not yet raised (``threads`` > 1),
        once the frames in flight have finished. Kept: the attached models
        with their open ONNX Runtime sessions, so the next clip is scored
        from any frame index (from 0 as in a context just opened with these
        models) without loading them again. Models that keep state between
        frames forget it in place: temporal models drop their past pictures,
        and "native_resolution" models take the size of the next first
        frame. No model file is read again.

        Raises MemoryError when the context cannot allocate its new store;
        then nothing is dropped.
        """
        with self._using() as handle:
            check(lib.vmaf_dnn_context_reset(handle))

    # -- features -----------------------------------------------------------
    def feature_append(self, name: str, index: int, value: float) -> None:
        """Stores a caller-computed feature value for frame ``index`` (push a
        frame's features before reading its pictures)."""
        index = _frame_index(index)
        c_feature = c_name(name, "feature name")
        with self._using() as handle:
            check(lib.vmaf_dnn_feature_append(handle, c_feature, index, float(value)))

    def feature(self, name: str, index: int) -> float:
        """The value of feature ``name`` at frame ``index``; raises
        ModelNotFoundError (ENOENT) when there is none."""
        index = _frame_index(index)
        c_feature = c_name(name, "feature name")
        value = ffi.new("double *")
        with self._using() as handle:
            check(lib.vmaf_dnn_feature_get(handle, c_feature, index, value))
        return value[0]

    @property
    def features(self) -> List[str]:
        """Names of the features with at least one value, in order of first value."""
        with self._using() as handle:
            return self._feature_names(handle)

    @staticmethod
    def _feature_names(handle) -> List[str]:
        return [decode_name(lib.vmaf_dnn_feature_name(handle, k), f"feature {k}")
                for k in range(lib.vmaf_dnn_feature_count(handle))]

    def frames_done(self) -> int:
        """How many of the frames read since open or reset are done, without
        waiting for the frames in flight (``threads`` > 1): the first N read.

        A done frame's :meth:`feature` answers at once with its scores, but
        for those a model running behind stores once a later frame is read.
        Raises the failure of a frame scored in flight that finished (once;
        see C's ``vmaf_dnn_frames_done``).
        """
        done = ffi.new("unsigned *")
        with self._using() as handle:
            check(lib.vmaf_dnn_frames_done(handle, done))
        return done[0]

    @property
    def frame_count(self) -> int:
        """One more than the largest frame index with a value (0 when none)."""
        with self._using() as handle:
            return lib.vmaf_dnn_frame_count(handle)

    def pool(self, name: str, method: str = "mean", first: int = 0,
             last: Optional[int] = None) -> float:
        """Feature ``name`` pooled over frames first..last (inclusive; None: to
        the end) by min, max, mean or harmonic_mean, over the frames that have
        a value."""
        c_method = names.value("pool", method)
        first = _frame_index(first)
        last = _LAST_FRAME if last is None else min(_frame_index(last, clamp=True), _LAST_FRAME)
        c_feature = c_name(name, "feature name")
        out = ffi.new("double *")
        with self._using() as handle:
            check(lib.vmaf_dnn_feature_pool(handle, c_feature, c_method, first, last, out))
        return out[0]

    # -- reports ------------------------------------------------------------
    def write(self, path: Union[str, "os.PathLike[str]"], fmt: Optional[str] = None) -> None:
        """Writes a libvmaf-compatible report of every stored score to
        ``path`` (atomically); ``fmt`` json, xml or csv (default: from the
        extension, else json)."""
        c_fmt = OUTPUT_FORMATS[format_for_path(path, fmt)]
        c_report = c_path(path, "report path")
        with self._using() as handle:
            check(lib.vmaf_dnn_write_output(handle, c_report, c_fmt))

    def check_output(self, fmt: str = "json", names: Sequence[str] = ()) -> None:
        """Raises InvalidArgumentError (EINVAL) now, before a frame is
        scored, when a report in ``fmt`` (json, xml, csv) could not carry
        the feature names: the attached models' keys, the features stored
        and ``names`` (features the caller will append). The writers refuse
        such a name (a feature "Frame" in CSV, two that one CSV header cell
        shows alike, a name XML cannot make an attribute) only when the
        report is written (vmaf_dnn_check_output)."""
        c_fmt = OUTPUT_FORMATS[format_for_path(None, fmt)]
        if isinstance(names, (str, bytes)):
            raise TypeError("names is a sequence of feature names, not one name")
        keep = [ffi.new("char[]", c_name(n, "feature name")) for n in names]
        array = ffi.new("const char *[]", keep) if keep else ffi.NULL
        with self._using() as handle:
            check(lib.vmaf_dnn_check_output(handle, c_fmt, array, len(keep)))

    def render(self, fmt: str = "json", exact: bool = False) -> str:
        """The report as text, rendered by the C writer (the same bytes
        :meth:`write` puts in a file); ``exact``: every number with 17
        significant digits, so it parses back to the same double."""
        c_fmt = OUTPUT_FORMATS[format_for_path(None, fmt)]
        flags = lib.VMAF_DNN_OUTPUT_EXACT if exact else 0
        length = ffi.new("size_t *")
        size = 1 << 16
        with self._using() as handle:
            # One lock for the size query and the rendering: one state.
            while True:
                buf = ffi.new("char[]", size)
                rc = lib.vmaf_dnn_write_output_buffer(handle, c_fmt, flags, buf, size, length)
                if rc != -errno.ENOBUFS:
                    check(rc)
                    return ffi.unpack(buf, length[0]).decode("utf-8")
                size = length[0] + 1

    def write_file(self, fileobj, fmt: str = "json") -> None:
        """Writes the report to an open file object (text or binary), whole or
        raising OSError: a binary stream may take less than it is given (a pipe
        whose reader left took 64 KiB of a larger report, and BufferedWriter
        said so only by its count), so the rest is offered again until it is
        taken or refused."""
        text = self.render(fmt)
        data = memoryview(text.encode("utf-8"))
        total = len(data)
        try:
            written = fileobj.write(data)
        except TypeError:  # a text stream
            fileobj.write(text)
            return
        while written is None or written < len(data):
            if not written:
                raise BrokenPipeError(errno.EPIPE, f"the report was cut after "
                                      f"{total - len(data)} of {total} bytes: the output "
                                      f"took no more")
            data = data[written:]
            written = fileobj.write(data)

    def report(self) -> Dict[str, object]:
        """The report as plain Python data: the C writer's JSON report read
        back (every number exact, NaN and Inf as null become float nan)
        plus the attached models."""
        data = json.loads(self.render("json", exact=True))
        for frame in data["frames"]:
            frame["metrics"] = _nan_for_null(frame["metrics"])
        data["pooled_metrics"] = {name: _nan_for_null(stats)
                                  for name, stats in data["pooled_metrics"].items()}
        data["aggregate_metrics"] = _nan_for_null(data["aggregate_metrics"])
        data["models"] = [dict(m._asdict(), features=list(m.features),
                               ep_nodes=None if m.ep_nodes is None else list(m.ep_nodes),
                               batching=self.batching(i)._asdict(),
                               static_runs=self.static_runs(i)._asdict())
                          for i, m in enumerate(self._models)]
        return data

    def __repr__(self) -> str:
        if self._handle is None:
            return "<vmafdnn.Context closed>"
        return f"<vmafdnn.Context {len(self._models)} model(s), {self.frame_count} frame(s)>"

