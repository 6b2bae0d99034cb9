// The harness's own environmental failures (a file it cannot write, a process it cannot
// start): thrown values whose message names the path and the operating system's reason.

/// An environmental failure of the harness; `description` names the path and the reason.
struct HarnessError: Error, CustomStringConvertible {
    /// What failed, on which path, and why.
    let description: String
}
