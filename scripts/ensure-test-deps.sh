#!/usr/bin/env bash
# Makes sure what the test suite starts is installed, in addition to Interlock's own
# dependencies (scripts/ensure-deps.sh): bindfs, a FUSE file system (a bind mount of a
# directory through FUSE, no network), on which DistributedLock's tests check that a lock on a
# file system not known to be local uses the portable recipe. Installs it with apt-get when it
# can (as root, or through sudo without a password); otherwise stops with the exact command.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/ensure-deps.sh"

command -v bindfs >/dev/null 2>&1 && exit 0
"$here/apt-install.sh" "Interlock's tests" \
    "install your distribution's bindfs package (a FUSE file system)" \
    bindfs
command -v bindfs >/dev/null 2>&1 || { echo "Interlock tests: bindfs was installed but is not on PATH." >&2; exit 1; }
