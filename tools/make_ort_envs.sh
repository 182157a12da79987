#!/usr/bin/env bash
# Creates one Python virtual environment per ONNX Runtime wheel, for
# tests/python/test_ort_wheels.py. The onnxruntime, onnxruntime-gpu and
# onnxruntime-openvino wheels all install the package `onnxruntime`, so each
# needs an environment of its own.
#
#   tools/make_ort_envs.sh [NAME...]     (default: every environment below)
#
# Environments live in ${VMAFDNN_CACHE_DIR:-$XDG_CACHE_HOME/vmafdnn}/envs/NAME
# and are kept between runs: ORT and its dependencies are installed once
# (a stamp file records the requirement installed), while vmafdnn is rebuilt
# from this checkout on every run and force-reinstalled, so the environments
# always test the current code. All of them share the interpreter running this
# script (python3, or $PYTHON).
#
# Progress goes to stderr; stdout gets one summary line per environment.
# Exits non-zero when any environment cannot be made to work.
set -euo pipefail

# name|pip requirement. The 1.31.1 environment is separate from the developer's
# own Python on purpose: on a fresh CI machine that one need not exist, and
# the test must not depend on what else is installed there.
# gpu-cu12: 1.26.0 is the last CUDA 12 build; its extras pull the nvidia-*-cu12
# runtime libraries (cudart, cuBLAS, cuDNN, cuFFT, cuRAND, NVRTC) that the
# CUDA EP needs to load. Without a GPU the CUDA append then succeeds and
# session creation fails: the case libvmafdnn retries on the CPU.
# openvino-plugin: the stock CPU wheel plus OpenVINO as a plugin EP library
# (ORT >= 1.22's EP ABI), installed the way its vendor documents; vmafdnn
# finds and registers it by itself (docs/execution_providers.md).
# webgpu-plugin: the stock CPU wheel plus the WebGPU plugin EP (a 6.9 MB wheel;
# about 10 s and 176 MB the first time, ORT's wheel coming from pip's cache).
# Without a GPU it offers a device only with ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1,
# which runs on a Vulkan driver Dawn accepts (Mesa's lavapipe from the system,
# not installed here: docs/execution_providers.md, "The accelerator forms on WebGPU").
ENVS=(
    "ort-1.20.1|onnxruntime==1.20.1"
    "ort-1.31.1|onnxruntime==1.31.1"
    "openvino|onnxruntime-openvino==1.24.1"
    "gpu-cu12|onnxruntime-gpu[cuda,cudnn]==1.26.0"
    "openvino-plugin|onnxruntime==1.32.0 onnxruntime-ep-openvino==1.8.1"
    "webgpu-plugin|onnxruntime==1.32.0 onnxruntime-ep-webgpu==0.4.0"
)
# Always installed beside ORT: what vmafdnn itself needs at run time.
BASE_REQUIREMENTS=(numpy cffi)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}
cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
envs_dir="$cache_root/envs"
stamp_name=.vmafdnn-ort-requirement
version_of_python='import sys; print("%d.%d" % sys.version_info[:2])'

say() { echo "make_ort_envs: $*" >&2; }
die() { say "error: $*"; exit 1; }

python_version=$("$python" -c "$version_of_python") || die "cannot run $python"

# Quiet pip: its output goes to a log that is shown only when it fails.
pip_in() {
    local py=$1 log
    shift
    log=$(mktemp "$envs_dir/pip-log.XXXXXX")
    if ! "$py" -m pip --disable-pip-version-check "$@" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

selected=("$@")
wanted() {
    [ ${#selected[@]} -eq 0 ] && return 0
    local s
    for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done
    return 1
}

for name in "${selected[@]}"; do
    known=no
    for entry in "${ENVS[@]}"; do [ "${entry%%|*}" = "$name" ] && known=yes; done
    [ $known = yes ] || die "unknown environment '$name' (known: ${ENVS[*]%%|*})"
done

mkdir -p "$envs_dir"
wheelhouse=$(mktemp -d "$envs_dir/wheelhouse.XXXXXX")
trap 'rm -rf "$wheelhouse"' EXIT

start=$SECONDS
say "building the vmafdnn wheel from $repo"
pip_in "$python" wheel --no-deps -w "$wheelhouse" "$repo" || die "cannot build vmafdnn's wheel"
wheel=$(ls "$wheelhouse"/vmafdnn-*.whl) || die "pip built no vmafdnn wheel"
say "built $(basename "$wheel") in $((SECONDS - start)) s"

# Creates or updates one environment; prints its summary line.
make_env() {
    local name=$1 requirement=$2
    local dir="$envs_dir/$name" py="$envs_dir/$name/bin/python"
    local stamp="$dir/$stamp_name" want t0=$SECONDS

    # A venv is tied to its interpreter's minor version, as is vmafdnn's wheel.
    if [ "$("$py" -c "$version_of_python" 2>/dev/null)" != "$python_version" ]; then
        say "$name: creating the virtual environment (Python $python_version)"
        "$python" -m venv --clear "$dir" || return 1
    fi
    want="$requirement ${BASE_REQUIREMENTS[*]}"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        say "$name: installing $want"
        rm -f "$stamp"
        # shellcheck disable=SC2086 # the requirement list is meant to split
        pip_in "$py" install --no-compile $want || return 1
        echo "$want" >"$stamp"
        say "$name: installed in $((SECONDS - t0)) s ($(du -sh "$dir" | cut -f1) on disk)"
    else
        say "$name: $requirement already installed"
    fi
    pip_in "$py" install --no-compile --no-deps --force-reinstall "$wheel" || return 1

    # The summary doubles as a smoke test: the installed package finds the
    # environment's own ORT (nothing inherited may point elsewhere).
    (cd / && env -u VMAFDNN_ORT_LIBRARY -u PYTHONPATH "$py" - "$name") <<'EOF'
import os, sys
import vmafdnn
name = sys.argv[1]
if not vmafdnn.available():
    sys.exit(f"{name}: vmafdnn cannot load ONNX Runtime: {vmafdnn.unavailable_reason()}")
library = vmafdnn.ort_library_path()
if not os.path.realpath(library).startswith(os.path.realpath(sys.prefix) + os.sep):
    sys.exit(f"{name}: vmafdnn loaded ONNX Runtime from {library}, outside {sys.prefix}")
print(f"{name}: vmafdnn {vmafdnn.__version__}, ONNX Runtime {vmafdnn.ort_version()} from {library}")
EOF
}

failed=()
for entry in "${ENVS[@]}"; do
    name=${entry%%|*}
    wanted "$name" || continue
    make_env "$name" "${entry#*|}" || { say "$name: FAILED"; failed+=("$name"); }
done
say "done in $((SECONDS - start)) s"
[ ${#failed[@]} -eq 0 ] || die "could not make: ${failed[*]}"
