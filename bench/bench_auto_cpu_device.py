"""Where `auto` puts the built-ins when an EP's CPU device comes first in its chain: the whole
command line, `vmafdnn -r REF -d DIST` with the default models, under each --tiny-device, in
one Python environment that has that EP (default: the onnxruntime-openvino one that
tools/make_ort_envs.sh provisions).

    python bench/bench_auto_cpu_device.py [--python ENV/bin/python] [--size 1920x1080]
                                          [--frames 10] [--rounds 3]
                                          [--devices auto,openvino-cpu,cpu]

Each round runs every device once, in turns; the best round of each is kept (2 shared, noisy
cores) and shown against `cpu` (ORT's CPU EP with the library's kernels). Whole processes:
the EP's session creation is part of what a user waits for. The reports must be identical
for `auto` and `cpu` (exit status 1 otherwise); the summary's first lines say where each
model went.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import ort_envs  # noqa: E402


def make_clips(folder, size, frames):
    import imageio_ffmpeg
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    ref, dist = os.path.join(folder, "ref.y4m"), os.path.join(folder, "dist.y4m")
    subprocess.run([ffmpeg, "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size={size}:rate=25,noise=alls=12:allf=t", "-frames:v",
                    str(frames), "-pix_fmt", "yuv420p", "-strict", "-1", ref], check=True)
    subprocess.run([ffmpeg, "-v", "error", "-y", "-i", ref, "-vf", "gblur=sigma=1.5",
                    "-pix_fmt", "yuv420p", "-strict", "-1", dist], check=True)
    return ref, dist


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="the environment's python (default: the openvino one)")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--devices", default="auto,openvino-cpu,cpu")
    args = ap.parse_args(argv)
    python = args.python
    if python is None:
        python = os.path.join(ort_envs.cache_dir(), "envs", "openvino", "bin", "python")
        if not os.access(python, os.X_OK):
            sys.exit(f"no onnxruntime-openvino environment at {python}: run "
                     f"{ort_envs.MAKE_ENVS}")
    devices = args.devices.split(",")
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("VMAFDNN_ORT_LIBRARY", "PYTHONPATH")}
    with tempfile.TemporaryDirectory() as folder:
        ref, dist = make_clips(folder, args.size, args.frames)
        best, where, reports = {d: float("inf") for d in devices}, {}, {}
        for _ in range(args.rounds):
            for device in devices:
                out = os.path.join(folder, f"{device}.json")
                t0 = time.perf_counter()
                proc = subprocess.run([python, "-m", "vmafdnn", "-r", ref, "-d", dist,
                                       "--tiny-device", device, "-o", out], env=child_env,
                                      capture_output=True, text=True, cwd=folder)
                elapsed = time.perf_counter() - t0
                if proc.returncode:
                    sys.exit(f"{device}: {proc.stderr.strip()}")
                best[device] = min(best[device], elapsed)
                where[device] = [line for line in proc.stdout.splitlines()
                                 if line.startswith("model ")]
                with open(out) as f:
                    reports[device] = f.read()
    print(f"{args.size}, {args.frames} frames, default models, best of {args.rounds} rounds "
          f"in turns; whole process, seconds ({python})")
    for device in devices:
        ratio = f"{best[device] / best['cpu']:.2f}x cpu's time" if "cpu" in best else ""
        print(f"  {device:>14} {best[device]:8.2f} s  {ratio}")
        for line in where[device]:
            print(f"      {os.path.basename(line.split(':', 1)[0])}:{line.split(':', 1)[1]}")

    def frames(text):  # the report less its fps line (a timing)
        return [line for line in text.splitlines() if '"fps"' not in line]

    if "auto" in reports and "cpu" in reports and frames(reports["auto"]) != frames(reports["cpu"]):
        print("auto and cpu reports differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
