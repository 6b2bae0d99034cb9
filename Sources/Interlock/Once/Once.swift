// Once: run a body exactly once, whichever thread calls first — the heir of dispatch_once and
// pthread_once.
//
// Algorithm: `_OnceWord` (OnceWord.swift) — a four-state futex word (NEW, RUNNING, SLEEPERS,
// DONE): the first caller takes NEW -> RUNNING with a CAS and runs the body; concurrent callers
// sleep on the word until the runner's release exchange to DONE wakes them; a body that throws
// puts the word back to NEW and wakes the sleepers, one of which runs it again. That file holds
// the state table, the invariants and the argument for each memory ordering; this one is the
// public face.
//
// Layout: the object's one stored property, in its one heap allocation at a stable address:
//
//   _words.0   the state word: 0 NEW, 1 RUNNING, 2 RUNNING and maybe sleepers, 3 DONE
//   _words.1   the id of the thread running the body, 0 when none (the recursion check)
//
// The words are reached through `_getUnsafePointerToStoredProperties` and C11 atomics only;
// Swift never loads or stores `_words` as a property after `init`.
//
// Costs: once the body has completed, `run(_:)` is one inline acquire load and a compare (a
// plain MOV on x86-64, LDAR on aarch64), and no call.

import CInterlock

/// Runs a body exactly once, on the first call: the heir of `dispatch_once` and `pthread_once`.
///
/// The first thread to call ``run(_:)`` runs the body; threads that call while it runs sleep in
/// the kernel (a futex) until it finishes, then return; every later call returns at once, at
/// the cost of one atomic load. Everything the body wrote is visible to every caller once its
/// call returns.
///
/// ```swift
/// let setUp = Once()
/// func ensureTables() { setUp.run { buildTables() } }
/// ```
///
/// A body that throws does not count: its error reaches the caller that ran it, and the next
/// call (or one of the callers that were waiting) runs the body again.
///
/// - Note: Unlike `dispatch_once`, the object need not live in static or global storage: it
///   is an ordinary object, shared by reference.
/// - Warning: Calling ``run(_:)`` from inside the body, on the thread that runs it, traps with
///   a message ("Once: run(_:) called recursively from its own body") instead of waiting for
///   itself forever. A body that waits for another thread that calls ``run(_:)`` on the same
///   object deadlocks; that is not detected.
public final class Once: @unchecked Sendable {
    // Reached only through `_word` (see the file comment).
    @usableFromInline internal var _words: (UInt32, UInt32) = (0, 0)

    /// Creates an object whose body has not run yet.
    public init() {}

    @inlinable @inline(__always)
    internal var _word: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_words` is the first and only stored property of this final class and a
        // homogeneous tuple (laid out as an array); objects never move, and `self` is alive
        // for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }

    /// Runs `body` if no call has completed it yet; otherwise returns at once.
    ///
    /// The first caller runs `body` on its own thread. Callers that arrive while it runs wait
    /// (asleep) until it finishes; when it completes, they return without running it, and
    /// everything `body` wrote is visible to them. When `body` throws, its error is rethrown
    /// to the caller that ran it, the object is left as if never run, and one of the waiting
    /// callers (or the next caller) runs `body` — its own — again.
    ///
    /// - Parameter body: The work to do once. Each caller passes its own; only the one that
    ///   completes counts.
    /// - Throws: What `body` threw, only to the caller whose `body` ran and threw.
    /// - Warning: Calling `run(_:)` on the same object from inside `body`, on the thread that
    ///   runs it, traps with the message "Once: run(_:) called recursively from its own body".
    @inlinable @inline(__always)
    public func run(_ body: () throws -> Void) rethrows {
        if _fastPath(_OnceWord.isDone(_word)) { return }
        try _OnceWord.runSlow(_word, for: .once, body)
    }

    /// Whether a call's body has completed (without throwing).
    ///
    /// When this returns `true`, everything the body wrote is visible to the caller (the read is
    /// an acquire). `false` is a snapshot: a body may be running or about to run.
    @inlinable
    public var isDone: Bool {
        _OnceWord.isDone(_word)
    }
}
