// Stress workload `locked-transfers`: eight plain account balances inside one Locked; every
// thread moves money between random accounts through each of its entry points, and a
// withdrawal that would overdraw throws a typed error from inside the body.
//
// Operations, chosen at random per section: `withLock` (5 in 8), `withLockIfAvailable` retried
// with a yield until it runs (1 in 8), `withLock(before:)` with a deadline 1 ms ahead, retried
// after each `nil` (1 in 8), and a typed-throwing withdrawal through `withLock` (1 in 8): it
// throws `Overdrawn` without touching the balances when the account holds too little.
//
// Invariants checked:
//   - mutual exclusion: each body sees the total of the balances unchanged (a body inside with
//     another would see a transfer half done) and an occupancy count of exactly 1;
//   - no lost body: the transfers counted inside the value equal the sum of the workers' counts;
//   - a typed error leaves the lock released and the value untouched (the next body checks the
//     total; the workers count their throws, and the value counts none for them);
//   - `withLock(before:)` never returns nil before its deadline.

import CStressSupport
import Interlock

/// The value the workload's `Locked` protects.
private struct Accounts {
    var balances = [Int](repeating: 1_000, count: 8)
    var transfers = 0
    var total: Int { balances.reduce(0, +) }
}

/// The typed error of an overdrawing withdrawal.
private struct Overdrawn: Error {}

/// How one section of the workload ended.
private enum SectionOutcome {
    case done, thrown
    case problem(String)
}

extension Workload {
    /// `locked-transfers`; see the file comment.
    static let lockedTransfers = Workload(
        name: "locked-transfers",
        summary:
            "Locked: transfers between 8 balances via withLock/IfAvailable/before:/typed throws; conserved total, exact count"
    ) { context in
        let accounts = Locked(Accounts())
        accounts.name = "locked-transfers"
        let total = 8 * 1_000
        let inside = AtomicInt(0)
        let perThread = context.runThreads { worker -> (transfers: Int, throws: Int) in
            var transfers = 0
            var thrown = 0
            var reported = false
            while worker.keepRunning {
                let random = worker.random.next()
                let choice = random & 7
                let from = Int((random >> 3) & 7)
                let to = Int((random >> 6) & 7)
                let amount = Int((random >> 9) & 255)
                let outcome: SectionOutcome = worker.operation {
                    var problem: String? = nil
                    let transfer = { (accounts: inout Accounts) -> Void in
                        if inside.increment() != 1 { problem = "two bodies inside at once" }
                        if accounts.total != total {
                            problem = "total \(accounts.total), not \(total): a transfer seen half done"
                        }
                        accounts.balances[from] -= amount
                        accounts.balances[to] += amount
                        accounts.transfers += 1
                        inside.decrement()
                    }
                    var threw = false
                    switch choice {
                    case 0:
                        while accounts.withLockIfAvailable({ transfer(&$0) }) == nil { ilk_stress_thread_yield() }
                    case 1:
                        while true {
                            let deadline = ContinuousClock.now + .milliseconds(1)
                            if accounts.withLock(before: deadline, { transfer(&$0) }) != nil { break }
                            if ContinuousClock.now < deadline { problem = "withLock(before:) returned nil early" }
                        }
                    case 2:
                        do throws(Overdrawn) {
                            try accounts.withLock { (accounts: inout Accounts) throws(Overdrawn) in
                                if accounts.balances[from] < amount { throw Overdrawn() }
                                transfer(&accounts)
                            }
                        } catch {
                            threw = true
                        }
                    default:
                        accounts.withLock { transfer(&$0) }
                    }
                    if let problem { return .problem(problem) }
                    return threw ? .thrown : .done
                }
                switch outcome {
                case .done: transfers += 1
                case .thrown: thrown += 1
                case .problem(let problem):
                    transfers += 1
                    if !reported {
                        reported = true
                        context.fail(problem)
                    }
                }
            }
            return (transfers, thrown)
        }
        let expected = perThread.reduce(0) { $0 + $1.transfers }
        let (counted, finalTotal) = accounts.withLock { ($0.transfers, $0.total) }
        context.check(counted == expected, "\(counted) transfers recorded in the value, \(expected) run: bodies lost")
        context.check(finalTotal == total, "the balances ended at \(finalTotal), not \(total)")
        context.note("overdrawn withdrawals thrown", perThread.reduce(0) { $0 + $1.throws })
    }
}
