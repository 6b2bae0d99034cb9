// swift-tools-version:6.0
//
// A dependent's release build whose protocol witnesses take Interlock's locks and semaphore:
// scripts/check-witness-inlining.sh (make witness-inlining, part of make test) disassembles it
// and fails when a witness's fast path calls one of the C shim's inline helpers instead of
// holding its atomic instructions. Inside a protocol-witness thunk Swift's IRGen marks every
// call noinline, so a fast path written on the shim's `static inline` functions stays a call
// there (Sources/Interlock/Atomics/WordAtomics.swift). It depends on Interlock by path, as a
// user's package would.
import PackageDescription

let package = Package(
    name: "WitnessInlining",
    dependencies: [.package(name: "Interlock", path: "../..")],
    targets: [
        .executableTarget(
            name: "WitnessFastPaths", dependencies: [.product(name: "Interlock", package: "Interlock")])
    ],
    swiftLanguageModes: [.v6]
)
