#!/usr/bin/env bash
# Runs the Neovim 0.12 unpacked by scripts/setup_neovim.sh (Debian sid packages, not installed):
# through the folder's own dynamic loader and libraries, with its own runtime files. It covers
# the 0.11+ path (vim.lsp.config / vim.lsp.enable, lsp/maxkernel.lua).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
dir="$root/third_party/nvim-0.12.4"
libs="$dir/usr/lib/x86_64-linux-gnu"
export VIMRUNTIME="$dir/usr/share/nvim/runtime"
# The tree-sitter parsers ship in usr/lib/nvim, which the binary looks for at /usr/lib/nvim: on the
# runtime path, so that a markdown buffer's ftplugin (plan.md) finds its parser.
exec "$dir/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$libs" "$dir/usr/bin/nvim" \
  --cmd "set runtimepath+=$dir/usr/lib/nvim" "$@"
