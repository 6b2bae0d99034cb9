// swift-tools-version:6.1
//
// interlock-stress, Interlock's stress harness, as a package of its own: it depends on Interlock
// by path (as Benchmarks/ does), and on swift-argument-parser for its command line and
// hdrhistogram-swift for its latencies, which a dependent of Interlock therefore never resolves.
//
//   swift run -c release interlock-stress [options]     (or `make stress` at the top)
//
// The traits LockOrderChecking and ContentionProfiling turn Interlock's own traits of those names
// on (make lock-order, make contention).
import PackageDescription

let package = Package(
    name: "InterlockStress",
    products: [
        .executable(name: "interlock-stress", targets: ["interlock-stress"])
    ],
    traits: [
        .trait(
            name: "LockOrderChecking",
            description: "Builds Interlock with lock-order checking compiled in (INTERLOCK_LOCK_ORDER turns it on)"
        ),
        .trait(
            name: "ContentionProfiling",
            description: "Builds Interlock with contention profiling compiled in (INTERLOCK_CONTENTION turns it on)"
        ),
    ],
    dependencies: [
        .package(
            name: "Interlock", path: "..",
            traits: [
                .trait(name: "LockOrderChecking", condition: .when(traits: ["LockOrderChecking"])),
                .trait(name: "ContentionProfiling", condition: .when(traits: ["ContentionProfiling"])),
            ]),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.1.0"),
    ],
    targets: [
        // The CPU hints of the workloads' own spin loops (Interlock's C shim is not a product).
        .target(name: "CStressSupport", path: "Sources/CStressSupport"),
        .executableTarget(
            name: "interlock-stress",
            dependencies: [
                "CStressSupport",
                .product(name: "Interlock", package: "Interlock"),
                .product(name: "InterlockPostgres", package: "Interlock"),
                .product(name: "InterlockCompat", package: "Interlock"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Sources/interlock-stress",
            swiftSettings: [.define("INTERLOCK_CONTENTION", .when(traits: ["ContentionProfiling"]))]
        ),
        .testTarget(
            name: "StressHarnessTests",
            dependencies: ["interlock-stress"],
            path: "Tests/StressHarnessTests"
        ),
    ],
    swiftLanguageModes: [.v6],
    cLanguageStandard: .gnu11
)
