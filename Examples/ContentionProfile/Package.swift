// swift-tools-version:6.1
//
// ContentionProfile: a small server-like program with one lock too many threads want, run with
// contention profiling on (`make profile-example` renders its flame graph). It turns on
// Interlock's package trait ContentionProfiling, as a dependent does for a profiling build.
import PackageDescription

let package = Package(
    name: "ContentionProfile",
    dependencies: [
        .package(name: "Interlock", path: "../..", traits: ["ContentionProfiling"])
    ],
    targets: [
        .executableTarget(
            name: "ContentionProfile",
            dependencies: [.product(name: "Interlock", package: "Interlock")]
        )
    ],
    swiftLanguageModes: [.v6]
)
