// A toy request handler with the classic mistake: every request takes the one cache lock, and
// holds it while it builds the value it did not find; every 5,000th request also compacts the
// cache under the lock, which takes 25 ms. A pool of 2 database connections and a statistics
// lock complete the picture.
//
//   INTERLOCK_CONTENTION=1 INTERLOCK_CONTENTION_REPORT=- swift run -c release ContentionProfile
//
// prints which lock the 4 worker threads waited on, from where, and for how long.
import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The shared state of the handlers.
final class Service: @unchecked Sendable {
    let cacheLock = Lock()
    let statsLock = ReadWriteLock()
    let connections = Semaphore(value: 2)
    let jobs = BoundedChannel<Int>(capacity: 8)
    // Guarded by cacheLock.
    var cache: [Int: Int] = [:]
    // Guarded by statsLock.
    var served = 0

    init() { cacheLock.name = "cache" }

    /// Looks `key` up; builds and stores it while still holding the lock (the mistake).
    @inline(never)
    func lookup(_ key: Int) -> Int {
        cacheLock.lock()
        defer { cacheLock.unlock() }
        if let value = cache[key] { return value }
        let value = build(key)
        cache[key] = value
        if cache.count > 64 { cache.removeAll(keepingCapacity: true) }
        return value
    }

    @inline(never)
    func build(_ key: Int) -> Int {
        var value = key
        for _ in 0..<20_000 { value = value &* 6_364_136_223_846_793_005 &+ 1 }
        return value
    }

    /// Runs a query on one of the two connections.
    @inline(never)
    func query(_ key: Int) -> Int {
        connections.wait()
        defer { connections.signal() }
        return build(key &+ 1)
    }

    @inline(never)
    func record() {
        statsLock.lockWrite()
        served += 1
        statsLock.unlockWrite()
    }

    /// Rewrites the cache: slow (25 ms), and done holding the lock (the second mistake).
    @inline(never)
    func compact() {
        cacheLock.lock()
        defer { cacheLock.unlock() }
        var pause = timespec(tv_sec: 0, tv_nsec: 25_000_000)
        nanosleep(&pause, nil)
        cache.removeAll(keepingCapacity: true)
    }

    @inline(never)
    func handle(_ request: Int) -> Int {
        if request % 5_000 == 4_999 { compact() }
        let a = lookup(request % 200)
        let b = request % 4 == 0 ? query(request) : 0
        record()
        return a &+ b
    }
}

/// The program: 4 worker threads serve 20,000 requests taken from a channel. Not main-actor
/// code (a static method), so that the threads may run it.
enum App {
    static let service = Service()

    static func run() throws {
        var threads: [pthread_t] = []
        for _ in 0..<4 {
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { _ in App.work() }, nil)
            precondition(created == 0, "pthread_create failed: \(created)")
            threads.append(thread)
        }
        for request in 0..<20_000 { try service.jobs.send(request) }
        service.jobs.close()
        for thread in threads { pthread_join(thread, nil) }
        let state = ContentionProfiling.isEnabled ? "on" : "off"
        print("served \(service.served) requests; contention profiling is \(state)")
    }

    static func work() -> UnsafeMutableRawPointer? {
        var sum = 0
        while let request = service.jobs.receive() { sum &+= service.handle(request) }
        return UnsafeMutableRawPointer(bitPattern: sum | 1)
    }
}

try App.run()
