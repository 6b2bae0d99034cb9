#!/usr/bin/env bash
# What a package that depends on Interlock and uses only its library product gets, checked after
# building the example (Examples/JobQueue):
#   1. SwiftPM resolves Interlock alone: nothing is fetched, checked out or pinned. SwiftPM
#      (checked with 6.3.1, also with --experimental-prune-unused-dependencies) fetches, checks
#      out and pins every package a dependency declares, whichever products the dependent uses,
#      so Interlock's Package.swift declares none (its stress harness has its own command-line
#      parser and histogram). EXPECTED_REMOTE lists any it would declare again.
#   2. Nothing else is compiled: the only modules with object files are the example's,
#      Interlock's and CInterlock's (InterlockPostgres is not), and no package plugin was built
#      (.build/plugins/cache).
#   3. libpq is not linked: the example's executable does not need libpq.so (the product
#      InterlockPostgres alone needs it, and with 2. it was not compiled).
#   4. Contention profiling left no trace: without the trait ContentionProfiling no symbol of it
#      (ilk_contention_*, ContentionProfil*, _Contention*) is in the executable.
#   usage: check-example-deps.sh [EXAMPLE_DIR]     (default Examples/JobQueue; SWIFT picks swift)
set -euo pipefail
EXPECTED_REMOTE=""
EXPECTED_MODULES="JobQueue Interlock CInterlock"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
example="$(cd "${1:-$root/Examples/JobQueue}" && pwd)"
cd "$example"
"${SWIFT:-swift}" package show-dependencies --format json >.build/dependencies.json

python3 - "$root" "$example" "$EXPECTED_REMOTE" "$EXPECTED_MODULES" <<'PY'
import glob, json, os, re, sys
root, example = (os.path.realpath(p) for p in sys.argv[1:3])
expected_remote, expected_modules = set(sys.argv[3].split()), set(sys.argv[4].split())
tree = json.load(open(os.path.join(example, ".build/dependencies.json")))

resolved = {}   # identity -> "location@version" for every package below the example
def walk(node):
    for dep in node.get("dependencies", []):
        location = dep.get("url") or dep.get("path")
        identity = "Interlock" if os.path.realpath(dep.get("path") or "") == root else dep["identity"]
        resolved[identity] = f"{location}@{dep.get('version')}"
        walk(dep)
walk(tree)

problems = []
expected = expected_remote | {"Interlock"}
problems += [f"resolved, not expected: {name} ({resolved[name]})" for name in sorted(resolved.keys() - expected)]
problems += [f"expected, not resolved: {name} (update EXPECTED_REMOTE)" for name in sorted(expected - resolved.keys())]
pins = os.path.join(example, "Package.resolved")
pinned = {pin["identity"] for pin in json.load(open(pins))["pins"]} if os.path.exists(pins) else set()
problems += [f"pinned, not expected: {name}" for name in sorted(pinned - expected_remote)]

compiled = {os.path.basename(d)[:-len(".build")]
            for d in glob.glob(os.path.join(example, ".build/*/*.build")) if glob.glob(os.path.join(d, "*.o"))}
problems += [f"compiled, not expected: module {name}" for name in sorted(compiled - expected_modules)]
if not compiled:
    problems.append("no compiled module found: build the example first")
# SwiftPM compiles a plugin into .build/plugins/cache/NAME (with NAME.dia, NAME-state.json).
plugin_cache = os.path.join(example, ".build/plugins/cache")
plugins = {re.sub(r"(-state\.json|\.dia)$", "", name) for name in os.listdir(plugin_cache)} \
    if os.path.isdir(plugin_cache) else set()
problems += [f"compiled, not expected: plugin {name}" for name in sorted(plugins)]

import subprocess
for binary in glob.glob(os.path.join(example, ".build/debug/JobQueue")):
    needed = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
    if "libpq" in needed:
        problems.append(f"linked, not expected: libpq ({binary})")
    symbols = subprocess.run(["nm", binary], capture_output=True, text=True).stdout.split("\n")
    traces = [line.split()[-1] for line in symbols
              if re.search(r"ilk_contention|ContentionProfil|_Contention[A-Z]|CInterlockContention", line)]
    if traces:
        problems.append(f"contention profiling without its trait: {len(traces)} symbols, e.g. {traces[0]}")

if problems:
    print("check-example-deps: the example's dependencies changed:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print("check-example-deps: OK, resolved " + ", ".join(f"{n} ({resolved[n]})" for n in sorted(resolved))
      + "; compiled only " + ", ".join(sorted(compiled)) + ", no plugin, no libpq, no contention profiling")
PY
