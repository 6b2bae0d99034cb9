#!/usr/bin/env bash
# A throwaway PostgreSQL server for PostgresLock's tests, stress runs and benchmarks: a fresh
# cluster (initdb, trust authentication) in a new temporary directory, listening on a Unix
# socket in that directory and on 127.0.0.1 at a free port; nothing else is contacted.
#
#   postgres-throwaway.sh serve
#       Starts the server, prints one line, `host=DIR port=PORT user=postgres dbname=postgres`,
#       then waits until its standard input reaches end of file (the caller exits or closes
#       it), stops the server and removes the directory. The caller keeps a pipe to it open
#       for as long as it needs the server, so the server never outlives the caller.
#   postgres-throwaway.sh ctl DIR stop-immediate|start|stop
#       pg_ctl on that cluster (a crash: stop-immediate; a restart: start).
#
# As root, the server runs as the user `postgres` (initdb refuses root), created by Debian's
# postgresql package. Needs the server binaries (Debian/Ubuntu: postgresql); stops with the
# install command when they are missing (scripts/ensure-test-deps.sh installs them).
set -euo pipefail

bindir() {
    local dir
    dir="$(pg_config --bindir 2>/dev/null || true)"
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    done
    echo "postgres-throwaway: the PostgreSQL server (initdb, pg_ctl) is not installed; run: sudo apt-get install -y postgresql" >&2
    exit 1
}

as_owner() { # runs a command as the cluster's owner
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ctl() { # DIR mode
    local bin
    bin="$(bindir)"
    case "$2" in
        stop-immediate) as_owner "$bin/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null ;;
        stop) as_owner "$bin/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null ;;
        start) as_owner "$bin/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 start >/dev/null ;;
        *) echo "postgres-throwaway: unknown ctl mode '$2'" >&2; exit 2 ;;
    esac
}

serve() {
    local port
    # Global: the EXIT trap runs after this function returns.
    bin="$(bindir)"
    dir="$(mktemp -d /tmp/interlock-pg.XXXXXX)"
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    cleanup() {
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$dir"
    }
    trap cleanup EXIT
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
fsync = on
EOF
    ctl "$dir" start || { cat "$dir/server.log" >&2; exit 1; }
    echo "host=$dir port=$port user=postgres dbname=postgres"
    cat >/dev/null || true
}

case "${1:-}" in
    serve) serve ;;
    ctl) ctl "$2" "$3" ;;
    *) echo "usage: postgres-throwaway.sh serve | ctl DIR stop-immediate|start|stop" >&2; exit 2 ;;
esac
