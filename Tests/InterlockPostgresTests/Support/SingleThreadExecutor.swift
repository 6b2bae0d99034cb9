// A task executor with one thread: tasks that prefer it run on that thread only, so a task that
// blocked its thread would stop every other task on it. The async tests of PostgresLock run a
// waiter and the task that releases the lock on it.

import Interlock
import Synchronization

@testable import InterlockPostgres

final class SingleThreadExecutor: TaskExecutor, Sendable {
    private let jobs = PGLocked<[UnownedJob]>([])
    private let ready = Semaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let thread = PGLocked<PGThread<Void>?>(nil)

    init() {
        let started = PGThread { [self] in run() }
        thread.withLock { $0 = started }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        jobs.withLock { $0.append(unowned) }
        ready.signal()
    }

    private func run() {
        while true {
            ready.wait()
            // Acquiring: pairs with shutdown's releasing store.
            if stopping.load(ordering: .acquiring) && jobs.withLock({ $0.isEmpty }) { break }
            guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Stops the thread once the jobs queued so far have run.
    func shutdown() {
        // Releasing: pairs with run()'s acquiring load.
        stopping.store(true, ordering: .releasing)
        ready.signal()
        _ = thread.withLock { $0 }?.join()
    }
}
