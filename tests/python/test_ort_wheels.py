"""libvmafdnn against each ONNX Runtime wheel, each in its own environment.

The onnxruntime (oldest and newest supported), onnxruntime-openvino and
onnxruntime-gpu wheels cannot share an environment, so tools/make_ort_envs.sh
makes one per wheel and these tests drive vmafdnn there through a subprocess
(tests/python/ort_envs.py). An environment that is not provisioned is a skip
locally and a failure in CI (CI set); everything else is asserted.

Expectations measured on a 2-vCPU x86-64 machine without GPU or CUDA driver
(the product notes' "Measured facts"): the CPU wheels decline every other EP at
append; the OpenVINO wheel binds its CPU device but not its GPU; the GPU wheel
with the nvidia-*-cu12 libraries appends CUDA, then fails to create the
session, and libvmafdnn retries on the CPU.
"""
import ctypes
import glob
import errno
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import ort_envs

#: environment name -> (distribution, version) that make_ort_envs.sh installs
ENVS = {
    "ort-1.20.1": ("onnxruntime", "1.20.1"),
    "ort-1.31.1": ("onnxruntime", "1.31.1"),
    "openvino": ("onnxruntime-openvino", "1.24.1"),
    "gpu-cu12": ("onnxruntime-gpu", "1.26.0"),
    "openvino-plugin": ("onnxruntime-ep-openvino", "1.8.1"),
    "webgpu-plugin": ("onnxruntime-ep-webgpu", "0.4.0"),
}
#: The ORT version of environments named after another distribution.
ORT_VERSION = {"openvino-plugin": "1.32.0", "webgpu-plugin": "1.32.0"}
CPU_WHEELS = ["ort-1.20.1", "ort-1.31.1"]
HEADERS_API_VERSION = 29  # ORT_API_VERSION of the headers libvmafdnn is built with

#: The EPs each device setting tries, in order, before settling on the CPU EP
#: when none of them is available.
TRIED_BEFORE_CPU = {
    "auto": ["CUDA", "NvTensorRTRTX:GPU", "OpenVINO:GPU", "OpenVINO:NPU", "OpenVINO:CPU",
             "MIGraphX:GPU", "ROCm", "WebGpu:GPU"],
    "cpu": [],
    "cuda": ["CUDA"],
    "openvino": ["OpenVINO:GPU", "OpenVINO:NPU", "OpenVINO:CPU"],
    "rocm": ["ROCm", "MIGraphX:GPU"],
    "openvino-cpu": ["OpenVINO:CPU"],
    "openvino-gpu": ["OpenVINO:GPU"],
    "webgpu": ["WebGpu:GPU"],
    "tensorrt-rtx": ["NvTensorRTRTX:GPU"],
    "migraphx": ["MIGraphX:GPU", "ROCm"],
}
DEVICES = list(TRIED_BEFORE_CPU)
EP_NAMES = ("OpenVINO:GPU", "OpenVINO:NPU", "OpenVINO:CPU", "CUDA", "ROCm", "MIGraphX:GPU",
            "WebGpu:GPU", "NvTensorRTRTX:GPU", "ORT-policy")

OPENVINO_RTOL = 1e-4  # OpenVINO's CPU plugin vs the CPU EP / numpy


# --------------------------------------------------------------------------
# Environments and probes
# --------------------------------------------------------------------------

def require_env(name: str) -> ort_envs.OrtEnv:
    distribution, version = ENVS[name]
    env = ort_envs.find_env(name, distribution, version)
    if env is not None and name == "gpu-cu12" and not env.nvidia_library_dirs():
        env = None  # made without the CUDA libraries: not what the tests need
    if env is None:
        message = (f"ONNX Runtime environment {name!r} ({distribution}=={version} with vmafdnn) "
                   f"is not provisioned under {ort_envs.cache_dir()}/envs: "
                   f"run {ort_envs.MAKE_ENVS}")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return env


def cuda_loader_path(env: ort_envs.OrtEnv) -> dict:
    """LD_LIBRARY_PATH with the env's nvidia-* library folders first, so that
    ORT's dlopen of libonnxruntime_providers_cuda.so finds cudart, cuBLAS,
    cuDNN, ... (the loader reads it at process start: set for the child)."""
    dirs = env.nvidia_library_dirs()
    if os.environ.get("LD_LIBRARY_PATH"):
        dirs.append(os.environ["LD_LIBRARY_PATH"])
    return {"LD_LIBRARY_PATH": os.pathsep.join(dirs)}


def tried_eps(fallback_reason: str):
    """[(ep, rest of line)] for each line of a fallback reason."""
    tried = []
    for line in fallback_reason.splitlines():
        assert line.strip(), (f"blank line in fallback_reason {fallback_reason!r}: one line per "
                              f"EP; ORT's message must be trimmed of its trailing newline")
        ep = next((n for n in EP_NAMES if line.startswith(n + ": ")), None)
        assert ep is not None, f"fallback line names no known EP: {line!r}"
        tried.append((ep, line[len(ep) + 2:]))
    return tried


def assert_same_place(path: str, folder: str):
    assert os.path.dirname(os.path.realpath(path)) == os.path.realpath(folder), path


def as_lists(feeds):
    return {k: np.asarray(v, np.float32).tolist() for k, v in feeds.items()}


def conv_mean_reference(x: np.ndarray) -> float:
    """What tests/models/factory.conv_mean computes: 3x3 box blur (zero
    padding) then the mean, in float64."""
    padded = np.pad(x[0, 0].astype(np.float64), 1)
    h, w = x.shape[2:]
    blurred = sum(padded[i:i + h, j:j + w] for i in range(3) for j in range(3)) / 9.0
    return float(blurred.mean())


RNG = np.random.default_rng(20240611)
IDENTITY_X = np.linspace(-3.5, 3.5, 8, dtype=np.float32)
TWO_A = RNG.standard_normal(4).astype(np.float32)
TWO_B = RNG.standard_normal(4).astype(np.float32)
CONV_X = RNG.random((1, 1, 16, 16), dtype=np.float32)


def open_step(model, device="auto", feeds=None, **options):
    step = {"op": "open", "model": model, "device": device, **options}
    if feeds is not None:
        step["feeds"] = as_lists(feeds)
    return step


def assert_opened(result):
    assert "error" not in result, result.get("error")
    return result


# --------------------------------------------------------------------------
# CPU wheels: the oldest and the newest supported release
# --------------------------------------------------------------------------

@pytest.fixture(scope="module", params=CPU_WHEELS)
def cpu_wheel(request, models):
    """(env, probe): info, every device on identity, then the numeric checks."""
    env = require_env(request.param)
    steps = [{"op": "info"}]
    steps += [open_step(models.identity, d, {"x": IDENTITY_X}) for d in DEVICES]
    steps += [open_step(models.two_inputs, "auto", {"a": TWO_A, "b": TWO_B}),
              open_step(models.conv_mean, "auto", {"x": CONV_X})]
    return env, env.probe(steps)


def test_cpu_wheel_version_and_api(cpu_wheel):
    env, probe = cpu_wheel
    info = probe[0]
    assert info["available"], info["unavailable_reason"]
    assert info["ort_version"] == ENVS[env.name][1]
    minor = int(info["ort_version"].split(".")[1])
    assert info["api_version"] == min(minor, HEADERS_API_VERSION)


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_wheel_every_device_falls_back_to_cpu(cpu_wheel, device):
    _, probe = cpu_wheel
    result = assert_opened(probe[1 + DEVICES.index(device)])
    assert result["attached_ep"] == "CPU"
    tried = tried_eps(result["fallback_reason"])
    assert [ep for ep, _ in tried] == TRIED_BEFORE_CPU[device]
    if not tried:
        assert result["fallback_reason"] == ""
    for ep, text in tried:
        assert text.startswith("not available: ") and len(text) > len("not available: "), \
            f"{ep} declined without ORT's reason: {text!r}"
    assert result["outputs"]["y"] == IDENTITY_X.tolist()


def test_cpu_wheel_results_match_numpy(cpu_wheel):
    _, probe = cpu_wheel
    two, conv = probe[-2], probe[-1]
    assert two["outputs"]["diff"] == (TWO_A - TWO_B).tolist()  # fp32 subtraction is exact
    assert np.asarray(conv["outputs"]["score"]).shape == (1,)
    np.testing.assert_allclose(conv["outputs"]["score"][0], conv_mean_reference(CONV_X),
                               rtol=1e-6)


def test_cpu_wheel_prints_nothing(cpu_wheel):
    """ORT's log is silenced: declined EPs are reported, never printed."""
    _, probe = cpu_wheel
    assert probe.all_stderr() == ""


# --------------------------------------------------------------------------
# The Python layer finds ORT, and VMAFDNN_ORT_LIBRARY overrides it
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ENVS))
def test_python_finds_the_environments_own_ort(name):
    env = require_env(name)
    info = env.probe([{"op": "info"}])[0]
    assert info["available"], info["unavailable_reason"]
    assert info["ort_version"] == ORT_VERSION.get(name, ENVS[name][1])
    assert_same_place(info["ort_library_path"], env.ort_capi_dir)


def test_environment_variable_overrides_the_package(models):
    newest, oldest = require_env("ort-1.31.1"), require_env("ort-1.20.1")
    library = oldest.ort_library()
    probe = newest.probe([{"op": "info"}, open_step(models.identity, "cpu", {"x": IDENTITY_X})],
                         env={"VMAFDNN_ORT_LIBRARY": library})
    assert probe[0]["ort_version"] == "1.20.1"
    assert probe[0]["api_version"] == 20
    assert os.path.realpath(probe[0]["ort_library_path"]) == os.path.realpath(library)
    assert assert_opened(probe[1])["outputs"]["y"] == IDENTITY_X.tolist()
    assert probe.all_stderr() == ""


def test_environment_variable_naming_a_non_library(models, tmp_path):
    env = require_env("ort-1.31.1")
    bogus = tmp_path / "libonnxruntime.so.1.99.0"
    bogus.write_text("not a shared library\n")
    probe = env.probe([{"op": "info"}, open_step(models.identity)],
                      env={"VMAFDNN_ORT_LIBRARY": str(bogus)})
    assert probe[0]["available"] is False
    assert str(bogus) in probe[0]["unavailable_reason"]
    error = probe[1]["error"]
    assert error["type"] == "RuntimeNotFoundError"
    assert error["errno"] == errno.ENOSYS
    assert str(bogus) in error["message"]
    assert probe.all_stderr() == ""


# --------------------------------------------------------------------------
# onnxruntime-openvino: the CPU device binds, the GPU device does not
# --------------------------------------------------------------------------

OPENVINO_DEVICES = ["auto", "openvino", "openvino-cpu", "openvino-gpu", "cpu"]


@pytest.fixture(scope="module")
def openvino(models):
    env = require_env("openvino")
    steps = [open_step(models.conv_mean, d, {"x": CONV_X}) for d in OPENVINO_DEVICES]
    steps += [open_step(models.two_inputs, "openvino-cpu", {"a": TWO_A, "b": TWO_B}),
              open_step(models.identity, "openvino-cpu", {"x": IDENTITY_X})]
    probe = env.probe(steps)
    return {"conv": dict(zip(OPENVINO_DEVICES, probe.results)),
            "two_inputs": probe[-2], "identity": probe[-1], "stderr": probe.all_stderr()}


@pytest.mark.parametrize("device", ["auto", "openvino", "openvino-cpu"])
def test_openvino_cpu_binds(openvino, device):
    result = assert_opened(openvino["conv"][device])
    assert result["attached_ep"] == "OpenVINO:CPU"
    # Only the EPs tried before it (and declined) are listed.
    expected = TRIED_BEFORE_CPU[device][:TRIED_BEFORE_CPU[device].index("OpenVINO:CPU")]
    assert [ep for ep, _ in tried_eps(result["fallback_reason"])] == expected


def test_openvino_cpu_really_runs_the_graph(models):
    """ORT's own log (shown with VMAFDNN_ORT_LOG_LEVEL=1) says where the graph
    went: attached_ep only says which EP was appended."""
    env = require_env("openvino")
    probe = env.probe([open_step(models.conv_mean, "openvino-cpu", {"x": CONV_X})],
                      env={"VMAFDNN_ORT_LOG_LEVEL": "1"})
    assert assert_opened(probe[0])["attached_ep"] == "OpenVINO:CPU"
    log = probe[0]["stderr"]
    assert "[OpenVINO-EP] Choosing Device: CPU" in log
    assert "[OpenVINO-EP] Model is fully supported by OpenVINO" in log
    assert "[OpenVINO-EP] Loaded model to the plugin" in log


def test_openvino_gpu_falls_back_to_cpu(openvino):
    result = assert_opened(openvino["conv"]["openvino-gpu"])
    assert result["attached_ep"] == "CPU"
    [(ep, text)] = tried_eps(result["fallback_reason"])
    assert ep == "OpenVINO:GPU"
    assert text.startswith("not available: ") and len(text) > len("not available: ")


@pytest.mark.parametrize("device", ["auto", "openvino", "openvino-cpu"])
def test_openvino_results_match_numpy_and_the_cpu_ep(openvino, device):
    on_openvino = openvino["conv"][device]["outputs"]["score"][0]
    on_cpu = openvino["conv"]["cpu"]["outputs"]["score"][0]
    np.testing.assert_allclose(on_openvino, conv_mean_reference(CONV_X), rtol=OPENVINO_RTOL)
    np.testing.assert_allclose(on_openvino, on_cpu, rtol=OPENVINO_RTOL)


def test_openvino_exact_ops_are_exact(openvino):
    assert openvino["two_inputs"]["attached_ep"] == "OpenVINO:CPU"
    assert openvino["two_inputs"]["outputs"]["diff"] == (TWO_A - TWO_B).tolist()
    assert openvino["identity"]["outputs"]["y"] == IDENTITY_X.tolist()


def test_openvino_prints_nothing(openvino):
    assert openvino["stderr"] == ""


@pytest.fixture(scope="module")
def openvino_auto_models(tmp_path_factory):
    """score() of built-ins whose sidecar names a form for ORT's CPU EP (the library's kernels),
    with device auto in the onnxruntime-openvino environment, where AUTO's first step that
    binds is OpenVINO's CPU device (no Intel GPU or NPU here); frames in flight (threads 2) so
    that the models' copies open too. psnr_y is also scored with openvino-cpu asked for, and
    from a copy whose sidecar names no "CPU" form."""
    env = require_env("openvino")
    folder = tmp_path_factory.mktemp("no_cpu_form")
    models_dir = os.path.join(env.site_packages, "vmafdnn", "models")
    for name in ("psnr_y.onnx", "psnr_y_accel.onnx", "psnr_y_accel.json",
                 "psnr_y_kernels.onnx", "psnr_y_kernels.json"):
        shutil.copy(os.path.join(models_dir, name), folder / name)
    with open(os.path.join(models_dir, "psnr_y.json")) as f:
        sidecar = json.load(f)
    del sidecar["forms"]["CPU"]
    (folder / "psnr_y.json").write_text(json.dumps(sidecar))
    size = {"count": 4, "height": 72, "width": 96, "device_io": "auto", "threads": 2}
    steps = [{"op": "score", "model": m, "device": "auto", **size}
             for m in ("psnr_y", "ssim_y", "vmaf_features")]
    steps += [{"op": "score", "model": "psnr_y", "device": "openvino-cpu", **size},
              {"op": "score", "path": str(folder / "psnr_y.onnx"), "device": "auto", **size}]
    probe = env.probe(steps)
    return [assert_opened(r) for r in probe.results], probe.all_stderr()


@pytest.mark.parametrize("i, name", list(enumerate(["psnr_y", "ssim_y", "vmaf_features"])))
def test_openvino_cpu_device_gives_way_to_the_cpu_eps_own_form_under_auto(
        openvino_auto_models, i, name):
    """OpenVINO's CPU device runs on the same processor as ORT's CPU EP, and would get the
    accelerator form, written for GPUs, where ORT's CPU EP runs the library's fused kernels
    (VMAF at 1080p 5.6x slower through the CLI): under auto a model naming a form for ORT's
    CPU EP goes there, says so, and scores as device cpu does, bit for bit."""
    result = openvino_auto_models[0][i]
    assert result["attached_ep"] == "CPU", result["fallback_reason"]
    assert os.path.basename(result["form"]) == f"{name}_kernels.onnx"
    assert tried_eps(result["fallback_reason"]) == [
        ("OpenVINO:CPU", f"passed over for ORT's CPU EP, the same processor, where the model "
                         f"scores with its form {name}_kernels.onnx")]
    assert result["metrics"] == result["metrics_cpu"]


def test_openvino_cpu_device_asked_for_or_without_a_cpu_form_is_kept(openvino_auto_models):
    asked, no_cpu_form = openvino_auto_models[0][3:]
    for result in (asked, no_cpu_form):
        assert result["attached_ep"] == "OpenVINO:CPU", result["fallback_reason"]
        assert os.path.basename(result["form"]) == "psnr_y_accel.onnx"
        assert "passed over" not in result["fallback_reason"]
        np.testing.assert_allclose([m["psnr_y"] for m in result["metrics"]],
                                   [m["psnr_y"] for m in result["metrics_cpu"]], rtol=1e-5)
    assert openvino_auto_models[1] == ""


def test_cli_under_auto_says_what_it_passed_over(tmp_path):
    """The command line's summary under auto leaves out the EPs the machine lacks but says
    which CPU device it passed over for ORT's CPU EP."""
    env = require_env("openvino")
    rng = np.random.default_rng(5)
    paths = []
    for side in ("ref", "dist"):
        path = tmp_path / f"{side}.y4m"
        with open(path, "wb") as f:
            f.write(b"YUV4MPEG2 W64 H48 F25:1 Ip A1:1 Cmono\n")
            for _ in range(3):
                f.write(b"FRAME\n" + rng.integers(0, 256, (48, 64), dtype=np.uint8).tobytes())
        paths.append(str(path))
    proc = subprocess.run([env.python, "-m", "vmafdnn", "-r", paths[0], "-d", paths[1],
                           "--tiny-model", "psnr_y"], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path), stdin=subprocess.DEVNULL,
                          env={k: v for k, v in os.environ.items()
                               if k not in ("VMAFDNN_ORT_LIBRARY", "PYTHONPATH")})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].endswith("psnr_y.onnx: fr, on CPU as psnr_y_kernels.onnx"), lines
    assert lines[1] == ("  fallback: OpenVINO:CPU: passed over for ORT's CPU EP, the same "
                        "processor, where the model scores with its form psnr_y_kernels.onnx")
    assert lines[2] == "frames: 3", lines


#: Which nodes OpenVINO:CPU takes of the built-ins (measured with
#: onnxruntime-openvino 1.24.1 on a 2-vCPU x86-64 machine). Appending the EP
#: is not running the graph: ORT gives the nodes OpenVINO cannot take to its
#: CPU EP. The Loop graphs (dynamic shapes) make OpenVINO's CPU plugin fail
#: at session creation ("Parameter operation with dynamic rank"), so the
#: library recreates them on the CPU EP: every node there. vmaf (an MLP with
#: a ReduceSum) binds, but OpenVINO takes 1 of its 28 nodes.
OPENVINO_BUILTIN_NODES = {
    "psnr_y": ("CPU", 24, 24),
    "ssim_y": ("CPU", 73, 73),
    "sharpness_nr": ("CPU", 36, 36),
    "vmaf_features": ("CPU", 2184, 2184),
    "vmaf": ("OpenVINO:CPU", 1, 28),
}

_BUILTIN_NODES_SCRIPT = """
import json, sys, vmafdnn
out = {}
for name in sys.argv[1:]:
    with vmafdnn.Session(str(vmafdnn.models.path(name)), device="openvino-cpu", threads=1) as s:
        nodes = getattr(s, "ep_nodes", "missing")
        out[name] = [s.attached_ep, None if nodes is None else
                     nodes if nodes == "missing" else list(nodes), s.fallback_reason]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def openvino_builtins():
    env = require_env("openvino")
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("VMAFDNN_ORT_LIBRARY", "VMAFDNN_ORT_LOG_LEVEL", "PYTHONPATH")}
    proc = subprocess.run([env.python, "-c", _BUILTIN_NODES_SCRIPT, *OPENVINO_BUILTIN_NODES],
                          capture_output=True, text=True, env=child_env,
                          cwd=tempfile.gettempdir(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    if any(nodes == "missing" for _, nodes, _ in result.values()):
        message = (f"vmafdnn in the openvino environment predates Session.ep_nodes: "
                   f"run {ort_envs.MAKE_ENVS}")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return result


@pytest.mark.parametrize("name", list(OPENVINO_BUILTIN_NODES))
def test_openvino_builtin_reports_its_true_node_share(openvino_builtins, name):
    """attached_ep names the EP that was appended and accepted; ep_nodes and
    the fallback reason say how much of the graph it really runs."""
    attached, nodes, reason = openvino_builtins[name]
    want_ep, want_on_ep, want_total = OPENVINO_BUILTIN_NODES[name]
    assert attached == want_ep, reason
    assert nodes == [want_on_ep, want_total], reason
    tried = tried_eps(reason)
    if attached == "CPU":
        [(ep, text)] = tried
        assert ep == "OpenVINO:CPU"
        assert text.startswith("session creation failed, retrying on CPU: "), text
        assert "dynamic rank" in text, text
    else:
        assert tried == [(attached, f"took {want_on_ep} of {want_total} nodes; the rest run "
                                    f"on ORT's CPU EP")]


@pytest.fixture(scope="module")
def openvino_fp16_io(models):
    """fp16_io also asks OpenVINO for precision=FP16 (the model's slots are
    FLOAT32, so the host-side cast itself is a no-op)."""
    env = require_env("openvino")
    probe = env.probe([open_step(models.conv_mean, "openvino-cpu", {"x": CONV_X}, fp16_io=True),
                       open_step(models.conv_mean, "cpu", {"x": CONV_X})]
                      + [open_step(models.conv_mean, d, {"x": CONV_X}, fp16_io=True)
                         for d in FP16_FALLBACK_DEVICES])
    assert probe.all_stderr() == ""
    return probe


#: Devices that try OpenVINO:GPU (declined here, with precision=FP16 among its
#: options) before OpenVINO:CPU.
FP16_FALLBACK_DEVICES = ["auto", "openvino"]


def test_openvino_fp16_io_still_opens_and_runs(openvino_fp16_io):
    result = assert_opened(openvino_fp16_io[0])
    assert result["config"]["fp16_io"] is True
    np.testing.assert_allclose(result["outputs"]["score"][0], conv_mean_reference(CONV_X),
                               rtol=OPENVINO_RTOL)


def test_openvino_cpu_keeps_binding_with_fp16_io(openvino_fp16_io):
    # OpenVINO's CPU device refuses precision=FP16 ("CPU only supports FP32,
    # ACCURACY"), so the library asks for it on the GPU device only.
    result = assert_opened(openvino_fp16_io[0])
    assert result["attached_ep"] == "OpenVINO:CPU", result["fallback_reason"]


@pytest.mark.parametrize("device", FP16_FALLBACK_DEVICES)
def test_openvino_cpu_binds_with_fp16_io_after_the_gpu_declines(openvino_fp16_io, device):
    """Each EP attempt starts from fresh session options: the declined
    OpenVINO:GPU append (precision=FP16) must leave nothing behind for the
    OpenVINO:CPU attempt, which refuses FP16 ("CPU only supports FP32")."""
    result = assert_opened(openvino_fp16_io[2 + FP16_FALLBACK_DEVICES.index(device)])
    assert result["attached_ep"] == "OpenVINO:CPU", result["fallback_reason"]
    expected = TRIED_BEFORE_CPU[device][:TRIED_BEFORE_CPU[device].index("OpenVINO:CPU")]
    assert [ep for ep, _ in tried_eps(result["fallback_reason"])] == expected
    np.testing.assert_allclose(result["outputs"]["score"][0], conv_mean_reference(CONV_X),
                               rtol=OPENVINO_RTOL)


# --------------------------------------------------------------------------
# onnxruntime-gpu (CUDA 12) without a GPU: append succeeds, CreateSession
# fails, the session is created again on the CPU with the same settings
# --------------------------------------------------------------------------

def loadable(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def cuda_driver_present() -> bool:
    return loadable("libcuda.so.1")


GPU_DEVICES = ["cuda", "auto", "cpu"]


@pytest.fixture(scope="module")
def gpu(models):
    env = require_env("gpu-cu12")
    steps = [open_step(models.conv_mean, d, {"x": CONV_X}, threads=1) for d in GPU_DEVICES]
    steps.append(open_step(models.two_inputs, "cuda", {"a": TWO_A, "b": TWO_B}, threads=1))
    probe = env.probe(steps, env=cuda_loader_path(env))
    return {"conv": dict(zip(GPU_DEVICES, probe.results)), "two_inputs": probe[-1],
            "stderr": probe.all_stderr()}


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_gpu_wheel_falls_back_after_create_session_fails(gpu, device):
    result = assert_opened(gpu["conv"][device])
    if cuda_driver_present() and result["attached_ep"] == "CUDA":
        pytest.skip("a CUDA device is usable here: the fallback cannot happen")
    assert result["attached_ep"] == "CPU"
    [(ep, text)] = tried_eps(result["fallback_reason"])
    assert ep == "CUDA"
    assert text.startswith("session creation failed, retrying on CPU: "), text
    if not cuda_driver_present():
        assert re.search(r"CUDA driver version is insufficient|cudaErrorInsufficientDriver",
                         text), text
    assert result["config"]["threads"] == 1
    assert result["config"]["device"] == device


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_gpu_wheel_fallback_results_are_bitwise_the_cpu_eps(gpu, device):
    on_cpu = assert_opened(gpu["conv"]["cpu"])
    assert on_cpu["attached_ep"] == "CPU" and on_cpu["fallback_reason"] == ""
    fallen_back = assert_opened(gpu["conv"][device])
    if fallen_back["attached_ep"] == "CPU":
        assert fallen_back["outputs"] == on_cpu["outputs"]
    assert gpu["two_inputs"]["outputs"]["diff"] == (TWO_A - TWO_B).tolist()


def test_gpu_wheel_prints_nothing(gpu):
    assert gpu["stderr"] == ""


def test_gpu_wheel_finds_cuda_in_the_nvidia_wheels_by_itself(models):
    """onnxruntime-gpu with CUDA and cuDNN from the nvidia-* wheels (CUDA 12's one package per
    library) and no loader path for them: the package loads them itself, so the CUDA EP
    appends and only the session fails here, for want of a GPU driver. Before, the append was
    declined ("not available: ... Failed to load shared library")."""
    env = require_env("gpu-cu12")
    if loadable("libcublasLt.so.12") or loadable("libcudnn.so.9"):
        pytest.skip("this machine has CUDA 12 libraries on its own loader path")
    if cuda_driver_present():
        pytest.skip("a CUDA driver is present: the session may bind")
    result = assert_opened(env.probe([open_step(models.identity, "cuda")])[0])
    assert result["attached_ep"] == "CPU"
    [(ep, text)] = tried_eps(result["fallback_reason"])
    assert ep == "CUDA" and text.startswith("session creation failed, retrying on CPU: "), text


def test_gpu_wheel_scores_vmafs_kernel_form_on_the_cpu_where_cuda_cannot_run():
    """VMAF's features through their kernels' form (VMAFDNN_MODEL_FORMS=CPU: the library's
    VifInteger, AdmInteger and MotionInteger) on device cuda in onnxruntime-gpu with no GPU: the
    CUDA step appends, the library's operators for it are asked for once it has (ops_for_ep:
    with no driver, the CPU variants), the session cannot be made and is made again on the
    CPU, and the features are the CPU EP's."""
    env = require_env("gpu-cu12")
    if cuda_driver_present():
        pytest.skip("a CUDA driver is present: the session may bind")
    step = {"op": "score", "model": "vmaf_features", "device": "cuda", "device_io": "auto",
            "count": 3, "height": 48, "width": 64}
    result = assert_opened(env.probe([step], env={**cuda_loader_path(env),
                                                  "VMAFDNN_MODEL_FORMS": "CPU"})[0])
    assert result["attached_ep"] == "CPU"
    assert result["metrics"] == result["metrics_cpu"]
    assert all(m["vif_scale0"] > 0 for m in result["metrics"]), result["metrics"]


GPU_NVRTC_TEST = os.environ.get(
    "VMAFDNN_GPU_NVRTC_TEST",
    os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                 "build-c", "tests", "c", "test_gpu_nvrtc"))


def test_nvrtc_library_that_is_no_regular_file_is_not_opened(tmp_path):
    """VMAFDNN_NVRTC_LIBRARY naming a FIFO (dlopen's blocking open would wait for a writer
    forever) or a folder: refused as no NVRTC library at once, the path and why in the
    message; nothing is opened (tests/c/test_gpu_nvrtc.c then skips, exit 77)."""
    if not os.access(GPU_NVRTC_TEST, os.X_OK):
        pytest.fail(f"{GPU_NVRTC_TEST} is not built (meson compile -C build-c)")
    fifo = tmp_path / "libnvrtc.so.12"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        proc = subprocess.run([GPU_NVRTC_TEST], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "VMAFDNN_NVRTC_LIBRARY": str(path)})
        assert proc.returncode == 77, proc.stdout + proc.stderr
        assert f"no NVRTC library (tried {path} (not a regular file)" in proc.stdout, proc.stdout


def test_nvrtc_of_the_gpu_wheels_compiles_the_librarys_gpu_kernels():
    """The library's GPU kernels (csrc/gpu), as it embeds them, compiled by the NVRTC that
    onnxruntime-gpu's CUDA packages bring (nvidia-cuda-nvrtc), as cuda_kernels.c compiles them
    on a GPU machine: tests/c/test_gpu_nvrtc.c with that library, no GPU needed."""
    env = require_env("gpu-cu12")
    libraries = sorted(path for folder in env.nvidia_library_dirs()
                       for path in glob.glob(os.path.join(folder, "libnvrtc.so.*"))
                       if re.search(r"/libnvrtc\.so\.\d+$", path))
    assert libraries, f"no libnvrtc.so.N in {env.nvidia_library_dirs()}"
    if not os.access(GPU_NVRTC_TEST, os.X_OK):
        pytest.fail(f"{GPU_NVRTC_TEST} is not built (meson compile -C build-c)")
    proc = subprocess.run([GPU_NVRTC_TEST], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "VMAFDNN_NVRTC_LIBRARY": libraries[-1],
                               "VMAFDNN_TEST_NVRTC_REQUIRED": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kernels = re.search(r"(\d+) kernels in the PTX", proc.stdout)
    assert kernels and int(kernels.group(1)) >= 3, proc.stdout


def test_gpu_wheel_registers_its_cuda_provider_when_a_chain_reaches_cuda():
    """onnxruntime-gpu's CUDA provider (beside libonnxruntime.so) is registered as a plugin EP
    library, source "ort", once a chain reaches its CUDA step, not before: a CPU-only process
    loads no CUDA. Without a GPU it offers no EP device, and the CUDA step appends the
    compiled-in EP as before (test_gpu_wheel_falls_back_after_create_session_fails)."""
    env = require_env("gpu-cu12")
    probe = env.probe([{"op": "eps", "device": "cpu"}, {"op": "eps", "device": "cuda"},
                       {"op": "eps", "device": "cpu"}], env=cuda_loader_path(env))
    assert [lib for lib in probe[0]["libraries"] if lib["source"] == "ort"] == []
    [provider] = [lib for lib in probe[2]["libraries"] if lib["source"] == "ort"]
    assert provider["name"] == "CUDAExecutionProvider", provider
    assert provider["path"] == os.path.join(env.ort_capi_dir, "libonnxruntime_providers_cuda.so")
    assert provider["status"] == 0 and provider["reason"] == "", provider
    if not cuda_driver_present():
        assert not [d for d in probe[2]["devices"] if d["ep_name"] == "CUDAExecutionProvider"]
        assert probe[1]["explain"].splitlines()[-1] == "CUDA: selected (built into ORT)"


# --------------------------------------------------------------------------
# onnxruntime 1.32 + onnxruntime-ep-openvino: a plugin EP installed the way
# its vendor documents, found and registered by vmafdnn by itself
# --------------------------------------------------------------------------

PLUGIN_PACKAGE = "onnxruntime_ep_openvino"


def host_cpu_is_intel() -> bool:
    """The OpenVINO plugin pairs only with Intel hardware (it offers an EP
    device for a hardware device of PCI vendor 0x8086 only), so whether it
    can bind here is the host's CPU vendor: the independent oracle of the
    tests below. On other CPUs the same tests assert the fallback instead."""
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("vendor_id") and "GenuineIntel" in line for line in f)


def builtin_model(env: ort_envs.OrtEnv, name: str) -> str:
    return os.path.join(env.site_packages, "vmafdnn", "models", name + ".onnx")


PLANE_A = RNG.random((1, 1, 64, 96), dtype=np.float32)
PLANE_B = np.clip(PLANE_A + RNG.normal(0, 0.03, PLANE_A.shape).astype(np.float32), 0, 1)
BUILTIN_FEEDS = {"psnr_y": {"reference": PLANE_A, "distorted": PLANE_B},
                 "ssim_y": {"reference": PLANE_A, "distorted": PLANE_B},
                 "sharpness_nr": {"distorted": PLANE_B}}
PLUGIN_DEVICES = ["auto", "openvino", "openvino-cpu", "cpu"]


@pytest.fixture(scope="module")
def plugin(models):
    env = require_env("openvino-plugin")
    steps = [{"op": "info"}, {"op": "eps"}]
    steps += [open_step(builtin_model(env, m), d, feeds)
              for m, feeds in BUILTIN_FEEDS.items() for d in PLUGIN_DEVICES]
    steps += [open_step(builtin_model(env, "ssim_y"), d, BUILTIN_FEEDS["ssim_y"], fp16_io=True)
              for d in ("auto", "openvino")]
    probe = env.probe(steps)
    opened = {(m, d): probe[2 + i * len(PLUGIN_DEVICES) + j]
              for i, m in enumerate(BUILTIN_FEEDS) for j, d in enumerate(PLUGIN_DEVICES)}
    return {"env": env, "info": probe[0], "eps": probe[1], "opened": opened,
            "fp16": dict(zip(("auto", "openvino"), probe.results[-2:])),
            "stderr": probe.all_stderr()}


def test_plugin_package_is_registered_by_itself(plugin):
    assert plugin["info"]["ort_version"] == ORT_VERSION["openvino-plugin"]
    [entry] = [e for e in plugin["eps"]["libraries"] if e["name"] == PLUGIN_PACKAGE]
    assert entry["status"] == 0, entry["reason"]
    assert entry["reason"] == "" and entry["source"] == "env"
    assert entry["path"].endswith("libonnxruntime_providers_openvino_plugin.so")
    assert plugin["eps"]["package_errors"] == {}


def test_plugin_ep_devices_are_listed(plugin):
    devices = plugin["eps"]["devices"]
    cpu = [d for d in devices if d["ep_name"] == "CPUExecutionProvider"]
    assert len(cpu) == 1 and cpu[0]["library"] is None and cpu[0]["attached_ep"] == "CPU"
    openvino = [d for d in devices if d["ep_name"] == "OpenVINOExecutionProvider"]
    if host_cpu_is_intel():
        [dev] = [d for d in openvino if d["device_type"] == "CPU"]
        assert dev["library"] == PLUGIN_PACKAGE and dev["attached_ep"] == "OpenVINO:CPU"
        assert dev["ep_vendor"] == "Intel" and dev["device_index"] == 0
    else:
        assert openvino == [], "the plugin offered a device on non-Intel hardware"


@pytest.mark.parametrize("model", list(BUILTIN_FEEDS))
@pytest.mark.parametrize("device", ["auto", "openvino", "openvino-cpu"])
def test_plugin_binds_openvino_on_the_cpu(plugin, model, device):
    result = assert_opened(plugin["opened"][(model, device)])
    tried = tried_eps(result["fallback_reason"])
    if host_cpu_is_intel():
        assert result["attached_ep"] == "OpenVINO:CPU", result["fallback_reason"]
        expected = TRIED_BEFORE_CPU[device][:TRIED_BEFORE_CPU[device].index("OpenVINO:CPU")]
        assert [ep for ep, _ in tried] == expected
    else:
        assert result["attached_ep"] == "CPU"
        assert [ep for ep, _ in tried] == TRIED_BEFORE_CPU[device]
        [why] = [text for ep, text in tried if ep == "OpenVINO:CPU"]
        assert "no plugin EP library offers a CPU device of OpenVINOExecutionProvider" in why


@pytest.mark.parametrize("model", list(BUILTIN_FEEDS))
@pytest.mark.parametrize("device", ["auto", "openvino", "openvino-cpu"])
def test_plugin_builtin_scores_match_the_cpu_ep(plugin, model, device):
    on_cpu = assert_opened(plugin["opened"][(model, "cpu")])
    assert on_cpu["attached_ep"] == "CPU" and on_cpu["fallback_reason"] == ""
    result = assert_opened(plugin["opened"][(model, device)])
    [(name, values)] = result["outputs"].items()
    np.testing.assert_allclose(values, on_cpu["outputs"][name], rtol=OPENVINO_RTOL, atol=1e-4)


@pytest.mark.parametrize("device", ["auto", "openvino"])
def test_plugin_fp16_io_binds_too(plugin, device):
    result = assert_opened(plugin["fp16"][device])
    assert result["config"]["fp16_io"] is True
    assert result["attached_ep"] == ("OpenVINO:CPU" if host_cpu_is_intel() else "CPU"), \
        result["fallback_reason"]
    on_cpu = plugin["opened"][("ssim_y", "cpu")]["outputs"]["ssim_y"]
    np.testing.assert_allclose(result["outputs"]["ssim_y"], on_cpu, rtol=OPENVINO_RTOL, atol=1e-4)


def test_plugin_explain_says_where_auto_goes(plugin):
    lines = plugin["eps"]["explain"].splitlines()
    if host_cpu_is_intel():
        assert lines[-1] == ("OpenVINO:CPU: selected (EP device of OpenVINOExecutionProvider "
                             f"from plugin library {PLUGIN_PACKAGE})")
    else:
        assert lines[-1] == "CPU: selected (built into ORT)"
    assert [line.split(": ")[0] for line in lines[:-1]] == \
        TRIED_BEFORE_CPU["auto"][:len(lines) - 1]


def test_plugin_prints_nothing(plugin):
    assert plugin["stderr"] == ""


def test_plugin_package_removed_falls_back_to_cpu_with_the_reason(models):
    """Without the package (here: not announced, VMAFDNN_NO_EP_PACKAGES=1)
    nothing offers an OpenVINO device: CPU, and the reason says so."""
    env = require_env("openvino-plugin")
    probe = env.probe([{"op": "eps"}, open_step(models.conv_mean, "openvino", {"x": CONV_X})],
                      env={"VMAFDNN_NO_EP_PACKAGES": "1"})
    assert [e for e in probe[0]["libraries"] if e["name"] == PLUGIN_PACKAGE] == []
    assert all(d["library"] is None for d in probe[0]["devices"])
    result = assert_opened(probe[1])
    assert result["attached_ep"] == "CPU"
    tried = dict(tried_eps(result["fallback_reason"]))
    assert "no plugin EP library offers a CPU device of OpenVINOExecutionProvider" in \
        tried["OpenVINO:CPU"]
    np.testing.assert_allclose(result["outputs"]["score"][0], conv_mean_reference(CONV_X),
                               rtol=1e-6)
    assert probe.all_stderr() == ""


def test_plugin_garbage_library_is_refused_and_cpu_still_works(models, tmp_path):
    env = require_env("openvino-plugin")
    garbage = tmp_path / "libgarbage_ep.so"
    garbage.write_text("not a shared library\n")
    probe = env.probe([{"op": "eps"},
                       {"op": "register", "name": "garbage2", "path": str(garbage)},
                       open_step(models.identity, "cpu", {"x": IDENTITY_X}),
                       open_step(models.identity, "auto", {"x": IDENTITY_X})],
                      env={"VMAFDNN_EP_LIBRARIES": f"garbage={garbage}"})
    [entry] = [e for e in probe[0]["libraries"] if e["name"] == "garbage"]
    assert entry["status"] == -errno.EIO and entry["source"] == "env"
    assert "ONNX Runtime refused plugin EP library" in entry["reason"]
    assert str(garbage) in entry["reason"]
    error = probe[1]["error"]
    assert error["errno"] == errno.EIO and str(garbage) in error["message"]
    # The user's list is kept, and the installed package is still registered.
    [package] = [e for e in probe[0]["libraries"] if e["name"] == PLUGIN_PACKAGE]
    assert package["status"] == 0
    assert assert_opened(probe[2])["outputs"]["y"] == IDENTITY_X.tolist()
    assert assert_opened(probe[3])["outputs"]["y"] == IDENTITY_X.tolist()
    assert probe.all_stderr() == ""


def test_ort_1_20_still_loads_without_plugin_eps(models, tmp_path):
    """ORT 1.20 has no EP ABI: registrations are refused with the reason,
    no EP device is listed, the chains are the compiled-in ones, and the
    selection-policy devices use the AUTO chain."""
    env = require_env("ort-1.20.1")
    library = tmp_path / "libsome_ep.so"
    library.write_text("never read\n")
    probe = env.probe([{"op": "eps"}, open_step(models.identity, "auto", {"x": IDENTITY_X}),
                       open_step(models.identity, "policy:prefer-gpu", {"x": IDENTITY_X})],
                      env={"VMAFDNN_EP_LIBRARIES": str(library)})
    [entry] = probe[0]["libraries"]
    assert entry["name"] == "some_ep" and entry["status"] == -errno.ENOTSUP
    assert "1.22 or newer" in entry["reason"]
    assert probe[0]["devices"] == []
    result = assert_opened(probe[1])
    assert result["attached_ep"] == "CPU" and result["outputs"]["y"] == IDENTITY_X.tolist()
    assert [ep for ep, _ in tried_eps(result["fallback_reason"])] == TRIED_BEFORE_CPU["auto"]
    policy = assert_opened(probe[2])
    assert policy["attached_ep"] == "CPU"
    tried = tried_eps(policy["fallback_reason"])
    assert tried[0] == ("ORT-policy", "not available: ONNX Runtime before 1.22 has no EP "
                                      "selection policy; using the AUTO chain")
    assert [ep for ep, _ in tried[1:]] == TRIED_BEFORE_CPU["auto"]
    assert probe.all_stderr() == ""


@pytest.mark.parametrize("name", ["ort-1.31.1", "openvino-plugin"])
def test_policy_devices_report_what_ort_chose(models, name):
    env = require_env(name)
    probe = env.probe([open_step(models.conv_mean, f"policy:{p}", {"x": CONV_X})
                       for p in ("prefer-cpu", "prefer-gpu", "max-performance")])
    for result in probe.results:
        assert_opened(result)
        chose = result["attached_ep"]
        assert chose in ("CPU", "OpenVINO:CPU"), chose
        if chose == "CPU" or not host_cpu_is_intel():
            assert chose == "CPU"
        np.testing.assert_allclose(result["outputs"]["score"][0], conv_mean_reference(CONV_X),
                                   rtol=OPENVINO_RTOL)
    assert probe.all_stderr() == ""


def test_cli_info_devices_says_where_auto_goes():
    env = require_env("openvino-plugin")
    import subprocess
    proc = subprocess.run([env.python, "-m", "vmafdnn", "info", "--devices"],
                          capture_output=True, text=True, timeout=300, cwd="/",
                          env={k: v for k, v in os.environ.items()
                               if k not in ("VMAFDNN_ORT_LIBRARY", "PYTHONPATH",
                                            "VMAFDNN_EP_LIBRARIES")})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ONNX Runtime 1.32.0 (")
    assert lines[1] == "plugin EP libraries: 1"
    assert lines[2].startswith(f"  {PLUGIN_PACKAGE} (env) ")
    assert lines[2].endswith("libonnxruntime_providers_openvino_plugin.so: registered")
    assert "  CPUExecutionProvider (Microsoft) on CPU 0 " in proc.stdout
    assert "device auto:" in lines
    expected = ("  OpenVINO:CPU: selected (EP device of OpenVINOExecutionProvider from plugin "
                f"library {PLUGIN_PACKAGE})" if host_cpu_is_intel()
                else "  CPU: selected (built into ORT)")
    assert lines[-1] == expected
    assert proc.stderr == ""


# --------------------------------------------------------------------------
# onnxruntime 1.32 + onnxruntime-ep-webgpu: the accelerator forms on WebGPU
# --------------------------------------------------------------------------

WEBGPU_NODES_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench", "webgpu_nodes.py")
#: bench/webgpu_nodes.py's exit status when there is no WebGPU adapter to run on
WEBGPU_NO_ADAPTER = 77
#: What each accelerator form leaves to ORT's CPU EP on WebGPU (op type -> count): nothing,
#: except the VMAF features' UINT16 front (the Concat of the previous references, its Slice,
#: the Concat of the three planes and their Cast to float), which WebGPU cannot hold (no 16-bit
#: integer tensors). It runs where the samples are, before anything reaches the device.
WEBGPU_UINT16_FRONT = {"Concat": 2, "Slice": 1, "Cast": 1}
WEBGPU_ACCEL_FORMS = {"psnr_y": {}, "psnr_cb": {}, "psnr": {}, "ssim_y": {}, "float_ssim": {},
                      "sharpness_nr": {}, "vmaf_features": WEBGPU_UINT16_FRONT,
                      "vmaf_features_neg": WEBGPU_UINT16_FRONT}


@pytest.fixture(scope="module")
def webgpu_forms():
    """bench/webgpu_nodes.py in the webgpu-plugin environment: every accelerator form of the
    environment's vmafdnn, 2 frames of 192x108 per Run, opened as the library opens it on an
    accelerator (sizes fixed), on WebGPU and on ORT's CPU EP. Without a GPU the plugin offers
    its device only with ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1, and Dawn then needs a Vulkan
    driver it accepts: Mesa's lavapipe from Mesa 23 or so (Debian 12's 22.3.6 lacks the
    shader{Sampled,Storage}ImageArrayDynamicIndexing Dawn requires). Without an adapter, a
    skip that quotes Dawn; anything else that stops the script, a failure."""
    env = require_env("webgpu-plugin")
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("VMAFDNN_ORT_LIBRARY", "VMAFDNN_ORT_LOG_LEVEL", "PYTHONPATH")}
    child_env["ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER"] = "1"
    proc = subprocess.run([env.python, WEBGPU_NODES_SCRIPT, "--json", "--size", "192x108",
                           "--batch", "2", "--models", ",".join(WEBGPU_ACCEL_FORMS)],
                          capture_output=True, text=True, env=child_env,
                          cwd=tempfile.gettempdir(), timeout=900)
    if proc.returncode == WEBGPU_NO_ADAPTER:
        # Dawn's reasons (its "Warning: ..." lines, one per adapter refused) and the plugin's
        said = [line for line in proc.stderr.splitlines() if line.startswith("Warning:")]
        pytest.skip("no WebGPU adapter on this machine (a GPU, or a Vulkan driver such as "
                    "lavapipe that Dawn accepts): "
                    + "; ".join(said + proc.stderr.strip().splitlines()[-1:]))
    assert proc.returncode == 0, proc.stderr
    return {row["model"]: row for row in map(json.loads, proc.stdout.splitlines())}


@pytest.mark.parametrize("name", list(WEBGPU_ACCEL_FORMS))
def test_webgpu_runs_the_accelerator_forms_whole(webgpu_forms, name):
    """Every node on WebGPU but the VMAF features' UINT16 front: no Sum, Round or other op
    WebGPU lacks sends a tensor to the CPU EP and back in the middle of a form."""
    row = webgpu_forms[name]
    assert row["cpu_ops"] == WEBGPU_ACCEL_FORMS[name], row
    assert row["on_ep"] == row["total"] - sum(WEBGPU_ACCEL_FORMS[name].values()), row


@pytest.mark.parametrize("name", list(WEBGPU_ACCEL_FORMS))
def test_webgpu_accelerator_forms_match_the_cpu_ep(webgpu_forms, name):
    """Within the library's batch check (1e-6 + 1e-5 relative) of ORT's CPU EP: measured
    0 to 1.8e-7 on lavapipe."""
    row = webgpu_forms[name]
    for output, d in row["max_abs_diff"].items():
        assert d <= 1e-6 + 1e-5 * row["max_abs_cpu"][output], (output, row)


def test_webgpu_software_adapter_binds_only_when_asked_for_by_name():
    """The plugin's device on the CPU (ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1) is listed as
    WebGpu:CPU. AUTO passes it over (a CPU rasteriser behind WebGPU is no accelerator); the
    WebGPU step asked for by name binds it, and says it is on the CPU."""
    env = require_env("webgpu-plugin")
    probe = env.probe([{"op": "eps", "device": "webgpu"}, {"op": "eps", "device": "auto"}],
                      env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"})
    devices = [(d["ep_name"], d["device_type"], d["attached_ep"]) for d in probe[0]["devices"]]
    assert ("WebGpuExecutionProvider", "CPU", "WebGpu:CPU") in devices, devices
    assert probe[0]["explain"].splitlines()[-1].startswith(
        "WebGpu:CPU: selected (EP device of WebGpuExecutionProvider from plugin library ")
    assert probe[1]["explain"].splitlines()[-1] == "CPU: selected (built into ORT)"
    assert "WebGpu:GPU: not available: " in probe[1]["explain"]


def _models_with_forms(env, tmp_path, forms):
    """A copy of the environment's built-in models whose vmaf_features.json names ``forms``."""
    models = tmp_path / "models"
    shutil.copytree(os.path.join(env.site_packages, "vmafdnn", "models"), models)
    sidecar = models / "vmaf_features.json"
    meta = json.loads(sidecar.read_text())
    meta["forms"] = forms
    sidecar.write_text(json.dumps(meta))
    return models


def test_form_whose_library_ops_cannot_run_on_the_ep_gives_way_to_the_any_form(tmp_path):
    """A form named for the attached EP that runs the library's own operators (VMAF's kernels'
    form) where the library has no kernels for that EP (WebGPU; CUDA without NVRTC or with a
    device that failed the kernels' self-check) would send every plane to ORT's CPU EP and
    back: the "*" form scores instead, and the fallback reason says which form was passed over
    and why. Without a "*" form the named form scores as it is (its operators on the CPU EP),
    and the reason says that too; so does VMAFDNN_MODEL_FORMS naming it."""
    env = require_env("webgpu-plugin")
    any_form = _models_with_forms(env, tmp_path / "a", {
        "WebGpu:CPU": "vmaf_features_kernels.onnx", "CPU": "vmaf_features_kernels.onnx",
        "*": "vmaf_features_accel.onnx"})
    no_any = _models_with_forms(env, tmp_path / "b", {"WebGpu:CPU": "vmaf_features_kernels.onnx",
                                                       "CPU": "vmaf_features_kernels.onnx"})
    steps = [{"op": "score", "path": str(models / "vmaf_features.onnx"), "device": "webgpu",
              "device_io": "off", "count": 2, "height": 40, "width": 48}
             for models in (any_form, no_any)]
    probe = env.probe(steps, env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"}, timeout=600)
    if probe[0]["attached_ep"] != "WebGpu:CPU":
        pytest.skip("no WebGPU adapter on this machine: " + probe[0]["fallback_reason"])
    passed_over, kept = probe[0], probe[1]
    assert passed_over["form"] == str(any_form / "vmaf_features_accel.onnx"), passed_over
    assert ("WebGpu:CPU: form vmaf_features_kernels.onnx passed over for vmaf_features_accel.onnx: "
            "it would run the library's operators on ORT's CPU EP: the library's operators "
            "have no kernels for WebGpu:CPU") in passed_over["fallback_reason"].splitlines()
    assert kept["attached_ep"] == "WebGpu:CPU"
    assert kept["form"] == str(no_any / "vmaf_features_kernels.onnx"), kept
    assert ("WebGpu:CPU: form vmaf_features_kernels.onnx runs the library's operators on ORT's CPU "
            "EP: the library's operators have no kernels for WebGpu:CPU"
            ) in kept["fallback_reason"].splitlines()
    # the kernels' form scores what it scores on ORT's CPU EP (the same kernels); the
    # accelerator form, a float graph, within 1e-3 of them (docs/vmaf.md)
    assert kept["metrics"] == kept["metrics_cpu"]
    for got, want in zip(passed_over["metrics"], passed_over["metrics_cpu"]):
        assert got.keys() == want.keys()
        assert all(abs(got[key] - want[key]) <= 1e-3 for key in got), (got, want)


#: Frames for the device I/O tests: two sizes, so that each gets a specialised session of
#: its own, and content that changes every frame, so that a recorded graph replayed on stale
#: inputs would show.
DEVICE_IO_FRAMES = [(48, 64, 0), (48, 64, 1), (48, 64, 2), (30, 42, 3), (48, 64, 4),
                    (30, 42, 5)]


@pytest.fixture(scope="module")
def webgpu_device_io():
    """Each accelerator form on WebGPU (the software adapter, asked for by name) with
    device_io auto and off, against ORT's CPU EP frame by frame. Skips where Dawn finds no
    adapter (the session then falls back to the CPU and its fallback reason quotes why)."""
    env = require_env("webgpu-plugin")
    steps = [{"op": "frames", "model": name, "device": "webgpu", "device_io": io,
              "frames": DEVICE_IO_FRAMES}
             for name in WEBGPU_ACCEL_FORMS for io in ("auto", "off")]
    probe = env.probe(steps, env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"}, timeout=900)
    if probe[0]["attached_ep"] != "WebGpu:CPU":
        pytest.skip("no WebGPU adapter on this machine: " + probe[0]["fallback_reason"])
    return {(step["model"], step["device_io"]): result for step, result in zip(steps, probe)}


@pytest.mark.parametrize("name", list(WEBGPU_ACCEL_FORMS))
def test_webgpu_device_io_binds_device_tensors_and_records_whole_graphs(webgpu_device_io, name):
    """device_io auto: every run of a specialised session binds device tensors; the forms
    WebGPU runs whole are recorded (graph capture) and replayed, the VMAF features (whose
    UINT16 front stays on ORT's CPU EP) are not, and the reason quotes ORT's refusal. off:
    neither, and the reason says so."""
    runs = len(DEVICE_IO_FRAMES)
    auto = webgpu_device_io[(name, "auto")]
    assert auto["attached_ep"] == "WebGpu:CPU"
    static = auto["static_runs"]
    assert (static["fixed"], static["as_opened"], static["specialised"]) == (runs, 0, 2), static
    assert static["device_io"] == runs, static
    if WEBGPU_ACCEL_FORMS[name]:
        assert static["captured"] == 0, static
        assert static["device_io_reason"].startswith("the EP did not record the graph: "), static
        assert "graph capture" in static["device_io_reason"], static
    else:
        assert static["captured"] == runs and static["device_io_reason"] == "", static
    off = webgpu_device_io[(name, "off")]["static_runs"]
    assert (off["device_io"], off["captured"], off["device_io_reason"]) == (
        0, 0, "device_io is OFF"), off


def test_webgpu_sessions_on_many_threads_run_one_at_a_time():
    """ORT's WebGPU EP takes no concurrent work on its device: four sessions run from four
    threads at once, and a context with frames in flight, crashed the process in Dawn. The
    library runs them one at a time (and a context scores one frame at a time there): every
    run completes and scores as the CPU EP."""
    env = require_env("webgpu-plugin")
    step = {"op": "concurrent", "model": "ssim_y", "device": "webgpu", "sessions": 4, "runs": 5,
            "threads": 4}
    result = env.probe([step], env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"}, timeout=900)[0]
    if result["attached"] != ["WebGpu:CPU"]:
        pytest.skip(f"no WebGPU adapter on this machine: sessions attached {result['attached']}")
    assert result["errors"] == []
    assert max(result["max_abs_diff"]) <= 1e-6, result
    for got, want in zip(result["scored"], result["scored_cpu"]):
        assert got["ssim_y"] == pytest.approx(want["ssim_y"], abs=1e-6)


@pytest.mark.parametrize("io", ["auto", "off"])
@pytest.mark.parametrize("name", list(WEBGPU_ACCEL_FORMS))
def test_webgpu_device_io_scores_every_frame_as_the_cpu_ep(webgpu_device_io, name, io):
    """Frame by frame within the batch check's tolerance of ORT's CPU EP, with and without
    device I/O: a replayed graph reads each frame's inputs, not those it was recorded with."""
    result = webgpu_device_io[(name, io)]
    for frame, (diffs, peaks) in enumerate(zip(result["max_abs_diff"], result["max_abs_cpu"])):
        for output, d in diffs.items():
            assert d <= 1e-6 + 1e-5 * peaks[output], (frame, output, result)


@pytest.mark.parametrize("name", ["psnr_y", "ssim_y"])
def test_webgpu_recording_that_fails_is_run_again_without_capture(name):
    """ORT's recording of a CUDA graph failed on a lent H200 ("operation failed due to a
    previous error during capture") after the session was created with capture. The library
    makes that shape's session again without capture and runs the frame again: every frame
    scores as the CPU EP, none counts as captured, and the reason quotes the failure. The
    failure is injected (VMAFDNN_TEST_SPOIL_RECORDING) into WebGPU's recording, which
    otherwise succeeds here."""
    env = require_env("webgpu-plugin")
    step = {"op": "frames", "model": name, "device": "webgpu", "device_io": "auto",
            "frames": DEVICE_IO_FRAMES}
    result = env.probe([step], env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1",
                                    "VMAFDNN_TEST_SPOIL_RECORDING": "1"}, timeout=900)[0]
    if result["attached_ep"] != "WebGpu:CPU":
        pytest.skip("no WebGPU adapter on this machine: " + result["fallback_reason"])
    runs = len(DEVICE_IO_FRAMES)
    static = result["static_runs"]
    assert (static["fixed"], static["as_opened"], static["specialised"]) == (runs, 0, 2), static
    assert (static["device_io"], static["captured"]) == (runs, 0), static
    assert static["device_io_reason"] == (
        "ONNX Runtime failed while recording the graph, so the session runs without: the "
        "recording was spoiled for a test (VMAFDNN_TEST_SPOIL_RECORDING)"), static
    for frame, (diffs, peaks) in enumerate(zip(result["max_abs_diff"], result["max_abs_cpu"])):
        for output, d in diffs.items():
            assert d <= 1e-6 + 1e-5 * peaks[output], (frame, output, result)


def save_held_value_model(path) -> None:
    """y = 2 * reference, and an input `device_type` [1] that no node reads, so ORT keeps it
    in host memory and a captured session holds it by value (as VMAF's accelerator form's)."""
    import onnx
    from onnx import TensorProto, helper
    picture = helper.make_tensor_value_info("reference", TensorProto.FLOAT, [1, 1, "H", "W"])
    flag = helper.make_tensor_value_info("device_type", TensorProto.FLOAT, [1])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "H", "W"])
    graph = helper.make_graph([helper.make_node("Mul", ["reference", "two"], ["y"])], "held",
                              [picture, flag], [out],
                              [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def save_resized_error_model(path) -> None:
    """d = mean((reference - distorted)^2) over [N, 1, 32, 48] pictures, which the library
    resizes every frame to (sidecar "resize"): the planes it feeds are its own buffers."""
    import json

    import onnx
    from onnx import TensorProto, helper
    pictures = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1, 32, 48])
                for n in ("reference", "distorted")]
    out = helper.make_tensor_value_info("d", TensorProto.FLOAT, ["N"])
    nodes = [helper.make_node("Sub", ["reference", "distorted"], ["e"]),
             helper.make_node("Mul", ["e", "e"], ["e2"]),
             helper.make_node("ReduceMean", ["e2"], ["d"], axes=[1, 2, 3], keepdims=0)]
    graph = helper.make_graph(nodes, "resized", pictures, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    path.with_suffix(".json").write_text(json.dumps({"kind": "fr", "output_keys": ["d"],
                                                      "resize": "bilinear"}))


def test_webgpu_pictures_fed_from_host_accessible_memory_are_counted(tmp_path):
    """A context's models keep the pictures they feed in the host-accessible memory of the EP's
    device (CUDA: pinned; vdnn_ort_host_alloc), and static runs count the device-I/O runs fed
    from it. WebGPU offers none: pinned stays 0, and with VMAFDNN_TEST_HOST_ACCESSIBLE=1 (ORT's
    CPU allocator standing in) every device-I/O run counts, scoring as the CPU EP does."""
    path = tmp_path / "resized.onnx"
    save_resized_error_model(path)
    env = require_env("webgpu-plugin")
    # the resized planes; and psnr_y's CUDA form (VMAFDNN_MODEL_FORMS=CUDA), whose UINT16
    # pictures WebGPU leaves in host memory while its bpc, a value input, goes to the device
    steps = [{"op": "score", **model, "device": "webgpu", "device_io": "auto", "count": 5,
              "height": 45, "width": 70, "threads": 2}
             for model in ({"path": str(path)}, {"model": "psnr_y"})]
    runs = {}
    for hook in ("0", "1"):
        results = env.probe(steps, env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1",
                                        "VMAFDNN_TEST_HOST_ACCESSIBLE": hook,
                                        "VMAFDNN_MODEL_FORMS": "CUDA"}, timeout=900)
        if results[0]["attached_ep"] != "WebGpu:CPU":
            pytest.skip("no WebGPU adapter on this machine")
        runs[hook] = [r["static_runs"] for r in results]
        for result in results:
            for got, want in zip(result["metrics"], result["metrics_cpu"]):
                assert got == pytest.approx(want, rel=1e-5, abs=1e-9)
    for model in range(2):
        assert runs["0"][model]["device_io"] == 5 and runs["0"][model]["pinned"] == 0, runs
        assert runs["1"][model]["device_io"] == 5 and runs["1"][model]["pinned"] == 5, runs


def test_webgpu_recorded_graph_keeps_a_host_value_and_checks_it(tmp_path):
    """A captured session's input in host memory (here `device_type`, which the graph does not
    read, as in VMAF's accelerator form; or a shape a node of the EP reads on the host) is
    held by value: the graph is recorded and replayed while the value stays, and the run that
    brings another value makes that shape's session again without capture (a replay would
    have kept the old one), scoring as the CPU EP throughout."""
    path = tmp_path / "held.onnx"
    save_held_value_model(path)
    env = require_env("webgpu-plugin")
    frames = [(48, 64, 0), (48, 64, 1), (48, 64, 2), (48, 64, 3), (48, 64, 4)]
    steps = [{"op": "frames", "path": str(path), "device": "webgpu", "device_io": "auto",
              "frames": frames, "values": {"device_type": values}}
             for values in ([1.0] * 5, [1.0, 1.0, 1.0, 0.0, 0.0])]
    same, changed = env.probe(steps, env={"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"},
                              timeout=900)
    if same["attached_ep"] != "WebGpu:CPU":
        pytest.skip("no WebGPU adapter on this machine: " + same["fallback_reason"])
    assert (same["static_runs"]["captured"], same["static_runs"]["device_io_reason"]) == (5, "")
    static = changed["static_runs"]
    assert (static["fixed"], static["specialised"], static["device_io"]) == (5, 1, 5), static
    assert static["captured"] == 3, static  # the frames before the value changed
    assert static["device_io_reason"] == (
        "the recorded graph cannot take the run's inputs, so the session runs without: device "
        "I/O: input \"device_type\" changed after the graph was recorded with its value in host "
        "memory"), static
    for result in (same, changed):
        assert all(d["y"] == 0.0 for d in result["max_abs_diff"]), result
