"""Sessions: one ONNX model opened on the best available execution provider."""
import errno
import os
import threading
from typing import Dict, List, Mapping, NamedTuple, Sequence, Tuple, Union

import numpy as np

from ._native import check, ensure_ort, ffi, lib
from .errors import InvalidArgumentError

__all__ = ["Session", "TensorInfo", "DEVICES"]

#: Accepted ``device`` names (any case) and their VmafDnnDevice values.
DEVICES = {
    "auto": lib.VMAF_DNN_DEVICE_AUTO,
    "cpu": lib.VMAF_DNN_DEVICE_CPU,
    "cuda": lib.VMAF_DNN_DEVICE_CUDA,
    "openvino": lib.VMAF_DNN_DEVICE_OPENVINO,
    "rocm": lib.VMAF_DNN_DEVICE_ROCM,
    "openvino-cpu": lib.VMAF_DNN_DEVICE_OPENVINO_CPU,
    "openvino-gpu": lib.VMAF_DNN_DEVICE_OPENVINO_GPU,
}

_DTYPES = {
    lib.VMAF_DNN_TYPE_FLOAT: np.dtype(np.float32),
    lib.VMAF_DNN_TYPE_FLOAT16: np.dtype(np.float16),
    lib.VMAF_DNN_TYPE_DOUBLE: np.dtype(np.float64),
    lib.VMAF_DNN_TYPE_INT32: np.dtype(np.int32),
    lib.VMAF_DNN_TYPE_INT64: np.dtype(np.int64),
}

_FLOAT32 = np.dtype(np.float32)


class TensorInfo(NamedTuple):
    """A model input or output as the model declares it."""

    name: str
    shape: Tuple[int, ...]  # -1 for symbolic dims
    dtype: np.dtype


def device_value(device: str) -> int:
    try:
        return DEVICES[device.lower()]
    except (KeyError, AttributeError):
        raise ValueError(
            f"unknown device {device!r}; choose one of {', '.join(DEVICES)}"
        ) from None


def _slot_infos(handle, count, info_fn) -> List[TensorInfo]:
    infos = []
    c_info = ffi.new("VmafDnnTensorInfo *")
    for i in range(count):
        check(info_fn(handle, i, c_info))
        infos.append(
            TensorInfo(
                name=ffi.string(c_info.name).decode(),
                shape=tuple(c_info.shape[d] for d in range(c_info.rank)),
                dtype=_DTYPES.get(c_info.type, np.dtype(np.float32)),
            )
        )
    return infos


class Session:
    """An ONNX model opened through libvmafdnn.

    ``device`` is a hint (auto, cpu, cuda, openvino, rocm, openvino-cpu,
    openvino-gpu): when its execution provider is missing the session runs on
    the CPU; :attr:`attached_ep` says where it really runs and
    :attr:`fallback_reason` why. A session may be shared between threads:
    runs are serialised, and the GIL is released while the model runs.
    """

    def __init__(
        self,
        path: Union[str, os.PathLike],
        device: str = "auto",
        device_index: int = 0,
        threads: int = 0,
        fp16_io: bool = False,
    ):
        ensure_ort()
        cfg = ffi.new("VmafDnnConfig *")
        cfg.device = device_value(device)
        cfg.device_index = int(device_index)
        cfg.threads = int(threads)
        cfg.fp16_io = bool(fp16_io)
        out = ffi.new("VmafDnnSession **")
        check(lib.vmaf_dnn_session_open(out, os.fsencode(path), cfg))
        self._handle = ffi.gc(out[0], lib.vmaf_dnn_session_close)
        self.path = os.fspath(path)
        self.attached_ep = ffi.string(lib.vmaf_dnn_session_attached_ep(self._handle)).decode()
        self.fallback_reason = ffi.string(
            lib.vmaf_dnn_session_fallback_reason(self._handle)
        ).decode("utf-8", "replace")
        self.inputs = _slot_infos(
            self._handle, lib.vmaf_dnn_session_input_count(self._handle),
            lib.vmaf_dnn_session_input_info)
        self.outputs = _slot_infos(
            self._handle, lib.vmaf_dnn_session_output_count(self._handle),
            lib.vmaf_dnn_session_output_info)
        self._input_index = {info.name: i for i, info in enumerate(self.inputs)}
        self._lock = threading.Lock()
        # C structures reused by every run (under _lock): building them per
        # call would cost more than ORT's own run on a tiny model.
        n_in, n_out = len(self.inputs), len(self.outputs)
        self._c_inputs = ffi.new("VmafDnnInput[]", max(n_in, 1))
        self._c_shapes = [ffi.new("int64_t[]", max(len(i.shape), 1)) for i in self.inputs]
        for i in range(n_in):
            self._c_inputs[i].shape = self._c_shapes[i]
            self._c_inputs[i].rank = len(self.inputs[i].shape)
        self._c_outputs = ffi.new("VmafDnnOutput[]", max(n_out, 1))
        self._static_counts = [
            int(np.prod(o.shape)) if all(d >= 0 for d in o.shape) else None
            for o in self.outputs
        ]
        self._last_counts = [c or 1 for c in self._static_counts]

    # -- lifetime -----------------------------------------------------------
    def close(self) -> None:
        """Releases the session now (also done when it is garbage collected)."""
        handle = self.__dict__.pop("_handle", None)
        if handle is not None:
            with self._lock:
                ffi.release(handle)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _live_handle(self):
        try:
            return self._handle
        except AttributeError:
            raise ValueError(f"session for {self.path} is closed") from None

    @property
    def config(self) -> Dict[str, object]:
        c = lib.vmaf_dnn_session_config(self._live_handle())
        names = {v: k for k, v in DEVICES.items()}
        return {"device": names[c.device], "device_index": c.device_index,
                "threads": c.threads, "fp16_io": bool(c.fp16_io)}

    # -- running ------------------------------------------------------------
    def _ordered_feeds(self, feeds) -> List[np.ndarray]:
        if isinstance(feeds, Mapping):
            ordered = [None] * len(self.inputs)
            for name, value in feeds.items():
                index = self._input_index.get(name)
                if index is None:
                    raise InvalidArgumentError(
                        22, f"the model has no input named {name!r}; its inputs are "
                            f"{', '.join(i.name for i in self.inputs)}")
                ordered[index] = value
            for index, value in enumerate(ordered):
                if value is None:
                    raise InvalidArgumentError(22, f"input {self.inputs[index].name!r} is missing")
            return ordered
        if isinstance(feeds, (list, tuple)):
            if len(feeds) != len(self.inputs):
                raise InvalidArgumentError(
                    22, f"{len(feeds)} inputs given; the model has {len(self.inputs)}")
            return list(feeds)
        raise TypeError("feeds must be a dict of name -> array or a list/tuple in input order")

    def _check_array(self, index: int, value) -> np.ndarray:
        info = self.inputs[index]
        arr = value if isinstance(value, np.ndarray) else np.asarray(value)
        if arr.dtype != _FLOAT32:
            raise InvalidArgumentError(
                22, f"input {info.name!r} must be float32, got {arr.dtype}")
        if arr.ndim != len(info.shape):
            raise InvalidArgumentError(
                22, f"input {info.name!r} must have rank {len(info.shape)}, got shape {arr.shape}")
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        return arr

    def run(self, feeds: Union[Mapping[str, np.ndarray], Sequence[np.ndarray]]
            ) -> Dict[str, np.ndarray]:
        """Runs the model; returns {output name: float32 array of its shape}.

        ``feeds``: a dict name -> array, or a list/tuple in input order, of
        float32 arrays (C-contiguous ones are passed without a copy).
        """
        handle = self._live_handle()
        arrays = [self._check_array(i, v) for i, v in enumerate(self._ordered_feeds(feeds))]
        with self._lock:
            keep = []  # buffers that must outlive the C call
            c_inputs = self._c_inputs
            for i, arr in enumerate(arrays):
                shape = self._c_shapes[i]
                for d, n in enumerate(arr.shape):
                    shape[d] = n
                buf = ffi.from_buffer("float[]", arr)
                keep.append(buf)
                c_inputs[i].data = buf
            largest_input = max((a.size for a in arrays), default=1)
            while True:
                results = self._run_once(handle, len(arrays), largest_input)
                if results is not None:
                    return results

    def _run_once(self, handle, n_inputs, largest_input):
        """One C run into fresh arrays; None when a buffer was too small (the
        needed sizes are remembered for the retry)."""
        c_outputs = self._c_outputs
        arrays = []
        for k, static in enumerate(self._static_counts):
            capacity = static if static is not None else max(self._last_counts[k], largest_input)
            arr = np.empty(capacity, dtype=np.float32)
            arrays.append(arr)
            c_outputs[k].data = ffi.from_buffer("float[]", arr)
            c_outputs[k].capacity = capacity
        rc = lib.vmaf_dnn_session_run(handle, self._c_inputs, n_inputs, c_outputs, len(arrays))
        if rc == -errno.ENOSPC:
            for k in range(len(arrays)):
                self._last_counts[k] = max(self._last_counts[k], c_outputs[k].count)
            return None
        check(rc)
        results = {}
        for k, info in enumerate(self.outputs):
            out = c_outputs[k]
            shape = tuple(out.shape[d] for d in range(out.rank))
            if self._static_counts[k] is None:
                self._last_counts[k] = out.count
            results[info.name] = arrays[k][: out.count].reshape(shape)
        return results

    def __repr__(self) -> str:
        state = "closed" if "_handle" not in self.__dict__ else self.attached_ep
        return f"<vmafdnn.Session {self.path!r} on {state}>"

