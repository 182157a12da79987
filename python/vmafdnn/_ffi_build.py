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


# The release of pictures read with vmaf_dnn_read_pictures_kept (vmafdnn.context): a flag
# in C memory that the library's release sets, which Python reads after the call returns.
# No Python runs inside the library's calls: a release is made deep inside one (while the
# GIL is released), where a Python callback lost the KeyboardInterrupt that Ctrl-C raised
# at its first line (cffi printed it and went on: the scoring ran to its end, the frame
# stayed held), and crashed the process when a daemon thread's call released a frame after
# the interpreter was finalised. The flag is malloc'ed, not Python memory, so a release
# after finalisation writes where it may; it is freed by Python once read.
KEPT_CDEF = """
void *vdnn_py_kept_new(void);
void vdnn_py_kept_free(void *kept);
int vdnn_py_kept_released(const void *kept);
void vdnn_py_kept_release(void *kept);
"""
KEPT_SOURCE = r"""
#include <stdlib.h>

void *vdnn_py_kept_new(void)
{
    return calloc(1, sizeof(int));
}

void vdnn_py_kept_free(void *kept)
{
    free(kept);
}

int vdnn_py_kept_released(const void *kept)
{
    return __atomic_load_n((const int *)kept, __ATOMIC_ACQUIRE);
}

/* The VmafDnnPicturesRelease the library calls, on the thread of a call on the context */
void vdnn_py_kept_release(void *kept)
{
    __atomic_store_n((int *)kept, 1, __ATOMIC_RELEASE);
}
"""


def main(header_paths, output_path: str) -> None:
    ffibuilder = cffi.FFI()
    includes = []
    for path in header_paths:
        with open(path, encoding="utf-8") as f:
            ffibuilder.cdef(cdef_from_header(f.read()))
        includes.append(f"#include <vmafdnn/{os.path.basename(path)}>")
    ffibuilder.cdef(KEPT_CDEF)
    ffibuilder.set_source("vmafdnn._vmafdnn_cffi", "\n".join(includes) + KEPT_SOURCE)
    ffibuilder.emit_c_code(output_path)


if __name__ == "__main__":
    main(sys.argv[1:-1], sys.argv[-1])
