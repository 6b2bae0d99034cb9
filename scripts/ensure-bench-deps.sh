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

install_cmd="apt-get update && apt-get install -y ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "Interlock's benchmarks need Concurrency Kit and Boost headers: ${missing[*]} are missing." >&2
    echo "This system has no apt-get; install your distribution's Concurrency Kit and Boost" >&2
    echo "development packages (e.g. 'dnf install ck-devel boost-devel') and run this command again." >&2
    exit 1
fi

echo "Interlock benchmarks: installing ${missing[*]} (${install_cmd})" >&2
if [ "$(id -u)" -eq 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "Interlock's benchmarks need ${missing[*]}, and this user cannot install packages." >&2
    echo "Run:  sudo sh -c '${install_cmd}'" >&2
    echo "then run this command again." >&2
    exit 1
fi
header_present ck_fifo.h && header_present boost/lockfree/queue.hpp \
    || { echo "Interlock benchmarks: ${missing[*]} installed but the headers are still not found." >&2; exit 1; }
