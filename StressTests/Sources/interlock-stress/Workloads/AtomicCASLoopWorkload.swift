// Stress workload `atomic-cas-loop`: every thread increments one AtomicInt with a
// compare-and-swap loop (read, compute, CAS, retry on failure), the pattern every lock-free
// algorithm is built on.
//
// Invariants:
// - the final value is exactly the number of successful CASes: a CAS that is not atomic
//   (compare, then store) lets two threads succeed from the same expected value and loses one;
// - the CAS is strong (as documented): `compareExchange` reports `exchanged == false` only when the
//   value it found differs from `expected`, and `original == expected` when it succeeds;
// - the values a thread installs strictly increase (the counter only grows).
// Even threads use `compareExchange` and retry from the `original` it returns; odd threads use
// `compareAndSwap` and reload with a relaxed load (any value will do as the next guess: the
// CAS itself is sequentially consistent and is what validates it).

import Interlock

extension Workload {
    /// `atomic-cas-loop`; see the file comment.
    static let atomicCASLoop = Workload(
        name: "atomic-cas-loop",
        summary: "AtomicInt CAS-loop increments (compareExchange and compareAndSwap); exact total, strong CAS"
    ) { context in
        let counter = AtomicInt(0)
        let outcomes = context.runThreads { worker -> (successes: Int, failures: Int) in
            var successes = 0, failures = 0
            var lastInstalled = 0
            var reported = false
            let me = worker.index
            let useCompareExchange = me & 1 == 0
            while worker.keepRunning {
                let installed = worker.operation { () -> Int in
                    var guess = counter.load(ordering: .relaxed)
                    while true {
                        if useCompareExchange {
                            let (exchanged, original) = counter.compareExchange(expected: guess, desired: guess &+ 1)
                            if exchanged != (original == guess) && !reported {
                                reported = true
                                context.fail(
                                    "thread \(me): compareExchange(expected: \(guess)) returned exchanged \(exchanged) with original \(original)"
                                )
                            }
                            if exchanged { return guess &+ 1 }
                            guess = original
                        } else {
                            if counter.compareAndSwap(guess, guess &+ 1) { return guess &+ 1 }
                            guess = counter.load(ordering: .relaxed)
                        }
                        failures += 1
                    }
                }
                successes += 1
                if installed <= lastInstalled && !reported {
                    reported = true
                    context.fail(
                        "thread \(worker.index): installed \(installed) after \(lastInstalled): values went backwards")
                }
                lastInstalled = installed
            }
            return (successes, failures)
        }
        let expected = outcomes.reduce(0) { $0 + $1.successes }
        let failures = outcomes.reduce(0) { $0 + $1.failures }
        context.note("CAS failures (retries)", failures)
        let final = counter.load()
        context.check(
            final == expected,
            "final value \(final), expected \(expected) successful CASes: \(expected - final) lost")
    }
}
