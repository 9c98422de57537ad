#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz, replays every saved regression,
# then fuzzes each target for a fixed time from its seed corpus. Fails on any crash, leak,
# sanitizer report or per-input timeout; a crashing input is kept in
# build-fuzz/fuzz-artifacts/<target>/ (copy it to tests/fuzz/regressions/<target>/ once fixed).
#   MAXKERNEL_FUZZ_SECONDS=45          fuzzing time per target (0: only replay regressions)
#   MAXKERNEL_FUZZ_TARGETS="a b"       a subset of: framing lsp_server text_sync pallas_model worker_reply
#   MAXKERNEL_FUZZ_BUILD=build-fuzz    the build directory
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seconds="${MAXKERNEL_FUZZ_SECONDS:-45}"
build="${MAXKERNEL_FUZZ_BUILD:-build-fuzz}"
read -r -a targets <<<"${MAXKERNEL_FUZZ_TARGETS:-framing lsp_server text_sync pallas_model worker_reply}"

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
[[ -f "$build/build.ninja" ]] || cmake -S . -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMAXKERNEL_FUZZ=ON -DMAXKERNEL_SANITIZE=address,undefined "${launcher[@]}" >/dev/null ||
  { echo "fuzz: configure failed"; exit 1; }
ninja -C "$build" -j "${MAXKERNEL_JOBS:-2}" "${targets[@]/#/fuzz_}" ||
  { echo "fuzz: build failed"; exit 1; }

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
# One target: its regressions, then fuzzing. Prints its report; fails on any finding.
fuzz_one() {
  local t="$1" bin="$build/bin/fuzz_$1" dict=() saved=()
  [[ -f tests/fuzz/$t.dict ]] && dict=(-dict="tests/fuzz/$t.dict")
  # 1. Every input that once crashed must now pass.
  mapfile -t saved < <(find "tests/fuzz/regressions/$t" -type f 2>/dev/null | sort)
  if ((${#saved[@]} > 0)); then
    if "$bin" -timeout=20 "${saved[@]}" >"$build/fuzz-$t-regressions.log" 2>&1; then
      echo "fuzz $t: ${#saved[@]} regression inputs pass"
    else
      echo "fuzz $t: a regression input fails again:"
      tail -30 "$build/fuzz-$t-regressions.log"
      return 1
    fi
  fi
  ((seconds > 0)) || return 0
  # 2. Fuzz from the seeds; new inputs go to a scratch corpus, never into the repository.
  local work="$build/fuzz-corpus/$t" artifacts="$build/fuzz-artifacts/$t" log="$build/fuzz-$t.log"
  mkdir -p "$work" "$artifacts"
  local seeds=("tests/fuzz/corpus/$t")
  # The Pallas model target also reads the example and corpus kernels where they live.
  [[ $t == pallas_model ]] && seeds+=(examples tests/corpus/good tests/corpus/bad)
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dict[@]}" "$work" "${seeds[@]}" >"$log" 2>&1; then
    echo "fuzz $t: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') runs in ${seconds}s, no crash ($(grep -oE 'cov: [0-9]+' "$log" | tail -1))"
  else
    echo "fuzz $t: FAILED; input kept in $artifacts/"
    grep -E 'ERROR|SUMMARY|violated|Test unit written' "$log" | head -20
    echo "  reproduce: $bin <that file>   (full log: $log)"
    return 1
  fi
}

# libFuzzer runs one process per target on one core: MAXKERNEL_JOBS targets fuzz at once.
parallel="${MAXKERNEL_JOBS:-2}"
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  rm -f "$build/fuzz-$t.status"
  { fuzz_one "$t"; echo $? >"$build/fuzz-$t.status"; } >"$build/fuzz-$t.report" 2>&1 &
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$build/fuzz-$t.report"
  [[ "$(cat "$build/fuzz-$t.status" 2>/dev/null)" == 0 ]] || failed+=("$t")
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets passed"
