// Real OS threads (pthreads) that start together and are joined at the end.
//
// The start gate: each thread announces itself (`ready`, an increment) and spins, yielding,
// until the coordinator opens the gate; the coordinator waits for every announcement first, so
// no thread starts working while others are still being created. Opening the gate is a release
// store read with acquire loads, so the deadline the coordinator wrote before opening is visible
// to every thread after it passes (and ThreadSanitizer sees that edge on the atomic itself).

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-shot start gate for a fixed number of threads.
final class StartGate: @unchecked Sendable {
    private let ready = AtomicInt(0)
    private let open = AtomicBool(false)
    // Written once by the coordinator before `open` is released, read by threads after they
    // acquire it: ordered by that release/acquire pair, never accessed concurrently.
    private var deadlineStorage: ContinuousClock.Instant?

    /// Called by each thread: announces it and waits for the gate. Returns the deadline.
    func arriveAndWait() -> ContinuousClock.Instant {
        ready.increment()  // seq_cst: the coordinator counts these
        // Acquire pairs with the release in `open(deadline:)`: makes `deadlineStorage` visible.
        while !open.load(ordering: .acquire) { sched_yield() }
        return deadlineStorage!
    }

    /// Called by the coordinator: waits until `count` threads arrived, then lets them go.
    func open(after count: Int, deadline: () -> ContinuousClock.Instant) {
        while ready.load() < count { sched_yield() }
        deadlineStorage = deadline()
        // Release pairs with the acquire loads in `arriveAndWait`.
        open.store(true, ordering: .release)
    }
}

/// Threads running one closure each; `join` waits for all of them.
struct ThreadGroup {
    private var threads: [pthread_t] = []

    /// Starts a thread running `body`. Traps with the OS reason when the system refuses.
    mutating func start(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        if status != 0 {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            fatalError("interlock-stress: pthread_create failed: \(String(cString: strerror(status)))")
        }
        threads.append(thread)
    }

    /// Waits for every thread to finish.
    mutating func join() {
        for thread in threads {
            let status = pthread_join(thread, nil)
            precondition(status == 0, "interlock-stress: pthread_join failed: \(String(cString: strerror(status)))")
        }
        threads.removeAll()
    }
}

private final class ThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
