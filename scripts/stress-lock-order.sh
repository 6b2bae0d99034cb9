#!/usr/bin/env bash
# Every stress workload with lock-order checking on (the package trait LockOrderChecking, in its
# own scratch path, and INTERLOCK_LOCK_ORDER=report): the workloads lock in consistent orders,
# so the run must pass and print no violation.
#   usage: stress-lock-order.sh [SECONDS]     (SWIFT picks swift; default 0.5 s per workload)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
swift="${SWIFT:-swift}"
scratch=.build-lockorder
seconds="${1:-0.5}"
# The harness's package (StressTests/) passes its trait LockOrderChecking on to Interlock's.
(cd StressTests && "$swift" build -c release --traits LockOrderChecking --scratch-path "$scratch" --product interlock-stress)
harness="StressTests/$scratch/release/interlock-stress"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

status=0
INTERLOCK_LOCK_ORDER=report "$harness" --seconds "$seconds" --json "$work/on.json" >"$work/on.out" 2>"$work/on.err" || status=$?
tail -1 "$work/on.out"
if grep -q "lock-order violation" "$work/on.err" "$work/on.out"; then
    echo "stress-lock-order: lock-order checking reported violations:" >&2
    grep -A12 "lock-order violation" "$work/on.err" "$work/on.out" | head -60 >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "stress-lock-order: the stress run failed with checking on (status $status):" >&2
    tail -30 "$work/on.out" "$work/on.err" >&2
    exit 1
fi
grep -q "^lock-order checking: on" "$work/on.out" \
    || { echo "stress-lock-order: the harness did not run with checking on (trait or environment lost)" >&2; exit 1; }
echo "stress-lock-order: checking on, no violation in any workload"
