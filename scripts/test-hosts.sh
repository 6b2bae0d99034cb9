#!/usr/bin/env bash
# DistributedLock across hosts (issue 19). This machine's kernel has no NFS client, so the hosts
# are network namespaces on this machine, and the shared file system is sshfs:
#
#   ilk-srv-ID   a bridge at 10.231.0.1/24 and an sshd (OpenSSH, its sftp server) listening on it
#                only, with a host key and an authorized key made for this run in a temporary
#                directory (no system ssh configuration is read or changed; /run/sshd, sshd's
#                privilege separation directory, is created when missing). It exports a
#                directory of that temporary directory.
#   ilk-cN-ID    client N (N = 1, 2): a veth to the server's bridge, address 10.231.0.1N, its own
#                host name (a UTS namespace: ilk-cN-ID) and its own mount namespace, in which sshfs
#                mounts the export with its caches on: names and attributes cached by sshfs
#                itself (dir_cache) and by the kernel (entry_timeout, attr_timeout, and absent
#                names too, negative_timeout), the hostile case, like NFS's attribute and lookup
#                caches. (No kernel_cache: that serves file contents without asking the server
#                on open at all, which no lock can make right; NFS checks on open, close-to-open.)
#
# 1. Counting: WORKERS processes in each client (interlock-dlock-helper count) take the same
#    DistributedLock on the mount and increment a counter file under it ITERATIONS times each;
#    the final count, read on the server, must be exact.
# 2. The cut: a process in client 1 holds the lock (hold-wait); client 2 sees it held; then client
#    1's veth goes down and every sshd process is killed. The holder's unlock and every tryLock
#    in either client must throw an error naming the lock's path; nothing may report that it
#    holds the lock; the lock file stays on the server (its holder could not remove it).
#
# 3. The network back: client 1's veth up, sshd restarted. The holder's object still holds the
#    lock (its unlock failed before it could look), so its retried unlock releases it; then a
#    process of client 2 takes it.
#
#   usage: scripts/test-hosts.sh --helper PATH [--workers K] [--iterations N] [--cache SECONDS] [--keep]
#          scripts/test-hosts.sh --helper PATH --directory DIR [--workers K] [--iterations N]
#
#   --helper PATH     the interlock-dlock-helper executable (make test-hosts builds it)
#   --workers K       counting processes per client (default 2; with --directory, in all: 4)
#   --iterations N    increments per process (default 200)
#   --cache SECONDS   sshfs's and the kernel's name and attribute cache timeouts (default 20)
#   --limit SECONDS   fail when not done after this long (default 150)
#   --keep            leave the namespaces, mounts and temporary directory for a look (prints
#                     how to remove them)
#   --directory DIR   no namespaces: the counting part only, against DIR, by K processes of this
#                     host, e.g. on a real NFS mount. For more hosts, run
#                     "interlock-dlock-helper count DIR/L.lock DIR/L.counter N" on each of them
#                     at the same time against a counter file holding 20 zeros and a newline.
#
# Without root, `ip netns`, or FUSE it prints "test-hosts: skipped: REASON" and exits 0.
# Installs openssh-server, sshfs and iproute2 when missing (scripts/apt-install.sh).
# Everything it made is removed on exit, failure or interrupt (unless --keep).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
helper="" workers="" iterations=200 cache=20 keep=0 directory="" limit=150
while [ $# -gt 0 ]; do
    case "$1" in
        --helper) helper="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        --iterations) iterations="$2"; shift 2 ;;
        --cache) cache="$2"; shift 2 ;;
        --limit) limit="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --directory) directory="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-hosts: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

say() { echo "test-hosts: $*"; }
die() { echo "test-hosts: FAILED: $*" >&2; exit 1; }
skip() { echo "test-hosts: skipped: $*"; exit 0; }

[ -n "$helper" ] || die "--helper PATH is required (make test-hosts builds and passes it)"
[ -x "$helper" ] || die "the helper $helper is not an executable"
helper="$(cd "$(dirname "$helper")" && pwd)/$(basename "$helper")"
case "$iterations" in ''|*[!0-9]*) die "--iterations needs a count" ;; esac

zeros() { printf '%020d\n' "$1"; }
# The counter file's value ("" when it is not 20 digits and a newline).
count_of() { local text; text="$(cat "$1")"; [[ "$text" =~ ^[0-9]{20}$ ]] && echo $((10#$text)) || echo ""; }

# Runs K `count` workers with the command prefix in "$@" (e.g. nsenter ...), in the background;
# their pids are appended to the array `pids`, their stderr to $logs/count-LABEL-i.err.
start_counters() {
    local label="$1" k="$2" lock="$3" counter="$4"; shift 4
    local i
    for i in $(seq 1 "$k"); do
        "$@" "$helper" count "$lock" "$counter" "$iterations" 2>"$logs/count-$label-$i.err" &
        pids+=("$!")
        labels+=("$label-$i")
    done
}

# Waits for every pid in `pids`; prints each failure with its stderr; returns 1 if any failed.
wait_counters() {
    local failed=0 i status
    for i in "${!pids[@]}"; do
        status=0
        wait "${pids[$i]}" || status=$?
        if [ "$status" -ne 0 ]; then
            failed=1
            echo "test-hosts: worker ${labels[$i]} exited with status $status: $(cat "$logs/count-${labels[$i]}.err")" >&2
        fi
    done
    pids=() labels=()
    return $failed
}

# --- --directory: the counting part on this host, against a directory of the user's ---------------
if [ -n "$directory" ]; then
    [ -d "$directory" ] || die "--directory $directory is not a directory"
    workers="${workers:-4}"
    logs="$(mktemp -d)"
    name="ilk-hosts-$(hostname)-$$"
    lock="$directory/$name.lock" counter="$directory/$name.counter"
    trap 'rm -rf "$logs"; rm -f "$counter"' EXIT
    zeros 0 >"$counter"
    recipe="$("$helper" recipe "$lock" 2>&1)" || die "the helper cannot use $lock: $recipe"
    say "counting in $directory ($(stat -f -c %T "$directory" 2>/dev/null || echo '?'), $recipe): $workers processes x $iterations increments"
    pids=() labels=()
    start=$SECONDS
    start_counters local "$workers" "$lock" "$counter" env
    wait_counters || die "a worker failed (above)"
    got="$(count_of "$counter")" expected=$((workers * iterations))
    [ "$got" = "$expected" ] || die "the counter reads '${got:-$(cat "$counter")}', expected $expected: increments were lost"
    [ ! -e "$lock" ] || die "the lock $lock is still there after every worker unlocked"
    say "count exact: $got in $((SECONDS - start)) s"
    echo "test-hosts: 1 passed, 0 failed"
    exit 0
fi

# --- Can this machine make hosts? ----------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "network namespaces and mounts need root (this is uid $(id -u)); run as root, or pass --directory DIR"
[ "$(uname -s)" = Linux ] || skip "network namespaces are Linux's"
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v sshfs >/dev/null 2>&1 || missing+=(sshfs)
if [ ${#missing[@]} -gt 0 ]; then
    "$here/apt-install.sh" "Interlock's many-hosts test (make test-hosts)" \
        "install OpenSSH's server, sshfs and iproute2 (ip) from your distribution" "${missing[@]}"
fi
PATH="$PATH:/usr/sbin:/sbin"
sshd_bin="$(command -v sshd)"
sftp_server=internal-sftp
for candidate in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server /usr/lib/ssh/sftp-server /usr/libexec/sftp-server; do
    if [ -x "$candidate" ]; then sftp_server="$candidate"; break; fi
done
if [ ! -e /dev/fuse ]; then
    modprobe fuse >/dev/null 2>&1 || true
    [ -e /dev/fuse ] || skip "no /dev/fuse (FUSE is not available here, and modprobe fuse did not bring it)"
fi
grep -qw fuse /proc/filesystems || skip "the kernel has no fuse file system (/proc/filesystems)"

# --- The hosts ---------------------------------------------------------------------------------
id="$$-$RANDOM"
srv="ilk-srv-$id"
clients=(1 2)
workers="${workers:-2}"
tmp="$(mktemp -d /tmp/ilk-hosts.XXXXXX)"
chmod 755 "$tmp"
logs="$tmp/logs" export_dir="$tmp/export" mnt="$tmp/mnt"
mkdir -p "$logs" "$export_dir" "$mnt"
namespaces=() sshd_pid="" pids=() labels=() holder_pid="" watchdog=""
declare -A sshfs_pid anchor

# Every process below our sshd (its connections and their sftp servers), deepest last.
descendants() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        echo "$child"
        descendants "$child"
    done
}

kill_sshd() {
    local signal="$1" all
    [ -n "$sshd_pid" ] || return 0
    all="$sshd_pid $(descendants "$sshd_pid")"
    # shellcheck disable=SC2086
    kill "-$signal" $all 2>/dev/null || true
}

cleanup() {
    local status=$?
    set +e
    [ -z "$watchdog" ] || kill $(pgrep -P "$watchdog") "$watchdog" 2>/dev/null
    exec 2>/dev/null  # no "Killed" notices for the processes ended below
    if [ "$keep" = 1 ]; then
        say "kept: $tmp; namespaces ${namespaces[*]}; sshd $sshd_pid; sshfs ${sshfs_pid[*]}; anchors ${anchor[*]}"
        say "enter client 1 with: nsenter -t ${anchor[1]:-?} -n -m -u"
        say "remove with: kill $sshd_pid ${sshfs_pid[*]} ${anchor[*]}; for n in ${namespaces[*]}; do ip netns del \$n; done; rm -rf $tmp"
        return $status
    fi
    for pid in "${pids[@]}" $holder_pid; do kill -KILL "$pid" 2>/dev/null; done
    for c in "${!anchor[@]}"; do
        # A lazy unmount in the client's mount namespace, then sshfs (and its ssh), the anchor.
        nsenter -t "${anchor[$c]}" -m umount -l "$mnt" 2>/dev/null
        kill -TERM "${sshfs_pid[$c]:-}" $(pgrep -P "${sshfs_pid[$c]:-0}") "${anchor[$c]}" 2>/dev/null
    done
    kill_sshd TERM
    sleep 0.2
    for c in "${!anchor[@]}"; do kill -KILL "${sshfs_pid[$c]:-}" $(pgrep -P "${sshfs_pid[$c]:-0}") "${anchor[$c]}" 2>/dev/null; done
    kill_sshd KILL
    wait 2>/dev/null
    for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$tmp"
    return $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The watchdog: every wait below is bounded, but a file system that hangs must not hang CI.
trap 'die "not done after $limit s (--limit)"' USR1
sleep "$limit" && kill -USR1 $$ &
watchdog=$!

if ! error="$(ip netns add "$srv" 2>&1)"; then
    skip "cannot create a network namespace (ip netns add: $error)"
fi
namespaces+=("$srv")
ip -n "$srv" link set lo up
error="$(ip -n "$srv" link add br0 type bridge 2>&1)" || skip "cannot create a bridge in a network namespace (ip link add type bridge: $error)"
ip -n "$srv" addr add 10.231.0.1/24 dev br0
ip -n "$srv" link set br0 up
for c in "${clients[@]}"; do
    ns="ilk-c$c-$id"
    ip netns add "$ns"
    namespaces+=("$ns")
    ip -n "$ns" link set lo up
    # Both ends are created inside the namespaces: no name in this host's namespace.
    error="$(ip link add eth0 netns "$ns" type veth peer name "c$c" netns "$srv" 2>&1)" \
        || skip "cannot create a veth pair between network namespaces (ip link add type veth: $error)"
    ip -n "$srv" link set "c$c" master br0 up
    ip -n "$ns" addr add "10.231.0.1$c/24" dev eth0
    ip -n "$ns" link set eth0 up
done

# sshd: keys and configuration of this run only.
ssh-keygen -q -t ed25519 -N '' -C "ilk-srv-$id" -f "$tmp/host_key"
ssh-keygen -q -t ed25519 -N '' -C "ilk-client-$id" -f "$tmp/client_key"
cp "$tmp/client_key.pub" "$tmp/authorized_keys"
echo "10.231.0.1 $(cat "$tmp/host_key.pub")" >"$tmp/known_hosts"
cat >"$tmp/sshd_config" <<EOF
ListenAddress 10.231.0.1:22
HostKey $tmp/host_key
PidFile none
AuthorizedKeysFile $tmp/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
LogLevel ERROR
Subsystem sftp $sftp_server
EOF
cat >"$tmp/ssh_config" <<EOF
Host *
    User root
    IdentityFile $tmp/client_key
    IdentitiesOnly yes
    UserKnownHostsFile $tmp/known_hosts
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 5
    ServerAliveInterval 1
    ServerAliveCountMax 3
    LogLevel ERROR
EOF
[ -d /run/sshd ] || mkdir -m 0755 -p /run/sshd  # sshd's privilege separation directory
"$sshd_bin" -t -f "$tmp/sshd_config" || die "sshd rejects the test's configuration ($tmp/sshd_config)"
# Starts sshd in the server's namespace and waits until it listens.
start_sshd() {
    ip netns exec "$srv" "$sshd_bin" -D -e -f "$tmp/sshd_config" 2>>"$logs/sshd.err" &
    sshd_pid=$!
    disown "$sshd_pid"  # no job notice from bash when the cut kills it
    for _ in $(seq 1 100); do
        ip netns exec "$srv" ss -Hltn 'sport = :22' 2>/dev/null | grep -q 10.231.0.1 && return 0
        kill -0 "$sshd_pid" 2>/dev/null || die "sshd exited: $(cat "$logs/sshd.err")"
        sleep 0.05
    done
    die "sshd does not listen after 5 s: $(cat "$logs/sshd.err")"
}
start_sshd

sshfs_options="dir_cache=yes,dcache_timeout=$cache,attr_timeout=$cache,entry_timeout=$cache,negative_timeout=$cache,reconnect"
for c in "${clients[@]}"; do
    # An anchor process holds each client's namespaces: ip netns exec gives it a mount namespace
    # of its own, unshare a host name of its own. sshfs and the workers join them (nsenter), so
    # they outlive sshfs. (-o reconnect: without it sshfs kills itself when the connection
    # drops and the mount point becomes the empty local directory under it.)
    ip netns exec "ilk-c$c-$id" unshare --uts sh -c 'hostname "$1" && exec sleep 3600' sh "ilk-c$c-$id" &
    anchor[$c]=$!
done
# Runs a command in client $1's namespaces (network, mount, host name). In the background, call
# nsenter itself instead, so that $! is the command's pid (nsenter execs it), not a subshell's.
in_client() { local c="$1"; shift; nsenter -t "${anchor[$c]}" -n -m -u -- "$@"; }
for c in "${clients[@]}"; do
    for _ in $(seq 1 100); do
        [ "$(in_client "$c" hostname 2>/dev/null)" = "ilk-c$c-$id" ] && break
        sleep 0.05
    done
    nsenter -t "${anchor[$c]}" -n -m -u -- sshfs -f -F "$tmp/ssh_config" -o "$sshfs_options" "root@10.231.0.1:$export_dir" "$mnt" \
        2>"$logs/sshfs-$c.err" &
    sshfs_pid[$c]=$!
done
for c in "${clients[@]}"; do
    for _ in $(seq 1 200); do
        grep -q " $mnt fuse.sshfs " "/proc/${anchor[$c]}/mounts" 2>/dev/null && break
        if ! kill -0 "${sshfs_pid[$c]}" 2>/dev/null; then
            # FUSE refused (a container without the device or the right to mount): a skip.
            if grep -qiE '/dev/fuse|fuse: device not found|mount failed|fusermount' "$logs/sshfs-$c.err"; then
                skip "FUSE does not work here: sshfs says $(tr '\n' ' ' <"$logs/sshfs-$c.err")"
            fi
            die "sshfs in client $c exited: $(cat "$logs/sshfs-$c.err")"
        fi
        sleep 0.05
    done
    grep -q " $mnt fuse.sshfs " "/proc/${anchor[$c]}/mounts" || die "sshfs in client $c did not mount in 10 s: $(cat "$logs/sshfs-$c.err")"
done
# The lock and the counter are in a directory that exists only on the server: a client whose
# mount went away finds no directory there, rather than an empty local one to lock in.
mkdir "$export_dir/shared"
lock="$mnt/shared/lock" counter="$mnt/shared/counter"
say "hosts up: server $srv (10.231.0.1, sshd $sshd_pid), clients ${namespaces[*]:1} mounting $export_dir with -o $sshfs_options"
recipe="$(in_client 1 "$helper" recipe "$lock" 2>&1)" || die "the helper failed in client 1: $recipe"
say "client 1: $recipe"

# --- 1. Counting -----------------------------------------------------------------------------------
zeros 0 >"$export_dir/shared/counter"
expected=$(( ${#clients[@]} * workers * iterations ))
say "counting: ${#clients[@]} clients x $workers processes x $iterations increments = $expected"
start=$SECONDS
for c in "${clients[@]}"; do
    start_counters "c$c" "$workers" "$lock" "$counter" nsenter -t "${anchor[$c]}" -n -m -u --
done
wait_counters || die "a worker failed (above)"
elapsed=$((SECONDS - start))
got="$(count_of "$export_dir/shared/counter")"
[ "$got" = "$expected" ] || die "the counter on the server reads '${got:-$(cat "$export_dir/shared/counter")}', expected $expected: increments were lost"
leftovers="$(ls -A "$export_dir/shared" | grep -v '^counter$' || true)"
[ -z "$leftovers" ] || die "left in the export after every worker unlocked: $leftovers"
say "count exact: $got in $elapsed s (about $(( expected / (elapsed > 0 ? elapsed : 1) )) increments/s), nothing left but the counter"

# --- 2. The cut -------------------------------------------------------------------------------------
# Client 1 holds the lock; a waiter in each client polls for it (lock(before:)); then client 1's
# veth goes down and every sshd process is killed. Client 2's connection drops at once (its
# sshfs, -o reconnect, then fails to reconnect); client 1's hangs until ssh's keep-alives give up
# (ServerAliveInterval 1, ServerAliveCountMax 3).
mkfifo "$tmp/holder.in"
nsenter -t "${anchor[1]}" -n -m -u -- "$helper" hold-wait "$lock" <"$tmp/holder.in" >"$logs/holder.out" 2>"$logs/holder.err" &
holder_pid=$!
exec 7>"$tmp/holder.in"  # keeps the holder waiting until we write a line
for _ in $(seq 1 200); do
    grep -q '^held ' "$logs/holder.out" && break
    kill -0 "$holder_pid" 2>/dev/null || die "the holder exited: $(cat "$logs/holder.out" "$logs/holder.err")"
    sleep 0.05
done
grep -q '^held ' "$logs/holder.out" || die "the holder did not take the lock in 10 s"
say "client 1: $(head -1 "$logs/holder.out")"
before="$(in_client 2 "$helper" try "$lock" 2>&1 || true)"
[ "$before" = busy ] || die "client 2's tryLock while client 1 holds the lock said: $before"
say "client 2 (network up): tryLock: $before"
[ -f "$export_dir/shared/lock" ] || die "no lock file on the server while client 1 holds it"
for c in "${clients[@]}"; do
    nsenter -t "${anchor[$c]}" -n -m -u -- "$helper" wait-lock "$lock" 60 >"$logs/waiter-$c.out" 2>&1 &
    pids+=("$!") labels+=("waiter-$c")
done
sleep 0.5
for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null || die "${labels[$i]} ended before the cut: $(cat "$logs/${labels[$i]}.out")"
done

say "cutting: client 1's veth down, sshd (pid $sshd_pid and its $(descendants "$sshd_pid" | wc -l) connection processes) killed"
ip -n "ilk-c1-$id" link set eth0 down
kill_sshd KILL
cut_at=$SECONDS
problems=()
# Each outcome must be an error of DistributedLock naming the lock's path.
check_error() {
    local who="$1" prefix="$2" outcome="$3"
    case "$outcome" in
        "$prefix: DistributedLock."*" at \"$lock\": "*) ;;
        *) problems+=("$who did not throw an error naming the lock's path: $outcome") ;;
    esac
}
for c in 2 1; do
    outcome="$(timeout 60 nsenter -t "${anchor[$c]}" -n -m -u -- "$helper" try "$lock" 2>&1)" || true
    say "client $c, a new lock object (after the cut): $outcome"
    check_error "client $c's new tryLock" "tryLock failed" "$outcome"
done
for i in "${!pids[@]}"; do
    timeout 60 tail --pid="${pids[$i]}" -f /dev/null || die "${labels[$i]} did not return in 60 s after the cut"
    wait "${pids[$i]}" || true
    outcome="$(cat "$logs/${labels[$i]}.out")"
    say "${labels[$i]}, polling since before the cut: $outcome"
    check_error "${labels[$i]}" "lock failed" "$outcome"
done
pids=() labels=()
echo >&7  # the holder unlocks now
for _ in $(seq 1 600); do
    [ "$(wc -l <"$logs/holder.out")" -ge 2 ] && break
    sleep 0.1
done
unlock_outcome="$(sed -n 2p "$logs/holder.out")"
say "client 1's holder unlocks (after the cut, $((SECONDS - cut_at)) s): $unlock_outcome"
check_error "the holder's unlock" "unlock failed" "$unlock_outcome"
if grep -h '^acquired' "$logs"/*.out; then
    problems+=("a process reported acquiring the lock after the cut")
fi
if [ -f "$export_dir/shared/lock" ]; then
    say "on the server the lock is still held, as it is: $(tr '\n' ' ' <"$export_dir/shared/lock")"
else
    problems+=("the lock file vanished from the server though no unlock could reach it")
fi

# --- 3. The network back ----------------------------------------------------------------------------
# The holder's object still holds the lock (its unlock failed before it could look), so its
# retried unlock releases it once the server is back; then client 2 takes it.
for _ in $(seq 1 100); do
    [ "$(wc -l <"$logs/holder.out")" -ge 3 ] && break
    sleep 0.1
done
held_after="$(sed -n 3p "$logs/holder.out")"
[ "$held_after" = "still held by this object" ] \
    || problems+=("after its failed unlock the holder's object should still hold the lock, it said: ${held_after:-nothing}")
ip -n "ilk-c1-$id" link set eth0 up
start_sshd
echo >&7  # the holder retries its unlock
exec 7>&-
timeout 60 tail --pid="$holder_pid" -f /dev/null || die "the holder's retried unlock did not return in 60 s"
holder_status=0
wait "$holder_pid" || holder_status=$?
holder_pid=""
retried="$(sed -n 4p "$logs/holder.out")"
say "network back: the holder's retried unlock: ${retried:-nothing} (exit $holder_status)"
[ "$retried" = unlocked ] || problems+=("the holder's retried unlock after the network came back said: ${retried:-nothing} $(cat "$logs/holder.err")")
[ ! -e "$export_dir/shared/lock" ] || problems+=("the lock is still on the server after the holder's retried unlock")
# Client 2's sshfs may still believe the lock's name exists (its caches, up to --cache
# seconds): a waiter, not a single tryLock, and how long it waited.
back_at=$SECONDS
after="$(in_client 2 "$helper" wait-lock "$lock" $((cache + 30)) 2>&1 | tr '\n' ' ' || true)"
say "client 2 (network back): lock(before:): $after($((SECONDS - back_at)) s)"
[ "$after" = "acquired unlocked " ] || problems+=("client 2 could not take the lock after the network came back: $after")

# A waiter whose removal of its temporary file (".ilk-HOST-PID-TOKEN.tmp", a private name) the
# cut stopped, or whose creation of it the cut reported as failed, leaves it. Nothing else may.
cut_leftovers="$(ls -A "$export_dir/shared" | grep -E '^\.ilk-.*\.tmp$' || true)"
[ -z "$cut_leftovers" ] || say "note: temporary files the cut kept waiters from removing: $(echo $cut_leftovers)"
leftovers="$(ls -A "$export_dir/shared" | grep -v -E '^counter$|^\.ilk-.*\.tmp$' || true)"
[ -z "$leftovers" ] || problems+=("left in the export: $leftovers")
if [ ${#problems[@]} -gt 0 ]; then
    printf 'test-hosts: FAILED: %s\n' "${problems[@]}" >&2
    exit 1
fi
say "cut: every operation threw an error naming the lock's path, nothing reported a lock it did not hold; the lock stayed held until its holder released it with the network back"
echo "test-hosts: 3 passed, 0 failed"
