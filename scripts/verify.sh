#!/usr/bin/env bash
# make verify: model-checks the futex protocols and LockFreeStack's node recycling with spin
# (Verification/Models/*.pml).
#
# For each model: checks first that the source it mirrors has not changed since the model was
# last compared with it (scripts/check-model-sources.py), then runs every `@config` line of its
# header as an exhaustive safety search (assertions, and invalid end states: a thread asleep
# forever) and requires "errors: 0" with no search truncated; then runs every `@mutant` line and
# requires a counterexample (errors > 0 and a trail). The runs go VERIFY_JOBS at a time (default:
# the processors). Each search has a time bound, VERIFY_TIMEOUT seconds (default 300; the largest
# takes about 55 s on the 2-core machine). VERIFY_MUTANTS=0 skips the mutants; VERIFY_ONLY=name
# runs one model. Installs spin when missing and it can (ensure-verify-deps.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/ensure-verify-deps.sh"
python3 "$root/scripts/check-model-sources.py"

models_dir="$root/Verification/Models"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$models_dir"/*.pml "$work/"
cd "$work"

run_one() { # index, model, kind (config|mutant), flags... ; writes $index.result (and .fail)
    local index="$1" model="$2" kind="$3"
    shift 3
    local flags=("$@")
    local dir="$work/job$index"
    mkdir -p "$dir" && cp "$work"/*.pml "$dir/" && cd "$dir"
    local report="$work/$index.result"
    if ! spin -a "${flags[@]}" "$model.pml" >spin.out 2>&1; then
        { echo "verify: $model [$kind ${flags[*]}]: spin could not translate the model:"; cat spin.out; } >"$report"
        touch "$work/$index.fail"
        return
    fi
    if ! gcc -O1 -DSAFETY -DVECTORSZ=4096 -o pan pan.c 2>gcc.out; then
        { echo "verify: $model [$kind ${flags[*]}]: pan did not compile:"; cat gcc.out; } >"$report"
        touch "$work/$index.fail"
        return
    fi
    local start end
    start=$(date +%s.%N)
    local status=0
    timeout "${VERIFY_TIMEOUT:-300}" ./pan -m2000000 >pan.out 2>&1 || status=$?
    end=$(date +%s.%N)
    if [ "$status" = 124 ]; then
        echo "verify: $model [$kind ${flags[*]}] exceeded its time bound (VERIFY_TIMEOUT=${VERIFY_TIMEOUT:-300} s): make the configuration smaller or move it out of @config" >"$report"
        touch "$work/$index.fail"
        cd "$work" && rm -rf "$dir"
        return
    fi
    local errors states truncated seconds
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | head -1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.out | head -1)
    truncated=$(grep -c "max search depth too small" pan.out || true)
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    if [ "$kind" = config ]; then
        if [ "${errors:-x}" = 0 ] && [ "$truncated" = 0 ]; then
            printf 'verify: %-14s %-44s ok       %12s states  %5s s\n' "$model" "${flags[*]}" "$states" "$seconds" >"$report"
        else
            {
                echo "verify: $model [${flags[*]}] FAILED (errors: ${errors:-?}, truncated: $truncated):"
                sed -n '1,40p' pan.out
                if ls ./*.trail >/dev/null 2>&1; then
                    echo "--- counterexample (spin -t -p):"
                    spin -t -p "${flags[@]}" "$model.pml" 2>&1 | tail -60
                fi
            } >"$report"
            touch "$work/$index.fail"
        fi
    else
        if [ "${errors:-0}" != 0 ] && ls ./*.trail >/dev/null 2>&1; then
            local what
            what=$(grep -m1 -E "assertion violated|invalid end state" pan.out | sed 's/^pan:[0-9]*: *//; s/ (at depth.*//')
            printf 'verify: %-14s %-44s mutant caught: %s\n' "$model" "${flags[*]}" "$what" >"$report"
        else
            echo "verify: $model [mutant ${flags[*]}] was NOT caught: the model cannot fail this way" >"$report"
            touch "$work/$index.fail"
        fi
    fi
    cd "$work" && rm -rf "$dir"
}

# Every run of every model, as "model|kind|flags", then VERIFY_JOBS of them at a time.
jobs_list=()
for path in "$models_dir"/*.pml; do
    model="$(basename "$path" .pml)"
    [ "$model" = futex ] && continue
    [ -n "${VERIFY_ONLY:-}" ] && [ "$model" != "$VERIFY_ONLY" ] && continue
    while IFS= read -r line; do jobs_list+=("$model|config|$line"); done < <(sed -n 's/^ \* @config //p' "$path")
    if [ "${VERIFY_MUTANTS:-1}" != 0 ]; then
        while IFS= read -r line; do jobs_list+=("$model|mutant|$line"); done < <(sed -n 's/^ \* @mutant //p' "$path")
    fi
done
parallel="${VERIFY_JOBS:-$(nproc)}"
for index in "${!jobs_list[@]}"; do
    IFS='|' read -r model kind line <<<"${jobs_list[$index]}"
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
    # shellcheck disable=SC2086
    (run_one "$index" "$model" "$kind" $line) &
done
wait
failures=0
for index in "${!jobs_list[@]}"; do
    cat "$work/$index.result" 2>/dev/null || echo "verify: ${jobs_list[$index]}: no result"
    [ -e "$work/$index.fail" ] && failures=$((failures + 1))
done

if [ "$failures" -ne 0 ]; then
    echo "verify: $failures check(s) failed" >&2
    exit 1
fi
echo "verify: every model holds and every mutant was caught"
