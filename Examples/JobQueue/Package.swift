// swift-tools-version:6.0
//
// JobQueue: a small program that uses Interlock the way a package depending on it would.
// It depends on Interlock by path (the repository root) and uses only its library product,
// so SwiftPM builds Interlock's library and nothing else of that package (`make example`
// also checks which packages get resolved).
import PackageDescription

let package = Package(
    name: "JobQueue",
    dependencies: [
        // In your own package: .package(url: "https://…/Interlock.git", from: "…").
        // `name:` lets the product reference below say "Interlock" whatever the clone's folder is called.
        .package(name: "Interlock", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "JobQueue",
            dependencies: [.product(name: "Interlock", package: "Interlock")]
        )
    ],
    swiftLanguageModes: [.v6]
)
