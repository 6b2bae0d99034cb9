#!/usr/bin/env bash
# Makes sure Interlock's one system dependency, liburcu (Debian/Ubuntu: liburcu-dev), libpq
# (libpq-dev: InterlockPostgres, which the stress harness links) and pkg-config are installed. Installs them with apt-get when it can (as root, or through sudo
# without a password); otherwise stops with the exact command to run.
set -euo pipefail

have_urcu() {
    if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists liburcu-bp 2>/dev/null; then
        return 0
    fi
    # Without pkg-config, look for the header where Debian and Ubuntu put it.
    compgen -G "/usr/include/urcu-bp.h" >/dev/null || compgen -G "/usr/include/*/urcu-bp.h" >/dev/null
}

have_libpq() {
    if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libpq 2>/dev/null; then
        return 0
    fi
    compgen -G "/usr/include/postgresql/libpq-fe.h" >/dev/null || compgen -G "/usr/include/libpq-fe.h" >/dev/null
}

missing=()
have_urcu || missing+=(liburcu-dev)
# The package's own targets include InterlockPostgres (the stress harness's postgres-lock
# workload links it): building them needs libpq's headers. A package that uses only the
# product Interlock never needs it.
have_libpq || missing+=(libpq-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
[ ${#missing[@]} -eq 0 ] && exit 0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/apt-install.sh" "Interlock" \
    "install your distribution's liburcu and libpq development packages and pkg-config (e.g. 'dnf install userspace-rcu-devel libpq-devel pkgconf')" \
    "${missing[@]}"
have_urcu || { echo "Interlock: liburcu-dev was installed but liburcu-bp is still not found." >&2; exit 1; }
have_libpq || { echo "Interlock: libpq-dev was installed but libpq is still not found." >&2; exit 1; }
