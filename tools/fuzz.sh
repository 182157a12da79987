#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input for SECONDS each (default 60):
#
#   fuzz_onnx_scan  csrc/onnx_scan.c          libFuzzer, ASan + UBSan + LSan
#   fuzz_sidecar    csrc/json.c, sidecar.c     libFuzzer, ASan + UBSan + LSan
#   fuzz_vmaf_kernels csrc/vmaf_{vif,adm,motion}.c,
#                     {ssim,float_ssim,psnr,sharpness}_kernel.c
#                                              libFuzzer, ASan + UBSan + LSan
#   fuzz_y4m        python/vmafdnn/video.py    atheris (libFuzzer for Python)
#
#   tools/fuzz.sh [SECONDS] [HARNESS...]       (default: every harness)
#
# Each run starts from a copy of tests/fuzz/corpus/<harness>/ (the checked-in
# seeds are never modified) with tests/fuzz/<harness>.dict. Binaries, logs and
# any input that crashed, hung, leaked or ran out of memory go to
# ${VMAFDNN_FUZZ_DIR:-build-fuzz}/ (replay one: build-fuzz/fuzz_sidecar FILE, or
# python tests/fuzz/fuzz_y4m.py FILE). clang (with libFuzzer) and atheris are
# installed when missing (clang through apt-get, system-wide: no Python
# package ships libFuzzer); atheris lives in its own virtual environment under
# ${VMAFDNN_CACHE_DIR:-~/.cache/vmafdnn}/envs/fuzz, with this checkout
# installed editable beside it (build dir build/fuzz-env). When atheris cannot be
# installed, fuzz_y4m runs as plain random mutation without coverage guidance,
# and the summary says so.
#
# Prints one summary line per harness (executions, findings) and exits
# non-zero on any finding or on a harness that could not run.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_onnx_scan fuzz_sidecar fuzz_vmaf_kernels fuzz_y4m)
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: tools/fuzz.sh [SECONDS] [HARNESS...]" >&2
    exit 2
fi

python=${PYTHON:-python3}
out=${VMAFDNN_FUZZ_DIR:-$repo/build-fuzz}
cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
venv="$cache_root/envs/fuzz"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say() { echo "fuzz: $*" >&2; }

# The C sources each harness links; error.c goes with every one.
c_sources() {
    case $1 in
    fuzz_onnx_scan) echo csrc/onnx_scan.c ;;
    fuzz_sidecar) echo csrc/json.c csrc/sidecar.c ;;
    fuzz_vmaf_kernels) echo csrc/vmaf_vif.c csrc/vmaf_adm.c csrc/vmaf_motion.c csrc/vmaf_kernel_env.c \
        csrc/ssim_kernel.c csrc/float_ssim_kernel.c csrc/psnr_kernel.c csrc/sharpness_kernel.c ;;
    *) return 1 ;;
    esac
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    say "installing $*"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

libfuzzer_works() {
    cat >"$work/probe.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
EOF
    clang -fsanitize=fuzzer,address,undefined "$work/probe.c" -o "$work/probe" >/dev/null 2>&1
}

ensure_clang() {
    command -v clang >/dev/null || apt_install clang
    libfuzzer_works && return 0
    # Debian ships libFuzzer and the sanitizer runtimes in libclang-rt-N-dev.
    apt_install libclang-rt-dev || true
    libfuzzer_works || { say "error: clang cannot build with -fsanitize=fuzzer"; return 1; }
}

# Prints the Python that runs fuzz_y4m: the fuzz venv's when atheris works
# there, else plain $python (and the harness falls back to random mutation).
python_for_y4m() {
    if [ ! -x "$venv/bin/python" ]; then
        say "creating $venv"
        "$python" -m venv --system-site-packages "$venv" >&2 || { echo "$python"; return; }
    fi
    if ! "$venv/bin/python" -c 'import atheris, numpy' 2>/dev/null; then
        say "installing atheris into $venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check atheris numpy >&2 ||
            say "atheris could not be installed"
    fi
    if ! "$venv/bin/python" -c 'import atheris, numpy' 2>/dev/null; then
        echo "$python"
        return
    fi
    # The readers import the package's native module, so the package itself
    # is installed there too: editable, in a build directory of its own.
    say "installing vmafdnn (editable, build/fuzz-env) into $venv"
    if "$venv/bin/python" -m pip install -q --disable-pip-version-check \
            meson-python meson ninja cffi onnx >&2 &&
       "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
            --no-deps --config-settings=build-dir=build/fuzz-env -e "$repo" >&2; then
        echo "$venv/bin/python"
    else
        say "vmafdnn could not be installed into $venv"
        echo "$python"
    fi
}

# What the log of one run found: crash, timeout, leak, oom, or nothing.
finding_of() {
    local log=$1
    if grep -q 'ERROR: libFuzzer: timeout' "$log"; then echo timeout
    elif grep -qE 'ERROR: libFuzzer: (out-of-memory|malloc limit)' "$log"; then echo oom
    elif grep -q 'ERROR: LeakSanitizer' "$log"; then echo leak
    elif grep -qE 'ERROR: (AddressSanitizer|libFuzzer)|runtime error:' "$log" ||
         grep -qE 'Uncaught Python exception|==fuzz_y4m==' "$log"; then
        echo crash
    fi
}

# 1 when this harness's finding is $1, else 0 (libFuzzer stops at the first).
is() { if [ "$found" = "$1" ]; then echo 1; else echo 0; fi; }

status=0
summary=()
ensure_clang_done=no
for h in "${harnesses[@]}"; do
    log="$out/$h.log"
    artifacts="$out/artifacts/$h/"
    mkdir -p "$artifacts" "$work/$h"
    [ -d "tests/fuzz/corpus/$h" ] && cp -R "tests/fuzz/corpus/$h/." "$work/$h/"
    args=("$work/$h" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048
          -print_final_stats=1 -artifact_prefix="$artifacts" -dict="tests/fuzz/$h.dict")
    engine=libFuzzer
    if sources=$(c_sources "$h"); then
        if [ $ensure_clang_done = no ]; then ensure_clang; ensure_clang_done=yes; fi
        say "building $h"
        # shellcheck disable=SC2086 # the source list is meant to split
        clang -std=c11 -D_POSIX_C_SOURCE=200809L -D_XOPEN_SOURCE=700 -g -O1 \
            -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
            -fno-sanitize-recover=all -Icsrc -Iinclude \
            "tests/fuzz/$h.c" csrc/error.c $sources -lm -o "$out/$h"
        # -max_len: the caps under test (PATH_MAX, VDNN_SIDECAR_MAX_STRING)
        # need inputs longer than libFuzzer's default 4096 bytes.
        cmd=(env TMPDIR="$work" UBSAN_OPTIONS=print_stacktrace=1 "$out/$h" "${args[@]}"
             -detect_leaks=1 -max_len=10000)
    elif [ "$h" = fuzz_y4m ]; then
        py=$(python_for_y4m)
        if [ "$py" = "$python" ]; then
            engine="random mutation, no coverage (atheris unavailable)"
            cmd=(env TMPDIR="$work" "$py" tests/fuzz/fuzz_y4m.py --no-atheris "${args[@]}")
        else
            engine=atheris
            cmd=(env TMPDIR="$work" "$py" tests/fuzz/fuzz_y4m.py "${args[@]}")
        fi
    else
        say "error: unknown harness $h"
        exit 2
    fi

    say "running $h for ${seconds} s ($engine)"
    start=$SECONDS
    rc=0
    "${cmd[@]}" >"$log" 2>&1 || rc=$?
    took=$((SECONDS - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs in.*/\1/p' "$log" | tail -n 1)
    found=$(finding_of "$log")
    if [ -z "$found" ] && [ "$rc" -ne 0 ]; then found="error (exit $rc)"; fi
    if [ -z "$found" ] && [ -z "$runs" ]; then found="no executions reported"; fi
    line=$(printf '%-15s %10s execs in %4d s  crashes=%d timeouts=%d leaks=%d ooms=%d  [%s]' \
        "$h" "${runs:-?}" "$took" "$(is crash)" "$(is timeout)" "$(is leak)" "$(is oom)" "$engine")
    if [ -n "$found" ]; then
        status=1
        line="$line  FOUND: $found"
        echo "---- $h: last lines of $log" >&2
        tail -n 40 "$log" >&2
        unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        if [ -n "$unit" ]; then line="$line ($unit)"; fi
    fi
    summary+=("$line")
done

echo
echo "fuzz summary (${seconds} s per harness; logs and findings in $out):"
printf '  %s\n' "${summary[@]}"
exit $status
