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
node bundle-server.mjs "$MAXKERNEL_LSP"  # bin/maxkernel-lsp + tpu/worker go into the .vsix
npm run --silent package >/dev/null  # production bundle + dist/maxkernel.vsix
node esbuild.mjs                      # development bundle with the in-editor tests
cd "$here"
exec node run.mjs "$@"
