// Each marked line must be refused with the quoted error (scripts/check-compile-failures.sh):
// what `sending` checks, found by region isolation once the module type-checks.

import Interlock

/// A mutable class that is not `Sendable`.
final class Scratch {
    var entries: [Int] = []
}

// Not here: returning the protected value itself (`locked.withLock { $0 }` for a non-Sendable
// value) compiles with Swift 6.3, as it does with `Synchronization.Mutex`: region isolation does
// not yet see that the `sending` result and the `inout sending` value are one object. The DocC
// article "Protecting State" says so.

/// An object the caller still refers to cannot be stored into the lock.
func storeAShared(_ locked: Locked<Scratch>) {
    let shared = Scratch()
    locked.withLock { $0 = shared }  // expected error: cannot be task-isolated at end of function
    shared.entries.append(1)
}

/// Control: the same class around a `Locked` of the same value is `Sendable`.
final class OwnedState: Sendable {
    let table = Locked(Scratch())
}
