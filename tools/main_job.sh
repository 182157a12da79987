#!/usr/bin/env bash
# The main job: make a real clip pair with FFmpeg and score it with the
# built-in models, writing a libvmaf-style JSON report.
#
#   python3 -m pip install '.[cpu]' && bash tools/main_job.sh [OUTDIR]
#
# OUTDIR (default ./vmafdnn-demo) receives:
#   ref.y4m      3 s of FFmpeg's testsrc2 pattern, 640x360, 25 fps, 8-bit 4:2:0
#   dist.mp4     the same encoded with libx264 at crf 40 (visibly degraded)
#   dist.y4m     dist.mp4 decoded back to Y4M
#   report.json  per-frame and pooled psnr_y and ssim_y (vmafdnn -r -d -o)
#   nr.json      sharpness_nr of dist.mp4, piped from FFmpeg (--no-reference)
# FFmpeg is installed with apt-get when it is missing.
set -euo pipefail

OUT=${1:-./vmafdnn-demo}
PY=${PYTHON:-python3}
SIZE=${VMAFDNN_DEMO_SIZE:-640x360}
SECONDS_OF_VIDEO=${VMAFDNN_DEMO_SECONDS:-3}

step() { printf '\n== %s\n' "$*"; }

if ! command -v ffmpeg >/dev/null; then
    step "installing FFmpeg"
    if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
        ffmpeg >/dev/null
fi
# The list is captured before it is matched: a pipe into `grep -q` could
# close early, and pipefail would count ffmpeg's SIGPIPE as a failure.
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
if [[ $encoders != *" libx264 "* ]]; then
    echo "main_job.sh: this ffmpeg has no libx264 encoder (Debian's and Ubuntu's ffmpeg do)" >&2
    exit 1
fi

# The vmafdnn command of the Python that has the package (the console script
# may not be on PATH, e.g. after a --user install).
VMAFDNN=("$PY" -m vmafdnn)
"${VMAFDNN[@]}" --version >/dev/null

mkdir -p "$OUT"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

step "making the clip pair in $OUT ($SIZE, ${SECONDS_OF_VIDEO} s of testsrc2)"
ff -f lavfi -i "testsrc2=size=$SIZE:rate=25" -t "$SECONDS_OF_VIDEO" -pix_fmt yuv420p \
    "$OUT/ref.y4m"
ff -i "$OUT/ref.y4m" -c:v libx264 -preset medium -crf 40 -pix_fmt yuv420p "$OUT/dist.mp4"
ff -i "$OUT/dist.mp4" -pix_fmt yuv420p "$OUT/dist.y4m"
ls -l "$OUT"

step "full-reference scoring with the built-in models"
"${VMAFDNN[@]}" -r "$OUT/ref.y4m" -d "$OUT/dist.y4m" -o "$OUT/report.json" --json

step "no-reference scoring of the encode, piped from FFmpeg"
ffmpeg -nostdin -hide_banner -loglevel error -i "$OUT/dist.mp4" -f yuv4mpegpipe - |
    "${VMAFDNN[@]}" -d - --no-reference -o "$OUT/nr.json" --json

step "pooled scores (from the reports)"
"$PY" - "$OUT/report.json" "$OUT/nr.json" <<'EOF'
import json
import sys

for path in sys.argv[1:]:
    with open(path) as f:
        report = json.load(f)
    print(f"{path}: {len(report['frames'])} frames")
    for name, pooled in report["pooled_metrics"].items():
        stats = ", ".join(f"{k} {v:.6f}" for k, v in pooled.items())
        print(f"  {name}: {stats}")
EOF
