#!/usr/bin/env bash
# Fetches the reference libvmaf pieces that the VMAF graphs are generated from and checked against,
# into a cache outside the source tree (neither is ours to commit):
#   - imageio-ffmpeg 0.8.1: a static FFmpeg 9.0.2 built with libvmaf (the reference scorer);
#   - ffmpeg-quality-metrics 3.13.0: libvmaf's model files (vmaf_v0.6.1, vmaf_4k_v0.6.1,
#     vmaf_v0.6.1neg) and their licence.
# Both come as wheels through pip's ordinary client (binary only, no dependencies, nothing
# installed). Progress goes to stderr; stdout carries KEY=PATH lines:
#   FFMPEG=...  VMAF_MODELS=...  VMAF_LICENSE=...  LIBVMAF=...
# LIBVMAF is the command that scores with the reference libvmaf (the tests' "real libvmaf"):
# that FFmpeg, except on a CPU with AVX-512, where libvmaf's AVX-512 ADM gives other values
# than its portable C and AVX2 code on odd sizes (measured on FFmpeg 9.0.2's libvmaf: adm2
# 5.2e-4 and adm_scale3 1.1e-3 apart on a 322x178 clip, every other feature equal): there it
# is a script in the cache that runs the same FFmpeg under qemu-x86_64 as a Haswell (AVX2, no
# AVX-512), so that every machine checks against the same libvmaf results.
# Running it again only prints the paths.
#
#   tools/fetch_vmaf_reference.sh               both (tests, benchmarks)
#   tools/fetch_vmaf_reference.sh --models-only the model files only (the build
#                                               generates the vmaf built-ins from
#                                               them; prints VMAF_MODELS=...)
set -euo pipefail
models_only=0
[ "${1:-}" = --models-only ] && models_only=1

cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
dest="$cache_root/ref"
ffmpeg="$dest/ffmpeg-linux-x86_64-v9.0.2"
models="$dest/vmaf_models"
models_needed=(vmaf_v0.6.1.json vmaf_4k_v0.6.1.json vmaf_v0.6.1neg.json)

have_all() {
    [ "$models_only" = 1 ] || [ -x "$ffmpeg" ] || return 1
    for m in "${models_needed[@]}"; do [ -f "$models/$m" ] || return 1; done
    licence >/dev/null
}

# The first licence file beside the models (no pipe into an early-exiting
# reader: under pipefail that can fail at random).
licence() {
    local f
    for f in "$models"/LICENSE*; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

# The reference scorer (LIBVMAF above).
libvmaf_runner() {
    if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
        echo "$ffmpeg"
        return
    fi
    local qemu runner="$dest/ffmpeg-without-avx512"
    if ! qemu=$(command -v qemu-x86_64); then
        echo "fetch_vmaf_reference: AVX-512 CPU and no qemu-x86_64 (Debian: qemu-user):" \
            "libvmaf's ADM will differ from its portable results" >&2
        echo "$ffmpeg"
        return
    fi
    # Without LD_PRELOAD: the ASan pytest preloads libasan into every child, and qemu (a host
    # program) under it took 39 s instead of 0.6 s for one small clip; the static FFmpeg inside
    # reads no LD_PRELOAD of its own.
    printf '#!/bin/sh\nexec env -u LD_PRELOAD %s -cpu Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm %s "$@"\n' \
        "$qemu" "$ffmpeg" >"$runner.tmp"
    chmod +x "$runner.tmp"
    mv "$runner.tmp" "$runner"
    echo "$runner"
}

print_paths() {
    [ "$models_only" = 1 ] || echo "FFMPEG=$ffmpeg"
    [ "$models_only" = 1 ] || echo "LIBVMAF=$(libvmaf_runner)"
    echo "VMAF_MODELS=$models"
    echo "VMAF_LICENSE=$(licence)"
}

if have_all; then print_paths; exit 0; fi

pip=(python3 -m pip)
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then pip=("$VIRTUAL_ENV/bin/python" -m pip); fi

mkdir -p "$dest"
work=$(mktemp -d "$dest/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ "$models_only" = 0 ] && [ ! -x "$ffmpeg" ]; then
    echo "fetch_vmaf_reference: downloading imageio-ffmpeg 0.8.1" >&2
    # The FFmpeg inside is a static x86-64 Linux binary: the wheel pip picks for this host is that one.
    "${pip[@]}" download -q --no-deps --only-binary=:all: -d "$work" imageio-ffmpeg==0.8.1 >&2
fi
echo "fetch_vmaf_reference: downloading ffmpeg-quality-metrics 3.13.0" >&2
"${pip[@]}" download -q --no-deps --only-binary=:all: -d "$work" ffmpeg-quality-metrics==3.13.0 >&2

unzip_one() { # wheel, member path -> stdout
    python3 - "$1" "$2" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    sys.stdout.buffer.write(z.read(sys.argv[2]))
PY
}

first() { [ -f "$1" ] && echo "$1"; } # the first match of a glob, or nothing
if [ "$models_only" = 0 ] && [ ! -x "$ffmpeg" ]; then
    wheel=$(first "$work"/imageio_ffmpeg-0.8.1-*.whl)
    unzip_one "$wheel" imageio_ffmpeg/binaries/ffmpeg-linux-x86_64-v9.0.2 > "$work/ffmpeg"
    chmod +x "$work/ffmpeg"
    mv "$work/ffmpeg" "$ffmpeg"
fi

wheel=$(first "$work"/ffmpeg_quality_metrics-3.13.0-*.whl)
mkdir -p "$models"
for m in "${models_needed[@]}"; do
    unzip_one "$wheel" "ffmpeg_quality_metrics/vmaf_models/$m" > "$models/$m"
done
# The licence of the model files sits beside them in the wheel; take whatever LICENSE* is there.
python3 - "$wheel" "$models" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist()
             if n.startswith("ffmpeg_quality_metrics/vmaf_models/")
             and os.path.basename(n).upper().startswith("LICENSE")]
    if not names:
        sys.exit("fetch_vmaf_reference: no licence file next to the VMAF models in the wheel")
    for n in names:
        with open(os.path.join(sys.argv[2], os.path.basename(n)), "wb") as f:
            f.write(z.read(n))
PY

have_all || { echo "fetch_vmaf_reference: incomplete fetch" >&2; exit 1; }
print_paths
