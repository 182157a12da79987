"""CUDA from the nvidia-* wheels for a GPU build of ONNX Runtime (vmafdnn/_gpu_libraries.py and
its call in _native.ensure_ort).

No CUDA here: the wheels' layout is built from tiny shared objects that carry the real sonames
(libcublas.so.N linking libcublasLt.so.N, as cuBLAS does), next to a stand-in GPU build of ORT
(onnxruntime/capi/libonnxruntime_providers_cuda.so naming libcudart.so.N in its dynamic
strings). What a process loaded is read from its /proc/self/maps, in a child process.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def shared_object(path, soname, needs=(), marker=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.parent / (soname + ".c")
    body = f"int {soname.replace('.', '_')}_marker(void) {{ return 1; }}\n"
    if marker:  # a library that must never be loaded says so when it is
        body += ("#include <stdio.h>\n__attribute__((constructor)) static void ran(void) "
                 f"{{ FILE *f = fopen(\"{marker}\", \"w\"); if (f) fclose(f); }}\n")
    src.write_text(body)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(path), str(src), f"-Wl,-soname,{soname}",
                    *map(str, needs)], check=True)


def fake_ort(root, major):
    """A stand-in GPU build: <root>/onnxruntime/capi/{libonnxruntime.so.1.31.1, provider}."""
    capi = root / "onnxruntime" / "capi"
    capi.mkdir(parents=True, exist_ok=True)
    (capi / "libonnxruntime.so.1.31.1").write_bytes(b"not a library")
    (capi / "libonnxruntime_providers_cuda.so").write_bytes(
        b"\x7fELF" + b"\0" * 100 + f"libcublasLt.so.{major}\0libcudart.so.{major}\0".encode())
    return capi / "libonnxruntime.so.1.31.1"


@pytest.fixture()
def layout(tmp_path):
    """CUDA 13 in nvidia/cu13 and CUDA 12's per-library packages side by side, cuDNN 9."""
    site = tmp_path / "lib" / "site-packages"
    cu13 = site / "nvidia" / "cu13" / "lib"
    shared_object(cu13 / "libcudart.so.13", "libcudart.so.13")
    shared_object(cu13 / "libcublasLt.so.13", "libcublasLt.so.13")
    shared_object(cu13 / "libcublas.so.13", "libcublas.so.13", needs=[cu13 / "libcublasLt.so.13"])
    shared_object(cu13 / "libcufft.so.12", "libcufft.so.12")
    shared_object(site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12", "libcudart.so.12")
    shared_object(site / "nvidia" / "cufft" / "lib" / "libcufft.so.11", "libcufft.so.11")
    cudnn = site / "nvidia" / "cudnn" / "lib"
    shared_object(cudnn / "libcudnn.so.9", "libcudnn.so.9")
    (cudnn / "libcudnn.so").symlink_to("libcudnn.so.9")  # a development link: not loaded
    os.mkfifo(site / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13")  # would block dlopen
    return {"site": site, "ort": fake_ort(site, 13)}


def child(code, cwd=None, **env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                         env={**os.environ, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def system_has(soname):
    """Whether a fresh process finds `soname` on its own loader path (a machine with CUDA
    installed, as this project's development machine has): then it is left to the loader."""
    return child(f"import ctypes, json\ntry:\n    ctypes.CDLL({soname!r}); ok = True\n"
                 f"except OSError:\n    ok = False\nprint(json.dumps(ok))")


def expected(names):
    return {n: f"left to the loader: {n} loads by name" if system_has(n) else "loaded"
            for n in names}


PRELOAD = """
import json
from vmafdnn import _gpu_libraries as g
done = g.preload({ort!r}, {roots!r})
print(json.dumps({{"done": done,
                   "maps": sorted({{l.split()[-1] for l in open('/proc/self/maps') if '.so' in l}})}}))
"""


def preload(ort, roots=None, **env):
    got = child(PRELOAD.format(ort=str(ort), roots=roots), **env)
    return [(os.path.basename(p), s) for p, s in got["done"]], got["maps"]


def test_a_gpu_build_loads_its_cuda_majors_libraries_from_its_own_installation(layout):
    done, maps = preload(layout["ort"])  # roots: the ORT package's folder, then site's
    names = ["libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcufft.so.12",
             "libcudnn.so.9"]
    assert done == list(expected(names).items())  # in dependency order, nothing else
    ours = {os.path.basename(p) for p in maps if p.startswith(str(layout["site"]))}
    assert ours == {n for n, s in done if s == "loaded"}
    assert not {"libcudart.so.12", "libcufft.so.11"} & ours  # the other CUDA major's


def test_a_cuda_12_provider_takes_cuda_12s_libraries_beside_13s(layout):
    ort = fake_ort(layout["site"], 12)
    done, _ = preload(ort)
    assert [n for n, _ in done] == ["libcudart.so.12", "libcufft.so.11", "libcudnn.so.9"]


def test_a_cpu_build_or_an_unreadable_major_loads_nothing(layout):
    provider = layout["ort"].parent / "libonnxruntime_providers_cuda.so"
    provider.write_bytes(b"\x7fELF no runtime named here")
    assert preload(layout["ort"])[0] == []
    provider.unlink()
    done, maps = preload(layout["ort"])
    assert done == [] and not any(p.startswith(str(layout["site"])) for p in maps)


def test_a_library_the_loader_finds_by_name_is_left_to_it(layout):
    done, _ = preload(layout["ort"], LD_LIBRARY_PATH=str(layout["site"] / "nvidia" / "cudnn" / "lib"))
    assert dict(done)["libcudnn.so.9"] == "left to the loader: libcudnn.so.9 loads by name"


def test_roots_with_glob_characters_are_searched_literally(tmp_path):
    site = tmp_path / "odd[1]*" / "site-packages"
    shared_object(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", "libcudnn.so.9")
    ort = fake_ort(site, 13)
    done, _ = preload(ort)
    assert [n for n, _ in done] == ["libcudnn.so.9"]


def test_the_current_directory_is_never_searched(tmp_path):
    """`python -m` puts the current directory on sys.path; a clip folder named site-packages
    holding nvidia/x/lib/libcudart.so.13 must stay inert (its constructor would leave a file),
    while the installation's own cuDNN is loaded (the preload did run)."""
    evil = tmp_path / "clips" / "site-packages"
    marker = tmp_path / "ran"
    shared_object(evil / "nvidia" / "x" / "lib" / "libcudart.so.13", "libcudart.so.13",
                  marker=marker)
    installed = tmp_path / "venv" / "site-packages"
    shared_object(installed / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", "libcudnn.so.9")
    got = child("""
import json, os, sys
sys.path.insert(0, os.getcwd())  # what python -m does
from vmafdnn import _gpu_libraries as g
from vmafdnn._native import ensure_ort
ensure_ort("auto")
print(json.dumps(g.LOADED))
""", cwd=evil, VMAFDNN_ORT_LIBRARY=str(fake_ort(installed, 13)))
    assert not marker.exists()
    assert [os.path.dirname(p) for p, _ in got] == [str(installed / "nvidia" / "cudnn" / "lib")]


def test_the_package_loads_them_only_for_a_device_that_can_bind_cuda(layout):
    """Through ensure_ort: nothing for "cpu" (a CPU-only process maps no CUDA), everything for
    "auto"; a preload that raises is recorded and leaves ORT loading alone."""
    got = child("""
import json
from vmafdnn import _gpu_libraries as g
from vmafdnn._native import ensure_ort
ensure_ort("cpu")
after_cpu = list(g.LOADED)
ensure_ort("auto")
print(json.dumps({"cpu": after_cpu, "auto": g.LOADED}))
""", VMAFDNN_ORT_LIBRARY=str(layout["ort"]))
    assert got["cpu"] == []
    assert [os.path.basename(p) for p, _ in got["auto"]][:3] == [
        "libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13"]


def test_a_failing_preload_neither_raises_nor_stops_other_threads():
    """ensure_ort is one step: a thread opening a CPU context while another thread's CUDA
    preload is slow waits for ORT instead of finding it unloaded; a preload that raises is
    recorded, and ORT (the real one) still loads. The CPU user starts once the preload has
    (an event, not a 0.1 s sleep, which a loaded machine could outlast before the CUDA
    user had begun: the CPU user then loaded ORT first)."""
    got = child("""
import json, threading, time
import vmafdnn
from vmafdnn import _gpu_libraries as g, _native
preloading = threading.Event()
def slow_then_broken(ort):
    preloading.set()
    time.sleep(0.5)
    raise ValueError("broken wheel layout")
g.preload = slow_then_broken
errors = []
def cuda_user():
    _native.ensure_ort("cuda")
def cpu_user():
    preloading.wait(60)
    try:
        with vmafdnn.Context(device="cpu", threads=1) as ctx:
            ctx.use_model("psnr_y")
    except Exception as e:
        errors.append(repr(e))
a, b = threading.Thread(target=cuda_user), threading.Thread(target=cpu_user)
a.start(); b.start(); a.join(); b.join()
print(json.dumps({"errors": errors, "available": vmafdnn.available(), "loaded": g.LOADED}))
""")
    assert got["errors"] == [] and got["available"] is True
    assert got["loaded"] == [["", "preload failed: ValueError('broken wheel layout')"]]


def test_info_devices_lists_what_the_chain_loaded(layout, tmp_path):
    """`vmafdnn info --devices` prints the libraries its --device's chain loaded (the preload
    runs before the list is printed, not after). The real CPU build of ORT is copied beside a
    stand-in CUDA provider, so the command runs whole and CUDA is declined honestly."""
    import vmafdnn
    real = vmafdnn.ort_library_path()
    capi = layout["ort"].parent
    for f in os.listdir(os.path.dirname(real)):
        if f.startswith("libonnxruntime") and "providers_cuda" not in f:
            shutil.copy(os.path.join(os.path.dirname(real), f), capi / f)
    ort = capi / os.path.basename(real)
    run = [sys.executable, "-m", "vmafdnn", "info", "--devices"]
    env = {**os.environ, "VMAFDNN_ORT_LIBRARY": str(ort)}
    auto = subprocess.run(run, capture_output=True, text=True, timeout=120, env=env)
    assert auto.returncode == 0, auto.stderr
    listed = [line for line in auto.stdout.splitlines() if "CUDA library of an nvidia-* wheel" in line]
    assert [line.split(": ")[1].rsplit("/", 1)[1] for line in listed] == [
        "libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcufft.so.12",
        "libcudnn.so.9"]
    assert "CUDA: not available" in auto.stdout  # the stand-in provider does not load
    cpu = subprocess.run(run + ["--device", "cpu"], capture_output=True, text=True, timeout=120,
                         env=env)
    assert cpu.returncode == 0, cpu.stderr
    assert "CUDA library" not in cpu.stdout  # a CPU chain loads none
