#!/usr/bin/env bash
# Prints a directory that holds ONNX Runtime's C headers, fetching them once
# per machine into a cache outside the source tree (ORT's headers are not ours
# to commit). Progress goes to stderr; stdout carries only the directory.
#
# Sources, tried in order (by package name, through each ecosystem's client):
#   1. Debian's libonnxruntime-dev (trixie and later carry it; bookworm not);
#   2. the npm package com.github.asus4.onnxruntime, whose iOS framework ships
#      the API-29 headers (ORT 1.22).
#
#   tools/fetch_ort_headers.sh --archive-dir DIR
#
# instead places the source archive of meson's fallback for the headers,
# subprojects/onnxruntime-headers.wrap, into DIR (meson.build gives
# subprojects/packagefiles/, where meson looks for the archive of a wrap
# without a source_url: the tree names no registry host; the archive is
# git-ignored): a tar made reproducibly (fixed order, times and owners) of
# the API-29 headers, whose sha256 must be the wrap's source_hash. Headers
# of another release (Debian's) make another archive: then the npm package's
# are fetched for it. Prints the archive's path; exit 1 when it cannot be
# made (meson.build then uses the directory the plain mode prints).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packagecache=""
if [ "${1:-}" = --archive-dir ]; then
    packagecache=${2:?--archive-dir needs a directory}
fi

cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
dest="$cache_root/ort-headers"
headers=(onnxruntime_c_api.h onnxruntime_error_code.h onnxruntime_ep_c_api.h)

have_headers() { [ -f "$1/onnxruntime_c_api.h" ] && [ -f "$1/onnxruntime_error_code.h" ]; }

# The wrap names the archive and its hash: one source of truth.
wrap_value() {
    sed -n "s/^$1 *= *//p" "$repo/subprojects/onnxruntime-headers.wrap"
}

# Writes the wrap's archive of the headers in directory $1 to $2 (a tar with
# every header under <directory>/include/, mode 0644, time 0, owner 0).
make_archive() {
    python3 - "$1" "$2" "$(wrap_value directory)" "${headers[@]}" <<'PY'
import io, os, sys, tarfile
src, out, top, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
tmp = out + ".tmp"
with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
    for name in sorted(names):
        path = os.path.join(src, name)
        if not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        info = tarfile.TarInfo(f"{top}/include/{name}")
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(data))
os.replace(tmp, out)
PY
}

# --archive-dir: the archive, from the cached headers when they are the
# wrap's, else from the npm package's.
place_archive() {
    local archive expected
    archive="$packagecache/$(wrap_value source_filename)"
    expected=$(wrap_value source_hash)
    if [ -f "$archive" ] && [ "$(sha256sum "$archive" | cut -d' ' -f1)" = "$expected" ]; then
        echo "$archive"; return 0
    fi
    mkdir -p "$packagecache"
    local src
    for src in "$dest" npm; do
        if [ "$src" = npm ]; then
            mkdir -p "$cache_root"
            work=$(mktemp -d "$cache_root/fetch.XXXXXX")
            trap 'rm -rf "$work"' EXIT
            src=$(from_npm) || return 1
        fi
        have_headers "$src" || continue
        make_archive "$src" "$archive" || return 1
        if [ "$(sha256sum "$archive" | cut -d' ' -f1)" = "$expected" ]; then
            echo "$archive"; return 0
        fi
        echo "fetch_ort_headers: the headers in $src are not the wrap's (another release)" >&2
        rm -f "$archive"
    done
    return 1
}

from_debian() {
    command -v apt-get >/dev/null || return 1
    apt-cache show libonnxruntime-dev >/dev/null 2>&1 || return 1
    echo "fetch_ort_headers: downloading Debian's libonnxruntime-dev" >&2
    (cd "$work" && apt-get download -q libonnxruntime-dev >&2) || return 1
    dpkg-deb -x "$work"/libonnxruntime-dev_*.deb "$work/deb" || return 1
    local found dir
    # -print -quit instead of `| head -n 1`: under pipefail, find could die of
    # SIGPIPE once head has exited.
    found=$(find "$work/deb" -name onnxruntime_c_api.h -print -quit)
    [ -n "$found" ] || return 1
    dir=$(dirname "$found")
    have_headers "$dir" && echo "$dir"
}

from_npm() {
    command -v npm >/dev/null || { echo "fetch_ort_headers: npm not found" >&2; return 1; }
    echo "fetch_ort_headers: downloading com.github.asus4.onnxruntime@0.4.9 (150 MB, once per machine)" >&2
    # npm's own cache goes inside ours, not to ~/.npm.
    (cd "$work" && npm_config_cache="$cache_root/npm" \
        npm pack --silent com.github.asus4.onnxruntime@0.4.9 >/dev/null) || return 1
    local framework='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/onnxruntime.framework/Headers'
    mkdir -p "$work/npm"
    tar xzf "$work"/com.github.asus4.onnxruntime-0.4.9.tgz -C "$work/npm" \
        "${headers[@]/#/$framework/}" || return 1
    have_headers "$work/npm/$framework" && echo "$work/npm/$framework"
}

if [ -n "$packagecache" ]; then
    place_archive
    exit $?
fi
if have_headers "$dest"; then echo "$dest"; exit 0; fi

mkdir -p "$cache_root"
work=$(mktemp -d "$cache_root/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

src=$(from_debian || from_npm) || {
    echo "fetch_ort_headers: could not fetch ONNX Runtime's headers; install libonnxruntime-dev" \
         "or pass -Donnxruntime_include_dir=DIR" >&2
    exit 1
}

mkdir -p "$work/out"
for h in "${headers[@]}"; do
    [ -f "$src/$h" ] && cp "$src/$h" "$work/out/"
done
# A rename is atomic: concurrent builds see either no cache or a whole one.
mv -T "$work/out" "$dest" 2>/dev/null || have_headers "$dest"
echo "$dest"
