// `--json PATH`: the table's data as one JSON object, with the run's configuration.

import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The JSON document written by `--json`.
struct JSONReport: Codable {
    /// How the run was configured.
    struct Configuration: Codable {
        let threads: Int
        let secondsPerWorkload: Double
        /// `--operations`, when given.
        let operationsPerWorkload: Int?
        let workloads: [String]
        let directory: String
        let activeProcessors: Int
        let startedAt: String
        /// What an empty timed interval measures (included in every latency sample).
        let timerOverheadNanoseconds: UInt64
    }

    let configuration: Configuration
    let results: [WorkloadResult]
    /// The selected workloads that were not run, with why (not in `results`, `passed` or `failed`).
    let skipped: [SkippedWorkload]
    let passed: Int
    let failed: Int

    /// Writes the report to `path`. - Throws: ``HarnessError`` naming the path and the reason.
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self) + Data("\n".utf8)
        // fopen/fwrite rather than Data.write: their errno names the actual reason.
        guard let file = fopen(path, "w") else {
            throw HarnessError(
                description: "cannot write the JSON report to \(path): \(String(cString: strerror(errno)))")
        }
        let written = data.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        let failure = written != data.count ? errno : 0
        if fclose(file) != 0 || failure != 0 {
            let reason = String(cString: strerror(failure != 0 ? failure : errno))
            throw HarnessError(description: "cannot write the JSON report to \(path): \(reason)")
        }
    }
}
