// swift-tools-version:6.1
//
// ContentionCost: what contention profiling costs the locks, measured by
// scripts/contention-cost.sh, which builds this program twice (without and with the trait
// ContentionProfiling, passed on to Interlock's) and runs the builds in alternation:
// no trait, trait with INTERLOCK_CONTENTION unset, =1, and =100. A package of its own, so that
// the two builds do not rebuild the benchmark suite and its peers.
import PackageDescription

let package = Package(
    name: "ContentionCost",
    traits: [
        .trait(name: "ContentionProfiling", description: "Builds Interlock with contention profiling compiled in")
    ],
    dependencies: [
        .package(
            name: "Interlock", path: "../..",
            traits: [.trait(name: "ContentionProfiling", condition: .when(traits: ["ContentionProfiling"]))])
    ],
    targets: [
        .executableTarget(
            name: "ContentionCost",
            dependencies: [.product(name: "Interlock", package: "Interlock")],
            swiftSettings: [.define("INTERLOCK_CONTENTION", .when(traits: ["ContentionProfiling"]))]
        )
    ],
    swiftLanguageModes: [.v6]
)
