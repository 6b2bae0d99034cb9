#!/usr/bin/env bash
# A throwaway PgBouncer in front of a throwaway PostgreSQL server (scripts/postgres-throwaway.sh),
# for PostgresLock's tests of poolers: listening on 127.0.0.1 at a free port, trust
# authentication, one database `postgres` that is the server's on 127.0.0.1:PGPORT; nothing
# else is contacted.
#
#   pgbouncer-throwaway.sh serve PGPORT MODE [POOL_SIZE]
#       MODE is PgBouncer's pool_mode: session, transaction or statement; POOL_SIZE its
#       default_pool_size (default 4). Starts PgBouncer, prints one line,
#       `host=127.0.0.1 port=PORT user=postgres dbname=postgres`, then waits until its standard
#       input reaches end of file, stops PgBouncer and removes its directory.
#
# PgBouncer refuses to run as root: as root it runs as the user `postgres` (Debian's postgresql
# package creates it). Needs pgbouncer (Debian/Ubuntu: pgbouncer); stops with the install
# command when it is missing (scripts/ensure-test-deps.sh installs it).
set -euo pipefail

as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

serve() { # PGPORT MODE [POOL_SIZE]
    local upstream="$1" mode="$2" pool="${3:-4}" port
    command -v pgbouncer >/dev/null 2>&1 ||
        { echo "pgbouncer-throwaway: pgbouncer is not installed; run: sudo apt-get install -y pgbouncer" >&2; exit 1; }
    case "$mode" in session|transaction|statement) ;; *) echo "pgbouncer-throwaway: unknown mode $mode" >&2; exit 2 ;; esac
    dir="$(mktemp -d /tmp/interlock-pgbouncer.XXXXXX)"
    chmod 755 "$dir"
    cleanup() { # PgBouncer's own pid, from its pidfile (it runs as a daemon, -d)
        local daemon state
        daemon="$(cat "$dir/pgbouncer.pid" 2>/dev/null || true)"
        if [ -n "$daemon" ]; then
            # SIGKILL: PgBouncer 1.18 waits for its clients on SIGTERM and SIGINT; a throwaway
            # ends at once, and the kernel closes its sockets (the servers' sessions end).
            kill -KILL "$daemon" 2>/dev/null || true
            # Gone, or a zombie that init has not reaped yet (its sockets are closed).
            for _ in $(seq 1 100); do
                state="$(awk '{print $3}' "/proc/$daemon/stat" 2>/dev/null || true)"
                [ -z "$state" ] || [ "$state" = Z ] && break
                sleep 0.02
            done
        fi
        rm -rf "$dir"
    }
    trap cleanup EXIT
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    echo '"postgres" ""' >"$dir/users.txt"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$upstream dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = $mode
default_pool_size = $pool
max_client_conn = 200
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
ignore_startup_parameters = extra_float_digits
INI
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    as_owner pgbouncer -d "$dir/pgbouncer.ini" >"$dir/start.log" 2>&1 ||
        { echo "pgbouncer-throwaway: PgBouncer did not start:" >&2; cat "$dir/start.log" "$dir/pgbouncer.log" >&2 || true; exit 1; }
    for _ in $(seq 1 200); do
        if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
            echo "host=127.0.0.1 port=$port user=postgres dbname=postgres"
            cat >/dev/null || true
            return
        fi
        sleep 0.05
    done
    echo "pgbouncer-throwaway: PgBouncer did not start:" >&2
    cat "$dir/pgbouncer.log" >&2 || true
    exit 1
}

case "${1:-}" in
    serve) shift; serve "$@" ;;
    *) echo "usage: pgbouncer-throwaway.sh serve PGPORT MODE [POOL_SIZE]" >&2; exit 2 ;;
esac
