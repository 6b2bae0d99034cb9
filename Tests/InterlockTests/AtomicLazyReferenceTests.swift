// Tests of AtomicLazyReference: load() is nil before any store and the stored instance after;
// every storeIfNil returns the first stored instance; under a race of many threads exactly one
// instance wins, the N - 1 losers are deinitialized once their callers drop them, and the
// winner when the reference is; loaders see the instance's contents.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("AtomicLazyReference")
struct AtomicLazyReferenceTests {
    @Test("load() is nil before a store; the first storeIfNil wins and every later one returns it")
    func firstStoreWins() {
        let deinits = AtomicInt(0)
        do {
            let reference = AtomicLazyReference<CountedInstance>()
            #expect(reference.load() == nil)
            do {
                let first = CountedInstance(tag: 1, counter: deinits)
                #expect(reference.storeIfNil(first) === first)
                #expect(reference.load() === first)
            }
            #expect(deinits.load() == 0, "the stored instance was released")
            do {
                let second = CountedInstance(tag: 2, counter: deinits)
                let got = reference.storeIfNil(second)
                #expect(got !== second)
                #expect(got.tag == 1)
            }
            #expect(deinits.load() == 1, "the losing instance was not released (or the winner was)")
            #expect(reference.load()?.tag == 1)
        }
        #expect(deinits.load() == 2, "the stored instance outlived its reference")
    }

    @Test("16 threads race: one winner returned to all, N - 1 losers deinitialized, the winner with the reference")
    func raceHasOneWinner() {
        let threads = 16
        for round in 0..<TestScale.count(100, small: 10) {
            let deinits = AtomicInt(0)
            let winners = AtomicInt(0)
            let returnedTags = (0..<threads).map { _ in AtomicInt(-1) }
            do {
                let reference = AtomicLazyReference<CountedInstance>()
                let finished = runConcurrentlyWithinStallLimit(threadCount: threads) { index in
                    let mine = CountedInstance(tag: index, counter: deinits)
                    let got = reference.storeIfNil(mine)
                    if got === mine { winners.increment() }
                    // Plain payload, written by the winner's initializer: the CAS orders it.
                    if got.payload == [got.tag, got.tag &* 2, got.tag &* 3] { returnedTags[index].store(got.tag) }
                }
                #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
                guard finished else { return }
                let tags = Set(returnedTags.map { $0.load() })
                #expect(winners.load() == 1, "round \(round): \(winners.load()) callers stored their instance")
                #expect(tags.count == 1 && tags.first != -1, "round \(round): callers got different instances: \(tags)")
                #expect(reference.load()?.tag == tags.first)
                #expect(
                    deinits.load() == threads - 1,
                    "round \(round): \(deinits.load()) instances released, expected the \(threads - 1) losers")
            }
            #expect(deinits.load() == threads, "round \(round): the winner outlived the reference")
        }
    }

    @Test("loaders racing with the store see nil or the winner, with its contents")
    func loadersSeeInitializedInstance() {
        // The loaders read the instance's plain payload right after load() returns it: only the
        // acquire of load() orders that read after the initializer. ThreadSanitizer reports a
        // race if it were relaxed.
        for round in 0..<TestScale.count(50, small: 10) {
            let deinits = AtomicInt(0)
            let reference = AtomicLazyReference<CountedInstance>()
            let correct = AtomicInt(0)
            let loaders = 4
            let finished = runConcurrentlyWithinStallLimit(threadCount: loaders + 1) { index in
                if index == 0 {
                    _ = reference.storeIfNil(CountedInstance(tag: round, counter: deinits))
                    return
                }
                var instance = reference.load()
                while instance == nil {
                    sched_yield()
                    instance = reference.load()
                }
                if instance!.tag == round && instance!.payload == [round, round &* 2, round &* 3] {
                    correct.increment()
                }
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(correct.load() == loaders)
        }
    }
}
