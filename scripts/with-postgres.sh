#!/usr/bin/env bash
# Runs a command next to a throwaway PostgreSQL server (scripts/postgres-throwaway.sh serve),
# with its connection string in INTERLOCK_POSTGRES; stops the server when the command ends and
# exits with the command's status.
#   usage: with-postgres.sh COMMAND [ARGUMENT...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
coproc SERVER { "$here/postgres-throwaway.sh" serve; }
server_pid=$SERVER_PID
line=""
read -r line <&"${SERVER[0]}" || true
case "$line" in
    host=*) ;;
    *) echo "with-postgres: no server was started (see the messages above)" >&2; exit 1 ;;
esac
export INTERLOCK_POSTGRES="$line"
status=0
"$@" || status=$?
# End of file on the server script's input: it stops the server and removes its directory.
exec {SERVER[1]}>&-
wait "$server_pid" || true
exit "$status"
