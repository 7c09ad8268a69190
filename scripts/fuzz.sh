#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes with libFuzzer (fuzz/README.md):
# builds the fuzz_<parser> harnesses with clang-14 (-fsanitize=fuzzer,
# address,undefined; only those targets and the rooms they link) in
# build-fuzz/, then runs each for FUZZ_SECONDS (default 30) on a scratch copy
# of its committed corpus and regression inputs (the committed files are
# never written), FUZZ_PARALLEL (default 2) harnesses at a time, one process
# each. Prints the executions per harness; exits non-zero on any crash, leak,
# timeout or out-of-memory, naming the harness and the input that did it
# (kept under build-fuzz/crashes/<parser>/).
#
#   scripts/fuzz.sh                      # 30 s each (CI; scripts/test.sh)
#   FUZZ_SECONDS=3600 scripts/fuzz.sh    # the figures quoted in README.md
#   FUZZ_HARNESSES="gguf onnx" scripts/fuzz.sh
#   FUZZ_OPT="-O1 -g1" FUZZ_SECONDS=3600 scripts/fuzz.sh   # long runs
#   FUZZ_TIMEOUT=120 nice -n 19 scripts/fuzz.sh ...        # beside other work
#   FUZZ_PREBUILT=build-asan scripts/fuzz.sh   # harnesses of a tree configured
#                                # with -DSLIMPACK_FUZZ_HOOKS=ON (scripts/test.sh)
# The build is -O0 unless FUZZ_OPT says otherwise: on the shared 2-core
# machine the -O1 build took 611 s of the step, -O0 compiles about 40 %
# faster and 30 s runs need coverage more than speed; long runs want -O1
# (2-3x the executions per second).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
SECONDS_EACH="${FUZZ_SECONDS:-30}"
PARALLEL="${FUZZ_PARALLEL:-2}"
JOBS="${JOBS:-2}"
HARNESSES="${FUZZ_HARNESSES:-safetensors prequantized onnx numpy hf_config recipe loader gguf tokenizer merge}"
LLVM="${FUZZ_LLVM:-/usr/lib/llvm-14}"
OPT="${FUZZ_OPT:--O0 -g1}"
# Seconds one input may take. libFuzzer measures wall time, so a long run
# niced beside builds needs more (a starved process is not a slow input).
TIMEOUT="${FUZZ_TIMEOUT:-20}"
start=$(date +%s)

targets=()
for h in $HARNESSES; do targets+=("fuzz_$h"); done
if [ -n "${FUZZ_PREBUILT:-}" ]; then
  # Built with the sanitized tests (that tree's `all` has them when it was
  # configured with the hooks; the check below names any that is missing).
  BUILD="$(cd "$FUZZ_PREBUILT" && pwd)"
  OPT="the tree in $BUILD"
else
  CC="$LLVM/bin/clang" CXX="$LLVM/bin/clang++" \
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DSLIMPACK_FUZZ=ON \
    -DCMAKE_CXX_FLAGS_DEBUG="$OPT" -DCMAKE_C_FLAGS_DEBUG="$OPT" \
    -DSLIMPACK_FAST_LINK=ON >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" | grep -v '^\[' || true
fi
for h in $HARNESSES; do
  [ -x "$BUILD/fuzz/fuzz_$h" ] || { echo "fuzz.sh: fuzz_$h was not built in $BUILD" >&2; exit 1; }
done
built=$(date +%s)
rm -f "$BUILD/failure.txt"
echo "fuzz.sh: ${#targets[@]} harnesses ($OPT) ready in $((built - start))s; ${SECONDS_EACH}s each, $PARALLEL at a time"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/slimpack-fuzz.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# Options for every run: allocation bombs and hangs are failures too
# (bad-inputs.md, "Practices to demand" 1).
run_one() {
  local h="$1" dir="$WORK/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/tmp"
  cp "$ROOT/fuzz/corpus/$h/"* "$ROOT/fuzz/regressions/$h/"* "$dir/corpus/"
  local dict=()
  [ -f "$ROOT/fuzz/dicts/$h.dict" ] && dict=(-dict="$ROOT/fuzz/dicts/$h.dict")
  local rc=0
  TMPDIR="$dir/tmp" ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$BUILD/fuzz/fuzz_$h" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "${dict[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

running=0
for h in $HARNESSES; do
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$PARALLEL" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
all_kept=""
printf '%-12s %14s %10s %8s  %s\n' harness executions exec/s corpus result
for h in $HARNESSES; do
  dir="$WORK/$h"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  rc=$(cat "$dir/rc")
  if [ "$rc" = 0 ]; then
    result=ok
  else
    failed=1
    mkdir -p "$BUILD/crashes/$h"
    cp "$dir/log" "$BUILD/crashes/$h/log.txt"
    kept=""
    for f in "$dir/artifacts/"*; do
      [ -f "$f" ] || continue
      cp "$f" "$BUILD/crashes/$h/"
      kept="$kept $BUILD/crashes/$h/$(basename "$f")"
    done
    all_kept="$all_kept$kept"
    result="FAILED (exit $rc):${kept:- no crash file} (log: $BUILD/crashes/$h/log.txt)"
  fi
  printf '%-12s %14s %10s %8s  %s\n' "$h" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
echo "fuzz.sh: done in $(( $(date +%s) - start ))s"
if [ "$failed" != 0 ]; then
  # Also kept in $BUILD/failure.txt: scripts/test.sh prints it last, where a
  # CI log's tail shows it, with each input xz+base64 on one line so a
  # finding of a CI run can be replayed after its machine is gone:
  #   echo '<line>' | base64 -d | xz -d > input; build-fuzz/fuzz/fuzz_<h> input
  {
    echo "fuzz.sh: a harness failed; add its input to fuzz/regressions/<parser>/ with the fix"
    for h in $HARNESSES; do
      [ "$(cat "$WORK/$h/rc")" = 0 ] && continue
      grep -H -m3 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|SUMMARY' \
        "$BUILD/crashes/$h/log.txt" || true
    done
    for f in $all_kept; do
      echo "fuzz.sh: input $f ($(stat -c %s "$f") bytes), xz | base64:"
      xz -9 -c "$f" | base64 -w0
      echo
    done
  } | tee "$BUILD/failure.txt" >&2
  exit 1
fi
