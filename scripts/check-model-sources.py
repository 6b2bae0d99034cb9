#!/usr/bin/env python3
"""Checks that the code each spin model mirrors has not changed since the model was compared
with it.

Each model in Verification/Models/ names what it mirrors in its header:

    * @mirrors Sources/Interlock/Locks/MutexWord.swift: tryLock _lockSlow _lockParking
    * @mirrors CShims/include/ilk_mutex.h: ilk_mutex_release_builtin
    * @sha256 3f2a9c0d1e4b5a67

The functions are extracted from the named files (from the line that declares `func NAME` in
Swift, or `NAME(` in C, to the brace that closes its body; every function of that name in the
file, in order) and hashed together (SHA-256 of the texts, whitespace at line ends stripped;
the first 16 hex digits). When the hash differs from the recorded one, the model may no longer
describe the code: this script fails, naming the model, the functions and the new hash. Re-read
the model against the code, change it if the protocol changed, then record the new hash
(`--update` writes every current hash into its model; use it only after that review).
"""
import hashlib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "Verification" / "Models"


def extract(path: pathlib.Path, name: str) -> list[str]:
    """Every definition of function `name` in `path`, as text."""
    lines = path.read_text().splitlines()
    if path.suffix == ".swift":
        start_re = re.compile(r"\bfunc\s+" + re.escape(name) + r"\s*[(<]")
    else:
        start_re = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    bodies = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if start_re.search(line) and not line.rstrip().endswith(";") and not line.lstrip().startswith(("//", "*", "/*")):
            depth = 0
            opened = False
            body = []
            j = i
            while j < len(lines):
                text = lines[j]
                # A declaration (a prototype over several lines) ends with ';' before any '{'.
                if not opened and ";" in text.split("{")[0]:
                    break
                body.append(text.rstrip())
                depth += text.count("{") - text.count("}")
                if "{" in text:
                    opened = True
                if opened and depth <= 0:
                    break
                j += 1
            if opened:
                bodies.append("\n".join(body))
                i = j
        i += 1
    return bodies


def model_hash(model: pathlib.Path) -> tuple[str, str | None, list[str]]:
    text = model.read_text()
    recorded = re.search(r"@sha256\s+([0-9a-f]+)", text)
    digest = hashlib.sha256()
    problems = []
    mirrors = re.findall(r"@mirrors\s+(\S+):\s*(.+)", text)
    if not mirrors:
        problems.append(f"{model.name}: no @mirrors line")
    for relpath, names in mirrors:
        source = ROOT / relpath
        if not source.exists():
            problems.append(f"{model.name}: mirrors {relpath}, which does not exist")
            continue
        for name in names.split():
            bodies = extract(source, name)
            if not bodies:
                problems.append(f"{model.name}: mirrors {relpath}: {name}, which is not defined there")
            for body in bodies:
                digest.update(f"{relpath}:{name}\n{body}\n".encode())
    return digest.hexdigest()[:16], recorded.group(1) if recorded else None, problems


def main() -> int:
    update = "--update" in sys.argv[1:]
    failed = False
    for model in sorted(MODELS.glob("*.pml")):
        if model.name == "futex.pml":
            continue
        current, recorded, problems = model_hash(model)
        for problem in problems:
            print(f"check-model-sources: {problem}", file=sys.stderr)
            failed = True
        if update and current != recorded:
            text = model.read_text()
            model.write_text(re.sub(r"@sha256\s+[0-9a-f]+", f"@sha256 {current}", text, count=1))
            print(f"check-model-sources: {model.name}: recorded {current}")
        elif current != recorded:
            print(
                f"check-model-sources: {model.name}: the code it mirrors changed (hash {current}, "
                f"model records {recorded}). Re-read the model against that code, update it if the "
                f"protocol changed, then record the new hash (scripts/check-model-sources.py --update).",
                file=sys.stderr,
            )
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
