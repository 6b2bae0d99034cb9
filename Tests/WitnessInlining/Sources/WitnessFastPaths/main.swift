// Each primitive's fast path inside a protocol witness (`Critical.step()`), called through
// `any Critical` so that the witnesses are what runs. Every `step()` is `@inline(__always)`, so
// that its body is inlined into the witness thunk, as the optimizer does on its own for a small
// method (the benchmark runner's contenders): there, IRGen marks the calls noinline. scripts/check-witness-inlining.sh reads
// the disassembly of every witness here; running the program only checks that it works.

import Interlock

/// A critical section taken through a protocol, as generic code or an existential would.
protocol Critical: AnyObject {
    /// Takes the primitive, changes the count, releases it.
    func step()
    /// The count.
    var count: Int { get }
}

final class WithLock: Critical {
    let lock = Lock()
    var count = 0
    @inline(__always) func step() {
        lock.lock()
        count += 1
        lock.unlock()
    }
}

final class WithSpinLock: Critical {
    let lock = SpinLock()
    var count = 0
    @inline(__always) func step() {
        lock.lock()
        count += 1
        lock.unlock()
    }
}

final class WithRecursiveLock: Critical {
    let lock = RecursiveLock()
    var count = 0
    @inline(__always) func step() {
        lock.lock()
        count += 1
        lock.unlock()
    }
}

final class WithReadLock: Critical {
    let lock = ReadWriteLock()
    var count = 0
    @inline(__always) func step() {
        lock.lockRead()
        count += 1  // one thread: the read lock stands for the section here
        lock.unlockRead()
    }
}

final class WithWriteLock: Critical {
    let lock = ReadWriteLock()
    var count = 0
    @inline(__always) func step() {
        lock.lockWrite()
        count += 1
        lock.unlockWrite()
    }
}

final class WithLocked: Critical {
    let value = Locked(0)
    var count: Int { value.withLock { $0 } }
    @inline(__always) func step() { value.withLock { $0 += 1 } }
}

final class WithReadWriteLocked: Critical {
    let value = ReadWriteLocked(0)
    var count: Int { value.withReadLock { $0 } }
    @inline(__always) func step() { value.withWriteLock { $0 += 1 } }
}

final class WithSemaphore: Critical {
    let semaphore = Semaphore(value: 1)
    var count = 0
    @inline(__always) func step() {
        semaphore.wait()
        count += 1
        semaphore.signal()
    }
}

final class WithConditionLock: Critical {
    let lock = ConditionLock(condition: 0)
    var count = 0
    @inline(__always) func step() {
        lock.lock()
        count += 1
        lock.unlock()
    }
}

final class WithCondition: Critical {
    let condition = Condition()
    var count = 0
    @inline(__always) func step() {
        condition.lock()
        count += 1
        condition.unlock()
    }
}

final class WithWaitGroup: Critical {
    let group = WaitGroup()
    var count = 0
    @inline(__always) func step() {
        group.enter()
        count += 1
        group.leave()
        group.wait()
    }
}

final class WithChannel: Critical {
    let channel = BoundedChannel<Int>(capacity: 4)
    var count = 0
    @inline(__always) func step() {
        try? channel.send(1)
        count += channel.receive() ?? 0
    }
}

let all: [any Critical] = [
    WithLock(), WithSpinLock(), WithRecursiveLock(), WithReadLock(), WithWriteLock(), WithLocked(),
    WithReadWriteLocked(), WithSemaphore(), WithConditionLock(), WithCondition(), WithWaitGroup(), WithChannel(),
]
for critical in all {
    for _ in 0..<1_000 { critical.step() }
    precondition(critical.count == 1_000, "WitnessFastPaths: \(type(of: critical)) counted \(critical.count)")
}
print("WitnessFastPaths: \(all.count) witnesses ran")
