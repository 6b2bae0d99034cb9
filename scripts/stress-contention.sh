#!/usr/bin/env bash
# Every stress workload with contention profiling on (the package trait ContentionProfiling, in
# its own scratch path, INTERLOCK_CONTENTION=1 and INTERLOCK_CONTENTION_REPORT): the run must
# pass every invariant with the profiler recording, and write a report and folded stacks at exit.
#   usage: stress-contention.sh [SECONDS]     (SWIFT picks swift; default 0.5 s per workload)
#   CONTENTION_REPORT_DIR keeps the report and the folded stacks there (default: a temporary folder)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
swift="${SWIFT:-swift}"
scratch=.build-contention
seconds="${1:-0.5}"
# The harness's package (StressTests/) passes its trait ContentionProfiling on to Interlock's.
(cd StressTests && "$swift" build -c release --traits ContentionProfiling --scratch-path "$scratch" --product interlock-stress)
harness="StressTests/$scratch/release/interlock-stress"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out="${CONTENTION_REPORT_DIR:-$work}"
mkdir -p "$out"
report="$out/stress-contention.txt"
rm -f "$report" "$report.folded"

status=0
INTERLOCK_CONTENTION=1 INTERLOCK_CONTENTION_REPORT="$report" \
    "$harness" --seconds "$seconds" >"$work/run.out" 2>"$work/run.err" || status=$?
tail -1 "$work/run.out"
if [ "$status" -ne 0 ]; then
    echo "stress-contention: the stress run failed with profiling on (status $status):" >&2
    tail -30 "$work/run.out" "$work/run.err" >&2
    exit 1
fi
grep -q "^contention profiling: on" "$work/run.out" \
    || { echo "stress-contention: the harness did not run with profiling on (trait or environment lost)" >&2; exit 1; }
[ -s "$report" ] && head -1 "$report" | grep -q "^Interlock contention profile: " \
    || { echo "stress-contention: no report at $report" >&2; exit 1; }
sites="$(head -1 "$report" | sed -n 's/.*, \([0-9]*\) sites\{0,1\}$/\1/p')"
[ -n "$sites" ] && [ "$sites" -gt 0 ] \
    || { echo "stress-contention: the report lists no site: $(head -1 "$report")" >&2; exit 1; }
# Every folded line: frames separated by ';', a space, a positive count.
if [ ! -s "$report.folded" ] || grep -qvE '^[^ ].*;\[.*\] [1-9][0-9]*$' "$report.folded"; then
    echo "stress-contention: $report.folded is missing or has a malformed line" >&2
    exit 1
fi
echo "stress-contention: every workload passed with profiling on; the report's top sites:"
head -12 "$report"
