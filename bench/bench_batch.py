"""Throughput of vmafdnn batch: local worker processes and a local Ray
instance, 1, 2 and all workers, and the model-load time that keeping
sessions open across jobs saves.

    python bench/bench_batch.py [--pairs 24] [--size 320x180] [--frames 10]
                                [--rounds 2] [--no-ray] [--dir DIR]

The catalogue is generated: --pairs distorted clips (random luma plus noise,
8-bit 4:2:0 Y4M) against a few references, scored with the built-in psnr_y
and ssim_y at one ONNX Runtime thread per worker. Every configuration runs
--rounds times; the best wall time of a whole batch() call is kept (worker
start-up, imports and model loads included: what a user waits for). The
machines are shared and noisy: read the figures as orders of magnitude.

Model-load saving: the same batch with reuse=False (a fresh context, so
fresh ONNX Runtime sessions, for every job) against the default (one per
worker), one worker, and the sum of the rows' load_s in each.
"""
import argparse
import os
import tempfile
import time

import numpy as np

from vmafdnn import batch as vbatch
from vmafdnn.video import Frame, write_y4m


def make_catalogue(folder, pairs, width, height, frames):
    rng = np.random.default_rng(0)
    chroma = np.full((height // 2, width // 2), 128, np.uint8)

    def clip(path, planes):
        write_y4m(path, [Frame(y=p, u=chroma, v=chroma, bitdepth=8, index=i, chroma="420")
                         for i, p in enumerate(planes)])

    jobs = []
    refs = max(1, pairs // 4)
    for t in range(refs):
        ref = [rng.integers(0, 256, (height, width), dtype=np.uint8) for _ in range(frames)]
        clip(os.path.join(folder, f"ref{t}.y4m"), ref)
        for q in range(pairs // refs):
            noise = 2 + 4 * q
            dist = [np.clip(r.astype(np.int16) + rng.integers(-noise, noise + 1, r.shape),
                            0, 255).astype(np.uint8) for r in ref]
            name = os.path.join(folder, f"dist{t}_{q}.y4m")
            clip(name, dist)
            jobs.append({"title": f"t{t}", "rendition": q,
                         "reference": os.path.join(folder, f"ref{t}.y4m"), "distorted": name})
    return jobs


def best_batch(jobs, rounds, **kw):
    best, rows = float("inf"), None
    for _ in range(rounds):
        t0 = time.perf_counter()
        rows = vbatch.batch(jobs, **kw)
        best = min(best, time.perf_counter() - t0)
        assert rows.failed == 0, [r["error"] for r in rows if r["error"]]
    return best, rows


def line(name, seconds, rows):
    frames = sum(r["frames"] for r in rows)
    return (f"| {name} | {len(rows)} | {seconds:.2f} | {len(rows) / seconds:.1f} | "
            f"{frames / seconds:.0f} | {sum(r['load_s'] for r in rows):.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--size", default="320x180")
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--dir")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    folder = args.dir or tempfile.mkdtemp(prefix="vmafdnn-bench-batch-")
    jobs = make_catalogue(folder, args.pairs, width, height, args.frames)
    cores = vbatch.default_workers()
    print(f"{len(jobs)} pairs of {width}x{height}, {args.frames} frames; {cores} core(s); "
          f"psnr_y + ssim_y, 1 ORT thread per worker; best of {args.rounds}")
    print("| configuration | pairs | wall s | pairs/s | frames/s | sum of load_s |")
    print("|---|---|---|---|---|---|")
    counts = sorted({1, 2, cores})
    for n in counts:
        s, rows = best_batch(jobs, args.rounds, workers=n)
        print(line(f"local, {n} worker(s)" + (" (all)" if n == cores else ""), s, rows),
              flush=True)
    s, rows = best_batch(jobs, args.rounds, workers=1, reuse=False)
    print(line("local, 1 worker, models reopened per job", s, rows), flush=True)
    s, rows = best_batch(jobs[:1], args.rounds, workers=1)
    print(line("local, 1 worker, one job (start-up: spawn, imports, model load)", s, rows),
          flush=True)
    if not args.no_ray:
        import ray
        t0 = time.perf_counter()
        ray.init(num_cpus=cores, include_dashboard=False, logging_level="warning",
                 log_to_driver=False)
        print(f"(ray.init of a local {cores}-CPU instance: {time.perf_counter() - t0:.1f} s, "
              "not counted)")
        for n in counts:
            s, rows = best_batch(jobs, args.rounds, workers=n, ray=True)
            print(line(f"Ray, {n} actor(s)" + (" (all)" if n == cores else ""), s, rows),
                  flush=True)
        ray.shutdown()


if __name__ == "__main__":
    main()
