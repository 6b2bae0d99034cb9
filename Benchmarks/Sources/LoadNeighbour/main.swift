// LoadNeighbour: a second service on the same machine, for `make bench-loaded` (mode
// "neighbour"). Two services that both use Interlock on one machine are the common case of a
// loaded machine: the waiting threads of one compete for the cores the other's threads need.
//
// What it runs until it is killed (SIGTERM from scripts/bench-loaded.sh):
//   - 2 producers and 2 consumers passing integers through a one-slot buffer guarded by
//     Interlock's `Condition` (the producer waits while the slot is full, the consumer while it
//     is empty: every item is a hand-off in each direction);
//   - 2 threads passing a turn back and forth through two Interlock `Semaphore`s.
// Arguments: "condition" or "semaphore" runs only that part (default: both).
//
// Not a benchmark: it reports nothing but a line per 10 s of items passed (stdout), so that a
// stalled neighbour (a lost wake-up would stall it) is visible in the load run's log.

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A one-slot buffer guarded by a `Condition`.
final class Slot: @unchecked Sendable {
    let condition = Condition()
    // Guarded by `condition`.
    var item: Int?
    var passed = 0

    func put(_ value: Int) {
        condition.lock()
        while item != nil { condition.wait() }
        item = value
        condition.broadcast()
        condition.unlock()
    }

    func take() -> Int {
        condition.lock()
        while item == nil { condition.wait() }
        let value = item!
        item = nil
        passed += 1
        condition.broadcast()
        condition.unlock()
        return value
    }
}

/// Two semaphores that pass a turn back and forth.
final class Turn: @unchecked Sendable {
    let ping = Semaphore(value: 0)
    let pong = Semaphore(value: 0)
}

/// Starts a detached thread that runs `body` for ever.
func spawn(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
    precondition(status == 0, "LoadNeighbour: pthread_create failed (\(status))")
    pthread_detach(thread)
}

/// Writes `line` to stdout unbuffered (the process ends by a signal, which drops buffered output).
func report(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
}

let mode = CommandLine.arguments.dropFirst().first ?? "both"
guard ["both", "condition", "semaphore"].contains(mode) else {
    report("usage: LoadNeighbour [both|condition|semaphore]")
    exit(2)
}

let slot = Slot()
if mode != "semaphore" {
    for _ in 0..<2 {
        spawn {
            var value = 0
            while true {
                slot.put(value)
                value &+= 1
            }
        }
        spawn {
            var sink = 0
            while true { sink &+= slot.take() }
        }
    }
}

let turn = Turn()
let turns = AtomicInt64(0)
if mode != "condition" {
    spawn {
        while true {
            turn.ping.signal()
            turn.pong.wait()
            _ = turns.increment(ordering: .relaxed)  // Relaxed: a progress counter, read for the log.
        }
    }
    spawn {
        while true {
            turn.ping.wait()
            turn.pong.signal()
        }
    }
}

while true {
    sleep(10)
    slot.condition.lock()
    let items = slot.passed
    slot.condition.unlock()
    // Relaxed: a progress counter (above).
    report("LoadNeighbour: \(items) items through the Condition, \(turns.load(ordering: .relaxed)) semaphore turns")
}
