#!/usr/bin/env bash
# Proves that a build on a machine without liburcu stops with Interlock's own message as its
# first diagnostic, naming the package to install, and not with a bare "'urcu-bp.h' file not
# found". Uninstalls nothing: it compiles what SwiftPM compiles (the headers of the CLibURCU and
# CInterlock modules, which Swift's importer reads, and the C files of CShims/) against a copy of
# the compiler's include path made of symbolic links, with liburcu's headers left out. Each file
# must compile against the real include path (so the copy lacks nothing else) and, against the
# copy, compile too or fail with the message first. Takes 2-3 s (0.5 s of CPU) here.
#   usage: check-urcu-missing-error.sh        (CC picks the compiler; default clang)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cc="${CC:-clang}"
expected='Interlock needs liburcu (userspace RCU)'
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# mirror SRC DST: DST links to every entry of SRC except liburcu's (urcu*), and is a mirror of
# its own for each directory that holds liburcu headers (Debian's multiarch x86_64-linux-gnu).
mirror() {
    mkdir -p "$2"
    ln -s "$1"/* "$2"/
    local link
    for link in "$2"/*; do
        case "${link##*/}" in urcu*) rm "$link"; continue ;; esac
        if [ -d "$link" ] && compgen -G "$link/urcu*" >/dev/null; then
            rm "$link"
            mirror "$1/${link##*/}" "$link"
        fi
    done
}

# The compiler's system include directories, in search order, each replaced by its mirror.
mapfile -t dirs < <("$cc" -x c -E -v /dev/null -o /dev/null 2>&1 |
    sed -n '/^#include <\.\.\.> search starts here:/,/^End of search list\./{//!p}' | sed 's/^ *//')
[ ${#dirs[@]} -gt 0 ] || { echo "check-urcu-missing-error: $cc printed no include directories" >&2; exit 1; }
without_urcu=(-nostdinc)
for i in "${!dirs[@]}"; do
    mirror "${dirs[$i]}" "$work/$i"
    without_urcu+=(-isystem "$work/$i")
done
if echo '#include <urcu-bp.h>' | "$cc" -fsyntax-only -x c "${without_urcu[@]}" - 2>/dev/null; then
    echo "check-urcu-missing-error: the mirrored include path still provides urcu-bp.h" >&2; exit 1
fi

cd "$root"
units=(SystemLibraries/CLibURCU/urcu_shim.h CShims/include/CInterlock.h CShims/*.c)
flags=(-fsyntax-only -x c -std=gnu11 -ICShims/include)
failed=0 reported=0
for unit in "${units[@]}"; do
    if ! output="$("$cc" "${flags[@]}" "$unit" 2>&1)"; then
        echo "check-urcu-missing-error: $unit does not compile even with liburcu:" >&2
        echo "$output" >&2; failed=1; continue
    fi
    if "$cc" "${flags[@]}" "${without_urcu[@]}" "$unit" >/dev/null 2>"$work/out"; then
        # A C file that needs no liburcu may compile; the module headers must not.
        case "$unit" in *.h) echo "check-urcu-missing-error: $unit compiles without liburcu" >&2; failed=1 ;; esac
        continue
    fi
    first="$(grep -m1 -E ': (fatal )?(error|warning):' "$work/out" || true)"
    if [[ "$first" == *": error: \"$expected"* ]]; then
        reported=$((reported + 1))
    else
        echo "check-urcu-missing-error: without liburcu, the first diagnostic of $unit is not Interlock's message:" >&2
        head -n 5 "$work/out" >&2; failed=1
    fi
done
[ "$failed" -eq 0 ] || exit 1
echo "check-urcu-missing-error: OK ($reported of ${#units[@]} files stop first with: $expected...)"
