// The contenders of the run-once benchmarks. Each body does the same work (`initialWork`);
// every contender's token is its own allocation.

import Atomics
import Benchmark
import Interlock
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A few dozen multiply-adds the optimizer cannot remove: the initialiser's work.
@inline(never) func initialWork(_ seed: Int) -> Int {
    var x = seed
    for _ in 0..<32 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    return x
}

/// A run-once token, as each peer spells it.
protocol OnceContender: AnyObject, Sendable {
    static var contenderName: String { get }
    /// Whether a fresh token can be made per round (false: a process-wide global).
    static var canRace: Bool { get }
    init()
    func call()
}

/// A lazily stored reference, as each peer spells it.
protocol LazyReferenceContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func get() -> Payload
}

final class Payload: Sendable {
    let value: Int
    init(_ value: Int) { self.value = value }
}

/// Fresh tokens for each timed round, made untimed by `renew()` on the benchmark's thread
/// (the team's threads read them only after the round starts, which orders the writes).
final class Tokens<Token: AnyObject & Sendable>: @unchecked Sendable {
    var current: [Token] = []
    let make: () -> Token
    init() where Token: OnceContender { make = { Token() } }
    init() where Token: LazyReferenceContender { make = { Token() } }
    func renew() { current = (0..<operations).map { _ in make() } }
}

final class InterlockOnce: OnceContender, @unchecked Sendable {
    static var contenderName: String { "Interlock Once" }
    static var canRace: Bool { true }
    let once = Once()
    var result = 0
    @inline(__always) func call() { once.run { result = initialWork(1) } }
}

final class InterlockLazy: OnceContender, @unchecked Sendable {
    static var contenderName: String { "Interlock Lazy" }
    static var canRace: Bool { true }
    let lazy = Lazy { initialWork(1) }
    @inline(__always) func call() { blackHole(lazy.value) }
}

/// pthread_once's routine takes no argument: it writes a process-wide sink.
nonisolated(unsafe) var pthreadOnceSink = 0
let pthreadOnceRoutine: @convention(c) () -> Void = { pthreadOnceSink = initialWork(1) }

final class PthreadOnce: OnceContender, @unchecked Sendable {
    static var contenderName: String { "pthread_once" }
    static var canRace: Bool { true }
    let token: UnsafeMutablePointer<pthread_once_t>
    init() {
        token = .allocate(capacity: 1)
        token.initialize(to: pthread_once_t())  // PTHREAD_ONCE_INIT is zero on glibc
    }
    deinit { token.deallocate() }
    @inline(__always) func call() { pthread_once(token, pthreadOnceRoutine) }
}

/// A Swift global initialised on first use (swift_once).
let lazyGlobal = initialWork(1)

final class SwiftLazyGlobal: OnceContender, @unchecked Sendable {
    static var contenderName: String { "Swift lazy global" }
    static var canRace: Bool { false }
    @inline(__always) func call() { blackHole(lazyGlobal) }
}

final class MutexOptional: OnceContender, @unchecked Sendable {
    static var contenderName: String { "Synchronization.Mutex<Int?>" }
    static var canRace: Bool { true }
    let value = Mutex<Int?>(nil)
    @inline(__always) func call() {
        blackHole(
            value.withLock { stored -> Int in
                if let stored { return stored }
                let made = initialWork(1)
                stored = made
                return made
            })
    }
}

final class InterlockAtomicLazyReference: LazyReferenceContender, @unchecked Sendable {
    static var contenderName: String { "Interlock AtomicLazyReference" }
    let reference = Interlock.AtomicLazyReference<Payload>()
    @inline(__always) func get() -> Payload {
        reference.load() ?? reference.storeIfNil(Payload(initialWork(1)))
    }
}

final class SwiftAtomicsLazyReference: LazyReferenceContender, @unchecked Sendable {
    static var contenderName: String { "swift-atomics ManagedAtomicLazyReference" }
    let reference = ManagedAtomicLazyReference<Payload>()
    @inline(__always) func get() -> Payload {
        reference.load() ?? reference.storeIfNilThenLoad(Payload(initialWork(1)))
    }
}

/// The standard library's own (Synchronization, Swift 6), a noncopyable value kept in the object.
final class StandardLibraryLazyReference: LazyReferenceContender, @unchecked Sendable {
    static var contenderName: String { "Synchronization.AtomicLazyReference" }
    let reference = Synchronization.AtomicLazyReference<Payload>()
    @inline(__always) func get() -> Payload {
        reference.load() ?? reference.storeIfNil(Payload(initialWork(1)))
    }
}
