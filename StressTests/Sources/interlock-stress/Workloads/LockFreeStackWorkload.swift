// Stress workloads of LockFreeStack.
//
// `lockfree-stack-transfer`: even threads push, odd threads pop (one thread does both in
// turn); producers stay at most `lockFreeBacklogLimit` elements ahead. Afterwards the stack is
// drained. Invariants: exact conservation (count and checksum of pushed == popped + drained);
// every popped value decodes to a real producer and a sequence it had produced.
//
// `lockfree-stack-alternating`: every thread pushes a class element then pops one, so the
// stack is never empty when a thread pops (it pushed first): a nil pop is a violation.
// Invariants: conservation by count and checksum; no element outlives the drained,
// deinitialized stack (the instance count returns to zero: nothing leaked, nothing
// released twice).
//
// `lockfree-stack-exchange`: two stacks of the same element type, so that their nodes come from
// one size class of the node pool; every thread pushes a new value on one stack and pops from
// the other, switching stacks each time. A node popped from one stack is recycled at once for
// the push on the other, so a pop delayed between reading its top node and its compare-and-swap
// often finds that node moved to the other stack: the case the generation count on each head
// exists for (LockFreeStack.swift, "ABA"). Invariants: exact conservation over both stacks;
// every popped value decodes to a real producer and a sequence it had produced.

import Interlock

extension Workload {
    /// `lockfree-stack-transfer`; see the file comment.
    static let lockFreeStackTransfer = Workload(
        name: "lockfree-stack-transfer",
        summary: "LockFreeStack producers/consumers; exact count and checksum, valid values"
    ) { context in
        let stack = LockFreeStack<UInt64>()
        let backlog = AtomicInt(0)
        let threads = context.threadCount
        let tallies = context.runThreads { worker -> LockFreeTally in
            var tally = LockFreeTally()
            let me = worker.index
            let producer = threads == 1 || me % 2 == 0
            let consumer = threads == 1 || me % 2 == 1
            var sequence: UInt64 = 0
            while worker.keepRunning {
                // Relaxed: the backlog only paces producers; it carries no data.
                if producer && backlog.load(ordering: .relaxed) < lockFreeBacklogLimit {
                    sequence += 1
                    let value = lockFreeValue(producer: me, sequence: sequence)
                    worker.operation { stack.push(value) }
                    backlog.increment(ordering: .relaxed)
                    tally.put(value)
                }
                if consumer, let value = worker.operation({ stack.pop() }) {
                    backlog.decrement(ordering: .relaxed)
                    tally.took(value)
                    let from = lockFreeProducer(of: value)
                    if from >= threads || lockFreeSequence(of: value) == 0 {
                        context.fail("thread \(me) popped a value no producer made: \(value)")
                    }
                }
            }
            return tally
        }
        var total = LockFreeTally.total(tallies)
        while let value = stack.pop() { total.took(value) }
        context.check(stack.isEmpty, "lockfree-stack-transfer: not empty after draining")
        checkLockFreeConservation(context, total, what: "lockfree-stack-transfer")
    }

    /// `lockfree-stack-alternating`; see the file comment.
    static let lockFreeStackAlternating = Workload(
        name: "lockfree-stack-alternating",
        summary: "LockFreeStack push-then-pop on every thread, class elements; no nil, conservation, no leak"
    ) { context in
        let live = AtomicInt(0)
        var total = LockFreeTally()
        do {
            let stack = LockFreeStack<LockFreeStressElement>()
            let tallies = context.runThreads { worker -> LockFreeTally in
                var tally = LockFreeTally()
                var sequence: UInt64 = 0
                while worker.keepRunning {
                    sequence += 1
                    let value = lockFreeValue(producer: worker.index, sequence: sequence)
                    worker.operation { stack.push(LockFreeStressElement(value, live: live)) }
                    tally.put(value)
                    guard let element = worker.operation({ stack.pop() }) else {
                        context.fail("thread \(worker.index): pop after its own push found the stack empty")
                        break
                    }
                    tally.took(element.value)
                }
                return tally
            }
            total = LockFreeTally.total(tallies)
            while let element = stack.pop() { total.took(element.value) }
        }
        checkLockFreeConservation(context, total, what: "lockfree-stack-alternating")
        context.check(
            live.load() == 0,
            "lockfree-stack-alternating: \(live.load()) elements still alive after the stack was drained and deinitialized"
        )
    }

    /// `lockfree-stack-exchange`; see the file comment.
    static let lockFreeStackExchange = Workload(
        name: "lockfree-stack-exchange",
        summary: "two LockFreeStacks sharing recycled nodes, push on one, pop the other; conservation, valid values"
    ) { context in
        let stacks = [LockFreeStack<UInt64>(), LockFreeStack<UInt64>()]
        let threads = context.threadCount
        let tallies = context.runThreads { worker -> LockFreeTally in
            var tally = LockFreeTally()
            let me = worker.index
            var sequence: UInt64 = 0
            var side = me & 1
            while worker.keepRunning {
                sequence += 1
                let value = lockFreeValue(producer: me, sequence: sequence)
                worker.operation { stacks[side].push(value) }
                tally.put(value)
                if let popped = worker.operation({ stacks[1 - side].pop() }) {
                    tally.took(popped)
                    if lockFreeProducer(of: popped) >= threads || lockFreeSequence(of: popped) == 0 {
                        context.fail("thread \(me) popped a value no producer made: \(popped)")
                    }
                }
                side = 1 - side
            }
            return tally
        }
        var total = LockFreeTally.total(tallies)
        for stack in stacks {
            while let value = stack.pop() { total.took(value) }
            context.check(stack.isEmpty, "lockfree-stack-exchange: a stack not empty after draining")
        }
        checkLockFreeConservation(context, total, what: "lockfree-stack-exchange")
    }
}
