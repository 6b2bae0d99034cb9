#!/usr/bin/env bash
# Lints every Swift file of Interlock and its benchmarks with the toolchain's swift-format
# (`swift format lint --strict`) and the configuration checked in at the root, .swift-format.
# Any finding fails the script. `make lint` runs it; `make test` (and so CI) runs `make lint` first.
# To fix layout findings: `swift format format --in-place --recursive --configuration .swift-format <paths>`,
# then read the diff.
#
# Layout (.swift-format): 4-space indentation; 120 columns for code (comments are wrapped by hand near
# 100; swift-format never reflows them, and reports a long line only where it could break it, so a
# long string literal is not a finding); `#if` bodies not indented and `case` aligned with `switch`,
# as the code is written; `private`, not `fileprivate`, at file scope.
#
# Rules: every rule swift-format has is on, the opt-in AllPublicDeclarationsHaveDocumentation (every
# public symbol has a doc comment), AlwaysUseLiteralForEmptyCollectionInit and OmitExplicitReturns
# included, except these, left off because they fight a deliberate idiom of this code:
#   NoLeadingUnderscores         `_`-prefixed `@usableFromInline internal` names (`_word`, `_MutexWord`)
#                                mark the implementation details that inlinable public code must reach,
#                                as in the standard library. (AlwaysUseLowerCamelCase stays on: it allows
#                                a leading underscore; `ilk_` names are C's, never declared in Swift.)
#   NeverForceUnwrap             `!` states a contract that failing would break: a C allocator or accessor
#       NeverUseForceTry         that never returns NULL for valid input, `offset(of:)` of a stored field,
#                                `baseAddress` of a non-empty buffer; in benchmarks, `try!` in the timed
#                                cycle (a throw there is a broken setup). Spelling each out as
#                                `guard ... else { fatalError }` would add code to inlinable hot paths
#                                without catching anything the trap does not.
#   DoNotUseSemicolons           short statement pairs on one line are a deliberate compact form:
#                                `{ let old = _name; _name = $0; return old }`, `{ lock(); unlock() }`.
#   OneVariableDeclarationPerLine  `let head = _head, tail = _tail` reads a snapshot together.
#   ValidateDocumentationComments  doc comments describe parameters in prose and use `- Parameter` for
#                                the one that needs it; the rule demands all or none, and a `Returns:`
#                                even where the summary line says what is returned.
#   BeginDocumentationCommentWithOneLineSummary  it wants a blank `///` line after the summary sentence;
#                                doc comments here run it straight into `- Returns:` (142 findings).
#   UseEarlyExits                it turns `if ... else { ...; return }` into `guard`, putting the
#                                failure path first where the code puts the expected path first.
#   UseWhereClausesInForLoops    a `for` whose body is one `if` often reads better as written.
#
# Exceptions in the code, each marked where it is: `// swift-format-ignore` keeps a hand-aligned
# layout the formatter would undo (column-aligned end-of-line comments, padding tuples laid out by
# rows), `// swift-format-ignore: NoBlockComments` keeps `/* NAME */` labels on C constants passed to
# syscall(2), and AtomicIntegerValue.swift's public `_` witnesses go without doc comments (they are
# not API).
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT="${SWIFT:-swift}"

paths=(
    Package.swift Sources Tests StressTests/Package.swift StressTests/Sources StressTests/Tests
    Benchmarks/Package.swift Benchmarks/Benchmarks Benchmarks/Sources Benchmarks/Tests
)
# Examples/ when present (the glob expands to nothing when it is not).
shopt -s nullglob
paths+=(Example[s])

# --parallel: a file per core. swift-format skips hidden directories, so an example's .build is never read.
"$SWIFT" format lint --strict --recursive --parallel --configuration .swift-format "${paths[@]}"
