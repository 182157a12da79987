#!/usr/bin/env bash
# The test command (README: "Run the tests"). On a fresh machine it installs
# what the tests need, builds libvmafdnn and the Python package from this
# checkout, runs the C tests (plus a leak check under valgrind), the C and
# Python tests under ASan + UBSan, a bounded fuzzing run, prepares the
# separate ONNX Runtime environments, builds FFmpeg with the vmafdnn filters
# and ends with pytest, whose summary line is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

step() { printf '\n== %s\n' "$*"; }

step "system packages"
missing=()
for tool in valgrind ffmpeg pkg-config npm; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    pkgs=("${missing[@]/pkg-config/pkgconf}")
    if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
        "${pkgs[@]}" >/dev/null
fi

step "Python build and test dependencies"
"$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore meson-python meson ninja cffi numpy onnx
"$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-build-isolation -e '.[test,cpu]'
VMAFDNN_ORT_LIBRARY=$(cd /tmp && "$PY" -c 'import vmafdnn; print(vmafdnn.ort_library_path())')
export VMAFDNN_ORT_LIBRARY

step "C build and tests (ORT: $VMAFDNN_ORT_LIBRARY)"
rm -rf build-c
meson setup build-c --buildtype=debugoptimized >/dev/null
meson compile -C build-c >/dev/null
meson test -C build-c --print-errorlogs

step "leak check: 1000 x open -> run -> close under valgrind"
bash tools/leak_check.sh build-c 1000

step "sanitizers: C core with ASan + UBSan, C and Python tests"
bash tools/sanitize.sh

step "fuzzing: ONNX scanner, sidecar parser, Y4M reader (60 s each)"
bash tools/fuzz.sh 60

step "ONNX Runtime wheel environments"
bash tools/make_ort_envs.sh

step "FFmpeg with the vmafdnn filters (Debian's source + ffmpeg/*.patch)"
ffmpeg_env=$(bash tools/build_ffmpeg.sh --print-env)
eval "$ffmpeg_env"
echo "$VMAFDNN_FFMPEG"

step "pytest"
rc=0
"$PY" -m pytest tests/python -p no:cacheprovider -q -m "slow or not slow" || rc=$?
# pytest exits 5 when it collected no test: that is a failure here.
if [ "$rc" -eq 5 ]; then exit 1; fi
exit "$rc"
