#!/usr/bin/env bash
# Makes sure Interlock's one system dependency, liburcu (Debian/Ubuntu: liburcu-dev), and
# pkg-config are installed. Installs them with apt-get when it can (as root, or through sudo
# without a password); otherwise stops with the exact command to run.
set -euo pipefail

have_urcu() {
    if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists liburcu-bp 2>/dev/null; then
        return 0
    fi
    # Without pkg-config, look for the header where Debian and Ubuntu put it.
    compgen -G "/usr/include/urcu-bp.h" >/dev/null || compgen -G "/usr/include/*/urcu-bp.h" >/dev/null
}

missing=()
have_urcu || missing+=(liburcu-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
[ ${#missing[@]} -eq 0 ] && exit 0

install_cmd="apt-get update && apt-get install -y ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "Interlock needs liburcu (userspace RCU) and pkg-config: ${missing[*]} are missing." >&2
    echo "This system has no apt-get; install your distribution's liburcu development package" >&2
    echo "(e.g. 'dnf install userspace-rcu-devel pkgconf') and run this command again." >&2
    exit 1
fi

echo "Interlock: installing ${missing[*]} (${install_cmd})" >&2
if [ "$(id -u)" -eq 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "Interlock needs ${missing[*]}, and this user cannot install packages." >&2
    echo "Run:  sudo sh -c '${install_cmd}'" >&2
    echo "then run this command again." >&2
    exit 1
fi
have_urcu || { echo "Interlock: liburcu-dev was installed but liburcu-bp is still not found." >&2; exit 1; }
