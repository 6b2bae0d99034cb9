#!/usr/bin/env bash
# Makes sure the system packages of the benchmark peers are installed, in addition to
# Interlock's own (scripts/ensure-deps.sh): Concurrency Kit (Debian/Ubuntu: libck-dev) and
# Boost, for the header-only Boost.Lockfree (libboost-dev). liburcu-dev comes with ensure-deps.
# Installs them with apt-get when it can (as root, or through sudo without a password);
# otherwise stops with the exact command to run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/ensure-deps.sh"

header_present() {
    compgen -G "/usr/include/$1" >/dev/null || compgen -G "/usr/include/*/$1" >/dev/null \
        || compgen -G "/usr/local/include/$1" >/dev/null
}

missing=()
header_present ck_fifo.h || missing+=(libck-dev)
header_present boost/lockfree/queue.hpp || missing+=(libboost-dev)
[ ${#missing[@]} -eq 0 ] && exit 0

"$here/apt-install.sh" "Interlock's benchmarks" \
    "install your distribution's Concurrency Kit and Boost development packages (e.g. 'dnf install ck-devel boost-devel')" \
    "${missing[@]}"
header_present ck_fifo.h && header_present boost/lockfree/queue.hpp \
    || { echo "Interlock benchmarks: ${missing[*]} installed but the headers are still not found." >&2; exit 1; }
