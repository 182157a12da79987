#!/usr/bin/env bash
# Leak check: N x (open -> run -> ENOSPC run -> close -> failed open) through
# the public C API under valgrind; alternating AUTO and CUDA opens takes the
# EP-fallback paths too. Fails on any definite or indirect leak and on any
# memory error outside ONNX Runtime's known self-overlap (tools/valgrind.supp).
# usage: tools/leak_check.sh BUILD_DIR [N]
set -euo pipefail
build=${1:?usage: leak_check.sh BUILD_DIR [N]}
n=${2:-1000}
here=$(dirname "$0")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
valgrind --suppressions="$here/valgrind.supp" --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --error-exitcode=3 --vgdb=no --log-file="$log" \
    "$build/tests/c/test_public_api" "$build/tests/c/models" "$n" cycles || status=$?
grep -E "definitely lost|indirectly lost|ERROR SUMMARY" "$log" || true
if [ "$status" -ne 0 ]; then
    cat "$log" >&2
    echo "leak_check: valgrind found errors or leaks (exit $status)" >&2
    exit 1
fi
echo "leak_check: $n cycles, no leaks, no errors"
