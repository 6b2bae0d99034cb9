#!/usr/bin/env bash
# Makes sure the system packages of the benchmark peers are installed, in addition to
# Interlock's own (scripts/ensure-deps.sh): Concurrency Kit (Debian/Ubuntu: libck-dev) and
# Boost, for the header-only Boost.Lockfree (libboost-dev), and the PostgreSQL server
# (postgresql), of which PostgresBenchmarks starts a throwaway one. liburcu-dev and libpq-dev
# come with ensure-deps.
# Installs them with apt-get when it can (as root, or through sudo without a password);
# otherwise stops with the exact command to run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/ensure-deps.sh"

header_present() {
    compgen -G "/usr/include/$1" >/dev/null || compgen -G "/usr/include/*/$1" >/dev/null \
        || compgen -G "/usr/local/include/$1" >/dev/null
}

have_postgres() { # the server that PostgresBenchmarks starts (scripts/postgres-throwaway.sh)
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || [ -x "$(pg_config --bindir 2>/dev/null)/initdb" ]
}

missing=()
header_present ck_fifo.h || missing+=(libck-dev)
header_present boost/lockfree/queue.hpp || missing+=(libboost-dev)
have_postgres || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0

"$here/apt-install.sh" "Interlock's benchmarks" \
    "install your distribution's Concurrency Kit and Boost development packages and the PostgreSQL server (e.g. 'dnf install ck-devel boost-devel postgresql-server')" \
    "${missing[@]}"
header_present ck_fifo.h && header_present boost/lockfree/queue.hpp \
    || { echo "Interlock benchmarks: ${missing[*]} installed but the headers are still not found." >&2; exit 1; }
