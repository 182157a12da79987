"""Runs vmafdnn inside the per-ONNX-Runtime environments of tools/make_ort_envs.sh.

The onnxruntime, onnxruntime-gpu and onnxruntime-openvino wheels all install
the package ``onnxruntime``, so each lives in a virtual environment of its own
and is exercised from a subprocess. This file has both ends of that:

* imported by the tests: :func:`find_env` locates an environment and
  :meth:`OrtEnv.probe` runs a list of steps in it;
* executed by the environment's Python (``python ort_envs.py`` with the steps
  as JSON on stdin): performs them with vmafdnn and prints the results as
  JSON. This end uses only the standard library, numpy and vmafdnn.

A step is a dict with an ``op``:

* ``info``: ``available``, ``ort_version``, ``api_version``,
  ``ort_library_path`` (null when unavailable) and ``unavailable_reason``;
* ``eps``: ``libraries`` (vmafdnn.ep_libraries()), ``devices``
  (vmafdnn.ep_devices()), ``explain`` (the chain of ``device``, default
  auto) and ``package_errors``;
* ``register``: vmafdnn.register_ep_library(``name``, ``path``); result
  ``{}`` or ``error``;
* ``open``: opens ``model`` with ``device``, ``threads``, ``fp16_io``
  (defaults as Session's), then runs it on ``feeds`` (name -> nested lists)
  when given. Result: ``attached_ep``, ``fallback_reason``, ``config``,
  ``outputs`` (name -> nested lists of the float32 values, exact), or
  ``error`` (exception class, errno, message) when opening raised.

Every step's result also has ``stderr``: what the process wrote to file
descriptor 2 during the step (ORT's C++ log included).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Mapping, Optional, Sequence

MAKE_ENVS = "tools/make_ort_envs.sh"


def cache_dir() -> str:
    """Where tools/make_ort_envs.sh keeps the environments (same rule)."""
    explicit = os.environ.get("VMAFDNN_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "vmafdnn")


class OrtEnv:
    """One provisioned environment: ``python`` and its ``site_packages``."""

    def __init__(self, name: str, directory: str, site_packages: str):
        self.name = name
        self.dir = directory
        self.python = os.path.join(directory, "bin", "python")
        self.site_packages = site_packages

    @property
    def ort_capi_dir(self) -> str:
        return os.path.join(self.site_packages, "onnxruntime", "capi")

    def ort_library(self) -> str:
        """The wheel's libonnxruntime.so.1.X.Y."""
        found = sorted(glob.glob(os.path.join(self.ort_capi_dir, "libonnxruntime.so.*")))
        if not found:
            raise FileNotFoundError(f"no libonnxruntime.so.* in {self.ort_capi_dir}")
        return found[-1]

    def nvidia_library_dirs(self) -> List[str]:
        """The lib folders of the nvidia-* wheels (CUDA runtime, cuDNN, ...)."""
        return sorted(glob.glob(os.path.join(self.site_packages, "nvidia", "*", "lib")))

    def probe(self, steps: Sequence[Mapping], env: Optional[Mapping[str, str]] = None,
              timeout: float = 300) -> "ProbeResult":
        """Runs ``steps`` in this environment. ``env`` is added to a copy of
        this process's environment, minus the variables that would steer
        vmafdnn (VMAFDNN_ORT_LIBRARY, VMAFDNN_ORT_LOG_LEVEL) unless given."""
        child_env = {k: v for k, v in os.environ.items()
                     if k not in ("VMAFDNN_ORT_LIBRARY", "VMAFDNN_ORT_LOG_LEVEL", "PYTHONPATH")}
        child_env.update(env or {})
        proc = subprocess.run(
            [self.python, os.path.abspath(__file__)], input=json.dumps(list(steps)),
            capture_output=True, text=True, env=child_env, cwd=tempfile.gettempdir(),
            timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"probe in {self.name} exited with {proc.returncode}:\n"
                               f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        return ProbeResult(json.loads(proc.stdout), proc.stderr)


class ProbeResult:
    """The results of a probe's steps, in order, and its leftover stderr
    (what was printed outside the steps: at import, exit, ...)."""

    def __init__(self, results: List[Dict], stderr: str):
        self.results = results
        self.stderr = stderr

    def __getitem__(self, index: int) -> Dict:
        return self.results[index]

    def all_stderr(self) -> str:
        return "".join(r["stderr"] for r in self.results) + self.stderr


def find_env(name: str, distribution: str, version: str) -> Optional[OrtEnv]:
    """The environment ``name`` when it holds ``distribution`` ``version``
    and vmafdnn, else None (not provisioned, or provisioned for another
    version: either way, run tools/make_ort_envs.sh)."""
    directory = os.path.join(cache_dir(), "envs", name)
    if not os.access(os.path.join(directory, "bin", "python"), os.X_OK):
        return None
    for site in glob.glob(os.path.join(directory, "lib", "python3*", "site-packages")):
        dist_info = f"{distribution.replace('-', '_')}-{version}.dist-info"
        if (os.path.isdir(os.path.join(site, dist_info))
                and glob.glob(os.path.join(site, "vmafdnn-*.dist-info"))):
            return OrtEnv(name, directory, site)
    return None


# --------------------------------------------------------------------------
# The probe: runs inside an environment.
# --------------------------------------------------------------------------

def _capturing_stderr(step):
    """Runs step() with file descriptor 2 redirected; returns (result, text)."""
    with tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            result = step()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return result, sink.read().decode("utf-8", "replace")


def _info(vmafdnn, _step):
    ok = vmafdnn.available()
    return {
        "available": ok,
        "unavailable_reason": vmafdnn.unavailable_reason(),
        "ort_version": vmafdnn.ort_version() if ok else None,
        "api_version": int(vmafdnn._lib.vmaf_dnn_ort_api_version()),
        "ort_library_path": vmafdnn.ort_library_path() if ok else None,
    }


def _open(vmafdnn, step):
    import numpy as np

    try:
        session = vmafdnn.Session(step["model"], device=step.get("device", "auto"),
                                  threads=step.get("threads", 0),
                                  fp16_io=step.get("fp16_io", False))
    except vmafdnn.DnnError as e:
        return {"error": {"type": type(e).__name__, "errno": e.errno, "message": e.message}}
    with session:
        result = {"attached_ep": session.attached_ep,
                  "fallback_reason": session.fallback_reason,
                  "config": session.config}
        feeds = step.get("feeds")
        if feeds is not None:
            outputs = session.run({k: np.asarray(v, dtype=np.float32) for k, v in feeds.items()})
            # float32 -> Python float is exact, so equality here is bitwise.
            result["outputs"] = {k: v.tolist() for k, v in outputs.items()}
    return result


def _accel_form(name: str) -> str:
    """The path of built-in `name`'s accelerator form in the environment's vmafdnn."""
    from vmafdnn import models
    return str(models.path(name)).replace(".onnx", "_accel.onnx")


def _frames(vmafdnn, step):
    """The accelerator form ``model`` (a built-in's name; or the model file ``path``) run on
    ``device`` with ``device_io`` and on ORT's CPU EP over the same frames, one per (height,
    width, seed) in ``frames``: 8-bit content as samples for UINT16 inputs, samples/255 for
    FLOAT ones; other inputs [1] of ``values`` (name -> one value per frame), else bpc 8 and 1.
    Per frame the largest |difference| of each output and the largest |output|; the device
    session's attached_ep, fallback reason and static runs."""
    import numpy as np

    path = step.get("path") or _accel_form(step["model"])
    values = step.get("values", {})

    def feeds(session, h, w, seed, index):
        rng = np.random.default_rng(seed)
        y, x = np.mgrid[0:h, 0:w]
        ref = np.clip(np.rint(128 + 60 * np.sin(x / 7.0 + seed) * np.cos(y / 11.0)), 0, 255)
        planes = {"reference": ref, "reference_prev": np.clip(ref - 3, 0, 255),
                  "distorted": np.clip(np.rint(ref + rng.normal(0, 2 + seed, ref.shape)), 0, 255)}
        out = {}
        for info in session.inputs:
            if info.name in planes:
                plane = planes[info.name][None, None].astype(np.float32)
                out[info.name] = plane if info.dtype == np.uint16 else plane / 255.0
            elif info.name in values:
                out[info.name] = np.array([values[info.name][index]], np.float32)
            else:
                out[info.name] = np.array([8.0 if info.name == "bpc" else 1.0], np.float32)
        return out

    with vmafdnn.Session(path, device=step["device"], device_io=step["device_io"]) as dev, \
            vmafdnn.Session(path, device="cpu") as cpu:
        diffs, peaks = [], []
        for index, (h, w, seed) in enumerate(step["frames"]):
            got = dev.run(feeds(dev, h, w, seed, index))
            want = cpu.run(feeds(cpu, h, w, seed, index))
            diffs.append({k: float(np.max(np.abs(got[k] - want[k]))) for k in want})
            peaks.append({k: float(np.max(np.abs(want[k]))) for k in want})
        return {"attached_ep": dev.attached_ep, "fallback_reason": dev.fallback_reason,
                "static_runs": dev.static_runs._asdict(), "max_abs_diff": diffs,
                "max_abs_cpu": peaks}


def _concurrent(vmafdnn, step):
    """``sessions`` sessions of the accelerator form ``model`` on ``device``, each run
    ``runs`` times from a thread of its own, all at once; then score() with ``threads``
    frames in flight. The largest |difference| from ORT's CPU EP of each, and the EP."""
    import threading

    import numpy as np

    path = _accel_form(step["model"])
    rng = np.random.default_rng(7)
    planes = [rng.random((1, 1, 36, 52), dtype=np.float32) for _ in range(2 * step["sessions"])]
    feeds = [{"reference": planes[2 * k], "distorted": planes[2 * k + 1]}
             for k in range(step["sessions"])]
    with vmafdnn.Session(path, device="cpu") as cpu:
        want = [cpu.run(f) for f in feeds]
    diffs, errors, attached = [0.0] * step["sessions"], [], set()
    start = threading.Barrier(step["sessions"])

    def work(k):
        try:
            with vmafdnn.Session(path, device=step["device"]) as s:
                attached.add(s.attached_ep)
                start.wait()
                for _ in range(step["runs"]):
                    got = s.run(feeds[k])
                    diffs[k] = max(diffs[k], max(float(np.max(np.abs(got[o] - want[k][o])))
                                                 for o in got))
        except Exception as e:  # reported to the test
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(step["sessions"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    refs = [(p[0, 0] * 255).astype(np.uint8) for p in planes[0::2]]
    dists = [(p[0, 0] * 255).astype(np.uint8) for p in planes[1::2]]
    scored = {}
    for device in (step["device"], "cpu"):
        report = vmafdnn.score(iter(refs), iter(dists), [path], device=device,
                               threads=step["threads"])
        scored[device] = [f["metrics"] for f in report["frames"]]
    return {"attached": sorted(attached), "max_abs_diff": diffs, "errors": errors,
            "scored": scored[step["device"]], "scored_cpu": scored["cpu"]}


def _score(vmafdnn, step):
    """score() of ``count`` synthetic 8-bit frames of ``height`` x ``width`` with the model file
    ``path`` (or the environment's built-in ``model``) on ``device`` (``device_io``,
    ``threads``) and on ORT's CPU EP: each frame's metrics from both, the device's attached EP,
    form (None: the model's own file), fallback reason and static runs."""
    import numpy as np
    from vmafdnn import models

    path = step.get("path") or str(models.path(step["model"]))

    rng = np.random.default_rng(3)
    shape = (step["height"], step["width"])
    refs = [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(step["count"])]
    dists = [np.clip(r.astype(int) + rng.integers(-9, 10, shape), 0, 255).astype(np.uint8)
             for r in refs]
    reports = {device: vmafdnn.score(iter(refs), iter(dists), [path], device=device,
                                     threads=step.get("threads", 1),
                                     device_io=step["device_io"] if device != "cpu" else None)
               for device in (step["device"], "cpu")}
    model = reports[step["device"]]["models"][0]
    return {"attached_ep": model["attached_ep"], "static_runs": model["static_runs"],
            "form": model.get("form"), "fallback_reason": model["fallback_reason"],
            "metrics": [f["metrics"] for f in reports[step["device"]]["frames"]],
            "metrics_cpu": [f["metrics"] for f in reports["cpu"]["frames"]]}


def _eps(vmafdnn, step):
    """Plugin EP libraries, EP devices, the chain of ``device`` (explain)."""
    return {"libraries": vmafdnn.ep_libraries(), "devices": vmafdnn.ep_devices(),
            "explain": vmafdnn.explain_device(step.get("device", "auto")),
            "package_errors": dict(vmafdnn.EP_PACKAGE_ERRORS)}


def _register(vmafdnn, step):
    try:
        vmafdnn.register_ep_library(step["name"], step["path"])
    except vmafdnn.DnnError as e:
        return {"error": {"type": type(e).__name__, "errno": e.errno, "message": e.message}}
    return {}


def _probe_main() -> None:
    steps = json.load(sys.stdin)
    import vmafdnn

    ops = {"info": _info, "open": _open, "eps": _eps, "register": _register, "frames": _frames,
           "concurrent": _concurrent, "score": _score}
    results = []
    for step in steps:
        result, text = _capturing_stderr(lambda: ops[step["op"]](vmafdnn, step))
        result["stderr"] = text
        results.append(result)
    json.dump(results, sys.stdout)
    sys.stdout.flush()
    # No exit handlers: Mesa's lavapipe (WebGPU's adapter where there is no GPU) may still be
    # compiling a shader on a thread of its own, and the handlers free LLVM's pass registry
    # under it (a segfault after the output: tests/python/test_capture_attack.py). Every
    # session was closed by the steps.
    os._exit(0)


if __name__ == "__main__":
    _probe_main()
