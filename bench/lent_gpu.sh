#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool), in this checkout, with .carry and .gl carried
# (tools/gpu_bundle.sh makes them here): builds the library there with the image's Python,
# compiler, meson and ninja, then checks VMAF's GPU kernels there (NVRTC compiles them on the
# machine; bench/check_cuda_kernels.py: their features against the CPU EP's, and their fps) and
# measures the library's own accelerator path on the GPU through ONNX Runtime's CUDA EP (onnxruntime-gpu 1.31.1's libraries from the bundle, CUDA 13's
# from the image's PyTorch wheels) and through WebGPU on the GPU's Vulkan driver, with ORT's
# CPU EP on the same machine for the ratio. Writes its tables into $OUT. Every step has a time
# limit, and a step that would end past LENT_GPU_DEADLINE seconds is cut to fit or skipped, so
# that a hang costs that step only and the call ends inside its own limit.
#
#   device run: carry [".carry", ".gl"], timeout_s 510, command "bash bench/lent_gpu.sh"
#
# Environment (for a dry run on a machine without a GPU: LENT_GPU_SIZES=320x180 and
# ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1, where Mesa's lavapipe then plays the GPU):
#   LENT_GPU_SIZES     the two sizes, HD then UHD (default 1920x1080,3840x2160)
#   LENT_GPU_FRAMES    frames per scored clip at the HD size (default 160: bench_accel runs up to
#                      six contenders per model, UINT8 and UINT16 samples among them)
#   LENT_GPU_DEADLINE  seconds the whole script may take (default 480)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-/tmp/lent-gpu-out}
mkdir -p "$out"
log="$out/log.txt"
say() { echo "lent_gpu: $*" | tee -a "$log" >&2; }
deadline=${LENT_GPU_DEADLINE:-480}
# The device tool brings back 8 files: every step's output goes into results.txt, each under a
# header, and the log, devices.txt and gpu_mem.csv beside it.
results="$out/results.txt"
step() { # name seconds command...: runs one step, its output appended to results.txt
    local name=$1 seconds=$2
    shift 2
    local left=$((deadline - SECONDS - 10))
    [ "$left" -lt "$seconds" ] && seconds=$left
    if [ "$seconds" -lt 20 ]; then
        say "$name: skipped, $left s left"
        return 1
    fi
    say "$name (at most $seconds s)"
    local start=$SECONDS
    PYTHONUNBUFFERED=1 timeout "$seconds" "$@" >"$work/step.txt" 2>&1
    local rc=$?
    say "$name: exit $rc after $((SECONDS - start)) s"
    { echo "=== $name: exit $rc after $((SECONDS - start)) s"; cat "$work/step.txt"; } >>"$results"
    return $rc
}

[ -f "$repo/.carry/bundle.tar.xz" ] || { say "no .carry/bundle.tar.xz: run tools/gpu_bundle.sh"; exit 2; }
# The loaders, as the device tool's README says: only where the image lacks them (on any
# other machine a dry run leaves / alone)
export PATH="$PATH:/sbin:/usr/sbin"
if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 && ls "$repo/.gl"/*.deb >/dev/null 2>&1 &&
    [ "$(id -u)" = 0 ]; then
    for f in "$repo/.gl"/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi

work=$(mktemp -d)
bundle="$work/bundle"
mkdir -p "$bundle" "$work/site" "$work/wheels" "$work/cache"
tar -C "$bundle" -xJf "$repo/.carry/bundle.tar.xz"
# fetch_ort_headers.sh finds them in its cache and fetches nothing
export VMAFDNN_CACHE_DIR="$work/cache"
cp -r "$bundle/ort-headers" "$VMAFDNN_CACHE_DIR/ort-headers"
# and fetch_vmaf_reference.sh --models-only finds libvmaf's model files there
mkdir -p "$VMAFDNN_CACHE_DIR/ref"
cp -r "$bundle/vmaf_models" "$VMAFDNN_CACHE_DIR/ref/vmaf_models"
python3 -m pip install -q --no-index --no-deps --target "$work/site" "$bundle"/wheels/*.whl
export PYTHONPATH="$work/site" PATH="$work/site/bin:$PATH"

step build 240 python3 -m pip wheel --no-build-isolation --no-deps -w "$work/wheels" "$repo" ||
    { tail -n 30 "$work/step.txt" >&2; exit 1; }
python3 -m pip install -q --upgrade --no-index --no-deps --target "$work/site" "$work"/wheels/vmafdnn-*.whl

export VMAFDNN_ORT_LIBRARY=$(ls "$bundle"/libonnxruntime.so.*)
export VMAFDNN_EP_LIBRARIES="webgpu=$bundle/libonnxruntime_providers_webgpu.so"
# The CUDA provider's cuBLAS, cuDNN, cuFFT, cuRAND and runtime: the image's Python wheels
# (nvidia-*), which the loader finds only through LD_LIBRARY_PATH
nvidia_libs=$(python3 - <<'PY'
import glob, os, sys
dirs = set()
for site in sys.path:
    for lib in glob.glob(os.path.join(site, "nvidia", "**", "lib*.so*"), recursive=True):
        dirs.add(os.path.dirname(lib))
print(":".join(sorted(dirs)))
PY
)
[ -d /usr/local/nvidia/lib64 ] && nvidia_libs="$nvidia_libs:/usr/local/nvidia/lib64"
export LD_LIBRARY_PATH="$nvidia_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$work" # the installed package, not the checkout's python/ folder

{
    nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
    nproc
    python3 -m vmafdnn info --devices 2>&1
} >"$out/devices.txt"
say "$(grep -c -E 'CUDA|WebGpu' "$out/devices.txt") CUDA/WebGPU lines in devices.txt"
# GPU memory and load through the run, for the peak device memory
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -lms 500 \
        >"$out/gpu_mem.csv" 2>&1 &
fi

sizes=${LENT_GPU_SIZES:-1920x1080,3840x2160}
hd=${sizes%%,*}
uhd=${sizes##*,}
frames=${LENT_GPU_FRAMES:-160}
models=psnr_y,ssim_y,vmaf_features
accel() { # name seconds size frames threads batch devices
    step "$1" "$2" python3 "$repo/bench/bench_accel.py" --devices "$7" --sizes "$3" \
        --frames "$4" --unique 16 --rounds 2 --models "$models" --threads "$5" --batch "$6" \
        --together psnr_y,ssim_y
}
# The library's fused kernels on CUDA (csrc/gpu, compiled there by NVRTC and held to the CPU
# kernels by the self-check: never run on a GPU before): VMAF's features, psnr_y, ssim_y,
# float_ssim and sharpness_nr against the same ops on ORT's CPU EP: every value's difference (0 expected) and the fps,
# with the kernels and with ORT copying the planes to its CPU EP for the ops
step nvrtc 20 sh -c "find / -xdev -name 'libnvrtc*.so*' 2>/dev/null | head -n 8"
step cuda_kernels 100 python3 "$repo/bench/check_cuda_kernels.py" --device cuda --sizes "$hd" \
    --frames 32 --depths 8,10
# the kernels' forms one Run at a time (ORT's copies against bound device tensors, graph
# capture), then ORT's profile of them under CUDA_LAUNCH_BLOCKING=1: each op's own time on the GPU
step cuda_kernels_runs 60 python3 "$repo/bench/bench_device_io.py" --device cuda --sizes "$sizes" \
    --runs 20 --models vmaf_features,psnr_y,ssim_y,float_ssim,sharpness_nr --forms kernels
rm -rf "$work/kprof" && mkdir -p "$work/kprof"
step cuda_kernels_profile 40 env CUDA_LAUNCH_BLOCKING=1 VMAFDNN_ORT_PROFILE="$work/kprof/p" \
    python3 "$repo/bench/bench_device_io.py" --device cuda --sizes "$hd" --runs 10 \
    --models vmaf_features,psnr_y,ssim_y,sharpness_nr --forms kernels &&
    step cuda_kernels_profile_summary 30 sh -c "python3 '$repo/bench/ort_profile_summary.py' '$work'/kprof/*.json"
profile() { # name seconds: ORT's profile of the specialised sessions on CUDA, summed by operator
    rm -rf "$work/prof" && mkdir -p "$work/prof"
    step "$1" "$2" env VMAFDNN_ORT_PROFILE="$work/prof/p" python3 "$repo/bench/bench_device_io.py" \
        --device cuda --sizes "$hd" --runs 10 --models ssim_y,vmaf_features &&
        step "$1_summary" 30 sh -c "python3 '$repo/bench/ort_profile_summary.py' '$work'/prof/*.json"
}
profile cuda_profile 60
CUDA_LAUNCH_BLOCKING=1 profile cuda_profile_blocking 60 # a node's time is then its kernel's
# Whether cuDNN's algorithm for VMAF's grouped Convs is the 28 ms (the library asks for the
# heuristic search): the features' Runs with ORT's exhaustive search and with its default
step cuda_conv_search 70 sh -c "for s in EXHAUSTIVE DEFAULT; do echo \"cudnn_conv_algo_search \$s\";
    VMAFDNN_CUDNN_CONV_ALGO_SEARCH=\$s python3 '$repo/bench/bench_device_io.py' --device cuda \
    --sizes '$hd' --runs 20 --models vmaf_features 2>&1 | tail -n 12; done"
# What spoils ORT's recording of psnr_y's graph with one session (session 14: "operation failed
# due to a previous error during capture"): ORT's own log around it
step cuda_capture_log 40 sh -c "VMAFDNN_ORT_LOG_LEVEL=1 python3 '$repo/bench/bench_device_io.py' \
    --device cuda --sizes '$hd' --runs 4 --models psnr_y 2>&1 |
    grep -i -E 'captur|graph|error|warn|psnr_y' | cut -c1-600 | head -n 60"
accel cuda_hd 130 "$hd" "$frames" 2 16 cuda
# The command line on CUDA, as a user runs it: VMAF of a raw 4:2:0 clip pair (made here: a
# texture panning, the distorted side noised), and the summary saying which form ran where
python3 - "$work" "$hd" <<'PY'
import sys
import numpy as np
work, (w, h) = sys.argv[1], map(int, sys.argv[2].split("x"))
rng = np.random.default_rng(1)
texture = rng.integers(16, 236, (h, w + 120), dtype=np.uint8)
chroma = np.full(((h // 2) * (w // 2) * 2,), 128, np.uint8).tobytes()
with open(f"{work}/ref.yuv", "wb") as ref, open(f"{work}/dist.yuv", "wb") as dist:
    for t in range(60):
        y = np.ascontiguousarray(texture[:, 2 * t:2 * t + w])
        noisy = np.clip(y + rng.normal(0, 3, y.shape), 0, 255).astype(np.uint8)
        ref.write(y.tobytes() + chroma)
        dist.write(noisy.tobytes() + chroma)
PY
step cli_cuda 90 python3 -m vmafdnn -r "$work/ref.yuv" -d "$work/dist.yuv" -w "${hd%x*}" \
    -h "${hd#*x}" -p 420 -b 8 --tiny-model vmaf --tiny-model psnr_y --tiny-device cuda \
    --tiny-threads 2 -o "$work/cli.json"
# frames read into the context's picture buffers (CUDA's pinned memory: fed from where they lie)
# against arrays of their own (each model copies them into its pinned block first)
step cuda_picture_buffers 45 python3 "$repo/bench/bench_picture_buffers.py" --device cuda \
    --size "$hd" --bitdepth 8 --frames 60 --rounds 2 --threads 2 --models psnr_y,ssim_y,vmaf
# the accelerator and samples forms of psnr_y and ssim_y (half the bytes), VMAF's features
step cuda_device_io 75 python3 "$repo/bench/bench_device_io.py" --device cuda --sizes "$sizes" \
    --runs 30 --models "$models"
accel cuda_uhd 100 "$uhd" 48 2 4 cuda
accel cpu_hd 60 "$hd" 16 8 0 cpu
step webgpu_device_io 40 python3 "$repo/bench/bench_device_io.py" --device webgpu \
    --sizes "$hd" --runs 20 --models psnr_y,ssim_y
accel webgpu_hd 60 "$hd" 60 1 4 webgpu
kill %1 2>/dev/null
say "done in $SECONDS s"
