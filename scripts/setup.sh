#!/usr/bin/env bash
# Installs everything MaxKernel needs to build and test, idempotently.
#   apt:  compilers, CMake, the C++ libraries, clang (sanitizers, libFuzzer), sshd for host tests
#   npm:  tree-sitter-python (grammar compiled into the binary), pinned
#   PyPI: the tree-sitter C runtime (sdist of py-tree-sitter, patched, compiled in), pinned
#   pip:  a venv at .venv with JAX (CPU), pytest and ruff, pinned; Ray (tests only), pinned
# Usage: scripts/setup.sh [--no-apt] [--main]
#   --main: only what the main job (scripts/demo.sh) needs: the compiler, the libraries, the grammar
#           and the runtime, and the venv with JAX. No sanitizer toolchain, sshd, editors or GoogleTest.
set -euo pipefail
apt_flag=""
main_only=0
for arg in "$@"; do
  case "$arg" in
    --no-apt) apt_flag="--no-apt" ;;
    --main) main_only=1 ;;
    *) echo "setup: unknown option $arg (use --no-apt, --main)" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/npm_unpack.sh"
cd "$root"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libspdlog-dev libcurl4-openssl-dev libboost-dev libboost-filesystem-dev
  libtree-sitter-dev libsqlite3-dev
)
# The tests also need GoogleTest, clang (sanitizers, libFuzzer, clang-format), sshd (ssh hosts)
# and ip (tests/ray brings up loopback in a network namespace of its own).
((main_only)) || APT_PACKAGES+=(libgtest-dev clang clang-format libclang-rt-14-dev
  openssh-server openssh-client iproute2)
TREE_SITTER_PYTHON_VERSION=0.23.6
TREE_SITTER_RUNTIME_VERSION=0.20.4  # PyPI tree-sitter sdist: its bundled C runtime (tree_sitter/core/lib)
PY_REQUIREMENTS="$root/scripts/requirements.txt"

missing_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

if [[ "$apt_flag" != "--no-apt" ]]; then
  need="$(missing_apt)"
  if [[ -n "$need" ]]; then
    echo "setup: apt installing: $need"
    sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends $need >/dev/null
  fi
fi

# tree-sitter-python grammar sources (parser.c + scanner.c), pinned; ABI 14 loads in libtree-sitter 0.20.7.
grammar_dir="$root/third_party/tree-sitter-python"
if [[ ! -f "$grammar_dir/src/parser.c" ]] || ! grep -q "\"version\": \"$TREE_SITTER_PYTHON_VERSION\"" "$grammar_dir/package.json" 2>/dev/null; then
  echo "setup: fetching tree-sitter-python@$TREE_SITTER_PYTHON_VERSION from npm"
  npm_unpack tree-sitter-python "$TREE_SITTER_PYTHON_VERSION" "$grammar_dir"
fi

# Python venv: JAX on the CPU for real worker processes, pytest for transcript tests, ruff for the benchmark.
if [[ ! -x "$root/.venv/bin/python" ]]; then
  python3 -m venv "$root/.venv"
fi
stamp="$root/.venv/.requirements.sha"
want="$(sha256sum "$PY_REQUIREMENTS" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "setup: pip installing $(tr '\n' ' ' < "$PY_REQUIREMENTS")"
  "$root/.venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$root/.venv/bin/python" -m pip install -q -r "$PY_REQUIREMENTS"
  echo "$want" > "$stamp"
fi
# tree-sitter runtime (the C library) from the PyPI sdist of py-tree-sitter, pinned, with
# third_party/patches/ applied: tree-sitter-reuse-descend.patch (Debian's libtree-sitter 0.20.7
# re-lexes up to 43 % of a large Python file for some one-character edits;
# docs/incremental-analysis.md) and tree-sitter-atomic-ref-counts.patch (trees freed on another
# thread). Without this directory the build falls back to the system library.
runtime_dir="$root/third_party/tree-sitter-runtime"
runtime_patches=("$root/third_party/patches/tree-sitter-reuse-descend.patch"
                 "$root/third_party/patches/tree-sitter-atomic-ref-counts.patch")
runtime_stamp="$TREE_SITTER_RUNTIME_VERSION $(cat "${runtime_patches[@]}" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$runtime_dir/.stamp" 2>/dev/null)" != "$runtime_stamp" ]]; then
  echo "setup: fetching the tree-sitter runtime (py-tree-sitter $TREE_SITTER_RUNTIME_VERSION sdist) from PyPI"
  tmp="$(mktemp -d)"
  "$root/.venv/bin/python" -m pip download -q --no-deps --no-binary :all: -d "$tmp" \
    "tree-sitter==$TREE_SITTER_RUNTIME_VERSION"
  tar -xzf "$tmp"/tree_sitter-*.tar.gz -C "$tmp"
  rm -rf "$runtime_dir" && mkdir -p "$runtime_dir"
  cp -r "$tmp"/tree_sitter-*/tree_sitter/core/lib/. "$runtime_dir"/
  for runtime_patch in "${runtime_patches[@]}"; do
    (cd "$runtime_dir" && patch -s -p1 --forward < "$runtime_patch")
  done
  echo "$runtime_stamp" > "$runtime_dir/.stamp"
  rm -rf "$tmp"
fi
if ((main_only)); then
  echo "setup: done (main job only)"
  exit 0
fi
# Ray, pinned, for the ray host kind's tests (a real cluster on loopback: tests/ray). A user
# needs it only in the python that runs the driver, and only when they pick --host ray:ADDRESS.
ray_requirements="$root/scripts/requirements-ray.txt"
ray_stamp="$root/.venv/.requirements-ray.sha"
ray_want="$(sha256sum "$ray_requirements" | cut -d' ' -f1)"
if [[ "$(cat "$ray_stamp" 2>/dev/null)" != "$ray_want" ]]; then
  echo "setup: pip installing $(tr '\n' ' ' < "$ray_requirements")"
  "$root/.venv/bin/python" -m pip install -q -r "$ray_requirements"
  echo "$ray_want" > "$ray_stamp"
fi
# The official SARIF 2.1.0 JSON schema (OASIS, final "rtm.5"), for tests/cli/test_sarif.py: the copy
# that the npm package @microsoft/jest-sarif ships, pinned.
SARIF_SCHEMA_PACKAGE_VERSION=1.0.0-beta.0
sarif_dir="$root/third_party/sarif-schema"
if [[ "$(cat "$sarif_dir/.stamp" 2>/dev/null)" != "$SARIF_SCHEMA_PACKAGE_VERSION" ]]; then
  echo "setup: fetching the SARIF 2.1.0 schema (@microsoft/jest-sarif@$SARIF_SCHEMA_PACKAGE_VERSION) from npm"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "@microsoft/jest-sarif@$SARIF_SCHEMA_PACKAGE_VERSION" >/dev/null)
  tar -xzf "$tmp"/microsoft-jest-sarif-*.tgz -C "$tmp"
  rm -rf "$sarif_dir" && mkdir -p "$sarif_dir"
  cp "$tmp/package/lib/schemas/sarif-2.1.0-rtm.5.json" "$sarif_dir/sarif-schema-2.1.0.json"
  echo "$SARIF_SCHEMA_PACKAGE_VERSION" > "$sarif_dir/.stamp"
  rm -rf "$tmp"
fi
# The VS Code extension and its tests in a real VS Code (Node 24, code-server, Chromium): docs/vscode.md
"$root/scripts/setup_vscode.sh" ${apt_flag:+"$apt_flag"}
# Neovim 0.7.2 (apt), 0.10.4, 0.11.4 and 0.12.4 (unpacked) for the plugin tests: docs/neovim.md
"$root/scripts/setup_neovim.sh" ${apt_flag:+"$apt_flag"}
echo "setup: done"
