#!/usr/bin/env bash
# Builds Tests/CompileFailures, a package whose marked lines must not compile, and checks that
# each line marked `// expected error: <fragment>` carries an error containing <fragment>, and
# that no other line has an error. Exits 1, naming the line, otherwise.
set -euo pipefail
SWIFT="${SWIFT:-swift}"
dir="$(cd "$(dirname "$0")/.." && pwd)/Tests/CompileFailures"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
expected=0
# One target per folder of Sources/ (a module that fails to type-check is not analysed further,
# so each kind of check builds alone).
for target_dir in "$dir"/Sources/*/; do
    target="$(basename "$target_dir")"
    if (cd "$dir" && "$SWIFT" build --target "$target" >"$log" 2>&1); then
        echo "check-compile-failures: target $target compiled, but its marked lines must be refused" >&2
        status=1
        continue
    fi
    while IFS= read -r file; do
        name="$(basename "$file")"
        while IFS= read -r marked; do
            line="${marked%%:*}"
            fragment="${marked#*expected error: }"
            expected=$((expected + 1))
            if ! grep -E "$name:$line:[0-9]+: error: " "$log" | grep -qF "$fragment"; then
                echo "check-compile-failures: $name:$line should be refused with \"$fragment\"; it was not" >&2
                status=1
            fi
        done < <(grep -n "// expected error: " "$file")
        # Errors on lines that are not marked.
        while IFS= read -r reported; do
            line="$(sed -E "s/.*$name:([0-9]+):.*/\1/" <<<"$reported")"
            if ! sed -n "${line}p" "$file" | grep -q "// expected error: "; then
                echo "check-compile-failures: unexpected error: $reported" >&2
                status=1
            fi
        done < <(grep -E "$name:[0-9]+:[0-9]+: error: " "$log" | sort -u)
    done < <(find "$target_dir" -name '*.swift')
    if [ "$status" -ne 0 ]; then
        echo "--- build output of $target ---" >&2
        cat "$log" >&2
        exit 1
    fi
done
echo "check-compile-failures: OK ($expected lines refused as expected)"
