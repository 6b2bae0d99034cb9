// OSAllocatedUnfairLock: Apple's lock-owning state container from the `os` module (iOS 16,
// macOS 13), with Apple's declarations, over this module's os_unfair_lock (UnfairLock.swift).
//
// Storage: one heap allocation, a ManagedBuffer whose header is the protected State and whose
// single element is the os_unfair_lock word. A class instance never moves, so the word has
// the stable address a futex lock needs; copies of the struct share the one allocation (the
// lock is a reference in a value's clothing, as Apple's is). The word is trivial, so the
// buffer's deinit has nothing to destroy but the header, which ManagedBuffer destroys itself.
//
// Memory ordering: all of it is os_unfair_lock's (UnfairLock.swift): lock acquires, unlock
// releases, so whatever a body does to the State happens-before the next body's reads.

/// A lock that protects a value of type `State`, allocated once so that its address is stable,
/// as Apple's `OSAllocatedUnfairLock` in the `os` module.
///
/// Copies share one lock and one state. The lock is not recursive: taking it again on the
/// thread that holds it traps ("os_unfair_lock: recursive lock attempt"), as does unlocking it
/// from a thread that does not hold it.
public struct OSAllocatedUnfairLock<State>: @unchecked Sendable {
    @usableFromInline internal let _buffer: ManagedBuffer<State, os_unfair_lock_s>

    /// Creates a lock protecting `initialState`, which need not be `Sendable`: the caller
    /// vouches that the state is not shared outside the lock.
    @inlinable
    public init(uncheckedState initialState: State) {
        _buffer = .create(minimumCapacity: 1) { _ in initialState }
        _buffer.withUnsafeMutablePointerToElements { $0.initialize(to: os_unfair_lock_s()) }
    }

    /// Runs `body` with the lock held and the state passed `inout`; `body` and its result need
    /// not be `Sendable`.
    @inlinable
    public func withLockUnchecked<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try _buffer.withUnsafeMutablePointers { state, lock in
            os_unfair_lock_lock(lock)
            defer { os_unfair_lock_unlock(lock) }
            return try body(&state.pointee)
        }
    }

    /// Runs `body` with the lock held and the state passed `inout`.
    @inlinable
    public func withLock<R: Sendable>(_ body: @Sendable (inout State) throws -> R) rethrows -> R {
        try withLockUnchecked(body)
    }

    /// Runs `body` with the lock held if the lock is free; returns `nil` without waiting when
    /// any thread holds it (the calling thread included). `body` need not be `Sendable`.
    @inlinable
    public func withLockIfAvailableUnchecked<R>(_ body: (inout State) throws -> R) rethrows -> R? {
        try _buffer.withUnsafeMutablePointers { state, lock in
            guard os_unfair_lock_trylock(lock) else { return nil }
            defer { os_unfair_lock_unlock(lock) }
            return try body(&state.pointee)
        }
    }

    /// Runs `body` with the lock held if the lock is free; returns `nil` without waiting when
    /// any thread holds it (the calling thread included).
    @inlinable
    public func withLockIfAvailable<R: Sendable>(_ body: @Sendable (inout State) throws -> R) rethrows -> R? {
        try withLockIfAvailableUnchecked(body)
    }

    /// ``withLockUnchecked(_:)-((State)->R)`` with Apple's lock flags (macOS 15, iOS 18); see
    /// ``OSAllocatedUnfairLockFlags`` for what they change here (nothing).
    @inlinable
    public func withLockUnchecked<R>(
        flags: OSAllocatedUnfairLockFlags, _ body: (inout State) throws -> R
    ) rethrows -> R {
        try withLockUnchecked(body)
    }

    /// ``withLock(_:)-((State)->R)`` with Apple's lock flags (macOS 15, iOS 18); see
    /// ``OSAllocatedUnfairLockFlags`` for what they change here (nothing).
    @inlinable
    public func withLock<R: Sendable>(
        flags: OSAllocatedUnfairLockFlags, _ body: @Sendable (inout State) throws -> R
    ) rethrows -> R {
        try withLockUnchecked(body)
    }

    /// Whether the calling thread holds the lock, for ``precondition(_:)``.
    @frozen
    public enum Ownership: Hashable, Sendable {
        /// The calling thread holds the lock.
        case owner
        /// The calling thread does not hold the lock (it is free or another thread holds it).
        case notOwner
    }

    /// Traps, with a message naming `OSAllocatedUnfairLock` and the condition, unless the
    /// calling thread's ownership of the lock is `condition`. Checked in every build.
    @inlinable
    public func precondition(_ condition: Ownership) {
        _buffer.withUnsafeMutablePointerToElements { lock in
            switch condition {
            case .owner:
                if !_unfairIsOwner(lock) {
                    _unfairTrap(
                        "OSAllocatedUnfairLock: precondition(.owner) failed: lock not owned by the current thread")
                }
            case .notOwner:
                if _unfairIsOwner(lock) {
                    _unfairTrap(
                        "OSAllocatedUnfairLock: precondition(.notOwner) failed: lock owned by the current thread")
                }
            }
        }
    }
}

extension OSAllocatedUnfairLock where State: Sendable {
    /// Creates a lock protecting `initialState`.
    @inlinable
    public init(initialState: State) {
        self.init(uncheckedState: initialState)
    }
}

extension OSAllocatedUnfairLock where State == () {
    /// Creates a lock that protects no state: use ``lock()`` and ``unlock()`` or the
    /// closure forms around the code it guards.
    @inlinable
    public init() {
        self.init(uncheckedState: ())
    }

    /// Blocks until the calling thread holds the lock.
    @inlinable
    public func lock() {
        _buffer.withUnsafeMutablePointerToElements { os_unfair_lock_lock($0) }
    }

    /// ``lock()`` with Apple's lock flags (macOS 15, iOS 18), which change nothing here.
    @inlinable
    public func lock(flags: OSAllocatedUnfairLockFlags) {
        lock()
    }

    /// ``withLockUnchecked(_:)-(()->R)`` with Apple's lock flags, which change nothing here.
    @inlinable
    public func withLockUnchecked<R>(flags: OSAllocatedUnfairLockFlags, _ body: () throws -> R) rethrows -> R {
        try withLockUnchecked(body)
    }

    /// ``withLock(_:)-(()->R)`` with Apple's lock flags, which change nothing here.
    @inlinable
    public func withLock<R: Sendable>(flags: OSAllocatedUnfairLockFlags, _ body: @Sendable () throws -> R) rethrows -> R
    {
        try withLockUnchecked(body)
    }

    /// Takes the lock if it is free, without waiting.
    /// - Returns: `true` when the calling thread now holds it.
    @inlinable
    public func lockIfAvailable() -> Bool {
        _buffer.withUnsafeMutablePointerToElements { os_unfair_lock_trylock($0) }
    }

    /// Releases the lock, which the calling thread must hold (else traps).
    @inlinable
    public func unlock() {
        _buffer.withUnsafeMutablePointerToElements { os_unfair_lock_unlock($0) }
    }

    /// Runs `body` with the lock held; `body` and its result need not be `Sendable`.
    @inlinable
    public func withLockUnchecked<R>(_ body: () throws -> R) rethrows -> R {
        try withLockUnchecked { (_: inout ()) in try body() }
    }

    /// Runs `body` with the lock held.
    @inlinable
    public func withLock<R: Sendable>(_ body: @Sendable () throws -> R) rethrows -> R {
        try withLockUnchecked { (_: inout ()) in try body() }
    }

    /// Runs `body` with the lock held if it is free; `nil` without waiting otherwise. `body`
    /// need not be `Sendable`.
    @inlinable
    public func withLockIfAvailableUnchecked<R>(_ body: () throws -> R) rethrows -> R? {
        try withLockIfAvailableUnchecked { (_: inout ()) in try body() }
    }

    /// Runs `body` with the lock held if it is free; `nil` without waiting otherwise.
    @inlinable
    public func withLockIfAvailable<R: Sendable>(_ body: @Sendable () throws -> R) rethrows -> R? {
        try withLockIfAvailableUnchecked { (_: inout ()) in try body() }
    }
}

/// Options for taking an ``OSAllocatedUnfairLock`` (Apple's, macOS 15, iOS 18).
///
/// Accepted for source compatibility and ignored: this lock always spins briefly before it
/// parks in the kernel, which is what Apple's `adaptiveSpin` asks for.
public struct OSAllocatedUnfairLockFlags: OptionSet, Sendable {
    /// The flags' bits.
    public let rawValue: UInt32

    /// Flags from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Spin briefly before blocking while the holder runs (what this lock always does).
    public static let adaptiveSpin = OSAllocatedUnfairLockFlags(rawValue: 1 << 0)
}
