#!/usr/bin/env bash
# The test command (README: "The two commands"); CI runs it through .ci/run.
# It builds libvmafdnn and the Python package from this checkout and runs, in
# an order where every step's prerequisites exist before it starts:
#
#   system tools       valgrind, pkg-config, npm, Mesa's Vulkan drivers (the
#                      WebGPU tests' software adapter): apt-get, only when missing
#   test environment   a virtual environment in the cache (never the system
#                      Python) with the build and test requirements, the
#                      package installed editable, and imageio-ffmpeg's static
#                      ffmpeg for the real-video tests (VMAFDNN_TEST_FFMPEG)
#   C tests            build-c/, meson test
#   AArch64 kernels    build-aarch64/: the CPU kernels' dump cross-built
#                      (on x86-64), for test_vmaf_kernels.py to run under qemu
#   leak check         1000 x open -> run -> close under valgrind
#   FFmpeg             tools/build_ffmpeg.sh: the patched ffmpeg the filter
#                      tests need, built before any pytest run uses it
#   ASan + UBSan       tools/sanitize.sh asan: C and Python tests
#   ThreadSanitizer    tools/sanitize.sh tsan: C tests
#   fuzzing            tools/fuzz.sh 60
#   ORT wheels         tools/make_ort_envs.sh
#   pytest             tests/python, slow tests included
#
# Everything it downloads or builds outside the checkout lives under
# ${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/vmafdnn} (pip's cache
# included); README "What the test command installs" lists it. Each step
# prints its duration when it ends, and a table of them all comes at the end,
# followed by pytest's summary line again so that it stays the last line.
# A failing test step does not stop the run (every failure shows in one log);
# the exit status is non-zero when any step or pytest failed.
#
# Tiers (the same set-up; README "The two commands"):
#   tools/test.sh            everything above: what CI runs
#   tools/test.sh --quick    C build and tests, FFmpeg (cached), pytest -m "not slow":
#                            a change checked in minutes (warm cache)
#   tools/test.sh --medium   --quick plus the sanitizers (ASan + UBSan, TSan)
set -euo pipefail
tier=full
case "${1:-}" in
    --quick) tier=quick ;;
    --medium) tier=medium ;;
    "") ;;
    *) echo "usage: tools/test.sh [--quick|--medium]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
repo=$PWD
PY=${PYTHON:-python3}

cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
mkdir -p "$cache_root"
cache_root=$(cd "$cache_root" && pwd)
# Exported so that every script and test agrees on one cache, whatever the
# defaults each of them would pick on its own.
export VMAFDNN_CACHE_DIR="$cache_root"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$cache_root/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# matplotlib (the plot command's tests) keeps a font cache: ours too.
export MPLCONFIGDIR="${MPLCONFIGDIR:-$cache_root/matplotlib}"
venv="$cache_root/envs/test"
# ccache (a system tool below): meson compiles through it whenever it is on
# PATH. Its cache lives with the others; paths inside the checkout are hashed
# relative to it and the build directory's own path not at all, so that a
# fresh clone's C builds (build-c and the editable install's build/test-env,
# about 80 s of CPU each here) come from what an earlier checkout compiled.
# (Debug info then names the directory an object was first compiled in.)
export CCACHE_DIR="${CCACHE_DIR:-$cache_root/ccache}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$repo}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# --- step timing ----------------------------------------------------------
total_start=$SECONDS
step_name=""
step_start=$SECONDS
durations=()
end_step() {
    if [ -n "$step_name" ]; then
        local took=$((SECONDS - step_start))
        durations+=("$(printf '%6d s  %s' "$took" "$step_name")")
        printf '== %s: %d s\n' "$step_name" "$took"
    fi
    step_name=""
}
step() {
    end_step
    step_name=$1
    step_start=$SECONDS
    printf '\n== %s\n' "$*"
}
print_durations() {
    echo
    echo "== step durations"
    printf '%s\n' "${durations[@]}"
    printf '%6d s  total\n' "$((SECONDS - total_start))"
}
on_exit() {
    local rc=$?
    if [ "$rc" -ne 0 ] && [ -n "$step_name" ]; then
        local name=$step_name
        end_step
        print_durations
        echo "test.sh: stopped in step \"$name\" (exit $rc)" >&2
    fi
}
trap on_exit EXIT
# A step whose failure leaves the later ones meaningful is run through
# `check`: the run goes on, so that one CI log shows every failure, and the
# exit status says that something failed. Steps the later ones build on
# (environment, C build) stop the run at once through errexit.
failed=()
check() {
    "$@" || {
        local rc=$?
        failed+=("$step_name")
        echo "test.sh: FAILED (exit $rc) in step \"$step_name\": $*" >&2
    }
}

# --- system tools ---------------------------------------------------------
step "system tools"
# Only what no Python package provides, and only when it is missing: valgrind
# (leak check), pkg-config (FFmpeg's configure finds libvmafdnn with it), ccache
# (C builds a fresh clone repeats), npm
# (ONNX Runtime's C headers, when no cached copy exists), qemu-user on x86-64
# and Debian's AArch64 cross compiler (the CPU kernels' other x86-64 builds
# and an AArch64 build run under qemu, tests/python/test_vmaf_kernels.py; on
# a CPU with AVX-512 the reference libvmaf too, whose AVX-512 ADM differs
# from its portable path: tools/fetch_vmaf_reference.sh's LIBVMAF). FFmpeg
# itself comes from PyPI below; clang for the fuzzers is tools/fuzz.sh's business, the
# FFmpeg build's own apt use tools/build_ffmpeg.sh's.
missing=()
command -v valgrind >/dev/null || missing+=(valgrind)
command -v pkg-config >/dev/null || missing+=(pkgconf)
command -v ccache >/dev/null || missing+=(ccache)
if [ "$(uname -m)" = x86_64 ]; then
    command -v qemu-x86_64 >/dev/null || missing+=(qemu-user)
    command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
    [ -f /usr/aarch64-linux-gnu/include/stdio.h ] || missing+=(libc6-dev-arm64-cross)
fi
if ! [ -f "$cache_root/ort-headers/onnxruntime_c_api.h" ]; then
    command -v npm >/dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing with apt-get: ${missing[*]}"
    if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
else
    echo "all present"
fi
# Mesa's Vulkan drivers, 23 or newer: lavapipe is the software adapter the
# WebGPU plugin's tests run on where there is no GPU (Dawn refuses Debian 12's
# Mesa 22.3.6, and those tests then skip). Debian 12 has Mesa 25 in its
# backports suite: installed from there, the machine's own mirror
# (tools/apt_mirror.sh) given to apt for those two commands only (no apt
# source is added). Elsewhere the release's own package, when missing.
mesa_major() {
    dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | sed 's/^[0-9]*://; s/\..*//'
}
mesa=$(mesa_major ||:)
if command -v dpkg-query >/dev/null && { [ -z "$mesa" ] || [ "$mesa" -lt 23 ]; }; then
    if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    apt_parts=(-o Dir::Etc::SourceParts=/etc/apt/sources.list.d)
    apt_target=()
    if [ "$codename" = bookworm ]; then
        source tools/apt_mirror.sh
        mirror=$(machine_mirror | awk 'NR == 1') ||:
        if [ -n "$mirror" ]; then
            parts=$(mktemp -d)
            for f in /etc/apt/sources.list.d/*; do [ -f "$f" ] && ln -s "$f" "$parts/"; done
            key=${mirror#* }
            opts="arch=$(dpkg --print-architecture)"
            [ "$key" != - ] && opts="$opts signed-by=$key"
            echo "deb [$opts] ${mirror% *} $codename-backports main" > "$parts/vmafdnn-backports.list"
            apt_parts=(-o Dir::Etc::SourceParts="$parts")
            apt_target=(-t "$codename-backports")
        fi
    fi
    echo "installing Mesa's Vulkan drivers with apt-get ${apt_target[*]}"
    if "${SUDO[@]}" apt-get "${apt_parts[@]}" update -qq &&
       DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get "${apt_parts[@]}" install -y -qq \
           --no-install-recommends "${apt_target[@]}" mesa-vulkan-drivers libvulkan1 >/dev/null; then
        echo "Mesa's Vulkan drivers: $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
    else
        echo "Mesa's Vulkan drivers could not be installed: the WebGPU tests will skip"
    fi
    [ -n "${parts:-}" ] && rm -rf "$parts"
fi

# --- test environment -----------------------------------------------------
step "test environment $venv"
if [ "$("$venv/bin/python" -c 'import sys; print(sys.version)' 2>/dev/null)" != \
     "$("$PY" -c 'import sys; print(sys.version)')" ]; then
    "$PY" -m venv --clear "$venv"
fi
# From here on python3, pip, meson and ninja are the environment's, for this
# script and every script it runs (tools/build_ffmpeg.sh calls python3).
export PATH="$venv/bin:$PATH"
PY="$venv/bin/python"
export PYTHON="$PY"
# pip 23.1 or newer: older ones (Debian 12's 23.0.1) keep only the last of repeated
# --config-settings keys, which tools/sanitize.sh passes.
"$PY" -m pip install -q 'pip>=23.1'
"$PY" -m pip install -q meson-python meson ninja cffi numpy onnx 'imageio-ffmpeg==0.8.1'
# Its own build directory, so that a developer's editable install of this
# checkout (build/cp3XX) is not reconfigured for another interpreter.
"$PY" -m pip install -q --no-build-isolation --config-settings=build-dir=build/test-env -e '.[test,cpu]'
VMAFDNN_ORT_LIBRARY=$(cd /tmp && "$PY" -c 'import vmafdnn; print(vmafdnn.ort_library_path())')
export VMAFDNN_ORT_LIBRARY
VMAFDNN_TEST_FFMPEG=$("$PY" -c 'import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())')
export VMAFDNN_TEST_FFMPEG
echo "ORT: $VMAFDNN_ORT_LIBRARY"
echo "ffmpeg for the tests: $VMAFDNN_TEST_FFMPEG"

# --- C --------------------------------------------------------------------
step "C build and tests (build-c)"
# The full run builds from scratch; the quick and medium tiers reuse an
# existing build-c (meson rebuilds what changed: a repeated quick run skips
# the ~40 s of a whole build here), as tools/sanitize.sh does its own.
if [ "$tier" != full ] && [ -f build-c/build.ninja ]; then
    meson setup --reconfigure build-c --buildtype=debugoptimized >/dev/null
else
    rm -rf build-c
    meson setup build-c --buildtype=debugoptimized >/dev/null
fi
meson compile -C build-c >/dev/null
# The full tier converts all 2^32 fp32 patterns to fp16 against the
# processor's own conversion (~25 s); the others every 29th.
if [ "$tier" = full ]; then exhaustive=1; else exhaustive=0; fi
check env VMAFDNN_FP16_EXHAUSTIVE=$exhaustive meson test -C build-c --print-errorlogs

if [ "$(uname -m)" = x86_64 ]; then
    # The CPU kernels built for AArch64 (Debian's cross compiler, the
    # project's default build type), run under qemu by test_vmaf_kernels.py:
    # the same scores on an Arm server (~10 s; kernel_dump alone).
    step "AArch64 build of the CPU kernels (build-aarch64)"
    build_aarch64() {
        if [ "$tier" = full ] || ! [ -f build-aarch64/build.ninja ]; then
            rm -rf build-aarch64
            meson setup build-aarch64 --cross-file tools/cross/aarch64-linux-gnu.ini \
                -Dpython=disabled -Dmodels=disabled -Dvmaf=disabled >/dev/null || return
        fi
        meson compile -C build-aarch64 tests/c/kernel_dump >/dev/null
    }
    check build_aarch64
fi

if [ "$tier" = full ]; then
    step "leak check: 1000 x open -> run -> close under valgrind"
    check bash tools/leak_check.sh build-c 1000
fi

# --- FFmpeg before anything that runs its tests ---------------------------
step "FFmpeg with the vmafdnn filters (Debian's source + ffmpeg/*.patch)"
ffmpeg_env=$(bash tools/build_ffmpeg.sh --print-env)
eval "$ffmpeg_env"
echo "$VMAFDNN_FFMPEG"
# build_ffmpeg.sh may name another ORT; the tests keep the environment's.
VMAFDNN_ORT_LIBRARY=$(cd /tmp && "$PY" -c 'import vmafdnn; print(vmafdnn.ort_library_path())')
export VMAFDNN_ORT_LIBRARY

# --- sanitizers, fuzzing, wheels -------------------------------------------
if [ "$tier" != quick ]; then
    step "sanitizers: ASan + UBSan, C and Python tests"
    check bash tools/sanitize.sh asan

    step "sanitizers: ThreadSanitizer, C tests"
    check bash tools/sanitize.sh tsan
fi

if [ "$tier" = full ]; then
    step "fuzzing: ONNX scanner, sidecar parser, VMAF kernels, Y4M reader (60 s each)"
    check bash tools/fuzz.sh 60

    step "ONNX Runtime wheel environments"
    check bash tools/make_ort_envs.sh
fi

# --- pytest: its summary line is the last line printed --------------------
step "pytest"
log="$cache_root/pytest-last.log"
if [ "$tier" = full ]; then marks="slow or not slow"; else marks="not slow"; fi
set +e
"$PY" -m pytest tests/python -p no:cacheprovider -q -m "$marks" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
end_step
print_durations
if [ ${#failed[@]} -gt 0 ]; then
    printf 'test.sh: FAILED steps:\n'
    printf '  %s\n' "${failed[@]}"
fi
summary=$(tail -n 1 "$log")
echo "$summary"
# pytest exits 5 when it collected no test: that is a failure here.
if [ "$rc" -eq 5 ]; then exit 1; fi
if [ "$rc" -eq 0 ] && [ ${#failed[@]} -gt 0 ]; then exit 1; fi
exit "$rc"
