#!/usr/bin/env bash
# Builds the documentation catalogs (Sources/Interlock/Interlock.docc,
# Sources/InterlockPostgres/InterlockPostgres.docc and
# Sources/InterlockCompat/InterlockCompat.docc) into .build-docs/MODULE.doccarchive with the
# toolchain's own docc, warnings as errors, so that a symbol link that does not resolve, in an
# article or in a doc comment, fails the build.
#
# Why not swift-docc-plugin: as a package dependency it would be resolved by every user of the
# library. Instead the compiler emits the module's symbol graph while it builds the module's
# target (in a scratch path of its own, so the test builds are not disturbed), and `docc convert`
# reads it. Two checks follow that docc does not make on its own: every public symbol has a doc
# comment, and the landing page curates every top-level symbol (docc files forgotten ones under
# automatic groups without a warning).
#
#   SWIFT=/path/to/swift   the toolchain (default: swift on PATH)
#   DOCC=/path/to/docc     docc itself (default: the one next to swift, else docc on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SWIFT=${SWIFT:-swift}
scratch=.build-docs

find_docc() {
    if [ -n "${DOCC:-}" ]; then echo "$DOCC"; return; fi
    local swift_path
    swift_path="$(command -v "$SWIFT" || true)"
    if [ -n "$swift_path" ] && [ -x "$(dirname "$(readlink -f "$swift_path")")/docc" ]; then
        echo "$(dirname "$(readlink -f "$swift_path")")/docc"
        return
    fi
    command -v docc && return
    echo "build-docs: no docc next to $SWIFT or on PATH; set DOCC=/path/to/docc" >&2
    return 1
}
docc="$(find_docc)"

# With the trait ContentionProfiling: its API (ContentionProfiling, ContentionProfile) exists only
# in such builds, and is documented with the rest.
build_symbol_graph() { # module symbols-dir
    mkdir -p "$2"
    "$SWIFT" build --scratch-path "$scratch" --target "$1" --traits ContentionProfiling \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$2"
}

# A module that re-exports another (`@_exported import Interlock` in InterlockCompat) gets the
# other's symbols in its own graph; docc would document them twice and the curation check would
# ask the landing page to curate them. They are documented in their own module's archive, so
# drop every symbol declared outside Sources/MODULE, the members of dropped symbols (synthesized
# ones have no location) and the relationships that name a dropped symbol.
drop_reexported_symbols() { # module symbols-dir
    command -v python3 >/dev/null 2>&1 || return 0
    python3 - "$1" "$2" <<'PY'
import glob, json, os, sys

module, symbols_dir = sys.argv[1], sys.argv[2]
for path in glob.glob(os.path.join(symbols_dir, f"{module}*.symbols.json")):
    with open(path) as f:
        graph = json.load(f)
    dropped = set()
    for symbol in graph.get("symbols", []):
        uri = symbol.get("location", {}).get("uri", "")
        if "/Sources/" in uri and f"/Sources/{module}/" not in uri:
            dropped.add(symbol["identifier"]["precise"])
    changed = True
    while changed:
        changed = False
        for relationship in graph.get("relationships", []):
            if (relationship["kind"] == "memberOf" and relationship["target"] in dropped
                    and relationship["source"] not in dropped):
                dropped.add(relationship["source"])
                changed = True
    if not dropped:
        continue
    graph["symbols"] = [s for s in graph["symbols"] if s["identifier"]["precise"] not in dropped]
    graph["relationships"] = [r for r in graph.get("relationships", [])
                              if r["source"] not in dropped and r["target"] not in dropped]
    with open(path, "w") as f:
        json.dump(graph, f)
PY
}

build_module_docs() { # module
    local module="$1"
    local symbols="$PWD/$scratch/symbol-graphs/$module"
    local archive="$scratch/$module.doccarchive"
    local catalog="Sources/$module/$module.docc"
    build_symbol_graph "$module" "$symbols"
    # The compiler writes the graph only when it compiles the module, so a build that is up to
    # date while the graph was deleted writes none: start that scratch path afresh once.
    if [ ! -f "$symbols/$module.symbols.json" ]; then
        rm -rf "$scratch"
        build_symbol_graph "$module" "$symbols"
    fi
    # Only the module's own graph: a dependency's symbols are documented in its own archive.
    find "$symbols" -name '*.symbols.json' ! -name "$module.symbols.json" ! -name "$module@*.symbols.json" -delete
    drop_reexported_symbols "$module" "$symbols"

    rm -rf "$archive"
    "$docc" convert "$catalog" \
        --additional-symbol-graph-dir "$symbols" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.interlock.$module" \
        --output-path "$archive" \
        --warnings-as-errors

    if ! command -v python3 >/dev/null 2>&1; then
        echo "build-docs: python3 not found; skipped the doc-comment and curation checks" >&2
        return 0
    fi
    python3 - "$module" "$symbols" "$archive" <<'PY'
import glob, json, os, sys

module, symbols_dir, archive = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []

# Every public symbol declared in the module has a doc comment of its own. Synthesized members
# (protocol extension methods shown on each conforming type) and SPI symbols are left out.
for path in sorted(glob.glob(os.path.join(symbols_dir, f"{module}*.symbols.json"))):
    with open(path) as f:
        graph = json.load(f)
    for symbol in graph.get("symbols", []):
        if "::SYNTHESIZED::" in symbol["identifier"]["precise"] or symbol.get("spi"):
            continue
        if not symbol.get("docComment", {}).get("lines"):
            name = "/".join(symbol["pathComponents"])
            failures.append(f"{name}: public symbol without a doc comment")

# The landing page curates every top-level symbol: a generated topic group lists forgotten ones.
with open(os.path.join(archive, "data", "documentation", f"{module.lower()}.json")) as f:
    landing = json.load(f)
for section in landing.get("topicSections", []):
    if section.get("generated"):
        for identifier in section.get("identifiers", []):
            failures.append(f"{identifier}: not curated in {module}.docc/{module}.md "
                            f"(listed under the automatic group '{section.get('title')}')")

for failure in failures:
    print(f"build-docs: error: {failure}", file=sys.stderr)
sys.exit(1 if failures else 0)
PY
    echo "build-docs: $archive"
}

for module in Interlock InterlockPostgres InterlockCompat; do build_module_docs "$module"; done
