#!/usr/bin/env bash
# Builds Tests/WitnessInlining (a dependent's release build whose protocol witnesses take each
# primitive), runs it, and disassembles every witness `Critical.step()`: a fast path must be
# instructions there, not calls. Inside a protocol-witness thunk Swift's IRGen marks every call
# noinline, so a fast path written on the C shim's `static inline` helpers stays a call
# (Sources/Interlock/Atomics/WordAtomics.swift), and a slow path called with `deadline: nil`
# makes the witness build an Optional<ContinuousClock.Instant> through runtime metadata on
# every call. Exits 1, naming the witness and the call, otherwise.
#
# Allowed calls: Interlock's own slow paths (Swift functions), and four C functions that are
# calls by design: ilk_mutex_release and ilk_rwlock_reader_leave (one function each, whose
# `lock sub` and flags beat the builtin's `lock xadd`; WordAtomics.swift), ilk_current_thread_id
# (a thread-local read, which Swift cannot make inline) and ilk_compiler_barrier (a write unlock's
# signal fence: Swift has no compiler-only fence).
set -euo pipefail
SWIFT="${SWIFT:-swift}"
dir="$(cd "$(dirname "$0")/.." && pwd)/Tests/WitnessInlining"
(cd "$dir" && "$SWIFT" build -c release $WITNESS_BUILD_FLAGS >/dev/null) || {
    echo "check-witness-inlining: the build of Tests/WitnessInlining failed" >&2
    (cd "$dir" && "$SWIFT" build -c release $WITNESS_BUILD_FLAGS 2>&1 | tail -20) >&2
    exit 1
}
binary="$(cd "$dir" && "$SWIFT" build -c release --show-bin-path)/WitnessFastPaths"
"$binary" >/dev/null
expected="$(grep -c '^final class With' "$dir/Sources/WitnessFastPaths/main.swift")"
objdump -d --no-show-raw-insn "$binary" | awk -v expected="$expected" '
    /^[0-9a-f]+ <.*>:$/ {
        name = $2
        inside = (name ~ /^<\$s16WitnessFastPaths.*CriticalA2aDP4stepyyFTW>:$/)
        if (inside) witnesses++
        next
    }
    inside && /call/ {
        target = $NF
        allowed = (target ~ /^<\$s9Interlock/ || target == "<ilk_mutex_release>" ||
                   target == "<ilk_rwlock_reader_leave>" || target == "<ilk_current_thread_id>" ||
                   target == "<ilk_compiler_barrier>")
        if (!allowed) {
            printf "check-witness-inlining: %s calls %s on its path\n", name, target > "/dev/stderr"
            failed = 1
        }
    }
    END {
        if (witnesses != expected) {
            printf "check-witness-inlining: found %d witnesses of Critical.step(), expected %d\n", witnesses, expected > "/dev/stderr"
            failed = 1
        }
        if (!failed) printf "check-witness-inlining: %d witnesses, no shim helper or metadata call on their paths\n", witnesses
        exit failed
    }'
