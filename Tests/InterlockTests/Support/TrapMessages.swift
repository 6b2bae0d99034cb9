// The check every misuse test makes of its exit test's child: that it printed the message
// naming the primitive and the mistake on standard error.

import Testing

/// Checks that an exit test's child printed every one of `fragments` on standard error.
func expectTrapMessage(
    _ result: ExitTest.Result?, contains fragments: String..., sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else { return }  // the exit-status expectation has already failed
    let text = String(decoding: result.standardErrorContent, as: UTF8.self)
    for fragment in fragments {
        #expect(
            text.contains(fragment), "stderr should contain \"\(fragment)\"; it was:\n\(text)",
            sourceLocation: sourceLocation)
    }
}
