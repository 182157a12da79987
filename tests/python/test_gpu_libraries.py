"""CUDA from the nvidia-* wheels for a GPU build of ONNX Runtime (vmafdnn/_gpu_libraries.py).

No CUDA here: the wheels' layout is built from tiny shared objects that carry the real sonames
(libcublas.so.13 linking libcublasLt.so.13, as cuBLAS does), next to a stand-in GPU build of ORT
(a libonnxruntime_providers_cuda.so naming libcudart.so.13). What the process loaded is read from
/proc/self/maps of a child process.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def shared_object(path, soname, needs=()):
    src = path.parent / (soname + ".c")
    src.write_text(f"int {soname.replace('.', '_')}_marker(void) {{ return 1; }}\n")
    cmd = ["cc", "-shared", "-fPIC", "-o", str(path), str(src), f"-Wl,-soname,{soname}"]
    for dep in needs:
        cmd += [str(dep)]
    subprocess.run(cmd, check=True)


@pytest.fixture()
def layout(tmp_path):
    site = tmp_path / "lib" / "site-packages"
    cu13 = site / "nvidia" / "cu13" / "lib"
    cu12 = site / "nvidia" / "cuda_runtime" / "lib"
    cudnn = site / "nvidia" / "cudnn" / "lib"
    for d in (cu13, cu12, cudnn):
        d.mkdir(parents=True)
    shared_object(cu13 / "libcudart.so.13", "libcudart.so.13")
    shared_object(cu12 / "libcudart.so.12", "libcudart.so.12")
    shared_object(cu13 / "libcublasLt.so.13", "libcublasLt.so.13")
    shared_object(cu13 / "libcublas.so.13", "libcublas.so.13", needs=[cu13 / "libcublasLt.so.13"])
    shared_object(cudnn / "libcudnn.so.9", "libcudnn.so.9")
    (cudnn / "libcudnn.so").symlink_to("libcudnn.so.9")  # a development link: not loaded
    os.mkfifo(cudnn / "libcufft.so.12")  # would block dlopen for ever: skipped
    ort = tmp_path / "ort"
    ort.mkdir()
    (ort / "libonnxruntime.so.1.31.1").write_bytes(b"not a library")
    provider = ort / "libonnxruntime_providers_cuda.so"
    provider.write_bytes(b"\x7fELF" + b"\0" * 100 + b"libcublasLt.so.13\0libcudart.so.13\0")
    return {"site": site, "ort": ort / "libonnxruntime.so.1.31.1", "provider": provider}


def child(code, **env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


MAPS = "[l.split()[-1] for l in open('/proc/self/maps') if '.so' in l]"
SONAMES = ["libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcudnn.so.9"]


def system_has(soname):
    """Whether a fresh process finds `soname` on its own loader path (a machine with CUDA
    installed, as this project's development machine has): then it is left to the loader."""
    return child(f"import ctypes, json\ntry:\n    ctypes.CDLL({soname!r}); ok = True\n"
                 f"except OSError:\n    ok = False\nprint(json.dumps(ok))")


def expected_states():
    return {n: "left to the loader: " + n + " loads by name" if system_has(n) else "loaded"
            for n in SONAMES}


def test_a_gpu_build_loads_the_wheels_libraries_of_its_cuda_major(layout):
    got = child(f"""
import json
from vmafdnn import _gpu_libraries as g
done = g.preload({str(layout['ort'])!r}, [{str(layout['site'])!r}])
print(json.dumps({{"done": done, "maps": {MAPS}}}))
""")
    names = {os.path.basename(p): state for p, state in got["done"]}
    assert names == expected_states(), got["done"]
    # In dependency order (cuBLAS needs cuBLASLt, which is on no loader path).
    order = [os.path.basename(p) for p, _ in got["done"]]
    assert order.index("libcublasLt.so.13") < order.index("libcublas.so.13")
    ours = {os.path.basename(p) for p in got["maps"] if p.startswith(str(layout["site"]))}
    assert ours == {n for n, state in names.items() if state == "loaded"}
    assert "libcudart.so.12" not in ours  # another CUDA major than the provider's


def test_a_cpu_build_loads_nothing(layout):
    layout["provider"].unlink()
    got = child(f"""
import json
from vmafdnn import _gpu_libraries as g
print(json.dumps({{"done": g.preload({str(layout['ort'])!r}, [{str(layout['site'])!r}]),
                   "maps": {MAPS}}}))
""")
    assert got["done"] == []
    assert not any("cudart" in p for p in got["maps"])


def test_a_library_the_loader_finds_by_name_is_left_to_it(layout):
    got = child(f"""
import json
from vmafdnn import _gpu_libraries as g
print(json.dumps(g.preload({str(layout['ort'])!r}, [{str(layout['site'])!r}])))
""", LD_LIBRARY_PATH=str(layout["site"] / "nvidia" / "cudnn" / "lib"))
    states = {os.path.basename(p): s for p, s in got}
    assert states["libcudnn.so.9"].startswith("left to the loader"), states


def test_only_site_packages_entries_are_searched(layout, tmp_path, monkeypatch):
    """The current directory (sys.path's "" under `python -m`) and other folders on the path
    are never searched for libraries to load: a clip folder holding nvidia/x/lib/... is inert."""
    from vmafdnn import _gpu_libraries as g
    other = tmp_path / "clips"
    (other / "nvidia" / "x" / "lib").mkdir(parents=True)
    monkeypatch.chdir(other)
    site = str(layout["site"])
    assert g.wheel_library_dirs(["", ".", str(other), site]) == [
        os.path.join(site, "nvidia", n, "lib") for n in ("cu13", "cuda_runtime", "cudnn")]


def test_the_package_preloads_before_it_loads_ort(layout):
    """Through the package: VMAFDNN_ORT_LIBRARY names the GPU build; its CUDA libraries are
    loaded from the wheels on the import path, and `vmafdnn info --devices` would list them.
    (The stand-in ORT itself does not load: available() says so, nothing crashes.)"""
    got = child(f"""
import json, vmafdnn
from vmafdnn import _gpu_libraries as g
print(json.dumps({{"available": vmafdnn.available(), "loaded": g.LOADED}}))
""", VMAFDNN_ORT_LIBRARY=str(layout["ort"]),
        PYTHONPATH=os.pathsep.join([str(layout["site"])] + sys.path))
    assert got["available"] is False
    assert {os.path.basename(p): s for p, s in got["loaded"]} == expected_states()
