#!/usr/bin/env bash
# Builds the VS Code extension (type check, esbuild bundle, vsce package -> .vsix) and runs its tests
# inside a real VS Code (code-server + headless Chromium). Needs scripts/setup_vscode.sh once and a
# built maxkernel-lsp (build/bin, or --server PATH / $MAXKERNEL_LSP). Extra arguments go to run.mjs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
node_bin="$here/.tools/node/bin"
if [[ ! -x "$node_bin/node" || ! -d "$here/node_modules/code-server" || ! -d "$root/editors/vscode/node_modules" ]]; then
  echo "vscode tests: tools missing; run scripts/setup_vscode.sh" >&2
  exit 2
fi
export PATH="$node_bin:$PATH"
cd "$root/editors/vscode"
npm run --silent typecheck
export MAXKERNEL_LSP="${MAXKERNEL_LSP:-$root/build/bin/maxkernel-lsp}"
# The .vsix carries the packaged server (scripts/package.sh on the server's build: stripped, with
# its libraries and the worker); a server outside a build folder goes in bare.
build="$(dirname "$(dirname "$MAXKERNEL_LSP")")"
if [[ -f "$build/CMakeCache.txt" ]]; then
  package_out="$(mktemp -d)"
  MAXKERNEL_PACKAGE_TAR=0 MAXKERNEL_PACKAGE_WHEEL=0 "$root/scripts/package.sh" "$build" "$package_out" >/dev/null
  node bundle-server.mjs "$(echo "$package_out"/maxkernel-*-linux-x86_64)"
  rm -rf "$package_out"
else
  node bundle-server.mjs "$MAXKERNEL_LSP"
fi
npm run --silent package >/dev/null  # production bundle + dist/maxkernel.vsix (target linux-x64)
# What the .vsix carries: the server for its platform, its libraries, the worker, the target.
MAXKERNEL_VSIX="$root/editors/vscode/dist/maxkernel.vsix" "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$here/test_vsix.py"
node esbuild.mjs                      # development bundle with the in-editor tests
cd "$here"
exec node run.mjs "$@"
