# Sourced by the scripts that need the machine's Debian mirror without
# writing any mirror's name into the repository (tools/build_ffmpeg.sh: a
# private apt configuration for FFmpeg's source package; tools/test.sh:
# Mesa from the release's backports suite).
#
# "URI SIGNED-BY" of the machine's Debian entry for its own release (deb822
# .sources or one-line .list), so the private sources use the same mirror.
machine_mirror() {
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    local files=() f
    for f in /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && files+=("$f"); done
    if [ ${#files[@]} -gt 0 ]; then
        awk -v want="$codename" '
            function flush() { if (uri != "" && deb && hit && !done) { print uri, (key == "" ? "-" : key); done = 1 }
                               uri = ""; key = ""; deb = 0; hit = 0 }
            /^[ \t]*$/ { flush(); next }
            /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            /^URIs:/ { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
            /^Signed-By:/ { key = $2 }
            END { flush() }' "${files[@]}"
    fi
    files=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && files+=("$f"); done
    if [ ${#files[@]} -gt 0 ]; then
        awk -v want="$codename" '
            $1 == "deb" {
                key = "-"; i = 2
                if ($2 ~ /^\[/) {
                    for (; i <= NF; i++) {
                        if ($i ~ /signed-by=/) { key = $i; sub(/.*signed-by=/, "", key); sub(/\]$/, "", key) }
                        if ($i ~ /\]$/) { i++; break }
                    }
                }
                if ($(i + 1) == want) { print $i, key; exit }
            }' "${files[@]}"
    fi
}

apt_private() {
    local tool=$1; shift
    "$tool" -q -o Dir::Etc::SourceList="$aptdir/sources.list" \
        -o Dir::Etc::SourceParts="$aptdir/empty.d" \
        -o Dir::Etc::Preferences="$aptdir/preferences" \
        -o Dir::Etc::PreferencesParts="$aptdir/empty.d" \
        -o Dir::State="$aptdir/state" -o Dir::State::Lists="$aptdir/lists" \
        -o Dir::State::status="$aptdir/status" \
        -o Dir::Cache="$aptdir/cache" -o Dir::Cache::Archives="$aptdir/archives" \
        -o APT::Sandbox::User="$(id -un)" "$@"
}

# Writes the private sources list (deb-src of every suite this script uses,
# deb of the machine's release for libdav1d) and refreshes its indexes when
# the list changed or they are over a day old. Called only when something is
# to be fetched: a cached source tree or libdav1d needs no apt at all.
apt_ready=0
