#!/usr/bin/env bash
# make soak: every stress workload in several processes at once, each workload until it has done
# SOAK_OPERATIONS operations in each process (default 10^8) or SOAK_SECONDS have passed
# (default 600), whichever comes first; then the totals per workload over all processes, and
# each process's resident set while each workload ran. Fails when a workload fails in any
# process, or when the resident set grew during a queue or stack workload by more than
# SOAK_GROWTH_MIB (default 32) after its first second: their memory must stay flat.
#
#   SOAK_PROCESSES   processes at once (default 3)
#   SOAK_THREADS     threads per workload in each process (default: the harness's, 2 x cores)
#   SOAK_ONLY        space-separated workload names (default: every workload)
#
# make soak-short (part of make test) runs the same with 2 processes, 10^6 operations and 2 s
# per workload, to keep the script and the flat-memory check working.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
processes="${SOAK_PROCESSES:-3}"
operations="${SOAK_OPERATIONS:-100000000}"
seconds="${SOAK_SECONDS:-600}"
growth="${SOAK_GROWTH_MIB:-32}"
scripts/ensure-deps.sh
# The harness is a package of its own (StressTests/Package.swift).
(cd StressTests && ${SWIFT:-swift} build -c release --product interlock-stress >/dev/null)
harness="$(cd StressTests && ${SWIFT:-swift} build -c release --show-bin-path)/interlock-stress"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
args=(--operations "$operations" --seconds "$seconds")
[ -n "${SOAK_THREADS:-}" ] && args+=(--threads "$SOAK_THREADS")
if [ -n "${SOAK_ONLY:-}" ]; then
    # shellcheck disable=SC2206
    only=($SOAK_ONLY)
    args+=(--only "${only[@]}")
fi
echo "soak: $processes processes, each workload to $operations operations or $seconds s per process"
pids=()
for k in $(seq 1 "$processes"); do
    "$harness" "${args[@]}" --json "$out/p$k.json" >"$out/p$k.log" 2>&1 &
    pids+=($!)
done
status=0
for k in "${!pids[@]}"; do
    if ! wait "${pids[$k]}"; then
        echo "soak: process $((k + 1)) failed; its last lines:" >&2
        tail -20 "$out/p$((k + 1)).log" >&2
        status=1
    fi
done
python3 - "$out" "$processes" "$growth" <<'PY' || status=1
import json, sys, pathlib
out, processes, growth = pathlib.Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
reports = []
for k in range(1, processes + 1):
    path = out / f"p{k}.json"
    if not path.exists():
        print(f"soak: process {k} wrote no report", file=sys.stderr)
        sys.exit(1)
    reports.append(json.loads(path.read_text()))
names = [r["name"] for r in reports[0]["results"]]
failed = False
print(f"{'workload':36} {'operations (all processes)':>27} {'failed':>7}  resident MiB per process (after 1 s -> max -> end)")
total = 0
for name in names:
    rows = [next(r for r in report["results"] if r["name"] == name) for report in reports]
    ops = sum(r["operations"] for r in rows)
    total += ops
    bad = sum(0 if r["passed"] else 1 for r in rows)
    memory = []
    for r in rows:
        m = r.get("residentMemory")
        if m is None:
            memory.append("?")
            continue
        memory.append(f"{m['afterWarmupMiB']:.0f}->{m['maxMiB']:.0f}->{m['endMiB']:.0f}")
        if name.startswith("lockfree-") and m["maxMiB"] - m["afterWarmupMiB"] > growth:
            print(f"soak: {name}: resident set grew {m['maxMiB'] - m['afterWarmupMiB']:.0f} MiB after the "
                  f"first second (limit {growth:.0f}): memory is not flat", file=sys.stderr)
            failed = True
    print(f"{name:36} {ops:>27,} {bad:>7}  {'  '.join(memory)}")
    if bad:
        failed = True
        for r in rows:
            for v in r["violations"][:3]:
                print(f"soak: {name}: {v}", file=sys.stderr)
print(f"{'total':36} {total:>27,}")
sys.exit(1 if failed else 0)
PY
[ "$status" -eq 0 ] && echo "soak: every workload passed in every process" || echo "soak: FAILED" >&2
exit "$status"
