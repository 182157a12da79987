#!/usr/bin/env bash
# Builds a minimal ffmpeg with the vmafdnn filters (the patch series in
# ffmpeg/) against this tree's libvmafdnn, and prints the path of the binary.
#
# Usage: tools/build_ffmpeg.sh [--version 9.0|8.1|7.1|5.1] [--print-env] [--source-only]
#   --version      FFmpeg's major.minor (default 9.0, the newest)
#   --print-env    print the shell lines that set VMAFDNN_FFMPEG,
#                  VMAFDNN_BUILTIN_MODELS and VMAFDNN_ORT_LIBRARY (eval them)
#                  instead of the path
#   --source-only  fetch and unpack FFmpeg's source, build nothing
#
# FFmpeg's source is Debian's source package of that version (bookworm: 5.1,
# trixie: 7.1, sid: 8.1, experimental and sid: 9.0), fetched with
# `apt-get source` through an apt configuration private to the cache (its own
# sources list, lists, state and archive directories; the machine's keyrings).
# The mirror is the one the machine's own apt sources use. Nothing is
# installed and the machine's apt configuration is left alone, so no root is
# needed. AV1 is decoded with libdav1d from the machine's own Debian release,
# fetched as .debs the same way and unpacked into the cache.
#
# Everything lives under ${VMAFDNN_CACHE_DIR:-~/.cache/vmafdnn}:
#   apt/                 the private apt configuration and its downloads
#   ffmpeg/lib-build/    meson build of libvmafdnn; ffmpeg/prefix/ its install,
#                        with the built-in models in prefix/share/vmafdnn/models
#   ffmpeg/dav1d/        the unpacked libdav1d .debs
#   ffmpeg/ort-link/     links to the onnxruntime wheel's libraries (9.0:
#                        FFmpeg's own ONNX Runtime backend links them)
#   ffmpeg/<version>/    src/ (source package, pristine tree), tree/ (the
#                        patched tree ffmpeg is built in), bin/ffmpeg
#   ffmpeg/bin/ffmpeg    a link to the default version's binary
# The tree is recreated when the source package, the patches or the configure
# line change, and ffmpeg is relinked when libvmafdnn or its headers change
# (keys in tree/.vmafdnn-*-key). Each step prints its duration.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
default_version=9.0
version=$default_version
mode=path
while [ $# -gt 0 ]; do
    case $1 in
        --version) version=${2:?--version needs a value}; shift 2 ;;
        --version=*) version=${1#--version=}; shift ;;
        --print-env) mode=env; shift ;;
        --source-only) mode=source; shift ;;
        -h|--help) sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
        *) echo "build_ffmpeg: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case $version in
    5.1) suites=(bookworm) ;;
    7.1) suites=(trixie) ;;
    8.1) suites=(sid) ;;
    9.0) suites=(experimental sid) ;;
    *) echo "build_ffmpeg: unsupported FFmpeg version '$version' (9.0, 8.1, 7.1 or 5.1)" >&2; exit 2 ;;
esac

cache_root=${VMAFDNN_CACHE_DIR:-$HOME/.cache/vmafdnn}
cache=$cache_root/ffmpeg
vcache=$cache/$version
prefix=$cache/prefix
jobs=${VMAFDNN_JOBS:-2}

# One run at a time per cache: runs share the libvmafdnn build and install.
mkdir -p "$cache"
if command -v flock >/dev/null; then exec 9>"$cache/.lock"; flock 9; fi

log() { printf '%s\n' "build_ffmpeg: $*" >&2; }
die() { log "$*"; exit 1; }
step_start=0
step() { step_start=$(date +%s); log "$*"; }
step_done() { log "  ... $(( $(date +%s) - step_start )) s"; }

# --- the private apt configuration --------------------------------------------
aptdir=$cache_root/apt

# machine_mirror: the machine's Debian mirror and its key
source "$here/tools/apt_mirror.sh"

apt_setup() {
    [ "$apt_ready" = 0 ] || return 0
    apt_ready=1
    local mirror uri key codename opts arch list suite
    mirror=$(machine_mirror | awk 'NR == 1') ||:
    [ -n "$mirror" ] || die "cannot find the machine's Debian mirror in /etc/apt/sources.list{,.d}: a 'deb' entry for its release ($(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")) is needed"
    uri=${mirror% *}; key=${mirror#* }
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    arch=$(dpkg --print-architecture)
    opts="arch=$arch"
    [ "$key" != - ] && opts="$opts signed-by=$key"
    list="deb [$opts] $uri $codename main"$'\n'
    for suite in bookworm trixie sid experimental; do
        list+="deb-src [$opts] $uri $suite main"$'\n'
    done
    mkdir -p "$aptdir"/{empty.d,state,lists/partial,cache,archives/partial}
    : > "$aptdir/preferences"
    [ -f "$aptdir/status" ] || : > "$aptdir/status"
    if [ "$(cat "$aptdir/sources.list" 2>/dev/null)"$'\n' != "$list" ] ||
       [ -z "$(find "$aptdir/lists" -maxdepth 1 -name '*Sources*' -mmin -1440 -print -quit)" ]; then
        printf '%s' "$list" > "$aptdir/sources.list"
        step "apt-get update (private configuration in $aptdir, mirror $uri)"
        apt_private apt-get update >&2
        step_done
    fi
}

# Newest version of a source package in the given suites whose upstream
# version starts with $version.
newest_source_version() {
    local best="" v
    for v in $(apt_private apt-cache showsrc --only-source ffmpeg 2>/dev/null |
               awk '/^Version:/ { print $2 }'); do
        case ${v#*:} in "$version".*) ;; *) continue ;; esac
        if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
    done
    echo "$best"
}

# --- libvmafdnn and its built-in models ------------------------------------
build_lib() {
    step "libvmafdnn: meson build and install into $prefix"
    mkdir -p "$cache"
    # A build set up from another checkout (or with a meson that is gone)
    # cannot regenerate itself: set it up afresh for this one.
    if [ "$(cat "$cache/lib-build/.vmafdnn-source" 2>/dev/null)" != "$here $(command -v meson)" ]; then
        rm -rf "$cache/lib-build"
    fi
    if [ ! -f "$cache/lib-build/build.ninja" ]; then
        meson setup "$cache/lib-build" "$here" -Dprefix="$prefix" \
            -Dpython=disabled -Dtests=false >&2
        echo "$here $(command -v meson)" > "$cache/lib-build/.vmafdnn-source"
    fi
    meson install -C "$cache/lib-build" > "$cache/lib-build/install.log" 2>&1 ||
        { tail -n 40 "$cache/lib-build/install.log" >&2; die "building libvmafdnn failed (log above)"; }
    local pc
    pc=$(find "$prefix" -name libvmafdnn.pc -print -quit)
    pcdir=$(dirname "$pc")
    libdir=$(dirname "$pcdir")
    models=$prefix/share/vmafdnn/models
    if [ ! -f "$models/psnr_y.onnx" ] || [ "$here/tools/gen_builtin_models.py" -nt "$models/psnr_y.onnx" ]; then
        mkdir -p "$models"
        python3 "$here/tools/gen_builtin_models.py" "$models" >&2
    fi
    step_done
}

# --- libdav1d (AV1) from the machine's release, unpacked -----------------------
fetch_dav1d() {
    dav1d=$cache/dav1d
    if [ -f "$dav1d/.done" ]; then return; fi
    apt_setup
    step "libdav1d: apt-get download + dpkg -x into $dav1d"
    local work runtime
    rm -rf "$dav1d" "$dav1d.tmp"
    work=$dav1d.tmp
    mkdir -p "$work/debs"
    # libdav1d-dev depends on the runtime package of the same source version.
    runtime=$(apt_private apt-cache depends libdav1d-dev | awk '$1 == "Depends:" && $2 ~ /^libdav1d[0-9]+$/ { print $2; exit }')
    [ -n "$runtime" ] || die "libdav1d-dev has no libdav1dN dependency in the machine's release"
    (cd "$work/debs" && apt_private apt-get download libdav1d-dev "$runtime" >&2)
    for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
    local pc
    pc=$(find "$work/root" -name dav1d.pc -print -quit)
    [ -n "$pc" ] || die "no dav1d.pc in libdav1d-dev"
    mv "$work/root" "$dav1d"
    rm -rf "$work"
    pc=${pc/$work\/root/$dav1d}
    # The .pc names /usr: point it at the unpacked tree.
    sed -i "s|^prefix=.*|prefix=$dav1d/usr|" "$pc"
    touch "$dav1d/.done"
    step_done
}

dav1d_dirs() {
    local pc
    pc=$(find "$cache/dav1d" -name dav1d.pc -print -quit)
    dav1d_pcdir=$(dirname "$pc")
    dav1d_libdir=$(dirname "$dav1d_pcdir")
}

# --- FFmpeg's source ----------------------------------------------------------
# Sets source_id: the .dsc unpacked (Debian's tree: upstream plus Debian's
# patches), or the upstream .orig tarball when the mirror lacks the .dsc or
# Debian's tarball (apt kept it only if its hash matched the signed index).
fetch_source() {
    local src=$vcache/src want dsc orig
    mkdir -p "$src"
    source_id=$(cat "$src/pristine/.vmafdnn-source" 2>/dev/null) ||:
    [ -z "$source_id" ] || return 0
    apt_setup
    want=$(newest_source_version)
    [ -n "$want" ] || die "no ffmpeg $version.x source package in ${suites[*]} on the machine's mirror"
    dsc=ffmpeg_${want#*:}.dsc
    step "apt-get source ffmpeg=$want"
    rm -rf "$src"; mkdir -p "$src"
    (cd "$src" && apt_private apt-get source --download-only "ffmpeg=$want" >&2) ||
        log "  apt-get source failed: a file of the package is missing on the mirror"
    step_done
    step "unpacking"
    if [ -f "$src/$dsc" ] && dpkg-source -x "$src/$dsc" "$src/pristine.tmp" >/dev/null; then
        source_id=$dsc
    else
        orig=$(find "$src" -maxdepth 1 -name 'ffmpeg_*.orig.tar.*' ! -name '*.asc' -print -quit)
        [ -n "$orig" ] || die "neither $dsc nor an .orig tarball could be fetched"
        log "  no Debian tree: unpacking the upstream tarball $(basename "$orig")"
        rm -rf "$src/pristine.tmp"; mkdir -p "$src/pristine.tmp"
        tar -xf "$orig" -C "$src/pristine.tmp" --strip-components=1
        source_id=$(basename "$orig")
    fi
    echo "$source_id" > "$src/pristine.tmp/.vmafdnn-source"
    mv "$src/pristine.tmp" "$src/pristine"
    step_done
}

if [ "$mode" = source ]; then
    fetch_source
    echo "$vcache/src/pristine"
    exit 0
fi
build_lib
fetch_dav1d
dav1d_dirs
fetch_source

# The patch series: the filters' sources (every version), then this version's
# build glue (configure, Makefile, allfilters.c).
patches=("$here"/ffmpeg/common/*.patch "$here"/ffmpeg/"$version"/*.patch)
for p in "${patches[@]}"; do [ -f "$p" ] || die "missing patch $p"; done

configure_args=(
    --disable-everything --disable-autodetect --disable-doc
    --disable-programs --enable-ffmpeg --disable-x86asm --disable-network
    --enable-libvmafdnn --enable-libdav1d
    --enable-filter=vmafdnn,vmafdnn_pre,format,scale,null,nullsink,split,trim,setpts,testsrc2,showinfo,copy,metadata,lutyuv
    --enable-avdevice --enable-indev=lavfi
    --enable-demuxer=yuv4mpegpipe,rawvideo,mov,matroska
    --enable-parser=h264,hevc,vp9,av1
    --enable-decoder=rawvideo,wrapped_avframe,h264,hevc,vp9,libdav1d
    --enable-muxer=yuv4mpegpipe,rawvideo,null,framemd5,md5
    --enable-encoder=rawvideo,wrapped_avframe
    --enable-protocol=file,pipe
    --extra-ldflags="-Wl,-rpath,$libdir -Wl,-rpath,$dav1d_libdir"
)

# FFmpeg 9 has its own ONNX Runtime backend for its DNN filters: build it
# too (with dnn_processing), against the ONNX Runtime our library loads, so
# the tests show that both live in one ffmpeg. It needs ORT's headers (the
# ones the library was built with) and a linkable libonnxruntime.so.
if grep -q -- '--enable-libonnxruntime' "$vcache/src/pristine/configure"; then
    ort_lib=${VMAFDNN_ORT_LIBRARY:-$(cd /tmp && python3 -c 'import glob, os, onnxruntime
print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so.*")))[-1])' 2>/dev/null)} ||:
    ort_include=$(bash "$here/tools/fetch_ort_headers.sh" 2>/dev/null) ||:
    if [ -f "${ort_lib:-/nonexistent}" ] && [ -f "${ort_include:-/nonexistent}/onnxruntime_c_api.h" ]; then
        # The wheel ships only libonnxruntime.so.1.N.M: the links give the
        # linker its -lonnxruntime and the loader the soname (.so.1); ORT
        # looks for its provider libraries beside the path it was loaded by.
        ort_link=$cache/ort-link
        mkdir -p "$ort_link"
        for f in "$(dirname "$(readlink -f "$ort_lib")")"/libonnxruntime*.so*; do
            ln -sfn "$f" "$ort_link/$(basename "$f")"
        done
        ln -sfn "$(readlink -f "$ort_lib")" "$ort_link/libonnxruntime.so"
        ln -sfn "$(readlink -f "$ort_lib")" "$ort_link/libonnxruntime.so.1"
        configure_args+=(--enable-libonnxruntime --enable-filter=dnn_processing
                         --extra-cflags="-I$ort_include"
                         --extra-ldflags="-L$ort_link -Wl,-rpath,$ort_link")
        log "with FFmpeg's own ONNX Runtime backend ($(readlink -f "$ort_lib"))"
    else
        log "without FFmpeg's own ONNX Runtime backend: no onnxruntime Python package or ORT headers"
    fi
fi

tree=$vcache/tree
tree_key=$( { echo "$source_id"; printf '%s\n' "${configure_args[@]}"; cat "${patches[@]}"; } |
           sha256sum | cut -c1-16)
lib_key=$(cat "$libdir"/libvmafdnn.so* "$prefix"/include/vmafdnn/*.h | sha256sum | cut -c1-16)
if [ -x "$vcache/bin/ffmpeg" ] && [ "$(cat "$tree/.vmafdnn-tree-key" 2>/dev/null)" = "$tree_key" ] &&
   [ "$(cat "$tree/.vmafdnn-lib-key" 2>/dev/null)" = "$lib_key" ]; then
    log "ffmpeg $version up to date (keys $tree_key $lib_key)"
else
    total_start=$(date +%s)
    if [ "$(cat "$tree/.vmafdnn-tree-key" 2>/dev/null)" != "$tree_key" ]; then
        step "patching a copy of $source_id"
        rm -rf "$tree"
        cp -a "$vcache/src/pristine" "$tree"
        for p in "${patches[@]}"; do
            log "  applying ${p#"$here"/}"
            patch -d "$tree" -p1 --quiet --forward < "$p" >&2
        done
        step_done
        step "configure"
        (cd "$tree" && PKG_CONFIG_PATH="$pcdir:$dav1d_pcdir" ./configure "${configure_args[@]}" >&2) ||
            die "configure failed: see $tree/ffbuild/config.log"
        echo "$tree_key" > "$tree/.vmafdnn-tree-key"
        step_done
    fi
    step "make -j$jobs ffmpeg"
    make -C "$tree" -j"$jobs" ffmpeg >&2
    mkdir -p "$vcache/bin"
    cp "$tree/ffmpeg" "$vcache/bin/ffmpeg.tmp"
    mv "$vcache/bin/ffmpeg.tmp" "$vcache/bin/ffmpeg"
    echo "$lib_key" > "$tree/.vmafdnn-lib-key"
    step_done
    log "ffmpeg $version built in $(( $(date +%s) - total_start )) s"
fi
if [ "$version" = "$default_version" ]; then
    mkdir -p "$cache/bin"
    ln -sfn "../$version/bin/ffmpeg" "$cache/bin/ffmpeg"
fi

if [ "$mode" = env ]; then
    ort=$(cd /tmp && python3 -c 'import vmafdnn; print(vmafdnn.ort_library_path())' 2>/dev/null) ||:
    echo "export VMAFDNN_FFMPEG='$vcache/bin/ffmpeg'"
    echo "export VMAFDNN_BUILTIN_MODELS='$models'"
    if [ -n "$ort" ]; then echo "export VMAFDNN_ORT_LIBRARY='$ort'"; fi
else
    echo "$vcache/bin/ffmpeg"
fi
