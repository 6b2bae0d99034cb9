// LockFreeStack: LIFO order, isEmpty, element release at deinit (also of a deep stack), no
// loss and no duplicates under 2 producers + 2 consumers, use from a task group, bounded
// memory over many cycles. Sizes shrink under ThreadSanitizer (TestScale).

import CInterlock
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("LockFreeStack")
struct LockFreeStackTests {
    @Test("pops in last-in, first-out order, then nil")
    func lifoOrder() {
        let stack = LockFreeStack<Int>()
        #expect(stack.isEmpty)
        #expect(stack.pop() == nil)
        for value in 0..<1000 { stack.push(value) }
        #expect(!stack.isEmpty)
        var popped: [Int] = []
        while let value = stack.pop() { popped.append(value) }
        #expect(popped == Array((0..<1000).reversed()))
        #expect(stack.isEmpty)
        #expect(stack.pop() == nil)
    }

    @Test("interleaved pushes and pops keep LIFO order")
    func interleaved() {
        let stack = LockFreeStack<Int>()
        var model: [Int] = []
        var next = 0
        for round in 0..<2000 {
            if round % 3 == 2 {
                #expect(stack.pop() == model.popLast())
            } else {
                stack.push(next)
                model.append(next)
                next += 1
            }
            #expect(stack.isEmpty == model.isEmpty)
        }
        while let value = model.popLast() { #expect(stack.pop() == value) }
        #expect(stack.pop() == nil)
    }

    @Test("stores elements with references and odd sizes intact")
    func compositeElements() {
        let stack = LockFreeStack<CompositeElement>()
        let elements = (0..<100).map {
            CompositeElement(name: "element \($0)", tags: Array(0..<($0 % 7)), a: $0, b: Double($0) / 3)
        }
        for element in elements { stack.push(element) }
        for element in elements.reversed() { #expect(stack.pop() == element) }
        #expect(stack.pop() == nil)

        let small = LockFreeStack<UInt8>()
        for value in UInt8(0)..<200 { small.push(value) }
        for value in (UInt8(0)..<200).reversed() { #expect(small.pop() == value) }

        let empty = LockFreeStack<Void>()
        empty.push(())
        #expect(empty.pop() != nil)
        #expect(empty.pop() == nil)
    }

    @Test("popped elements are released at once; the rest at deinit")
    func releasesElements() {
        let counter = LiveCounter()
        do {
            let stack = LockFreeStack<TrackedElement>()
            for value in 0..<1000 { stack.push(TrackedElement(value, counter)) }
            #expect(counter.live.load() == 1000)
            for _ in 0..<300 { _ = stack.pop() }
            #expect(counter.live.load() == 700)
        }
        #expect(counter.created.load() == 1000)
        #expect(counter.live.load() == 0)
    }

    @Test("a stack of a million elements deinitializes without recursion")
    func deepDeinit() {
        let count = TestScale.count(1_000_000, small: 50_000)
        let counter = LiveCounter()
        do {
            let stack = LockFreeStack<TrackedElement>()
            for value in 0..<count { stack.push(TrackedElement(value, counter)) }
            #expect(counter.live.load() == count)
        }
        #expect(counter.live.load() == 0)
    }

    @Test("2 producers + 2 consumers: every element popped exactly once")
    func twoProducersTwoConsumers() {
        let perProducer = TestScale.count(200_000, small: 5_000)
        let producers = 2, consumers = 2
        let total = producers * perProducer
        let stack = LockFreeStack<Int>()
        let received = AtomicInt(0)
        let results = PerThreadResults<[Int]>(count: consumers, initial: [])
        runConcurrently(threadCount: producers + consumers) { index in
            if index < producers {
                for i in 0..<perProducer { stack.push(index * perProducer + i) }
            } else {
                var mine: [Int] = []
                mine.reserveCapacity(total)
                // Relaxed: only a stop condition; the elements are synchronized by the stack.
                while received.load(ordering: .relaxed) < total {
                    if let value = stack.pop() {
                        mine.append(value)
                        received.increment(ordering: .relaxed)
                    }
                }
                results[index - producers] = mine
            }
        }
        let all = results.all.flatMap { $0 }
        #expect(all.count == total)
        #expect(all.sorted() == Array(0..<total))
        #expect(stack.isEmpty)
        #expect(stack.pop() == nil)
    }

    @Test("4 threads alternating push and pop never find their own element missing")
    func alternating() {
        let rounds = TestScale.count(200_000, small: 5_000)
        let stack = LockFreeStack<Int>()
        let results = PerThreadResults<[Int]>(count: 4, initial: [])
        runConcurrently(threadCount: 4) { index in
            var mine: [Int] = []
            mine.reserveCapacity(rounds)
            for i in 0..<rounds {
                stack.push(index * rounds + i)
                // Every thread pushes before it pops, so the stack holds at least one element.
                guard let value = stack.pop() else { break }
                mine.append(value)
            }
            results[index] = mine
        }
        let all = results.all.flatMap { $0 }
        #expect(all.count == 4 * rounds)
        #expect(all.sorted() == Array(0..<(4 * rounds)))
        #expect(stack.isEmpty)
    }

    @Test("works from a Swift task group")
    func taskGroup() async {
        let perTask = TestScale.count(20_000, small: 1_000)
        let tasks = 8
        let stack = LockFreeStack<Int>()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for i in 0..<perTask { stack.push(task * perTask + i) }
                }
            }
        }
        let popped = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    var mine: [Int] = []
                    while let value = stack.pop() { mine.append(value) }
                    return mine
                }
            }
            var all: [Int] = []
            for await part in group { all += part }
            return all
        }
        #expect(popped.sorted() == Array(0..<(tasks * perTask)))
        #expect(stack.isEmpty)
    }

    @Test("memory stays bounded over many push/pop cycles (in a child process)")
    func boundedMemory() async {
        // A child process, so that other tests allocating in parallel cannot move the
        // resident set; it exits 1 (and says why on stderr) when the resident set grew.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let cycles = TestScale.count(10_000_000, small: 1_000_000)
            let stack = LockFreeStack<Int>()
            @Sendable func cycle(_ count: Int) {
                runConcurrently(threadCount: 2) { index in
                    for i in 0..<(count / 2) {
                        stack.push(index &+ i)
                        _ = stack.pop()
                    }
                }
            }
            // Warm up to the steady state of the allocator, liburcu (and TSan's metadata).
            cycle(cycles / 4)
            let before = try residentSetKiB()
            cycle(cycles)
            let after = try residentSetKiB()
            checkResidentSetGrowth(before: before, after: after, cycles: cycles, what: "LockFreeStack")
        }
        // The figures, for the log: "<type>: <cycles> cycles, resident set <before> -> <after>".
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }

    @Test("the RCU shim carries ThreadSanitizer annotations exactly when TSan is on")
    func tsanAnnotations() {
        #expect((ilk_rcu_tsan_annotated() == 1) == TestScale.isThreadSanitized)
    }
}

/// Writes `line` to standard error (a child process's report to the parent test).
private func reportFromChild(_ line: String) {
    line.withCString { _ = write(2, $0, strlen($0)) }
}

/// The node pool recycles a popped node at once (CShims/include/ilk_node_pool.h): the
/// generation count on LockFreeStack's head makes that ABA-safe. Before, a node waited out a
/// grace period, and on a loaded machine push malloc'ed 15-23 % of its nodes meanwhile.
@Suite("Node pool")
struct NodePoolTests {
    @Test("a thread that pushes and pops reuses its own popped nodes at once, with no grace period")
    func balancedThreadReusesAtOnce() {
        let stack = LockFreeStack<UInt>()
        let cycles = 100_000
        let mallocs = LockGuarded(UInt(0))
        let wrong = LockGuarded(0)
        // A thread of its own: the pool's caches and counters are per thread.
        TestThread {
            let before = ilk_node_pool_node_mallocs()
            for value in 0..<UInt(cycles) {
                stack.push(value)
                if stack.pop() != value { wrong.value += 1 }
            }
            mallocs.value = ilk_node_pool_node_mallocs() - before
        }.join()
        #expect(wrong.value == 0)
        // One node at most (the first push, when the thread's cache was empty): no push waited
        // for a grace period to get back the node the pop before it retired.
        #expect(mallocs.value <= 1, "\(mallocs.value) nodes malloc'ed in \(cycles) push/pop cycles")
    }

    /// In a child process: the ready lists and the list of empty headers are process-wide, and
    /// another test's threads could take or add batches meanwhile.
    @Test("nodes a consumer popped reach the next producer without malloc, and headers circulate")
    func nodesAndHeadersFlowFromConsumersToProducers() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let stack = LockFreeStack<UInt>()
            let batch = Int(ILK_NODE_POOL_BATCH)
            let count = 4 * batch
            var nodeMallocs: [UInt] = []
            var headerMallocs: [UInt] = []
            for _ in 0..<3 {
                // A producer that exits after its pushes: at exit it gives back the headers of
                // the batches it used up.
                let produced = LockGuarded(UInt(0))
                TestThread {
                    let before = ilk_node_pool_node_mallocs()
                    for value in 0..<UInt(count) { stack.push(value) }
                    produced.value = ilk_node_pool_node_mallocs() - before
                }.join()
                nodeMallocs.append(produced.value)
                // This thread consumes, with no RCU barrier anywhere: what it hands on must
                // not wait for a grace period.
                let before = ilk_node_pool_header_mallocs()
                var taken = 0
                while stack.pop() != nil { taken += 1 }
                headerMallocs.append(ilk_node_pool_header_mallocs() - before)
                if taken != count {
                    reportFromChild("Node pool: popped \(taken) of \(count)\n")
                    exit(1)
                }
            }
            reportFromChild(
                "Node pool: producers malloc'ed \(nodeMallocs) nodes, the consumer \(headerMallocs) headers per cycle of \(count) nodes\n"
            )
            // Cycle 1: every node is new, and the consumer mallocs a header per batch. Cycle 2:
            // the consumer keeps two batches (its cache) and has handed on two, so the
            // producer mallocs two batches' worth. Cycle 3: the consumer handed on four
            // batches, so the producer mallocs nothing, and it gave back four headers, which
            // the consumer starts its batches on.
            if nodeMallocs != [UInt(count), UInt(2 * batch), 0] { exit(1) }
            if headerMallocs.first != 4 || headerMallocs.last != 0 { exit(1) }
        }
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }

    @Test("a deinitialized stack's nodes go back to the pool, not to free()")
    func deinitReturnsNodesToThePool() {
        let nodeBytes = MemoryLayout<UnsafeMutableRawPointer?>.size + MemoryLayout<UInt>.size
        let cached = LockGuarded((before: UInt32(0), after: UInt32(0)))
        TestThread {
            var stack: LockFreeStack<UInt>? = LockFreeStack<UInt>()
            for value in 0..<UInt(100) { stack?.push(value) }
            // After the pushes: their nodes may have come from a batch of the ready list.
            let before = ilk_node_pool_cached_nodes(nodeBytes)
            stack = nil
            cached.value = (before, ilk_node_pool_cached_nodes(nodeBytes))
        }.join()
        // A pop of another stack may still read one of these nodes (type stability): free()
        // would be a use-after-free; the pool frees nodes only after a grace period.
        #expect(cached.value.after == cached.value.before + 100)
    }
}

@Suite("LockFreeStack and LockFreeQueue with threads that come and go")
struct LockFreeThreadChurnTests {
    @Test("short-lived threads: per-thread node caches and RCU registration are handed back at exit")
    func threadsComeAndGo() {
        let generations = TestScale.count(40, small: 8)
        let perThread = 2_000
        let stack = LockFreeStack<Int>()
        let queue = LockFreeQueue<Int>()
        for generation in 0..<generations {
            // Each generation's threads exit with nodes in their caches and partial batches.
            runConcurrently(threadCount: 4) { index in
                let base = (generation * 4 + index) * perThread
                for i in 0..<perThread {
                    stack.push(base + i)
                    queue.enqueue(base + i)
                }
                for _ in 0..<(perThread / 2) {
                    _ = stack.pop()
                    _ = queue.dequeue()
                }
            }
        }
        var stackLeft: [Int] = []
        while let value = stack.pop() { stackLeft.append(value) }
        var queueLeft: [Int] = []
        while let value = queue.dequeue() { queueLeft.append(value) }
        let expectedCount = generations * 4 * perThread / 2
        #expect(stackLeft.count == expectedCount)
        #expect(queueLeft.count == expectedCount)
        #expect(Set(stackLeft).count == expectedCount)
        #expect(Set(queueLeft).count == expectedCount)
        #expect(stack.isEmpty && queue.isEmpty)
    }
}
