"""The names a user types and sees for the library's enums, from the C
library's one table of them (include/vmafdnn/catalog.h): devices, resize
modes, pool methods, report formats, model kinds, execution providers,
static-shapes and device-I/O settings.

Parsing accepts any case and takes '-' and '_' as the same character; an
unknown name raises InvalidArgumentError (a ValueError) listing the valid
ones, with C's message.
"""
from typing import Dict, Tuple

from ._native import c_name, check, ffi, lib

__all__ = ["DEVICE_NAMES", "RESIZE_NAMES", "POOL_NAMES", "FORMAT_NAMES", "KIND_NAMES",
           "EP_NAMES", "STATIC_SHAPES_NAMES", "DEVICE_IO_NAMES", "table", "value", "name"]

# what -> (from_name, name, names, C type of the value)
_TABLES = {
    "device": (lib.vmaf_dnn_device_from_name, lib.vmaf_dnn_device_name,
               lib.vmaf_dnn_device_names, "VmafDnnDevice *"),
    "resize": (lib.vmaf_dnn_resize_from_name, lib.vmaf_dnn_resize_name,
               lib.vmaf_dnn_resize_names, "VmafDnnResize *"),
    "pool": (lib.vmaf_dnn_pool_from_name, lib.vmaf_dnn_pool_name,
             lib.vmaf_dnn_pool_names, "VmafDnnPoolMethod *"),
    "format": (lib.vmaf_dnn_output_format_from_name, lib.vmaf_dnn_output_format_name,
               lib.vmaf_dnn_output_format_names, "VmafDnnOutputFormat *"),
    "kind": (lib.vmaf_dnn_model_kind_from_name, lib.vmaf_dnn_model_kind_name,
             lib.vmaf_dnn_model_kind_names, "VmafDnnModelKind *"),
    "ep": (lib.vmaf_dnn_ep_from_name, lib.vmaf_dnn_ep_name, lib.vmaf_dnn_ep_names,
           "VmafDnnEp *"),
    "static_shapes": (lib.vmaf_dnn_static_shapes_from_name, lib.vmaf_dnn_static_shapes_name,
                      lib.vmaf_dnn_static_shapes_names, "VmafDnnStaticShapes *"),
    "device_io": (lib.vmaf_dnn_device_io_from_name, lib.vmaf_dnn_device_io_name,
                  lib.vmaf_dnn_device_io_names, "VmafDnnDeviceIo *"),
}


def _names(what: str) -> Tuple[str, ...]:
    return tuple(ffi.string(_TABLES[what][2]()).decode().split(", "))


DEVICE_NAMES = _names("device")
RESIZE_NAMES = _names("resize")
POOL_NAMES = _names("pool")
FORMAT_NAMES = _names("format")
KIND_NAMES = _names("kind")
EP_NAMES = _names("ep")
STATIC_SHAPES_NAMES = _names("static_shapes")
DEVICE_IO_NAMES = _names("device_io")


def value(what: str, text: str) -> int:
    """The C value of the `what` ("device", "resize", "pool", "format",
    "kind", "ep", "static_shapes", "device_io") called `text`."""
    from_name, _, _, ctype = _TABLES[what]
    if not isinstance(text, str):
        text = repr(text)  # C then says it is unknown and lists the valid names
    out = ffi.new(ctype)
    check(from_name(c_name(text, what), out))
    return int(out[0])


def name(what: str, number: int) -> str:
    """The name of C value `number` of `what`; ValueError when it has none."""
    found = _TABLES[what][1](number)
    if found == ffi.NULL:
        raise ValueError(f"{what} value {number} has no name")
    return ffi.string(found).decode()


def table(what: str) -> Dict[str, int]:
    """{name: value} of every valid name of `what`, in value order."""
    return {n: value(what, n) for n in _names(what)}
