"""The fused VMAF kernels (csrc/vmaf_kernels.h) against real libvmaf, feature by feature.

The kernels follow libvmaf's integer feature extractors, so each feature must equal libvmaf's as
printed (6 decimals: |d| <= 5e-7 plus rounding of the print). tests/c/kernel_dump (built in
build-c by the test command) runs them on the luma of two Y4M clips.

Run as a script for a quick look while working on a kernel:
    python tests/python/test_vmaf_kernels.py [CLIP ...]
"""

import json
import os
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

import vmafdnn

sys.path.insert(0, os.path.dirname(__file__))
from test_vmaf_graphs import CLIPS, fetch_reference, make_clip, reference_or_skip  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUMP = os.environ.get("VMAFDNN_KERNEL_DUMP",
                      os.path.join(ROOT, "build-c", "tests", "c", "kernel_dump"))

# Printed to 6 decimals by libvmaf: equal features differ by at most half a unit of the last
# digit (and the double the print rounded).
EXACT = 5.01e-7
# libvmaf's name of each kernel output (motion: the per-frame SAD libvmaf logs).
FEATURES = {f"integer_vif_scale{s}": f"integer_vif_scale{s}" for s in range(4)}
FEATURES.update({"integer_adm2": "integer_adm2"})
FEATURES.update({f"integer_adm_scale{s}": f"integer_adm_scale{s}" for s in range(4)})
FEATURES["integer_motion"] = "VMAF_integer_feature_motion_sad_score"

# Beyond test_vmaf_graphs' clips: 12 bit, a 4:4:4 odd size, the smallest sizes libvmaf scores.
KERNEL_CLIPS = dict(CLIPS)
KERNEL_CLIPS.update({
    "testsrc2_x264crf30_12bit": ("testsrc2", "200x114", 4, "yuv420p12le", ["crf", "30"]),
    "noise_444_odd_8bit": ("testsrc2,noise=alls=12:allf=t", "173x101", 3, "yuv444p",
                           ["vf", "gblur=sigma=0.8"]),
})


def libvmaf_features(ffmpeg, ref, dist, workdir, model="version=vmaf_v0.6.1"):
    log = os.path.join(workdir, "libvmaf.json")
    subprocess.run([ffmpeg, "-hide_banner", "-loglevel", "error", "-i", dist, "-i", ref,
                    "-lavfi", f"[0:v][1:v]libvmaf=model={model}:log_fmt=json:log_path={log}",
                    "-f", "null", "-"], check=True)
    with open(log) as f:
        frames = json.load(f)["frames"]
    return {ours: np.array([fr["metrics"][theirs] for fr in frames])
            for ours, theirs in FEATURES.items()}


def kernel_features(ref, dist, egl=100.0):
    out = subprocess.run([DUMP, ref, dist, repr(egl)], check=True, capture_output=True,
                         text=True).stdout
    frames = [json.loads(line) for line in out.splitlines()]
    return {k: np.array([fr[k] for fr in frames]) for k in FEATURES}


def differences(ours, theirs):
    return {k: float(np.max(np.abs(ours[k] - theirs[k]))) for k in FEATURES}


@pytest.fixture(scope="module")
def reference():
    if not os.path.exists(DUMP):
        pytest.fail(f"{DUMP} is not built (meson compile -C build-c)")
    return reference_or_skip()


@pytest.mark.parametrize("clip", sorted(KERNEL_CLIPS))
def test_kernels_equal_libvmaf(clip, reference, tmp_path, monkeypatch):
    monkeypatch.setattr("test_vmaf_graphs.CLIPS", KERNEL_CLIPS)
    ref, dist = make_clip(reference["FFMPEG"], clip, str(tmp_path))
    theirs = libvmaf_features(reference["LIBVMAF"], ref, dist, str(tmp_path))
    ours = kernel_features(ref, dist)
    assert len(ours["integer_adm2"]) == KERNEL_CLIPS[clip][2]
    d = differences(ours, theirs)
    assert all(v <= EXACT for v in d.values()), f"{clip}: {d}"


# CPUs for qemu-x86_64 (user mode) that make the kernels' ifunc resolvers pick their other
# builds: AVX2 without AVX-512 (qemu's TCG has no AVX-512; features it lacks taken off, as
# tools/fetch_vmaf_reference.sh does) and the baseline x86-64.
OTHER_BUILDS = {"avx2": "Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm",
                "baseline": "qemu64"}
# The kernels cross-built for AArch64 by tools/test.sh, and how they run here.
AARCH64_DUMP = os.environ.get("VMAFDNN_KERNEL_DUMP_AARCH64",
                              os.path.join(ROOT, "build-aarch64", "tests", "c", "kernel_dump"))
AARCH64_RUN = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]


def dump(ref, dist, egl, runner=(), dump_path=DUMP):
    """The dump's per-frame lines and the build it says it ran."""
    # The ASan run preloads libasan into children: not into qemu, a host program.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"} if runner else None
    out = subprocess.run([*runner, dump_path, ref, dist, repr(egl)], check=True,
                         capture_output=True, text=True, env=env)
    builds = [line.split(": ", 1)[1] for line in out.stderr.splitlines()
              if line.startswith("builds: ")]
    return out.stdout, builds


def needs_x86_64_and(*programs):
    """qemu and the rest are tools/test.sh's to install on x86-64: missing there is a failure."""
    if platform.machine() != "x86_64":
        pytest.skip("the other builds are run from an x86-64 machine")
    for program in programs:
        if not (shutil.which(program) or os.path.exists(program)):
            pytest.fail(f"{program} not found (tools/test.sh installs or builds it)")


@pytest.fixture
def clip_pair(request, reference, tmp_path, monkeypatch):
    monkeypatch.setattr("test_vmaf_graphs.CLIPS", KERNEL_CLIPS)
    clip = request.param
    ref, dist = make_clip(reference["FFMPEG"], clip, str(tmp_path))
    egl = 1.0 if "noise" in clip else 100.0  # vmaf_v0.6.1neg's gain limit on some clips
    native, native_build = dump(ref, dist, egl)
    assert native.count("\n") == KERNEL_CLIPS[clip][2]
    return clip, ref, dist, egl, native, native_build


@pytest.mark.parametrize("clip_pair", sorted(KERNEL_CLIPS), indirect=True)
def test_every_x86_64_build_of_the_kernels_scores_alike(clip_pair):
    """csrc/vectorize.h builds the hot loops for x86-64-v4, AVX2 and the baseline, chosen at load
    by the CPU: each build must give the same 17 digits of every kernel's output. This machine
    runs its own; qemu-x86_64 runs the others (an AVX-512 CPU: all three builds; AVX2: two)."""
    needs_x86_64_and("qemu-x86_64")
    clip, ref, dist, egl, native, native_build = clip_pair
    for build, cpu in OTHER_BUILDS.items():
        theirs, their_build = dump(ref, dist, egl, ["qemu-x86_64", "-cpu", cpu])
        assert their_build == [build], f"qemu -cpu {cpu} ran {their_build}"
        assert theirs == native, f"{clip}: the {build} build differs from {native_build}"


def test_the_library_says_which_build_runs(reference, tmp_path, monkeypatch):
    """vmafdnn.cpu_kernels() (vmaf_dnn_cpu_kernels) names the build the kernel dump, built from
    the same sources, says it ran on this CPU."""
    monkeypatch.setattr("test_vmaf_graphs.CLIPS", KERNEL_CLIPS)
    ref, dist = make_clip(reference["FFMPEG"], "static_8bit", str(tmp_path))
    _, build = dump(ref, dist, 100.0)
    assert build == [vmafdnn.cpu_kernels()]
    assert vmafdnn.cpu_kernels() in ("x86-64-v4", "avx2", "baseline")


@pytest.mark.parametrize("clip_pair", sorted(KERNEL_CLIPS), indirect=True)
def test_the_kernels_built_for_aarch64_score_alike(clip_pair):
    """The same kernels cross-built for AArch64 (NEON through the same portable C; no clones)
    give the same 17 digits as this machine's build: an Arm server scores as an x86 one."""
    needs_x86_64_and("qemu-aarch64", AARCH64_DUMP)
    clip, ref, dist, egl, native, native_build = clip_pair
    theirs, their_build = dump(ref, dist, egl, AARCH64_RUN, AARCH64_DUMP)
    assert their_build == ["baseline"]
    assert theirs == native, f"{clip}: the AArch64 build differs from {native_build}"


def main(names):
    import tempfile
    import test_vmaf_graphs
    test_vmaf_graphs.CLIPS = KERNEL_CLIPS
    tools = fetch_reference()
    for name in names or sorted(KERNEL_CLIPS):
        with tempfile.TemporaryDirectory() as tmp:
            ref, dist = make_clip(tools["FFMPEG"], name, tmp)
            d = differences(kernel_features(ref, dist),
                            libvmaf_features(tools["LIBVMAF"], ref, dist, tmp))
            bad = {k: f"{v:.3g}" for k, v in d.items() if not v <= EXACT}
            print(f"{name}: {'EQUAL' if not bad else bad}")


if __name__ == "__main__":
    main(sys.argv[1:])
