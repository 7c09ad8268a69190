# Helpers shared by the `slimpack` end-to-end shell tests (sourced, not run).
# The sourcing script sets SLIMPACK (the binary), OUT (a file that receives
# the last command's stdout+stderr) and fail=0, and ends with `exit $fail`.

# bad MESSAGE: reports a failure and makes the script fail at the end.
bad() { echo "FAIL: $*"; fail=1; }

# expect CODE DESCRIPTION -- ARGS...: runs `$SLIMPACK ARGS...` into $OUT and
# checks its exit code (the output is shown on a mismatch).
expect() {
  local want="$1" what="$2"
  shift 3
  local t0=$SECONDS
  "$SLIMPACK" "$@" >"$OUT" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    bad "$what: slimpack $* exited $got, expected $want"
    cat "$OUT"
  else
    # The seconds each command took: where a long CLI test spends its time.
    echo "ok: $what (exit $got, $((SECONDS - t0)) s)"
  fi
}

# says PATTERN DESCRIPTION: the last command's output contains PATTERN.
says() { grep -qF -- "$1" "$OUT" || { bad "$2: output lacks '$1'"; cat "$OUT"; }; }
