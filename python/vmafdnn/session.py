"""Sessions: one ONNX model opened on the best available execution provider."""
import errno
import os
import sys
from collections import abc
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ._ep_packages import EP_PACKAGE_ERRORS  # noqa: F401  (re-exported)
from ._native import NativeHandle, c_name, c_path, check, decode_name, ensure_ort, ffi, lib
from . import names
from .errors import InvalidArgumentError, check_int

__all__ = ["Session", "TensorInfo", "DEVICES", "POLICY_KEYWORDS", "model_policy", "MAX_THREADS"]

#: Most ORT threads a session or context may ask for (VMAF_DNN_MAX_THREADS).
MAX_THREADS = lib.VMAF_DNN_MAX_THREADS
MAX_BATCH = lib.VMAF_DNN_MAX_BATCH

#: ``device`` names and their VmafDnnDevice values: the C table (any case,
#: '_' for '-' accepted).
DEVICES = names.table("device")

_DTYPES = {
    lib.VMAF_DNN_TYPE_FLOAT: np.dtype(np.float32),
    lib.VMAF_DNN_TYPE_FLOAT16: np.dtype(np.float16),
    lib.VMAF_DNN_TYPE_DOUBLE: np.dtype(np.float64),
    lib.VMAF_DNN_TYPE_INT32: np.dtype(np.int32),
    lib.VMAF_DNN_TYPE_INT64: np.dtype(np.int64),
    lib.VMAF_DNN_TYPE_UINT16: np.dtype(np.uint16),
}

_FLOAT32 = np.dtype(np.float32)
_UINT16 = np.dtype(np.uint16)
#: Arrays a UINT16 input (a picture's own samples) also takes, as integers.
_SAMPLE_DTYPES = (np.dtype(np.uint8), _UINT16)


class TensorInfo(NamedTuple):
    """A model input or output as the model declares it."""

    name: str
    shape: Optional[Tuple[int, ...]]  # -1 for symbolic dims; None: unknown rank
    dtype: np.dtype


def device_value(device: str) -> int:
    return names.value("device", device)


def _is_fixed(shape: Optional[Tuple[int, ...]]) -> bool:
    """A known rank with no symbolic dim."""
    return shape is not None and all(d >= 0 for d in shape)


class StaticRuns(NamedTuple):
    """vmaf_dnn_session_static_runs: see :attr:`Session.static_runs`."""
    fixed: int
    as_opened: int
    reason: str
    specialised: int
    device_io: int
    captured: int
    device_io_reason: str
    pinned: int
    uint8: int
    pictures: int


def static_runs(handle) -> StaticRuns:
    out = ffi.new("VmafDnnStaticRuns *")
    check(lib.vmaf_dnn_session_static_runs(handle, out))
    return static_runs_from(out)


def static_runs_from(out) -> StaticRuns:
    """A filled VmafDnnStaticRuns as a StaticRuns."""
    return StaticRuns(int(out.fixed), int(out.as_opened),
                      ffi.string(out.reason).decode("utf-8", "replace"), int(out.specialised),
                      int(out.device_io), int(out.captured),
                      ffi.string(out.device_io_reason).decode("utf-8", "replace"),
                      int(out.pinned), int(out.uint8), int(out.pictures))


def ep_nodes(handle) -> Optional[Tuple[int, int]]:
    """(nodes on the attached EP, all nodes) of a C session, or None when
    ONNX Runtime cannot tell (before 1.24): vmaf_dnn_session_ep_nodes."""
    on_ep, total = ffi.new("size_t *"), ffi.new("size_t *")
    rc = lib.vmaf_dnn_session_ep_nodes(handle, on_ep, total)
    if rc == -errno.ENOTSUP:
        return None
    check(rc)
    return (on_ep[0], total[0])


def _slot_infos(handle, count, info_fn, kind: str) -> List[TensorInfo]:
    infos = []
    c_info = ffi.new("VmafDnnTensorInfo *")
    for i in range(count):
        check(info_fn(handle, i, c_info))
        infos.append(
            TensorInfo(
                name=decode_name(c_info.name, f"the name of {kind} {i}"),
                shape=(None if c_info.shape == ffi.NULL
                       else tuple(c_info.shape[d] for d in range(c_info.rank))),
                dtype=_DTYPES.get(c_info.type, np.dtype(np.float32)),
            )
        )
    return infos


#: The keyword arguments of a model policy (Session, Context, score()); their
#: defaults are the C library's (vmaf_dnn_default_model_policy, which reads
#: VMAFDNN_MODEL_DIR, VMAFDNN_MAX_MEMORY_BYTES and VMAFDNN_MAX_RUN_MS).
POLICY_KEYWORDS = ("model_dir", "max_model_bytes", "allowed_ops", "max_loop_nodes",
                   "max_nodes", "max_subgraph_depth", "max_memory_bytes", "max_run_ms")

# The policy's integer fields and the C type each must fit.
_POLICY_INTS = {"max_model_bytes": "size_t", "max_loop_nodes": "unsigned",
                "max_nodes": "unsigned", "max_subgraph_depth": "unsigned",
                "max_memory_bytes": "uint64_t", "max_run_ms": "unsigned"}


def config_int(key: str, value, top: int) -> int:
    """A VmafDnnConfig integer (``threads``, ``device_index``) checked
    before cffi sees it (vmafdnn.errors.check_int): cffi would cut 1.5 to
    1, take "4" through int(), and raise a bare OverflowError for 2**40.
    Out of 0..top is InvalidArgumentError naming the range, also for a
    context, whose C open leaves the check to the first attach."""
    return check_int(key, value, 0, top)


#: Largest device_index (a C int).
MAX_DEVICE_INDEX = (1 << (8 * ffi.sizeof("int") - 1)) - 1


def _policy_int(key: str, value) -> int:
    return check_int(key, value, 0, (1 << (8 * ffi.sizeof(_POLICY_INTS[key]))) - 1)


def model_policy(**overrides) -> Tuple[object, list]:
    """A VmafDnnModelPolicy: the C defaults with the given overrides (the
    keywords of POLICY_KEYWORDS; None keeps a default), and the list of C
    buffers it borrows, which must outlive every use of the policy.

    ``model_dir``: models (their sidecars and external data) are opened
    beneath it; ``max_model_bytes``: size cap of the file; ``allowed_ops``: a
    subset of the built-in operator allow-list; ``max_loop_nodes``,
    ``max_nodes``, ``max_subgraph_depth``: graph caps; ``max_memory_bytes``:
    memory one model may hold (0: no limit); ``max_run_ms``: time one run may
    take (0: no limit). The C library refuses values that loosen a built-in
    limit (InvalidArgumentError). See docs/security.md.
    """
    unknown = sorted(set(overrides) - set(POLICY_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown model policy keyword(s) {', '.join(unknown)}; the policy "
                        f"keywords are {', '.join(POLICY_KEYWORDS)}")
    policy = ffi.new("VmafDnnModelPolicy *")
    lib.vmaf_dnn_default_model_policy(policy)
    keep_alive = [policy]
    model_dir = overrides.get("model_dir")
    if model_dir is not None:
        keep_alive.append(ffi.new("char[]", c_path(model_dir, "model_dir")))
        policy.model_dir = keep_alive[-1]
    allowed_ops = overrides.get("allowed_ops")
    if allowed_ops is not None:
        if isinstance(allowed_ops, (str, bytes)):
            raise TypeError("allowed_ops must be a sequence of operator names, not one string")
        names = [ffi.new("char[]", c_name(op, "allowed_ops entry")) for op in allowed_ops]
        array = ffi.new("const char *[]", names or [ffi.NULL])
        keep_alive += [names, array]
        policy.allowed_ops = array
        policy.n_allowed_ops = len(names)
    for key in _POLICY_INTS:
        value = overrides.get(key)
        if value is not None:
            setattr(policy, key, _policy_int(key, value))
    return policy, keep_alive


def _written(arr: np.ndarray, out) -> np.ndarray:
    """``arr`` as the C output ``out`` reports it written: its first
    ``out.count`` elements in ``out.shape`` (``arr`` itself when it matches)."""
    produced = tuple(out.shape[d] for d in range(out.rank))
    if arr.shape == produced and arr.size == out.count:
        return arr
    return arr.reshape(-1)[: out.count].reshape(produced)


# -- plugin execution providers ---------------------------------------------------
# (Installed plugin EP packages are found and announced by _ep_packages.)

def _text(cdata) -> Optional[str]:
    return None if cdata == ffi.NULL else ffi.string(cdata).decode("utf-8", "replace")


def ep_libraries() -> List[Dict[str, object]]:
    """Every plugin EP library given to this process, registered or not:
    ``name``, ``path``, ``source`` ("api", "env": VMAFDNN_EP_LIBRARIES and the
    installed onnxruntime_ep_* packages), ``status`` (0 or the negative
    errno) and ``reason`` ("" when registered)."""
    ensure_ort()
    info = ffi.new("VmafDnnEpLibraryInfo *")
    out = []
    for i in range(lib.vmaf_dnn_ep_library_count()):
        check(lib.vmaf_dnn_ep_library_info(i, info))
        out.append({"name": _text(info.name), "path": _text(info.path),
                    "source": _text(info.source), "status": int(info.status),
                    "reason": _text(info.reason)})
    return out


def ep_devices() -> List[Dict[str, object]]:
    """Every EP device ONNX Runtime offers (empty before ORT 1.22): ``ep_name``,
    ``ep_vendor``, ``device_type`` ("CPU"/"GPU"/"NPU"), ``device_vendor``,
    ``vendor_id``, ``device_id``, ``device_index`` (the ``device_index`` that
    selects it), ``library`` (the plugin's registration name, None for an EP
    built into ORT) and ``attached_ep`` (what a session bound to it reports)."""
    ensure_ort()
    info = ffi.new("VmafDnnEpDeviceInfo *")
    out = []
    for i in range(lib.vmaf_dnn_ep_device_count()):
        check(lib.vmaf_dnn_ep_device_info(i, info))
        out.append({"ep_name": _text(info.ep_name), "ep_vendor": _text(info.ep_vendor),
                    "device_type": _text(info.device_type),
                    "device_vendor": _text(info.device_vendor),
                    "vendor_id": int(info.vendor_id), "device_id": int(info.device_id),
                    "device_index": int(info.device_index), "library": _text(info.library),
                    "attached_ep": _text(info.attached_name)})
    return out


def register_ep_library(name: str, path) -> None:
    """Registers a plugin EP library with ONNX Runtime (once per process; see
    vmaf_dnn_register_ep_library). Raises the DnnError of the C error."""
    ensure_ort()
    check(lib.vmaf_dnn_register_ep_library(c_name(name, "name"), c_path(path)))


def explain_device(device: str = "auto", device_index: int = 0, fp16_io: bool = False) -> str:
    """The chain ``device`` walks as an open would: one line per EP passed
    over with why, then ``"<EP>: selected (<how>)"``."""
    ensure_ort(device)
    cfg = ffi.new("VmafDnnConfig *")
    lib.vmaf_dnn_default_config(cfg)
    cfg.device = device_value(device)
    cfg.device_index = device_index
    cfg.fp16_io = 1 if fp16_io else 0
    needed = ffi.new("size_t *")
    rc = lib.vmaf_dnn_device_explain(cfg, ffi.NULL, 0, needed)
    if rc not in (0, -errno.ENOSPC):
        check(rc)
    buf = ffi.new("char[]", needed[0] + 1)
    check(lib.vmaf_dnn_device_explain(cfg, buf, len(buf), needed))
    return ffi.string(buf).decode("utf-8", "replace")


class Session(NativeHandle):
    """An ONNX model opened through libvmafdnn.

    ``device`` is a hint (auto, cpu, cuda, openvino, rocm, openvino-cpu,
    openvino-gpu): when its execution provider is missing the session runs on
    the CPU; :attr:`attached_ep` says where it really runs,
    :attr:`fallback_reason` why, and :attr:`ep_nodes` how much of the graph
    that EP took (``(on_ep, total)`` nodes; None before ORT 1.24: the rest
    runs on ORT's CPU EP). ``threads``: 0 (ORT's default) up to
    ``vmafdnn.MAX_THREADS``. ``static_shapes`` (auto, off, on): whether runs
    use the model specialised to their inputs' shapes, created at the first
    run of those shapes so that ONNX Runtime folds the shape arithmetic away
    (auto: on every EP but ORT's CPU EP; :attr:`static_runs` says how runs
    went; C: VmafDnnStaticShapes). ``device_io`` (auto, off, on): how those
    specialised sessions exchange inputs and outputs with an accelerator
    (auto: bound device-resident tensors where ORT wants them in device
    memory, and graph capture where the EP can; on: also on ORT's CPU EP, for
    tests; off: ORT copies inside each run; C: VmafDnnDeviceIo). The
    keyword-only ``policy`` arguments (:data:`POLICY_KEYWORDS`: ``model_dir``
    -- default the environment variable VMAFDNN_MODEL_DIR --,
    ``max_model_bytes``, ``allowed_ops``, ``max_loop_nodes``, ``max_nodes``,
    ``max_subgraph_depth``, ``max_memory_bytes``, ``max_run_ms``) set the
    model policy (see :func:`model_policy` and docs/security.md).

    A session may be shared between threads: runs are serialised, and the
    GIL is released while the model runs. :meth:`cancel` stops a run in
    flight from another thread; :meth:`close` waits for it, and every call
    after close raises :class:`vmafdnn.ClosedError` (a ValueError). A
    session cannot be copied or pickled, and a child made by fork() cannot
    use its parent's sessions.
    """

    _what = "session"

    def __init__(
        self,
        path: Union[str, os.PathLike],
        device: str = "auto",
        device_index: int = 0,
        threads: int = 0,
        fp16_io: bool = False,
        static_shapes: str = "auto",
        device_io: str = "auto",
        **policy,
    ):
        ensure_ort(device)
        cfg = ffi.new("VmafDnnConfig *")
        cfg.device = device_value(device)
        cfg.device_index = config_int("device_index", device_index, MAX_DEVICE_INDEX)
        cfg.threads = config_int("threads", threads, MAX_THREADS)
        cfg.fp16_io = bool(fp16_io)
        cfg.static_shapes = names.value("static_shapes", static_shapes)
        cfg.device_io = names.value("device_io", device_io)
        c_policy, keep_alive = model_policy(**policy)
        c_model = c_path(path, "model path")
        out = ffi.new("VmafDnnSession **")
        check(lib.vmaf_dnn_session_open_with_policy(out, c_model, cfg, c_policy))
        self._what = f"session for {os.fsdecode(c_model)}"
        # The session keeps the policy's values, not its pointers, past the
        # open; holding the buffers anyway costs nothing and stays right if
        # that changes.
        self._adopt(out[0], lib.vmaf_dnn_session_close, lib.vmaf_dnn_session_cancel, keep_alive)
        try:
            self._describe(path)
        except BaseException:
            self.close()
            raise

    def _describe(self, path) -> None:
        self.path = os.fspath(path)
        handle = self._handle
        self.attached_ep = ffi.string(lib.vmaf_dnn_session_attached_ep(handle)).decode()
        self.fallback_reason = ffi.string(
            lib.vmaf_dnn_session_fallback_reason(handle)).decode("utf-8", "replace")
        self.ep_nodes = ep_nodes(handle)
        self.inputs = _slot_infos(handle, lib.vmaf_dnn_session_input_count(handle),
                                  lib.vmaf_dnn_session_input_info, "input")
        self.outputs = _slot_infos(handle, lib.vmaf_dnn_session_output_count(handle),
                                   lib.vmaf_dnn_session_output_info, "output")
        self._input_index = {info.name: i for i, info in enumerate(self.inputs)}
        self._input_names = tuple(info.name for info in self.inputs)
        self._output_names = tuple(info.name for info in self.outputs)
        # C structures reused by every run (under _lock): building them per
        # call would cost more than ORT's own run on a tiny model. Each input's
        # shape is written only when it differs from the previous run's.
        n_in, n_out = len(self.inputs), len(self.outputs)
        self._c_inputs = ffi.new("VmafDnnInput[]", max(n_in, 1))
        # An input of unknown rank gets room for any rank; the run sets it.
        self._c_shapes = [ffi.new("int64_t[]", lib.VMAF_DNN_MAX_RANK if i.shape is None
                                  else max(len(i.shape), 1)) for i in self.inputs]
        self._fed_shapes = [None] * n_in
        for i in range(n_in):
            self._c_inputs[i].shape = self._c_shapes[i]
            self._c_inputs[i].rank = len(self.inputs[i].shape or ())
        self._c_outputs = ffi.new("VmafDnnOutput[]", max(n_out, 1))
        # Outputs of fixed shape get exact arrays; the others a capacity that
        # grows to what the model has produced so far.
        self._static_shapes = [o.shape if _is_fixed(o.shape) else None for o in self.outputs]
        self._capacities = [1] * n_out
        self._fast_run = self._make_fast_run()

    # -- lifetime -----------------------------------------------------------
    def _on_unusable(self) -> None:
        self._fast_run = None  # it holds the handle and the old lock

    @property
    def config(self) -> Dict[str, object]:
        with self._using() as handle:
            c = lib.vmaf_dnn_session_config(handle)
            return {"device": names.name("device", c.device), "device_index": c.device_index,
                    "threads": c.threads, "fp16_io": bool(c.fp16_io),
                    "static_shapes": names.name("static_shapes", c.static_shapes),
                    "device_io": names.name("device_io", c.device_io)}

    @property
    def static_runs(self) -> "StaticRuns":
        """How the runs so far went with static shapes: runs on a session
        specialised to their shapes (``fixed``), the others (``as_opened``),
        why runs go on as opened (``reason``, "" while nothing stops it), the
        specialised sessions made (``specialised``), of the fixed runs those
        made with device-resident inputs and outputs (``device_io``) and, of
        those, on a captured graph (``captured``), and why a specialised
        session does not bind or capture (``device_io_reason``, "" while
        every one does); of the device_io runs, those whose every input
        copied to the device came from the EP's host-accessible (pinned)
        memory (``pinned``: a context's models keep their pictures there
        where the EP offers it; a Session's caller's arrays are not); of the
        fixed runs, those fed 8-bit samples as UINT8 (``uint8``: a context's
        samples model on an 8-bit clip, half the bytes of UINT16); the runs
        fed a picture from where it lay in that memory (``pictures``: a
        caller's :meth:`vmafdnn.Context.picture_buffer`, or the library's
        copy of a frame in flight there)."""
        with self._using() as handle:
            return static_runs(handle)

    # -- running ------------------------------------------------------------
    def _ordered_feeds(self, feeds) -> List:
        if type(feeds) is dict or isinstance(feeds, abc.Mapping):
            if len(feeds) == len(self._input_names):
                try:
                    return [feeds[name] for name in self._input_names]
                except KeyError:
                    pass
            for name in feeds:
                if name not in self._input_index:
                    raise InvalidArgumentError(
                        errno.EINVAL, f"the model has no input named {name!r}; its inputs are "
                                      f"{', '.join(self._input_names)}")
            missing = next(name for name in self._input_names if name not in feeds)
            raise InvalidArgumentError(errno.EINVAL, f"input {missing!r} is missing")
        if type(feeds) in (list, tuple):
            if len(feeds) != len(self.inputs):
                raise InvalidArgumentError(
                    errno.EINVAL, f"{len(feeds)} inputs given; the model has {len(self.inputs)}")
            return feeds
        raise TypeError("feeds must be a dict of name -> array or a list/tuple in input order")

    def _checked_array(self, index: int, value) -> np.ndarray:
        """The float32 C-contiguous array to feed (a copy only when the caller's
        array is not contiguous)."""
        if type(value) is not np.ndarray:
            value = np.asarray(value)
        info = self.inputs[index]
        if value.dtype != _FLOAT32:
            if info.dtype == _UINT16 and value.dtype in _SAMPLE_DTYPES:
                value = value.astype(_FLOAT32)  # exact; the C library converts back
            else:
                takes = ("float32, uint8 or uint16 (it takes samples: UINT16)"
                         if info.dtype == _UINT16 else "float32")
                raise InvalidArgumentError(
                    errno.EINVAL, f"input {info.name!r} must be {takes}, got {value.dtype}")
        rank = lib.VMAF_DNN_MAX_RANK if info.shape is None else len(info.shape)
        if (value.ndim > rank) if info.shape is None else (value.ndim != rank):
            raise InvalidArgumentError(
                errno.EINVAL, f"input {info.name!r} must have rank "
                              f"{'at most ' if info.shape is None else ''}{rank}, "
                              f"got shape {value.shape}")
        if not value.flags.c_contiguous:
            value = np.ascontiguousarray(value)
        return value

    def _make_fast_run(self):
        """A run specialised for models whose every dim is fixed, fed a dict of
        C-contiguous float32 arrays of exactly those shapes: the per-call cost
        that matters for tiny models. It returns None for anything else, which
        then takes the general path (and its error messages). It has its own C
        structures, so the general path's shape writes never reach it."""
        if not all(_is_fixed(info.shape) for info in self.inputs + self.outputs):
            return None
        names = self._input_names
        in_shapes = tuple(info.shape for info in self.inputs)
        out_shapes = tuple(info.shape for info in self.outputs)
        out_names = self._output_names
        n_in, n_out = len(names), len(out_shapes)
        c_inputs = ffi.new("VmafDnnInput[]", max(n_in, 1))
        c_shapes = [ffi.new("int64_t[]", list(shape) or [1]) for shape in in_shapes]
        for i, shape in enumerate(in_shapes):
            c_inputs[i].shape = c_shapes[i]
            c_inputs[i].rank = len(shape)
        c_outputs = ffi.new("VmafDnnOutput[]", max(n_out, 1))
        for k, shape in enumerate(out_shapes):
            c_outputs[k].capacity = int(np.prod(shape))
        # C-order strides of each fixed input shape: equal strides and shape
        # mean "contiguous", a cheaper test than building a flags object.
        in_strides = tuple(tuple(int(np.prod(shape[d + 1:])) * 4 for d in range(len(shape)))
                           for shape in in_shapes)
        in_slots = [c_inputs[i] for i in range(n_in)]
        out_slots = [c_outputs[k] for k in range(n_out)]
        handle, lock, session = self._handle, self._lock, self
        from_buffer, empty, ndarray, f32 = ffi.from_buffer, np.empty, np.ndarray, _FLOAT32
        run_c = lib.vmaf_dnn_session_run
        sizes = tuple(int(np.prod(shape)) for shape in out_shapes)
        enospc = -errno.ENOSPC

        def finish(rc, outputs):
            """The results of a fast run. When the model produced other sizes
            than it declares (ORT only warns about that), the arrays are cut to
            what C wrote -- never a byte C did not write -- and later runs take
            the general path, which sizes outputs from the results."""
            if rc == 0 and all(out.count == n for out, n in zip(out_slots, sizes)):
                return dict(zip(out_names, outputs))
            session._fast_run = None
            session._static_shapes = [None] * n_out
            if rc == enospc:
                return None  # nothing valid was written: the general path reruns
            check(rc)
            return dict(zip(out_names, map(_written, outputs, out_slots)))

        if n_in == 1 and n_out == 1:
            # The common tiny-model case, without the loops: about a third of
            # the Python cost of a run on an 8-element model.
            name0, shape0, strides0, size0 = names[0], in_shapes[0], in_strides[0], sizes[0]
            out_shape0, out_name0 = out_shapes[0], out_names[0]
            in0, out0 = in_slots[0], out_slots[0]

            def fast_run_single(feeds, _keep_alive=(c_inputs, c_shapes, c_outputs)):
                if type(feeds) is not dict or len(feeds) != 1:
                    return None
                a = feeds.get(name0)
                if (type(a) is not ndarray or (a.dtype is not f32 and a.dtype != f32)
                        or a.shape != shape0 or a.strides != strides0):
                    return None
                out = empty(out_shape0, f32)
                in_buf, out_buf = from_buffer("float[]", a), from_buffer("float[]", out)
                with lock:
                    if session._handle is None:
                        return None  # the general path raises the "closed" error
                    in0.data = in_buf
                    out0.data = out_buf
                    rc = run_c(handle, c_inputs, 1, c_outputs, 1)
                if rc or out0.count != size0:
                    return finish(rc, [out])
                return {out_name0: out}

            return fast_run_single

        def fast_run(feeds, _keep_alive=(c_inputs, c_shapes, c_outputs)):
            if type(feeds) is not dict or len(feeds) != n_in:
                return None
            buffers = []
            for name, shape, strides in zip(names, in_shapes, in_strides):
                a = feeds.get(name)
                if (type(a) is not ndarray or (a.dtype is not f32 and a.dtype != f32)
                        or a.shape != shape or a.strides != strides):
                    return None
                buffers.append(from_buffer("float[]", a))
            outputs = [empty(shape, f32) for shape in out_shapes]
            with lock:
                if session._handle is None:
                    return None  # the general path raises the "closed" error
                for slot, buf in zip(in_slots, buffers):
                    slot.data = buf
                for slot, out in zip(out_slots, outputs):
                    buffers.append(from_buffer("float[]", out))
                    slot.data = buffers[-1]
                rc = run_c(handle, c_inputs, n_in, c_outputs, n_out)
            return finish(rc, outputs)

        return fast_run

    def run(self, feeds: Union[Mapping[str, np.ndarray], Sequence[np.ndarray]]
            ) -> Dict[str, np.ndarray]:
        """Runs the model; returns {output name: float32 array of its shape}.

        ``feeds``: a dict name -> array, or a list/tuple in input order, of
        float32 arrays (C-contiguous ones are passed without a copy). The GIL
        is released while the model runs.
        """
        fast_run = self._fast_run
        if fast_run is not None:
            results = fast_run(feeds)
            if results is not None:
                return results
        arrays = [self._checked_array(i, v) for i, v in enumerate(self._ordered_feeds(feeds))]
        with self._using() as handle:
            keep = []  # cffi buffers that must outlive the C call
            for i, arr in enumerate(arrays):
                if arr.shape != self._fed_shapes[i]:
                    c_shape = self._c_shapes[i]
                    for d, n in enumerate(arr.shape):
                        c_shape[d] = n
                    self._c_inputs[i].rank = arr.ndim
                    self._fed_shapes[i] = arr.shape
                buf = ffi.from_buffer("float[]", arr)
                keep.append(buf)
                self._c_inputs[i].data = buf
            while True:
                results = self._run_once(handle, len(arrays), arrays, keep)
                if results is not None:
                    return results

    def _run_once(self, handle, n_inputs, inputs, keep):
        """One C run into fresh arrays; None when a buffer was too small (the
        sizes needed are remembered for the retry)."""
        c_outputs = self._c_outputs
        outputs = []
        for k, shape in enumerate(self._static_shapes):
            if shape is None:
                # First guess for an unknown size: the largest input (right
                # for image-to-image models), then what the model produced.
                if self._capacities[k] == 1:
                    self._capacities[k] = max(a.size for a in inputs) if inputs else 1
                arr = np.empty(self._capacities[k], dtype=np.float32)
            else:
                arr = np.empty(shape, dtype=np.float32)
            outputs.append(arr)
            buf = ffi.from_buffer("float[]", arr)
            keep.append(buf)
            c_outputs[k].data = buf
            c_outputs[k].capacity = arr.size
        rc = lib.vmaf_dnn_session_run(handle, self._c_inputs, n_inputs, c_outputs, len(outputs))
        if rc == -errno.ENOSPC:
            for k, arr in enumerate(outputs):
                needed = c_outputs[k].count
                if needed > arr.size:
                    # An output larger than its declared fixed shape (ORT only
                    # warns): sized from the results from now on.
                    self._static_shapes[k] = None
                self._capacities[k] = max(self._capacities[k], needed)
            return None
        check(rc)
        # Every array is cut to what C wrote (its count and shape), so no
        # element C did not write is returned, whatever the model declared.
        return dict(zip(self._output_names, map(_written, outputs, c_outputs)))

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else self.attached_ep
        return f"<vmafdnn.Session {self.path!r} on {state}>"

