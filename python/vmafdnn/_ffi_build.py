"""Build-time only: writes the C source of the cffi extension (API mode).

Called by meson as ``python _ffi_build.py HEADER... OUTPUT.c``. The cdef is made
from the public header itself, so the binding can never drift from the C API:
preprocessor lines are dropped (except integer #defines, which cffi
understands), as are the C++ guards and the export macro.
"""
import os
import re
import sys

import cffi


def cdef_from_header(text: str) -> str:
    lines = []
    skip_depth = 0
    for line in text.splitlines():
        stripped = line.strip()
        if skip_depth:
            if stripped.startswith("#if"):
                skip_depth += 1
            elif stripped.startswith("#endif"):
                skip_depth -= 1
            continue
        if stripped.startswith("#ifdef __cplusplus"):
            skip_depth = 1
            continue
        if stripped.startswith("#"):
            if re.fullmatch(r"#define\s+\w+\s+-?\d+", stripped):
                lines.append(stripped)
            continue
        lines.append(line.replace("VMAF_DNN_API ", ""))
    return "\n".join(lines)


def main(header_paths, output_path: str) -> None:
    ffibuilder = cffi.FFI()
    includes = []
    for path in header_paths:
        with open(path, encoding="utf-8") as f:
            ffibuilder.cdef(cdef_from_header(f.read()))
        includes.append(f"#include <vmafdnn/{os.path.basename(path)}>")
    # The release of pictures read with vmaf_dnn_read_pictures_kept, in Python
    # (vmafdnn.context): the one callback from C into Python.
    ffibuilder.cdef('extern "Python" void _vmafdnn_pictures_released(void *);')
    ffibuilder.set_source("vmafdnn._vmafdnn_cffi", "\n".join(includes))
    ffibuilder.emit_c_code(output_path)


if __name__ == "__main__":
    main(sys.argv[1:-1], sys.argv[-1])
