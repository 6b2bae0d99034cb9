// swift-tools-version:6.1
//
// Interlock's benchmarks: a separate package, so that users of the library never fetch
// package-benchmark, swift-atomics or any peer's dependencies.
//
// Layout (see README.md):
//   Benchmarks/<Name>Benchmarks/  one executable benchmark target per family of primitives
//                                 (Atomics, Locks, Condition, DistributedLock, Queue), run
//                                 through ordo-one's BenchmarkPlugin
//   Sources/*Peers/               C and C++ peers, static inline where they can be, symbols
//                                 prefixed ilk_peer_ (CPeers: the __atomic builtins; LockPeers,
//                                 ConditionPeers, CQueuePeers, CBoostQueuePeers)
//   Sources/BenchmarkSupport/     the shared harness: parked helper threads that start together
//   Tests/                        the harness's tests (swift test) and ratios.py's (python3)
//   ratios.py                     turns a run into per-workload ratio tables
//
// Every benchmark is named "<Workload> / <threads> / <Contender>"; ratios.py groups on it.
import PackageDescription

let package = Package(
    name: "InterlockBenchmarks",
    dependencies: [
        .package(name: "Interlock", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-atomics.git", exact: "1.3.0"),
        // Interleaved's command line (package-benchmark depends on it already).
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        // AsyncChannelBenchmarks' peers: AsyncChannel, and Deque for the hand-written channel.
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
    ],
    targets: [
        // C peers, compiled with the same optimizer as the shim (static inline in the header).
        .target(
            name: "CPeers",
            path: "Sources/CPeers"
        ),
        // The configuration every benchmark family shares (metrics, units), with its bounds.
        .target(
            name: "BenchmarkConfiguration",
            dependencies: [.product(name: "Benchmark", package: "benchmark"), "BenchmarkSupport"],
            path: "Sources/BenchmarkConfiguration"
        ),
        // Thread team and fairness helpers shared by every benchmark target.
        .target(
            name: "BenchmarkSupport",
            path: "Sources/BenchmarkSupport"
        ),
        .testTarget(
            name: "BenchmarkSupportTests",
            dependencies: ["BenchmarkSupport"],
            path: "Tests/BenchmarkSupportTests"
        ),
    ],
    swiftLanguageModes: [.v6],
    cLanguageStandard: .gnu11
)

// One executable per benchmark family; `swift package benchmark` finds them through the plugin.
package.targets += [
    .executableTarget(
        name: "AtomicsBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            .product(name: "Atomics", package: "swift-atomics"),
            "CPeers",
            "BenchmarkSupport",
        ],
        path: "Benchmarks/AtomicsBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    )
]

// Condition and ConditionLock (issue 3): the pthread peers in their own C target.
package.targets += [
    .target(
        name: "ConditionPeers",
        path: "Sources/ConditionPeers"
    ),
    .executableTarget(
        name: "ConditionBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            "ConditionPeers",
            "BenchmarkSupport",
        ],
        path: "Benchmarks/ConditionBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    ),
]

// Lock-free queues and stacks (issue 5): the C peers (liburcu with the urcu-memb flavor,
// Concurrency Kit, pthread mutex) and the C++ Boost.Lockfree peers behind a C API.
// System packages: liburcu-dev, libck-dev, libboost-dev (scripts/ensure-bench-deps.sh).
package.targets += [
    .target(
        name: "CQueuePeers",
        path: "Sources/CQueuePeers",
        linkerSettings: [
            .linkedLibrary("urcu-memb"),
            .linkedLibrary("urcu-cds"),
            .linkedLibrary("urcu-common"),
            .linkedLibrary("ck"),
        ]
    ),
    .target(
        name: "CBoostQueuePeers",
        path: "Sources/CBoostQueuePeers"
    ),
    // The contenders and the workloads' thread code, shared with Interleaved.
    .target(
        name: "QueueContenders",
        dependencies: [.product(name: "Interlock", package: "Interlock"), "CQueuePeers", "CBoostQueuePeers"],
        path: "Sources/QueueContenders"
    ),
    .executableTarget(
        name: "QueueBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            "QueueContenders",
            "BenchmarkSupport",
        ],
        path: "Benchmarks/QueueBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    ),
]

// DistributedLock (issue 4): tryLock+unlock beside flock(2), an O_CREAT|O_EXCL lock file and
// mkdir/rmdir, in one run. Peers are plain system calls, so no C target.
package.targets += [
    .executableTarget(
        name: "DistributedLockBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
        ],
        path: "Benchmarks/DistributedLockBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    )
]

// Locks (issue 3): Lock, SpinLock, RecursiveLock, ReadWriteLock against the pthread peers
// (their own C target), Foundation's NSLock/NSRecursiveLock, Synchronization.Mutex and NIOLock;
// InterlockCompat's os_unfair_lock and OSAllocatedUnfairLock beside Lock.
package.dependencies += [
    .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.2")
]
package.targets += [
    .target(
        name: "LockPeers",
        path: "Sources/LockPeers"
    ),
    // The contenders, shared with Interleaved (its lock workloads).
    .target(
        name: "LockContenders",
        dependencies: [
            .product(name: "Interlock", package: "Interlock"),
            .product(name: "InterlockCompat", package: "Interlock"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            "LockPeers",
        ],
        path: "Sources/LockContenders"
    ),
    .executableTarget(
        name: "LocksBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            "LockContenders",
            "BenchmarkSupport",
        ],
        path: "Benchmarks/LocksBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    ),
]

// Semaphore and WaitGroup: against Dispatch's DispatchSemaphore and DispatchGroup and POSIX sem_t.
package.targets += [
    .executableTarget(
        name: "WaitingBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            "BenchmarkSupport",
            "WaitingContenders",
        ],
        path: "Benchmarks/WaitingBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    )
]

// Semaphore's async waits and AsyncLazy on the cooperative pool: against an actor semaphore, a
// Synchronization.Mutex with a FIFO of CheckedContinuations, and a Task stored behind a Mutex.
package.targets += [
    .executableTarget(
        name: "AsyncBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
        ],
        path: "Benchmarks/AsyncBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    )
]

// Once, Lazy and AtomicLazyReference: against pthread_once, a Swift lazy global, an Int? under
// Synchronization.Mutex, and swift-atomics' ManagedAtomicLazyReference.
package.targets += [
    .executableTarget(
        name: "OnceBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            .product(name: "Atomics", package: "swift-atomics"),
            "BenchmarkSupport",
        ],
        path: "Benchmarks/OnceBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    )
]

// synchronized(_:_:): against NSRecursiveLock per object in a dictionary and one global
// NSRecursiveLock.
package.targets += [
    // The contenders, shared with Interleaved.
    .target(
        name: "SynchronizedContenders",
        dependencies: [.product(name: "Interlock", package: "Interlock")],
        path: "Sources/SynchronizedContenders"
    ),
    .executableTarget(
        name: "SynchronizedBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            "SynchronizedContenders",
            "BenchmarkSupport",
        ],
        path: "Benchmarks/SynchronizedBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    ),
]

// PostgresLock (InterlockPostgres): tryLock+unlock against a throwaway PostgreSQL server that
// the benchmark starts itself (../scripts/postgres-throwaway.sh; Debian/Ubuntu: postgresql),
// over its Unix socket, beside the same two round trips through libpq directly and a
// DistributedLock on local disk for scale. libpq is declared here as its own system library
// (LibPQPeers, found with pkg-config; libpq-dev): the Interlock package's CLibPQ module is not
// one of its products.
package.targets += [
    .systemLibrary(
        name: "LibPQPeers",
        path: "Sources/LibPQPeers",
        pkgConfig: "libpq",
        providers: [.apt(["libpq-dev"])]
    ),
    .executableTarget(
        name: "PostgresBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            .product(name: "InterlockPostgres", package: "Interlock"),
            "LibPQPeers",
        ],
        path: "Benchmarks/PostgresBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    ),
]

// The neighbour process of `make bench-loaded` (mode neighbour): a second service on the machine
// whose threads hand work to each other through Interlock's Condition and Semaphore
// (../scripts/bench-loaded.sh). Not a benchmark: no plugin.
package.targets += [
    .executableTarget(
        name: "LoadNeighbour",
        dependencies: [.product(name: "Interlock", package: "Interlock")],
        path: "Sources/LoadNeighbour"
    )
]

// The semaphore and group contenders (Interlock, Dispatch, POSIX), shared by WaitingBenchmarks and
// Interleaved; and Interleaved itself: the waiting and lock workloads whose rows package-benchmark's
// back-to-back contenders leave bimodal under load, run as interleaved rounds (one round runs every
// contender once), medians reported (Benchmarks/README.md, "Interleaved rounds").
package.targets += [
    .target(
        name: "WaitingContenders",
        dependencies: [.product(name: "Interlock", package: "Interlock")],
        path: "Sources/WaitingContenders"
    ),
    .executableTarget(
        name: "Interleaved",
        dependencies: [
            .product(name: "Interlock", package: "Interlock"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            "BenchmarkSupport",
            "WaitingContenders",
            "ChannelContenders",
            "LockContenders",
            "QueueContenders",
            "SynchronizedContenders",
        ],
        path: "Sources/Interleaved"
    ),
]

// BoundedChannel (issue 33): against a pthread mutex + ring + two condition variables and
// Concurrency Kit's ck_ring (ChannelPeers, C), and a DispatchSemaphore bounded buffer (Swift).
package.targets += [
    .target(
        name: "ChannelPeers",
        path: "Sources/ChannelPeers",
        linkerSettings: [.linkedLibrary("ck")]
    ),
    .target(
        name: "ChannelContenders",
        dependencies: [.product(name: "Interlock", package: "Interlock"), "ChannelPeers"],
        path: "Sources/ChannelContenders"
    ),
    .executableTarget(
        name: "ChannelBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            "BenchmarkSupport",
            "ChannelContenders",
        ],
        path: "Benchmarks/ChannelBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    ),
]

// BoundedChannel in tasks (issue 33): against a Mutex + Deque + continuations channel,
// swift-async-algorithms' AsyncChannel and an unbounded AsyncStream.
package.targets += [
    .executableTarget(
        name: "AsyncChannelBenchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            "BenchmarkConfiguration",
            .product(name: "Interlock", package: "Interlock"),
            .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            .product(name: "DequeModule", package: "swift-collections"),
        ],
        path: "Benchmarks/AsyncChannelBenchmarks",
        plugins: [
            .plugin(name: "BenchmarkPlugin", package: "benchmark")
        ]
    )
]
