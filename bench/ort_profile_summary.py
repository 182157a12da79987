"""Where a model's time goes: sums ONNX Runtime's own profiles (written by the library with
VMAFDNN_ORT_PROFILE=PREFIX, one JSON file per session) by operator and EP.

    VMAFDNN_ORT_PROFILE=/tmp/prof/vmaf python bench/bench_device_io.py --device cuda ...
    python bench/ort_profile_summary.py /tmp/prof/vmaf_*.json [--top 25]

For each file with runs: its runs (model_run events), the mean time of a run, and the
operators by their share of the nodes' summed time, with how many nodes of each ran per run on
which EP, and the Memcpy nodes (copies between an EP and ORT's CPU EP inside the graph).

ORT times a node on the host: on an EP that launches asynchronously (CUDA) that is the launch,
not the kernel, and a node that waits for the device (a copy back to the host) carries the wait.
With CUDA_LAUNCH_BLOCKING=1 every launch waits for its kernel, so a node's time is its kernel's
(and the run is slower by the launches' gaps): bench/lent_gpu.sh profiles both ways.
"""
import argparse
import collections
import json
import os


def summarise(path, top):
    with open(path) as f:
        events = json.load(f)
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    nodes = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    if not runs or not nodes:
        return None
    per_op = collections.defaultdict(lambda: [0, 0])  # (op, ep) -> [microseconds, nodes]
    for e in nodes:
        key = (e["args"].get("op_name", "?"), e["args"].get("provider", "?"))
        per_op[key][0] += e["dur"]
        per_op[key][1] += 1
    total = sum(v[0] for v in per_op.values())
    run_us = sum(e["dur"] for e in runs) / len(runs)
    lines = [f"{os.path.basename(path)}: {len(runs)} runs, {run_us / 1000:.3f} ms per run, "
             f"nodes {total / len(runs) / 1000:.3f} ms per run"]
    memcpy = sum(v[1] for (op, _), v in per_op.items() if op.startswith("Memcpy")) / len(runs)
    lines.append(f"  Memcpy nodes per run: {memcpy:g}")
    for (op, ep), (us, count) in sorted(per_op.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"  {op:<20} {ep.replace('ExecutionProvider', ''):<8} "
                     f"{count / len(runs):6.1f} nodes  {us / len(runs) / 1000:8.3f} ms  "
                     f"{100 * us / total:5.1f} %")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="+")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args(argv)
    for path in args.profiles:
        text = summarise(path, args.top)
        if text:
            print(text)


if __name__ == "__main__":
    main()
