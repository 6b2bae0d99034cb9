#!/usr/bin/env bash
# Runs benchmark families beside a deliberate background load, one baseline per load, so that the
# tables of a loaded machine sit next to the quiet ones (Benchmarks/README.md, "Under load").
#
#   scripts/bench-loaded.sh [--interleaved] [LOAD ...]
#                                           LOAD: quiet | nice | same | neighbour (default: all four)
#
#   --interleaved  run Benchmarks/Sources/Interleaved (the contended workloads as interleaved rounds,
#                  medians; INTERLEAVED_ARGS passes it options) instead of package-benchmark, and
#                  print its tables for every load
#
#   quiet      nothing beside the benchmark (the reference for the loaded runs)
#   nice       one busy loop per core at nice 19 (a batch job the scheduler is asked to favour less)
#   same       one busy loop per core at the benchmark's own priority (a build, a busy service)
#   neighbour  Benchmarks/Sources/LoadNeighbour: a second service whose threads hand work to each
#              other through Interlock's Condition and Semaphore (2 producers + 2 consumers, and
#              a semaphore ping-pong), so that its waiters compete with the benchmark's
#
# Each load writes the baseline "loaded-<LOAD>" (BENCH_PREFIX overrides "loaded"); BENCH_ARGS
# narrows the families, e.g. BENCH_ARGS="--target ConditionBenchmarks --target WaitingBenchmarks".
# At the end, ratios.py --loads prints each subject's wall and CPU ratio under every load.
# The load is stopped however the script ends (trap); the neighbour's progress lines go to
# ${TMPDIR:-/tmp}/interlock-bench-<prefix>-neighbour-process.log.
#
# The harness's steady-state gates (Benchmarks/README.md, "The interconnect gate", "The core
# gate") wait for states of a quiet machine, which a loaded one rarely reaches: the loaded runs
# set ILK_BENCH_INTERCONNECT=any and ILK_BENCH_CORE=any (the quiet run keeps the defaults, so it
# reads as every other quiet table).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../Benchmarks"
swift="${SWIFT:-swift}"
prefix="${BENCH_PREFIX:-loaded}"
read -r -a bench_args <<< "${BENCH_ARGS:-}"
interleaved=false
if [ "${1:-}" = --interleaved ]; then
    interleaved=true
    shift
fi
read -r -a interleaved_args <<< "${INTERLEAVED_ARGS:-}"
loads=("$@")
[ ${#loads[@]} -eq 0 ] && loads=(quiet nice same neighbour)
for load in "${loads[@]}"; do
    case "$load" in
        quiet | nice | same | neighbour) ;;
        *) echo "bench-loaded: unknown load '$load' (quiet, nice, same or neighbour)" >&2; exit 2 ;;
    esac
done

cores="$(nproc)"
load_pids=()
stop_load() {
    for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    load_pids=()
}
trap stop_load EXIT

"$swift" build -c release --product LoadNeighbour >/dev/null
neighbour="$("$swift" build -c release --show-bin-path)/LoadNeighbour"

start_load() {
    case "$1" in
        quiet) ;;
        nice) for _ in $(seq "$cores"); do nice -n 19 sh -c 'while :; do :; done' & load_pids+=($!); done ;;
        same) for _ in $(seq "$cores"); do sh -c 'while :; do :; done' & load_pids+=($!); done ;;
        neighbour)
            "$neighbour" >"${TMPDIR:-/tmp}/interlock-bench-$prefix-neighbour-process.log" 2>&1 &
            load_pids+=($!)
            ;;
    esac
    sleep 1 # the load is running before the first sample
}

if $interleaved; then
    "$swift" build -c release --product Interleaved >/dev/null
    runner="$("$swift" build -c release --show-bin-path)/Interleaved"
    out="${TMPDIR:-/tmp}/interlock-bench-$prefix-interleaved.md"
    : >"$out"
    for load in "${loads[@]}"; do
        echo "bench-loaded: load '$load', interleaved rounds -> $out" >&2
        start_load "$load"
        "$runner" --label "Load: $load" ${interleaved_args[@]+"${interleaved_args[@]}"} >>"$out" \
            || { echo "bench-loaded: the interleaved run under load '$load' failed" >&2; exit 1; }
        stop_load
    done
    cat "$out"
    exit 0
fi

names=()
for load in "${loads[@]}"; do
    echo "bench-loaded: load '$load' -> baseline '$prefix-$load'" >&2
    start_load "$load"
    log="${TMPDIR:-/tmp}/interlock-bench-$prefix-$load.log"
    gates=()
    [ "$load" = quiet ] || gates=(ILK_BENCH_INTERCONNECT=any ILK_BENCH_CORE=any)
    env ${gates[@]+"${gates[@]}"} "$swift" package --allow-writing-to-package-directory benchmark baseline update "$prefix-$load" \
        --no-progress ${bench_args[@]+"${bench_args[@]}"} >"$log" 2>&1 \
        || { echo "bench-loaded: the run under load '$load' failed; its log: $log" >&2; exit 1; }
    stop_load
    names+=("$prefix-$load")
done
python3 ratios.py --loads "${names[@]}"
