// swift-tools-version:6.1
//
// Interlock: Apple's synchronization toolkit (OSAtomic, OSSpinLock, NSLock, NSRecursiveLock,
// NSCondition, NSConditionLock, NSDistributedLock, OSAtomicEnqueue/OSAtomicFifoEnqueue) for
// Swift on Linux. The library imports neither Foundation nor Dispatch; its one system
// dependency is liburcu (Debian/Ubuntu: liburcu-dev), used by the lock-free queues.
//
// A dependent resolves Interlock alone: the one package dependency, postgres-nio, is used only
// under the trait PostgresNIO (off by default), and the stress harness (StressTests/, with
// swift-argument-parser and hdrhistogram-swift) and the benchmarks (Benchmarks/) are packages of
// their own that depend on this one by path.
import PackageDescription

let package = Package(
    name: "Interlock",
    products: [
        .library(name: "Interlock", targets: ["Interlock"]),
        // A distributed lock on PostgreSQL advisory locks, over libpq (Debian/Ubuntu:
        // libpq-dev). Only packages that use this product build it or need libpq.
        .library(name: "InterlockPostgres", targets: ["InterlockPostgres"]),
        // Apple's synchronization names on Linux (OSAtomic, OSSpinLock, os_unfair_lock,
        // OSAllocatedUnfairLock, the OSAtomic queues, NSDistributedLock) over Interlock; the one
        // module that may import Foundation (for NSDistributedLock).
        .library(name: "InterlockCompat", targets: ["InterlockCompat"]),
    ],
    // Off by default: `swift test --traits LockOrderChecking` (or `traits: ["LockOrderChecking"]`
    // on the dependency) compiles lock-order checking in; INTERLOCK_LOCK_ORDER=trap|report turns
    // it on for a run (Sources/Interlock/LockOrder/).
    traits: [
        .trait(
            name: "LockOrderChecking",
            description: "Compiles in lock-order checking (potential deadlocks), turned on by INTERLOCK_LOCK_ORDER"
        ),
        // Off by default: `swift build --traits ContentionProfiling` compiles contention profiling
        // in; INTERLOCK_CONTENTION=1 (or =N, one wait in N) turns it on for a run
        // (Sources/Interlock/Contention/). Without it nothing of it exists.
        .trait(
            name: "ContentionProfiling",
            description:
                "Compiles in contention profiling (waits by lock and call site), turned on by INTERLOCK_CONTENTION"
        ),
        // Off by default, so that nobody else resolves postgres-nio: PostgresLock(client:name:)
        // over a postgres-nio PostgresClient's connections (Sources/InterlockPostgres/NIO/).
        .trait(
            name: "PostgresNIO",
            description: "Adds PostgresLock initialisers that take a postgres-nio PostgresClient"
        ),
    ],
    dependencies: [
        // Resolved only with the trait PostgresNIO on (SwiftPM 6.3 leaves a dependency that only a
        // disabled trait uses unresolved; scripts/check-example-deps.sh checks a dependent).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0")
    ],
    targets: [
        // liburcu, found with pkg-config; SwiftPM prints the apt-get hint when it is missing.
        .systemLibrary(
            name: "CLibURCU",
            path: "SystemLibraries/CLibURCU",
            pkgConfig: "liburcu-bp",
            providers: [.apt(["liburcu-dev"])]
        ),
        // The C shim: atomics, fences, spin hints, futexes, RCU glue. Symbols prefixed ilk_.
        .target(
            name: "CInterlock",
            dependencies: ["CLibURCU"],
            path: "CShims",
            exclude: ["Contention"]
        ),
        // The C half of contention profiling (site table, per-thread state, backtraces), built
        // and linked only with the trait ContentionProfiling (a dependency condition, since
        // SwiftPM does not apply trait-conditioned C settings to a dependency's C target).
        .target(
            name: "CInterlockContention",
            dependencies: ["CInterlock"],
            path: "CShims/Contention"
        ),
        .target(
            name: "Interlock",
            dependencies: [
                "CInterlock",
                .target(name: "CInterlockContention", condition: .when(traits: ["ContentionProfiling"])),
            ],
            path: "Sources/Interlock",
            swiftSettings: [
                .define("INTERLOCK_LOCK_ORDER", .when(traits: ["LockOrderChecking"])),
                .define("INTERLOCK_CONTENTION", .when(traits: ["ContentionProfiling"])),
            ]
        ),
        // libpq, found with pkg-config; needed by InterlockPostgres alone.
        .systemLibrary(
            name: "CLibPQ",
            path: "SystemLibraries/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "InterlockPostgres",
            dependencies: [
                "Interlock", "CLibPQ",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgresNIO"])),
            ],
            path: "Sources/InterlockPostgres",
            swiftSettings: [
                .define("INTERLOCK_POSTGRES_NIO", .when(traits: ["PostgresNIO"])),
                .define("INTERLOCK_CONTENTION", .when(traits: ["ContentionProfiling"])),
            ]
        ),
        .target(
            name: "InterlockCompat",
            dependencies: ["Interlock", "CInterlock"],
            path: "Sources/InterlockCompat"
        ),
        // What the test bundles and their helper executables share (Tests/Support).
        .target(
            name: "InterlockTestSupport",
            path: "Tests/Support"
        ),
        // Child process for DistributedLock's multi-process tests; built with the tests (a
        // dependency of InterlockTests), which find it next to the test bundle.
        .executableTarget(
            name: "interlock-dlock-helper",
            dependencies: ["Interlock", "InterlockTestSupport"],
            path: "Tests/DistributedLockHelper"
        ),
        .testTarget(
            name: "InterlockTests",
            dependencies: ["Interlock", "CInterlock", "interlock-dlock-helper", "InterlockTestSupport"],
            path: "Tests/InterlockTests",
            // The lock-order tests run only where the checks are compiled in; so do the
            // contention profiling tests.
            swiftSettings: [
                .define("INTERLOCK_LOCK_ORDER", .when(traits: ["LockOrderChecking"])),
                .define("INTERLOCK_CONTENTION", .when(traits: ["ContentionProfiling"])),
            ]
        ),
        // PostgresLock against throwaway servers that the tests start themselves
        // (scripts/postgres-throwaway.sh).
        // Child process for PostgresLock's multi-process tests.
        .executableTarget(
            name: "interlock-pg-helper",
            dependencies: ["InterlockPostgres", "InterlockTestSupport"],
            path: "Tests/PostgresLockHelper"
        ),
        .testTarget(
            name: "InterlockPostgresTests",
            dependencies: [
                "Interlock", "InterlockPostgres", "interlock-pg-helper", "InterlockTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgresNIO"])),
            ],
            path: "Tests/InterlockPostgresTests",
            swiftSettings: [
                .define("INTERLOCK_POSTGRES_NIO", .when(traits: ["PostgresNIO"])),
                .define("INTERLOCK_CONTENTION", .when(traits: ["ContentionProfiling"])),
            ]
        ),
        .testTarget(
            name: "InterlockCompatTests",
            dependencies: ["InterlockCompat", "Interlock", "CInterlock"],
            path: "Tests/InterlockCompatTests"
        ),
    ],
    swiftLanguageModes: [.v6],
    cLanguageStandard: .gnu11
)
