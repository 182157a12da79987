"""CUDA and cuDNN from the ``nvidia-*`` wheels, for an ONNX Runtime GPU build.

``pip install onnxruntime-gpu[cuda,cudnn]`` puts CUDA and cuDNN into
``site-packages/nvidia/.../lib``, which is on no loader path: ORT's own
Python module loads them (``onnxruntime.preload_dlls()``) before its CUDA
provider needs them. The C library loads ``libonnxruntime.so`` without that
module, so without this the CUDA EP would be declined ("Failed to load shared
library") on exactly the installation its vendor documents.

The libraries loaded are exactly the ones ORT's table names for the CUDA
major its provider links (libcudart.so.N in the provider's dynamic strings;
nothing when that cannot be read), in dependency order, from the ``nvidia``
folders of the installation ORT came from and of this interpreter's
site-packages: never from the import path, whose first entry is the current
directory under ``python -m``. The provider then finds them by soname. A
library the process can already load by soname (``LD_LIBRARY_PATH``, the
system's CUDA) is left to the loader. Callers load them only for devices
that can bind CUDA (`needs_cuda`), once per process.
"""
import ctypes
import glob
import os
import re
import site
from typing import Iterable, List, Optional, Tuple

# cuFFT's soname major per CUDA major (ORT's own table); cuRAND and cuDNN keep theirs.
CUFFT_MAJOR = {11: 10, 12: 11, 13: 12}

#: What preload() did in this process: (path, "loaded" or the reason it was not).
LOADED: List[Tuple[str, str]] = []


def needs_cuda(device: Optional[str]) -> bool:
    """Whether opening on `device` may append the CUDA EP (its chain has a CUDA step)."""
    return device in ("auto", "cuda", "tensorrt-rtx") or str(device).startswith("policy:")


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
    m = re.search(rb"libcudart\.so\.([0-9]+)\x00", head)
    return int(m.group(1)) if m else None


def sonames(major: int) -> List[str]:
    """What the CUDA provider of `major` links or opens, in dependency order (cuBLAS needs
    cuBLASLt; cuDNN loads its sub-libraries itself)."""
    names = [f"libcudart.so.{major}", f"libcublasLt.so.{major}", f"libcublas.so.{major}"]
    if major in CUFFT_MAJOR:
        names.append(f"libcufft.so.{CUFFT_MAJOR[major]}")
    return names + ["libcurand.so.10", f"libnvrtc.so.{major}", "libcudnn.so.9"]


def install_roots(ort_library: Optional[str]) -> List[str]:
    """The folder holding the ``onnxruntime`` package ORT came from (``<root>/onnxruntime/
    capi/libonnxruntime.so...``), then this interpreter's site-packages folders."""
    roots = []
    if ort_library:
        capi = os.path.dirname(os.path.abspath(ort_library))
        if os.path.basename(capi) == "capi" and \
                os.path.basename(os.path.dirname(capi)) == "onnxruntime":
            roots.append(os.path.dirname(os.path.dirname(capi)))
    try:
        roots += site.getsitepackages()
    except AttributeError:  # an interpreter without site's helpers (some embedders)
        pass
    user = getattr(site, "getusersitepackages", lambda: None)()
    if user:
        roots.append(user)
    seen = []
    for r in roots:
        if r and os.path.isabs(r) and r not in seen:
            seen.append(r)
    return seen


def wheel_library_dirs(roots: Iterable[str]) -> List[str]:
    """``nvidia/<package>/lib`` folders under `roots` (CUDA 12's one package per library and
    CUDA 13's ``nvidia/cu13``), the first root's first."""
    found = []
    for root in roots:
        for d in sorted(glob.glob(os.path.join(glob.escape(root), "nvidia", "*", "lib"))):
            if d not in found and os.path.isdir(d):
                found.append(d)
    return found


def _by_soname(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def preload(ort_library: Optional[str], roots: Optional[Iterable[str]] = None
            ) -> List[Tuple[str, str]]:
    """Loads the CUDA libraries of the nvidia-* wheels for a GPU build of ORT; returns the new
    entries of LOADED. Nothing for a CPU build, for a provider whose CUDA major cannot be read,
    or when no such wheel is installed. Never raises (what failed is in LOADED)."""
    provider = cuda_provider(ort_library)
    major = cuda_major(provider) if provider else None
    if major is None:
        return []
    done = []
    dirs = wheel_library_dirs(install_roots(ort_library) if roots is None else roots)
    for soname in sonames(major):
        # Regular files only: a FIFO of that name would block dlopen for ever.
        path = next((p for p in (os.path.join(d, soname) for d in dirs) if os.path.isfile(p)),
                    None)
        if path is None:
            continue
        if _by_soname(soname):
            done.append((path, f"left to the loader: {soname} loads by name"))
            continue
        try:
            ctypes.CDLL(path)
            done.append((path, "loaded"))
        except OSError as e:
            done.append((path, f"not loaded: {e}"))
    LOADED.extend(done)
    return done
