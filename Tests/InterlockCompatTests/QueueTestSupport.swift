// Threads for the OSQueue and OSFifoQueue tests: every body on its own thread, all at once
// (a pool such as concurrentPerform may run consumers before the producers they wait for).

import Foundation

/// Runs `body(0)`, ..., `body(count - 1)` each on a new thread, and returns when all returned.
func runOnQueueTestThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let finished = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            body(index)
            finished.signal()
        }
        thread.start()
    }
    for _ in 0..<count { finished.wait() }
}

/// Raw pointers handed to test threads; the tests synchronize through the queues under test.
struct QueueTestPointers<Head, Element>: @unchecked Sendable {
    let head: UnsafeMutablePointer<Head>
    let elements: UnsafeMutablePointer<Element>
}
