// The synchronized workloads of the interleaved runner: SynchronizedBenchmarks' contended rows
// on the same contenders (Sources/SynchronizedContenders), as interleaved rounds of 10 times
// `--operations` calls (a million by default: several time slices, see LockWorkloads.swift).
// One operation: one synchronized call whose body adds one to the object's counter; the check
// after each run: every increment made.

import BenchmarkSupport
import SynchronizedContenders

/// "one object / 2 threads" (both threads on one object) and "own object / 4 threads" (each
/// thread on an object of its own: per-object locks do not contend, a global lock does).
func synchronizedWorkloads() -> [Workload] {
    [(shared: true, threads: 2), (shared: false, threads: 4)].map { row in
        Workload(
            name: row.shared
                ? "synchronized one object / \(row.threads) threads"
                : "synchronized own object / \(row.threads) threads",
            threads: row.threads, scale: 10,
            contenders: [
                synchronizedContender(InterlockSynchronized.self, isInterlock: true, row.shared, row.threads),
                synchronizedContender(DictionaryOfRecursiveLocks.self, row.shared, row.threads),
                synchronizedContender(GlobalRecursiveLock.self, row.shared, row.threads),
            ])
    }
}

private func synchronizedContender<C: SynchronizedContender>(
    _ type: C.Type, isInterlock: Bool = false, _ shared: Bool, _ threads: Int
) -> Contender {
    Contender(name: type.contenderName, isInterlock: isInterlock) { operations in
        let contender = type.init()
        let objects = (0..<threads).map { _ in Guarded() }
        let share = operations / threads
        var expected = 0
        let team = ThreadTeam(threads: threads, idleNaps: true) { index in
            let object = objects[shared ? 0 : index]
            for _ in 0..<share { contender.synchronized(object) { object.count += 1 } }
        }
        return Run(team: team) {
            expected += share * threads
            let counted = objects.reduce(0) { $0 + $1.count }
            precondition(
                counted == expected, "Interleaved: \(type.contenderName) counted \(counted), expected \(expected)")
        }
    }
}
