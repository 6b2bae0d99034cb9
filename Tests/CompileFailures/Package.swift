// swift-tools-version:6.0
//
// Code that must NOT compile: what `Locked` and `ReadWriteLocked` promise the compiler refuses.
// Built by scripts/check-compile-failures.sh (make compile-failures, part of make test), which
// expects every line marked `// expected error: <fragment>` to carry that error, and no other
// error. It depends on Interlock by path, as a user's package would.
import PackageDescription

let package = Package(
    name: "CompileFailures",
    dependencies: [.package(name: "Interlock", path: "../..")],
    targets: [
        // One target per kind of check: a module that fails to type-check is not analysed further.
        .target(name: "RefusedRegions", dependencies: [.product(name: "Interlock", package: "Interlock")]),
        .target(name: "RefusedConformances", dependencies: [.product(name: "Interlock", package: "Interlock")]),
    ],
    swiftLanguageModes: [.v6]
)
