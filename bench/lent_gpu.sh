#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool), in this checkout, with .carry and .gl carried
# (tools/gpu_bundle.sh makes them here): builds the library there with the image's Python,
# compiler, meson and ninja, then measures the library's own accelerator path through WebGPU
# on the GPU's Vulkan driver (ONNX Runtime 1.32.0's library and the WebGPU plugin from the
# bundle). Writes its tables into $OUT. About 5 minutes on an H100-class machine; every step
# has a time limit so that a hang costs that step only.
#
#   device run: carry [".carry", ".gl"], timeout_s 540, command "bash bench/lent_gpu.sh"
#
# Environment (for a dry run on a machine without a GPU: LENT_GPU_SIZES=320x180 and
# ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1, where Mesa's lavapipe then plays the GPU):
#   LENT_GPU_SIZES   sizes for bench_device_io.py (default 1920x1080,3840x2160)
#   LENT_GPU_RUNS    Runs per contender (default 30)
#   LENT_GPU_FRAMES  frames for bench_accel.py (default 60)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-/tmp/lent-gpu-out}
mkdir -p "$out"
log="$out/log.txt"
say() { echo "lent_gpu: $*" | tee -a "$log" >&2; }
step() { # name seconds command...: runs one step, its output into $out/name.txt
    local name=$1 seconds=$2
    shift 2
    say "$name"
    local start=$SECONDS
    PYTHONUNBUFFERED=1 timeout "$seconds" "$@" >"$out/$name.txt" 2>&1
    local rc=$?
    say "$name: exit $rc after $((SECONDS - start)) s"
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
python3 -m pip install -q --no-index --no-deps --target "$work/site" "$bundle"/wheels/*.whl
export PYTHONPATH="$work/site" PATH="$work/site/bin:$PATH"

step build 240 python3 -m pip wheel --no-build-isolation --no-deps -w "$work/wheels" "$repo" ||
    { tail -n 30 "$out/build.txt" >&2; exit 1; }
python3 -m pip install -q --upgrade --no-index --no-deps --target "$work/site" "$work"/wheels/vmafdnn-*.whl

export VMAFDNN_ORT_LIBRARY=$(ls "$bundle"/libonnxruntime.so.*)
export VMAFDNN_EP_LIBRARIES="webgpu=$bundle/libonnxruntime_providers_webgpu.so"
cd "$work" # the installed package, not the checkout's python/ folder

{
    nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
    python3 -m vmafdnn info --devices 2>&1
} >"$out/devices.txt"
say "$(grep -c WebGpu "$out/devices.txt") WebGPU lines in devices.txt"

sizes=${LENT_GPU_SIZES:-1920x1080,3840x2160}
step device_io 200 python3 "$repo/bench/bench_device_io.py" --device webgpu --sizes "$sizes" \
    --runs "${LENT_GPU_RUNS:-30}"
step accel 200 python3 "$repo/bench/bench_accel.py" --devices cpu,webgpu --sizes "${sizes%%,*}" \
    --frames "${LENT_GPU_FRAMES:-60}" --rounds 1 \
    --models psnr_y,ssim_y,vmaf_features --threads 4
say "done in $SECONDS s"
