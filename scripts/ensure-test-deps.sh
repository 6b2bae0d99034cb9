#!/usr/bin/env bash
# Makes sure what the test suite starts is installed, in addition to Interlock's own
# dependencies (scripts/ensure-deps.sh): bindfs, a FUSE file system (a bind mount of a
# directory through FUSE, no network), on which DistributedLock's tests check that a lock on a
# file system not known to be local uses the portable recipe; and PostgreSQL's server
# (postgresql), of which PostgresLock's tests start throwaway clusters on a Unix socket and
# 127.0.0.1 (scripts/postgres-throwaway.sh); PgBouncer (pgbouncer), which PostgresLock's pooler
# tests start in front of them (scripts/pgbouncer-throwaway.sh); and iproute2 (ip), with which
# the partition test makes a network namespace for a holder. Installs them with apt-get when it
# can (as root, or through sudo without a password); otherwise stops with the exact command.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/ensure-deps.sh"

have_postgres() { # the server binaries that scripts/postgres-throwaway.sh runs
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || [ -x "$(pg_config --bindir 2>/dev/null)/initdb" ]
}

missing=()
command -v bindfs >/dev/null 2>&1 || missing+=(bindfs)
have_postgres || missing+=(postgresql)
command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0
"$here/apt-install.sh" "Interlock's tests" \
    "install your distribution's bindfs (a FUSE file system), PostgreSQL server, PgBouncer and iproute2 packages" \
    "${missing[@]}"
command -v bindfs >/dev/null 2>&1 || { echo "Interlock tests: bindfs was installed but is not on PATH." >&2; exit 1; }
have_postgres || { echo "Interlock tests: postgresql was installed but initdb is not found." >&2; exit 1; }
command -v pgbouncer >/dev/null 2>&1 || { echo "Interlock tests: pgbouncer was installed but is not on PATH." >&2; exit 1; }
