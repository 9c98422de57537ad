#!/usr/bin/env bash
# Builds MaxKernel and runs every test suite. Each suite prints its own closing line; the script
# ends with an overall "N passed, N failed" line and exits non-zero if any suite failed.
#   MAXKERNEL_SKIP_SANITIZERS=1  runs the suites on the plain build/ and skips TSan and fuzzing
#   MAXKERNEL_TEST_PROCESSES=N   tests at once in the slow pytest suites (default 2)
# With CI=true (or MAXKERNEL_STRICT_SKIPS=1) a test that skips without declaring why fails
# (tests/skip_policy.py, the editor runners); the declared skips are listed at the end.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="$root/.venv/bin/python"
passed=0
failed=0
failed_names=()
MAXKERNEL_SKIP_LOG="$(mktemp)"
export MAXKERNEL_SKIP_LOG
# One persistent XLA compilation cache for every JAX process the suites start: the same references
# and kernels are compiled again and again across tests and suites (each test starts its own workers),
# and a repeat loads the executable instead of compiling it. It lives for this run only. The TPU
# compile child never uses it (its cycles come from the dump a real compile writes).
JAX_COMPILATION_CACHE_DIR="$(mktemp -d)"
export JAX_COMPILATION_CACHE_DIR JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.2

suite() {  # suite NAME COMMAND...
  local name="$1"
  shift
  echo "=== $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
  echo "=== $name: $((SECONDS - start)) s"
}

# Idempotent: installs only what is missing (apt is skipped when every package is present).
scripts/setup.sh >/dev/null || { echo "setup failed"; exit 1; }

# ARCHITECTURE.md's layering table as a check on every include (and its own tests).
suite "layering: includes follow ARCHITECTURE.md's table" "$py" -m pytest -q tests/layers

# One checked build serves every suite: clang with ASan+UBSan and libFuzzer's coverage, as a
# unity build (the heavy headers are parsed and instantiated once per batch, not once per file).
# So each suite below runs against sanitized binaries, the fuzz targets come from the same build,
# and a second build (ThreadSanitizer, gcc) checks the threaded code and the other compiler.
# MAXKERNEL_SKIP_SANITIZERS=1 runs the suites on the plain build/ instead and skips TSan and fuzz.
# Both sanitizer builds: -O0 with line tables (fast to compile, stacks still symbolised), unity.
sanitized_build=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1"
  "-DCMAKE_C_FLAGS_DEBUG=-O0 -g1" -DCMAKE_UNITY_BUILD=ON)
if [[ "${MAXKERNEL_SKIP_SANITIZERS:-0}" == "1" ]]; then
  check_build=build
  scripts/build.sh build || { echo "build failed"; exit 1; }
else
  check_build=build-check
  scripts/build.sh "$check_build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    "${sanitized_build[@]}" -DMAXKERNEL_SANITIZE=address,undefined -DMAXKERNEL_FUZZ=ON ||
    { echo "build failed"; exit 1; }
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
# The slow pytest suites run their tests in parallel (pytest-xdist): most of a test's time is one
# JAX process compiling or a server waiting on one, so two at a time fill two cores.
par=(-n "${MAXKERNEL_TEST_PROCESSES:-2}")
export MAXKERNEL_BUILD="$root/$check_build" MAXKERNEL_LSP="$root/$check_build/bin/maxkernel-lsp" \
  MAXKERNEL_CLI="$root/$check_build/bin/maxkernel"

suite "unit and host pool (GoogleTest)" ctest --test-dir "$check_build" --output-on-failure -j 2

suite "protocol transcripts" "$py" -m pytest -q "${par[@]}" tests/transcript
suite "cli on the corpus" "$py" -m pytest -q "${par[@]}" tests/cli
suite "package: stripped programs with their libraries, the wheel in a fresh venv" "$py" -m pytest -q tests/package
suite "corpus lowers with real JAX" "$py" tests/corpus/verify_corpus.py
suite "worker (real JAX processes)" "$py" -m pytest -q "${par[@]}" tests/worker
suite "agents: rewrites lower for TPU with real JAX" "$py" -m pytest -q tests/agents
suite "report and bench (CLI, real run store, real JAX)" "$py" -m pytest -q "${par[@]}" tests/report
suite "load bench: a 15 s run of the real server with a real job" "$py" -m pytest -q bench/load
suite "optimize: Auto, graph strategies, resume after kill (real workers)" "$py" -m pytest -q "${par[@]}" tests/optimize
suite "faults: LLM, worker, server, store faults during runs" "$py" -m pytest -q "${par[@]}" tests/faults
if compgen -G "tests/hosts/test_*.py" >/dev/null; then
  suite "hosts: ssh on loopback, faults, cache (CLI)" "$py" -m pytest -q "${par[@]}" tests/hosts
fi
suite "ray: a real two-node cluster on loopback, in a network namespace of its own" tests/ray/run.sh

suite "vscode extension in a real VS Code (code-server + Chromium)" tests/editors/vscode/run.sh
suite "neovim plugin, headless in Neovim 0.7.2, 0.10.4, 0.11.4 and 0.12.4" tests/editors/neovim/run.sh

if [[ "${MAXKERNEL_SKIP_SANITIZERS:-0}" != "1" ]]; then
  #   MAXKERNEL_SKIP_FUZZ=1  skips the libFuzzer suite; MAXKERNEL_FUZZ_SECONDS sets its time per target
  if [[ "${MAXKERNEL_SKIP_FUZZ:-0}" != "1" ]]; then
    suite "fuzz: regressions + ${MAXKERNEL_FUZZ_SECONDS:-45}s per target (libFuzzer)" \
      env MAXKERNEL_FUZZ_BUILD="$check_build" tests/fuzz/run.sh
  fi
  # ThreadSanitizer over the threaded code: the protocol units (dispatcher, outgoing requests),
  # the host pool and worker processes (mk_host_tests), and the server's reader thread, main loop
  # and background pool through the transcripts. See docs/reliability.md for what it covers.
  # Under TSan the transcripts leave out test_cheat_verdicts.py: its verdicts are the worker's
  # (Python), and the server path it takes is the Test lens that test_kernel_runs.py covers.
  # Two single-threaded property tests (random edits against a fresh parse) take minutes under
  # TSan and have no thread to check; they run under ASan above.
  single_threaded='^(ModelCache\.RandomEditsOverTheCorpusMatchAFreshAnalysis|IncrementalReparse\.RandomTypingEqualsAFreshParse)$'
  if scripts/build.sh build-tsan -DMAXKERNEL_SANITIZE=thread "${sanitized_build[@]}"; then
    suite "unit and hosts under TSan" env -u ASAN_OPTIONS -u UBSAN_OPTIONS \
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest --test-dir build-tsan --output-on-failure -j 2 -E "$single_threaded"
    suite "transcripts under TSan" env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      MAXKERNEL_LSP="$root/build-tsan/bin/maxkernel-lsp" "$py" -m pytest -q "${par[@]}" tests/transcript \
      --ignore=tests/transcript/test_cheat_verdicts.py
  else
    failed=$((failed + 1))
    failed_names+=("TSan build")
  fi
fi

echo
if [[ -s "$MAXKERNEL_SKIP_LOG" ]]; then
  echo "skips ($(wc -l <"$MAXKERNEL_SKIP_LOG")):"
  sed 's/^/  /' "$MAXKERNEL_SKIP_LOG"
else
  echo "skips: none"
fi
rm -f "$MAXKERNEL_SKIP_LOG"
rm -rf "$JAX_COMPILATION_CACHE_DIR"
if ((failed > 0)); then echo "failed suites: ${failed_names[*]}"; fi
echo "suites: $passed passed, $failed failed"
((failed == 0))
