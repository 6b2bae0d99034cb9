#!/usr/bin/env bash
# Makes sure spin (the model checker), gcc and python3 are there for make verify. Installs spin
# with apt-get when it can (as root, or through sudo without a password); otherwise stops with
# the exact command to run.
set -euo pipefail
missing=()
command -v spin >/dev/null 2>&1 || missing+=(spin)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ ${#missing[@]} -eq 0 ] && exit 0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/apt-install.sh" "make verify" "install spin (https://spinroot.com), gcc and python3" "${missing[@]}"
command -v spin >/dev/null 2>&1 || { echo "make verify: spin was installed but is not on PATH." >&2; exit 1; }
