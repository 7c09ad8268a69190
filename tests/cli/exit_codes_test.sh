#!/usr/bin/env bash
# Exit codes: 0 ok, 1 failed on input, 2 usage; --help of every subcommand shows an example.
set -u
SLIMPACK="$1"
ROOT="$2"
fail=0
expect() {  # expect CODE DESCRIPTION -- ARGS...
  local want="$1" what="$2"
  shift 3
  "$SLIMPACK" "$@" >/tmp/slimpack_cli_out.$$ 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: slimpack $* exited $got, expected $want"
    cat /tmp/slimpack_cli_out.$$
    fail=1
  else
    echo "ok: $what (exit $got)"
  fi
}
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP" /tmp/slimpack_cli_out.$$' EXIT
printf 'not a model' > "$TMP/garbage.bin"
: > "$TMP/empty.onnx"

expect 2 "no subcommand" --
expect 2 "unknown subcommand" -- frobnicate
expect 2 "inspect without MODEL" -- inspect
expect 2 "unknown flag" -- inspect --bogus "$ROOT/examples/digits-cnn/model.onnx"
expect 1 "missing file" -- inspect "$TMP/does-not-exist.onnx"
expect 1 "unrecognised file" -- inspect "$TMP/garbage.bin"
expect 1 "empty onnx" -- inspect "$TMP/empty.onnx"
expect 0 "inspect onnx example" -- inspect "$ROOT/examples/digits-cnn/model.onnx"
expect 0 "inspect hf example" -- inspect --json "$ROOT/examples/tiny-llama"
expect 0 "help" -- --help
# SLIMPACK_CPU_MAX (support/cpu_features.h) caps the kernels' instruction
# sets; a value it does not know ends the run, naming it, before any work.
SLIMPACK_CPU_MAX=avx3 "$SLIMPACK" --version >"$TMP/cap.out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "SLIMPACK_CPU_MAX='avx3': expected avx512, avx2 or sse2" "$TMP/cap.out"; then
  echo "ok: unknown SLIMPACK_CPU_MAX refused (exit 2)"
else
  echo "FAIL: SLIMPACK_CPU_MAX=avx3 exited $rc:"; cat "$TMP/cap.out"; fail=1
fi
SLIMPACK_CPU_MAX=sse2 "$SLIMPACK" --version >"$TMP/cap.out" 2>&1
if grep -q "gemm micro-kernel: sse2-exact-fma)" "$TMP/cap.out"; then
  echo "ok: SLIMPACK_CPU_MAX=sse2 picks the SSE2 GEMM kernel"
else
  echo "FAIL: SLIMPACK_CPU_MAX=sse2 --version:"; cat "$TMP/cap.out"; fail=1
fi

# A FIFO without a known extension is sniffed without waiting for a writer:
# refused at once, not hung (timeout's 124 would show a hang).
mkfifo "$TMP/model-fifo"
timeout 20 "$SLIMPACK" inspect "$TMP/model-fifo" >"$TMP/fifo.out" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "model-fifo: unrecognised input" "$TMP/fifo.out"; then
  echo "FAIL: inspect on a FIFO exited $rc"; cat "$TMP/fifo.out"; fail=1
else
  echo "ok: FIFO input refused without waiting (exit 1)"
fi

# The error for a missing file names it.
"$SLIMPACK" inspect "$TMP/does-not-exist.onnx" 2>&1 | grep -q "does-not-exist.onnx" \
  || { echo "FAIL: missing-file error does not name the file"; fail=1; }
for sub in inspect convert verify eval run calibrate; do
  "$SLIMPACK" "$sub" --help | grep -q "Example" \
    || { echo "FAIL: '$sub --help' shows no example"; fail=1; }
done
if [ $fail -ne 0 ]; then echo "cli exit codes: FAILED"; exit 1; fi
echo "cli exit codes: all passed"
