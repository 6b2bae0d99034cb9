// InterlockCompat: Apple's synchronization names on Linux, over Interlock (../shared/API.md,
// "Apple's names on Linux"). A ported file replaces `import Darwin`/`import os` with
// `import InterlockCompat`. This file re-exports Interlock, whose types the compat names wrap.

@_exported import Interlock
