#!/usr/bin/env bash
# Prints a directory that holds ONNX Runtime's C headers, fetching them once
# per machine into a cache outside the source tree (ORT's headers are not ours
# to commit). Progress goes to stderr; stdout carries only the directory.
#
# Sources, tried in order (by package name, through each ecosystem's client):
#   1. Debian's libonnxruntime-dev (trixie and later carry it; bookworm not);
#   2. the npm package com.github.asus4.onnxruntime, whose iOS framework ships
#      the API-29 headers (ORT 1.22).
set -euo pipefail

cache_root="${VMAFDNN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafdnn}"
dest="$cache_root/ort-headers"
headers=(onnxruntime_c_api.h onnxruntime_error_code.h onnxruntime_ep_c_api.h)

have_headers() { [ -f "$1/onnxruntime_c_api.h" ] && [ -f "$1/onnxruntime_error_code.h" ]; }

if have_headers "$dest"; then echo "$dest"; exit 0; fi

mkdir -p "$cache_root"
work=$(mktemp -d "$cache_root/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

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
