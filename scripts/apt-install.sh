#!/usr/bin/env bash
# Installs Debian/Ubuntu packages for Interlock's scripts: as root, or through sudo without a
# password; otherwise (or without apt-get) prints the exact command to run and exits 1.
#   usage: apt-install.sh "WHAT NEEDS THEM" "NON-APT HINT" PACKAGE...
set -euo pipefail
who="$1"; hint="$2"; shift 2
install_cmd="apt-get update && apt-get install -y $*"
# Wait up to 10 minutes for the package manager's lock (unattended upgrades on a fresh machine
# hold it) instead of failing at once.
lock_wait=(-o DPkg::Lock::Timeout=600)
if ! command -v apt-get >/dev/null 2>&1; then
    echo "$who needs $* (missing). This system has no apt-get; $hint, then run this command again." >&2
    exit 1
fi
echo "$who: installing $* ($install_cmd)" >&2
if [ "$(id -u)" -eq 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get "${lock_wait[@]}" update -qq && apt-get "${lock_wait[@]}" install -y -qq "$@" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get "${lock_wait[@]}" update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get "${lock_wait[@]}" install -y -qq "$@" >/dev/null
else
    echo "$who needs $*, and this user cannot install packages." >&2
    echo "Run:  sudo sh -c '$install_cmd'" >&2
    echo "then run this command again." >&2
    exit 1
fi
