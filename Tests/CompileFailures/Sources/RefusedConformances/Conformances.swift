// Each marked line must be refused with the quoted error (scripts/check-compile-failures.sh):
// conformance checks, which stop a module before region isolation runs (hence a target apart).

import Interlock

/// A mutable class that is not `Sendable`.
final class Scratch {
    var entries: [Int] = []
}

/// Readers share the value at once, so a `ReadWriteLocked` of a non-`Sendable` value is not
/// `Sendable`.
final class SharedReaders: Sendable {
    let table = ReadWriteLocked(Scratch())  // expected error: contains non-Sendable type 'Scratch'
}
