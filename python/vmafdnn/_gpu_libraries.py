"""CUDA and cuDNN from the ``nvidia-*`` wheels, for an ONNX Runtime GPU build.

``pip install onnxruntime-gpu[cuda,cudnn]`` puts CUDA and cuDNN into
``site-packages/nvidia/.../lib``, which is on no loader path: ORT's own
Python module loads them (``onnxruntime.preload_dlls()``) before its CUDA
provider needs them. The C library loads ``libonnxruntime.so`` without that
module, so without this the CUDA EP would be declined ("Failed to load shared
library") on exactly the installation its vendor documents. The libraries are
loaded here, RTLD_GLOBAL, in dependency order, before ORT is asked for CUDA;
the provider then finds them by soname. A library the process can already
load by soname (``LD_LIBRARY_PATH``, the system's CUDA) is left to the loader.
"""
import ctypes
import glob
import os
import re
import sys
from typing import Iterable, List, Optional

# The sonames' stems the CUDA provider links or dlopens (ORT's preload list), in the order their
# own dependencies need: cuBLAS needs cuBLASLt, cuDNN loads its sub-libraries itself.
STEMS = ("libcudart.so", "libcublasLt.so", "libcublas.so", "libcufft.so", "libcurand.so",
         "libnvrtc.so", "libcudnn.so")
# These carry the CUDA major in their soname: only the provider's own (12 or 13) will do.
CUDA_MAJOR_STEMS = ("libcudart.so", "libcublasLt.so", "libcublas.so", "libnvrtc.so")

#: What preload() did in this process: (path, "loaded" or the reason it was not).
LOADED: List[tuple] = []


def cuda_provider(ort_library: Optional[str]) -> Optional[str]:
    """ORT's GPU wheels ship the CUDA provider next to libonnxruntime.so."""
    if not ort_library:
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(ort_library)),
                        "libonnxruntime_providers_cuda.so")
    return path if os.path.isfile(path) else None


def cuda_major(provider: str) -> Optional[int]:
    """The CUDA major the provider links (libcudart.so.N in its dynamic strings, which sit in
    the first pages of the file), None when it cannot be read."""
    try:
        with open(provider, "rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return None
    m = re.search(rb"libcudart\.so\.(\d+)", head)
    return int(m.group(1)) if m else None


def wheel_library_dirs(paths: Optional[Iterable[str]] = None) -> List[str]:
    """``nvidia/<package>/lib`` folders of the installed wheels (CUDA 12's one package per
    library and CUDA 13's ``nvidia/cu13``), first import-path entry first. Only absolute
    ``site-packages`` / ``dist-packages`` entries count: the current directory (``""`` on the
    path of ``python -m``, a clip folder perhaps) is never searched for code to load."""
    found = []
    for entry in (sys.path if paths is None else paths):
        if not (entry and os.path.isabs(entry)
                and os.path.basename(os.path.normpath(entry)) in ("site-packages",
                                                                 "dist-packages")):
            continue
        for d in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib"))):
            if d not in found and os.path.isdir(d):
                found.append(d)
    return found


def _by_soname(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def preload(ort_library: Optional[str], paths: Optional[Iterable[str]] = None) -> List[tuple]:
    """Loads the CUDA libraries of the nvidia-* wheels for a GPU build of ORT; returns the new
    entries of LOADED. Nothing for a CPU build, nothing when no such wheel is installed."""
    provider = cuda_provider(ort_library)
    if provider is None:
        return []
    major = cuda_major(provider)
    done = []
    dirs = wheel_library_dirs(paths)
    for stem in STEMS:
        # The versioned sonames only (libcudart.so.13, not a development symlink), the highest
        # major first (CUDA 13's over 12's when both wheels are installed), one per stem.
        found = [(int(p.rsplit(".", 1)[1]), -i, p) for i, d in enumerate(dirs)
                 for p in glob.glob(os.path.join(d, stem + ".*"))
                 if os.path.basename(p).count(".") == 2 and p.rsplit(".", 1)[1].isdigit()
                 and os.path.isfile(p)]  # a FIFO would block dlopen for ever
        if major is not None and stem in CUDA_MAJOR_STEMS:
            found = [c for c in found if c[0] == major]
        if not found:
            continue
        path = max(found)[2]
        soname = os.path.basename(path)
        if _by_soname(soname):
            done.append((path, f"left to the loader: {soname} loads by name"))
            continue
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            done.append((path, "loaded"))
        except OSError as e:
            done.append((path, f"not loaded: {e}"))
    LOADED.extend(done)
    return done
