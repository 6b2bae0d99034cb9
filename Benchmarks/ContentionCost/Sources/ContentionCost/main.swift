// The workloads of scripts/contention-cost.sh: each prints one line
//   name wall_ns_per_op cpu_ns_per_op recorded_waits operations
// (recorded_waits: the contended waits the profile recorded, -1 in a build without the trait).
//
//   lock-free      1 thread, Lock lock+unlock: the uncontended path
//   lock-2, lock-4 2 and 4 threads incrementing one counter under one Lock
//   handoff        2 threads passing a turn through two Semaphores (every wait sleeps or spins)
//   rwlock-4       4 threads on one ReadWriteLock, 1 write in 20
import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Process CPU time, nanoseconds.
func cpuNow() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// Runs `body(index)` on `count` threads started together; returns when all have finished.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let gate = WaitGroup()
    gate.enter()
    var threads: [pthread_t] = []
    for index in 0..<count {
        let box = Unmanaged.passRetained(BoxedIndex(index, gate, body)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { raw in
                let boxed = Unmanaged<BoxedIndex>.fromOpaque(raw!).takeRetainedValue()
                boxed.gate.wait()
                boxed.body(boxed.index)
                return nil
            }, box)
        precondition(created == 0, "pthread_create: \(created)")
        threads.append(thread)
    }
    gate.leave()
    for thread in threads { pthread_join(thread, nil) }
}

/// What a started thread runs: its index, the start gate and the body.
final class BoxedIndex: @unchecked Sendable {
    let index: Int
    let gate: WaitGroup
    let body: @Sendable (Int) -> Void
    init(_ index: Int, _ gate: WaitGroup, _ body: @escaping @Sendable (Int) -> Void) {
        self.index = index
        self.gate = gate
        self.body = body
    }
}

final class Counter: @unchecked Sendable {
    let lock = Lock()
    let rw = ReadWriteLock()
    let ping = Semaphore(value: 0)
    let pong = Semaphore(value: 0)
    var value = 0
}

func recordedWaits() -> Int {
    #if INTERLOCK_CONTENTION
    let profile = ContentionProfiling.snapshot()
    ContentionProfiling.reset()
    return profile.sites.reduce(0) { $0 + $1.contendedAcquisitions }
    #else
    return -1
    #endif
}

func measure(_ name: String, operations: Int, _ body: () -> Void) {
    _ = recordedWaits()
    let wall0 = ContinuousClock.now
    let cpu0 = cpuNow()
    body()
    let cpu = cpuNow() - cpu0
    let wall = ContinuousClock.now - wall0
    let wallNs = Double(wall.components.seconds) * 1e9 + Double(wall.components.attoseconds) / 1e9
    let waits = recordedWaits()
    print(name, wallNs / Double(operations), Double(cpu) / Double(operations), waits, operations)
}

let only = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : nil
func selected(_ name: String) -> Bool { only == nil || only == name }

if selected("lock-free") {
    let counter = Counter()
    let operations = 20_000_000
    measure("lock-free", operations: operations) {
        for _ in 0..<operations {
            counter.lock.lock()
            counter.value &+= 1
            counter.lock.unlock()
        }
    }
}
for threads in [2, 4] where selected("lock-\(threads)") {
    let counter = Counter()
    let each = 4_000_000 / threads
    measure("lock-\(threads)", operations: each * threads) {
        onThreads(threads) { _ in
            for _ in 0..<each {
                counter.lock.lock()
                counter.value &+= 1
                counter.lock.unlock()
            }
        }
    }
}
if selected("handoff") {
    let counter = Counter()
    let rounds = 200_000
    measure("handoff", operations: rounds * 2) {
        onThreads(2) { index in
            for _ in 0..<rounds {
                if index == 0 {
                    counter.ping.signal()
                    counter.pong.wait()
                } else {
                    counter.ping.wait()
                    counter.pong.signal()
                }
            }
        }
    }
}
if selected("rwlock-4") {
    let counter = Counter()
    let each = 1_000_000
    measure("rwlock-4", operations: each * 4) {
        onThreads(4) { index in
            var seen = 0
            for i in 0..<each {
                if (i &+ index) % 20 == 0 {
                    counter.rw.lockWrite()
                    counter.value &+= 1
                    counter.rw.unlockWrite()
                } else {
                    counter.rw.lockRead()
                    seen &+= counter.value
                    counter.rw.unlockRead()
                }
            }
            if seen == -1 { print(seen) }
        }
    }
}
