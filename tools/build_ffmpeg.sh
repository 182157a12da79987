#!/bin/sh
# Builds a minimal ffmpeg with the vmafdnn filters (the patch series in
# ffmpeg/) against this tree's libvmafdnn, and prints the path of the binary.
#
# Usage: tools/build_ffmpeg.sh [--print-env]
#   --print-env  also print the shell lines that set VMAFDNN_FFMPEG,
#                VMAFDNN_BUILTIN_MODELS and VMAFDNN_ORT_LIBRARY (eval them)
#
# FFmpeg's source is Debian's source package, fetched by name through apt
# (`apt-get source ffmpeg`); deb-src entries are derived from the machine's
# own apt sources when none are configured. Everything lives under
# ${VMAFDNN_CACHE_DIR:-~/.cache/vmafdnn}/ffmpeg:
#   src/         the downloaded source package and its pristine unpacked tree
#   lib-build/   meson build of libvmafdnn; prefix/ its install, with the
#                built-in models in prefix/share/vmafdnn/models
#   tree/        the patched tree ffmpeg is built in; bin/ffmpeg a copy of it
# ffmpeg is rebuilt only when the patches, the library or its headers change
# (the key is a hash of them, kept in tree/.vmafdnn-key).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${VMAFDNN_CACHE_DIR:-$HOME/.cache/vmafdnn}/ffmpeg
prefix=$cache/prefix
jobs=${VMAFDNN_JOBS:-2}
print_env=0
[ "${1:-}" = "--print-env" ] && print_env=1

log() { printf '%s\n' "build_ffmpeg: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- libvmafdnn and its built-in models ------------------------------------
mkdir -p "$cache"
if [ ! -f "$cache/lib-build/build.ninja" ]; then
    meson setup "$cache/lib-build" "$here" -Dprefix="$prefix" \
        -Dpython=disabled -Dtests=false >&2
fi
meson install -C "$cache/lib-build" >/dev/null
pcdir=$(dirname "$(find "$prefix" -name libvmafdnn.pc | head -n 1)")
libdir=$(dirname "$pcdir")
models=$prefix/share/vmafdnn/models
if [ ! -f "$models/psnr_y.onnx" ] || [ "$here/tools/gen_builtin_models.py" -nt "$models/psnr_y.onnx" ]; then
    mkdir -p "$models"
    python3 "$here/tools/gen_builtin_models.py" "$models" >&2
fi

# --- FFmpeg's source ----------------------------------------------------------
fetch_source() {
    mkdir -p "$cache/src"
    if ! ls "$cache"/src/ffmpeg_*.dsc >/dev/null 2>&1; then
        if ! apt-get source --print-uris ffmpeg >/dev/null 2>&1; then
            # No deb-src lines: derive them from the existing deb lines, so
            # the source comes from the same mirror and suites as the binaries.
            log "adding deb-src entries derived from the system's apt sources"
            if [ -f /etc/apt/sources.list.d/debian.sources ]; then
                sed 's/^Types:.*$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
                    as_root tee /etc/apt/sources.list.d/vmafdnn-deb-src.sources >/dev/null
            else
                grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                    sed 's/^deb /deb-src /' |
                    as_root tee /etc/apt/sources.list.d/vmafdnn-deb-src.list >/dev/null
            fi
            as_root apt-get update -qq >&2
        fi
        (cd "$cache/src" && apt-get source --download-only ffmpeg >&2)
    fi
    if [ ! -d "$cache/src/pristine" ]; then
        dsc=$(ls "$cache"/src/ffmpeg_*.dsc | head -n 1)
        dpkg-source -x "$dsc" "$cache/src/pristine.tmp" >&2
        mv "$cache/src/pristine.tmp" "$cache/src/pristine"
    fi
}

# --- the patched tree -----------------------------------------------------------
key=$(cat "$here"/ffmpeg/*.patch "$libdir"/libvmafdnn.so* "$prefix"/include/vmafdnn/*.h \
      | sha256sum | cut -c1-16)
patch_key=$(cat "$here"/ffmpeg/*.patch | sha256sum | cut -c1-16)
tree=$cache/tree
if [ -x "$cache/bin/ffmpeg" ] && [ "$(cat "$tree/.vmafdnn-key" 2>/dev/null)" = "$key" ]; then
    log "up to date (key $key)"
else
    start=$(date +%s)
    if [ "$(cat "$tree/.vmafdnn-patch-key" 2>/dev/null)" != "$patch_key" ]; then
        fetch_source
        rm -rf "$tree"
        cp -a "$cache/src/pristine" "$tree"
        for p in "$here"/ffmpeg/*.patch; do
            log "applying $(basename "$p")"
            patch -d "$tree" -p1 --quiet --forward < "$p" >&2
        done
        (cd "$tree" && PKG_CONFIG_PATH="$pcdir" ./configure \
            --disable-everything --disable-autodetect --disable-doc \
            --disable-programs --enable-ffmpeg --disable-x86asm --disable-network \
            --enable-libvmafdnn \
            --enable-filter=vmafdnn,vmafdnn_pre,format,scale,null,nullsink,split,trim,setpts,testsrc2,showinfo,copy,metadata \
            --enable-avdevice --enable-indev=lavfi \
            --enable-demuxer=yuv4mpegpipe,rawvideo \
            --enable-muxer=yuv4mpegpipe,rawvideo,null,framemd5,md5 \
            --enable-decoder=rawvideo,wrapped_avframe \
            --enable-encoder=rawvideo,wrapped_avframe \
            --enable-protocol=file,pipe \
            --extra-ldflags="-Wl,-rpath,$libdir" >&2)
        echo "$patch_key" > "$tree/.vmafdnn-patch-key"
    fi
    make -C "$tree" -j"$jobs" ffmpeg >&2
    mkdir -p "$cache/bin"
    cp "$tree/ffmpeg" "$cache/bin/ffmpeg"
    echo "$key" > "$tree/.vmafdnn-key"
    log "built in $(( $(date +%s) - start )) s (key $key)"
fi

if [ "$print_env" = 1 ]; then
    ort=$(cd /tmp && python3 -c 'import vmafdnn; print(vmafdnn.ort_library_path())' 2>/dev/null || true)
    echo "export VMAFDNN_FFMPEG='$cache/bin/ffmpeg'"
    echo "export VMAFDNN_BUILTIN_MODELS='$models'"
    if [ -n "$ort" ]; then echo "export VMAFDNN_ORT_LIBRARY='$ort'"; fi
else
    echo "$cache/bin/ffmpeg"
fi
