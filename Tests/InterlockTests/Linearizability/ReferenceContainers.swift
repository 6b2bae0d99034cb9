// Reference containers: a stack and a queue behind one mutex. Every operation runs entirely
// inside the critical section, so the mutex's acquisition order is a linearization: their
// histories must always pass the checker. They prove that the harness and the checker accept
// correct objects (no false alarms), independently of the lock-free types.
//
// The mutex is a pthread mutex, not one of Interlock's locks, so that these tests rely on
// nothing they might be testing. (Not `Synchronization.Mutex` either: on Linux it is built on
// raw futexes that ThreadSanitizer cannot see, so TSan reports its critical sections as
// races; pthread_mutex_lock is intercepted by TSan.)

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex guarding a value, at a stable address.
private final class PthreadGuarded<Value>: @unchecked Sendable {
    // SAFETY: the mutex lives in its own allocation (pthread mutexes must not move) and
    // `value` is only touched between lock and unlock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "PthreadGuarded: pthread_mutex_init failed with error \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        let rc = pthread_mutex_lock(mutex)
        precondition(rc == 0, "PthreadGuarded: pthread_mutex_lock failed with error \(rc)")
        defer { pthread_mutex_unlock(mutex) }
        return body(&value)
    }
}

/// A LIFO stack of `Int` guarded by one mutex.
final class MutexStack: ContainerUnderTest {
    private let elements = PthreadGuarded<[Int]>([])

    init() {}

    func insert(_ value: Int) { elements.withLock { $0.append(value) } }
    func remove() -> Int? { elements.withLock { $0.popLast() } }
    var isEmpty: Bool { elements.withLock { $0.isEmpty } }
}

/// A FIFO queue of `Int` guarded by one mutex (histories are a dozen operations long, so
/// `removeFirst` on an array costs nothing here).
final class MutexQueue: ContainerUnderTest {
    private let elements = PthreadGuarded<[Int]>([])

    init() {}

    func insert(_ value: Int) { elements.withLock { $0.append(value) } }
    func remove() -> Int? { elements.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
    var isEmpty: Bool { elements.withLock { $0.isEmpty } }
}
