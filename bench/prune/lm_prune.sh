#!/usr/bin/env bash
# Perplexity of the bundled LM (examples/tiny-llama, all 256 eval windows of
# 64 tokens) after structured pruning of the MLP at 10/20/30 % with the l2,
# activation and loss criteria, with and without the least-squares refit,
# plus one per-layer rules example. Prints a Markdown table (README
# "Structured pruning of the bundled LM").
# usage: bench/prune/lm_prune.sh SLIMPACK_BINARY [CALIB_SAMPLES]
set -eu
SLIMPACK="$1"
SAMPLES="${2:-16}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LLAMA="$ROOT/examples/tiny-llama"
CALIB="$LLAMA/calib_tokens.npy"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

ppl() {  # ppl ARTIFACT -> perplexity
  "$SLIMPACK" eval "$1" --tokens "$LLAMA/eval_tokens.npy" --window 64 --json --threads 2 |
    python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["perplexity"])'
}
params() {  # params ARTIFACT -> parameters after pruning
  python3 -c 'import json,sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
print([p for p in m["producer"]["passes"] if p["name"] == "prune"][0]["stats"]["parameters_after"])' "$1"
}
prune() {  # prune OUT ARGS...
  local out="$1"; shift
  "$SLIMPACK" convert "$LLAMA" -o "$out" --calib "$CALIB" --calib-samples "$SAMPLES" \
    --threads 2 --force "$@" >/dev/null 2>&1
}

echo "FP32: $(ppl "$LLAMA")"
echo
echo "| MLP ratio | parameters after | l2 | l2 + refit | activation | activation + refit | loss | loss + refit |"
echo "|---|---|---|---|---|---|---|---|"
for ratio in 0.1 0.2 0.3; do
  row="| $ratio |"
  first=1
  for crit in l2 activation loss; do
    for refit in "" "--prune-refit"; do
      prune "$TMP/a" --prune "$ratio" --prune-target mlp --prune-criterion "$crit" $refit
      if [ $first = 1 ]; then row="$row $(params "$TMP/a") |"; first=0; fi
      row="$row $(ppl "$TMP/a") |"
    done
  done
  echo "$row"
done

# Per-layer rules: first and last layer whole, 30 % of the middle MLPs.
cat > "$TMP/rules.json" <<'JSON'
[{"match": "layers\\.(0|3)\\.", "target": "both", "ratio": 0},
 {"match": "layers\\.", "target": "mlp", "ratio": 0.3}]
JSON
echo
for crit in activation loss; do
  prune "$TMP/r" --prune-rules "$TMP/rules.json" --prune-criterion "$crit" --prune-refit
  echo "rules (layers 0,3 whole; 1,2 MLP 30 %), $crit + refit: $(params "$TMP/r") parameters, ppl $(ppl "$TMP/r")"
done
# Budget: the same parameter count as the rules example, chosen globally.
for crit in activation loss; do
  prune "$TMP/b" --prune-budget-params "$(params "$TMP/r")" --prune-target mlp \
    --prune-criterion "$crit" --prune-refit
  echo "budget $(params "$TMP/r") params (MLP), $crit + refit: $(params "$TMP/b") parameters, ppl $(ppl "$TMP/b")"
done
