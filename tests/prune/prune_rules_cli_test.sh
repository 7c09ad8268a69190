#!/usr/bin/env bash
# `slimpack convert` with --prune-rules / --prune-budget-params /
# --prune-criterion loss on the bundled LM, end to end: usage and rule-file
# errors (naming the file, rule index, key and value), a per-layer pruned
# artifact whose config.json holds per-layer lists that `slimpack eval`
# builds and scores, a recorded recipe that reproduces it, a budget that is
# met, and `slimpack report` showing the per-layer kept ratios.
# usage: prune_rules_cli_test.sh SLIMPACK REPO_ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
LLAMA="$ROOT/examples/tiny-llama"
CALIB="$LLAMA/calib_tokens.npy"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
OUT="$TMP/out.txt"
fail=0
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"
py() { /usr/bin/python3 -c "$@"; }

# Usage and rule-file errors.
expect 2 "budget not a number" -- convert "$LLAMA" -o "$TMP/x" --prune-budget-params abc
says "--prune-budget-params" "names the flag"; says "abc" "names the value"
expect 2 "ratio and budget" -- convert "$LLAMA" -o "$TMP/x" --prune 0.2 --prune-budget-params 0.8
says "exclude each other" "says why"
expect 2 "loss without calib" -- convert "$LLAMA" -o "$TMP/x" --prune 0.2 --prune-criterion loss
says "--prune-criterion loss" "names the criterion"; says "--calib" "names --calib"
expect 1 "missing rules file" -- convert "$LLAMA" -o "$TMP/x" --prune-rules "$TMP/none.json"
says "$TMP/none.json" "names the file"
printf '[{"match": "layers\\\\.0\\\\.", "ratio": 0}, {"match": "x", "target": "mlp", "keep": 1.5}]' \
  > "$TMP/bad.json"
expect 1 "rule value out of range" -- convert "$LLAMA" -o "$TMP/x" --prune-rules "$TMP/bad.json"
says "$TMP/bad.json" "names the file"; says "rules[1].keep" "names index and key"; says "1.5" "names the value"
[ -e "$TMP/x" ] && bad "errors wrote $TMP/x"

# First and last layer whole, half the KV heads in the middle, layer 1's MLP
# 30 %; other MLPs 10 % (--prune with --prune-target mlp), loss criterion.
cat > "$TMP/rules.json" <<'JSON'
[{"match": "layers\\.(0|3)\\.", "target": "both", "ratio": 0},
 {"match": "layers\\.", "target": "heads", "keep": 0.5},
 {"match": "layers\\.1\\.", "target": "mlp", "ratio": 0.3}]
JSON
expect 0 "per-layer rules" -- convert "$LLAMA" -o "$TMP/p" --prune 0.1 --prune-target mlp \
  --prune-rules "$TMP/rules.json" --prune-criterion loss --prune-refit --calib "$CALIB" \
  --calib-samples 4 --threads 1
says "stock Hugging Face transformers cannot load it" "warns about per-layer sizes"
py "
import json
m = json.load(open('$TMP/p/manifest.json'))
rec = [p for p in m['producer']['passes'] if p['name'] == 'prune'][0]
s = rec['stats']
assert [l['intermediate_kept'] for l in s['layers']] == [344, 241, 310, 344], s
assert [l['kv_heads_kept'] for l in s['layers']] == [2, 1, 1, 2], s
assert s['per_layer_config'] is True
assert len(m['producer']['recipe']['prune']['rules']) == 3
cfg = json.load(open('$TMP/p/config.json'))
assert cfg['intermediate_size_per_layer'] == [344, 241, 310, 344], cfg
assert cfg['num_key_value_heads_per_layer'] == [2, 1, 1, 2], cfg
assert cfg['num_attention_heads_per_layer'] == [4, 2, 2, 4], cfg
assert cfg['intermediate_size'] == 344 and cfg['num_key_value_heads'] == 2
" || bad "manifest / config.json of the per-layer artifact"
expect 0 "verify per-layer" -- verify "$TMP/p"
expect 0 "eval per-layer artifact" -- eval "$TMP/p" --tokens "$LLAMA/eval_tokens.npy" --window 64 --json
py "
import json, math
r = json.load(open('$OUT'))
assert math.isfinite(r['perplexity']) and 1 < r['perplexity'] < 20, r
" || bad "eval of the per-layer artifact"

# The recorded recipe (rules included) reproduces the artifact.
py "
import json
json.dump(json.load(open('$TMP/p/manifest.json'))['producer']['recipe'], open('$TMP/rec.json', 'w'))
"
expect 0 "recorded recipe" -- convert "$LLAMA" -o "$TMP/p2" --recipe "$TMP/rec.json" --calib "$CALIB" \
  --threads 2
py "
import json
a = json.load(open('$TMP/p/manifest.json')); b = json.load(open('$TMP/p2/manifest.json'))
assert a['tensors'] == b['tensors'] and a['shards'] == b['shards'] and a['carried_files'] == b['carried_files']
" || bad "recipe re-run (2 threads) differs"

# A parameter budget (fraction kept) is met.
expect 0 "budget" -- convert "$LLAMA" -o "$TMP/b" --prune-budget-params 0.9 --prune-target mlp
py "
import json
s = [p for p in json.load(open('$TMP/b/manifest.json'))['producer']['passes'] if p['name'] == 'prune'][0]['stats']
assert s['parameters_after'] <= round(0.9 * s['parameters_before']), s
assert s['parameters_after'] > round(0.9 * s['parameters_before']) - 384, s
" || bad "budget not met"

# The report shows the candidate's per-layer kept ratios.
expect 0 "report" -- report --reference "$LLAMA" --candidate "$TMP/p" --data "$LLAMA/eval.safetensors" \
  --max-runs 1 --sensitivity-runs 0 -o "$TMP/r"
py "
import json
p = json.load(open('$TMP/r/report.json'))['pruning']
assert p['criterion'] == 'loss' and p['refit'] is True, p
assert [round(l['mlp_kept_ratio'], 6) for l in p['layers']] == [1.0, round(241/344, 6), round(310/344, 6), 1.0], p
assert [l['heads_kept_ratio'] for l in p['layers']] == [1.0, 0.5, 0.5, 1.0], p
assert p['parameters_removed'] == sum(l['parameters_removed'] for l in p['layers']) > 0, p
assert p['bytes_removed'] == 4 * p['parameters_removed'], p
" || bad "report.json pruning section"
grep -q "## Pruning (loss, mlp, refit)" "$TMP/r/report.md" || bad "report.md lacks the pruning table"
grep -q 'id="pruning"' "$TMP/r/report.html" || bad "report.html lacks the pruning table"

exit $fail
