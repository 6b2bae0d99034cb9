// The registry of stress workloads: the order here is the order they run and are listed in.
//
// To add a workload for a primitive:
//   1. Create StressTests/Workloads/<Primitive>Workload.swift with
//          extension Workload {
//              static let myPrimitive = Workload(name: "my-primitive", summary: "...") { context in
//                  ... set up; let results = context.runThreads { worker in ... }; check ...
//              }
//          }
//      (see Framework/Workload.swift for the contract and an example, and the atomics
//      workloads in Workloads/ for complete ones).
//   2. Add ONE line, `.myPrimitive,`, to `WorkloadRegistry.all` below, in the group of its
//      issue. Keep one workload per line so that parallel additions merge cleanly.
// Workloads that need files use `try context.directory` (under `--directory`, default a fresh
// temporary directory); workloads that need other processes pass `child:` to the Workload and
// start them with `context.spawnChild(arguments:)`.

/// Every workload the harness knows.
enum WorkloadRegistry {
    /// All workloads, in run order.
    static let all: [Workload] = [
        // Atomics
        .atomicIncrement64,
        .atomicAddWrapping32,
        .atomicCASLoop,
        .atomicBitwiseOwnership,
        .atomicExchangeConservation,
        .atomicBoolHandoff,
        .atomicTestAndSetBitmap,
        // Locks
        .lockMutualExclusion,
        .spinLockMutualExclusion,
        .recursiveLockNesting,
        .readWriteLockNoTornReads,
        .readWriteLockTimeouts,
        .conditionBoundedBuffer,
        .conditionLockTokenRing,
        .lockedTransfers,
        .readWriteLockedSnapshots,
        // Distributed lock
        .distributedLockProcesses,
        .postgresLock,
        .postgresLockAsync,
        .postgresSemaphore,
        // Lock-free queues
        .lockFreeStackTransfer,
        .lockFreeStackAlternating,
        .lockFreeStackExchange,
        .lockFreeQueueTransfer,
        .lockFreeQueueAlternating,
        // Semaphores and groups
        .semaphorePool,
        .semaphoreProducerConsumer,
        .semaphoreThreadsAndTasks,
        .waitGroupRounds,
        // Channels
        .boundedChannel,
        .boundedChannelRendezvous,
        // Once and lazy initialization
        .onceExactlyOnce,
        .lazySingleComputation,
        .atomicLazyReferenceOneWinner,
        // synchronized
        .synchronizedNesting,
        // InterlockCompat (Apple's names)
        .compatLocks,
        .compatOSQueueRecycling,
        .compatFifoQueueRecycling,
    ]

    /// The workload called `name`, if any.
    static func workload(named name: String) -> Workload? {
        all.first { $0.name == name }
    }
}
