#!/usr/bin/env bash
# What contention profiling costs: Benchmarks/ContentionCost built without and with the trait
# ContentionProfiling, run in alternation (rounds of: no trait; trait, INTERLOCK_CONTENTION unset;
# =1; =100), medians per workload and variant, wall and CPU ns per operation, and the recorded
# contended waits (to price each recorded wait). Run it on a quiet machine.
#   usage: contention-cost.sh [ROUNDS]     (default 7; SWIFT picks swift)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/Benchmarks/ContentionCost"
swift="${SWIFT:-swift}"
rounds="${1:-7}"
"$swift" build -c release --scratch-path .build-plain >/dev/null
"$swift" build -c release --scratch-path .build-trait --traits ContentionProfiling >/dev/null
plain=.build-plain/release/ContentionCost
trait=.build-trait/release/ContentionCost
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "$rounds"); do
    env -u INTERLOCK_CONTENTION "$plain" | sed 's/^/none /' >>"$work/all"
    env -u INTERLOCK_CONTENTION "$trait" | sed 's/^/off /' >>"$work/all"
    INTERLOCK_CONTENTION=1 "$trait" | sed 's/^/on1 /' >>"$work/all"
    INTERLOCK_CONTENTION=100 "$trait" | sed 's/^/on100 /' >>"$work/all"
    echo "round $round of $rounds done" >&2
done
python3 - "$work/all" <<'PY'
import statistics, sys
rows = {}
operations = {}
for line in open(sys.argv[1]):
    variant, name, wall, cpu, waits, ops = line.split()
    rows.setdefault((name, variant), []).append((float(wall), float(cpu), int(waits)))
    operations[name] = int(ops)
names = list(dict.fromkeys(name for name, _ in rows))
variants = ["none", "off", "on1", "on100"]
print("ns per operation, wall / CPU, medians of the rounds; ratios of wall time to the build without the trait")
print(f"{'workload':<10} " + " ".join(f"{v:>17}" for v in variants)
      + "  off÷none  on1÷none  on100÷none  waits(on1)  per recorded wait (wall, CPU)")
for name in names:
    med = {}
    for v in variants:
        samples = rows[(name, v)]
        med[v] = tuple(statistics.median(s[i] for s in samples) for i in range(3))
    cells = " ".join(f"{med[v][0]:>8.1f}/{med[v][1]:<8.1f}" for v in variants)
    base = med["none"][0]
    ratio = lambda v: med[v][0] / base
    waits = med["on1"][2]
    if waits > 0:
        per_wall = (med["on1"][0] - med["off"][0]) * operations[name] / waits
        per_cpu = (med["on1"][1] - med["off"][1]) * operations[name] / waits
        per = f"{per_wall:>8.0f} ns, {per_cpu:.0f} ns"
    else:
        per = "       -"
    print(f"{name:<10} {cells}  {ratio('off'):>8.3f}  {ratio('on1'):>8.3f}  {ratio('on100'):>10.3f}  {waits:>10.0f}  {per}")
PY
