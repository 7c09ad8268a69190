#!/usr/bin/env bash
# `slimpack convert --prune` end to end on the bundled LM: usage errors
# (exit 2 naming the flag / value), a pruned artifact whose manifest records
# the prune pass and recipe, whose carried config.json matches the pruned
# tensors, and that `slimpack eval` loads and scores; pruning before int4
# GPTQ; ratio 0 writes the same tensors as no pruning.
# usage: prune_cli_test.sh SLIMPACK REPO_ROOT
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

expect 2 "ratio out of range" -- convert "$LLAMA" -o "$TMP/x" --prune 1.5
says "--prune" "names the flag"; says "1.5" "names the value"
expect 2 "ratio not a number" -- convert "$LLAMA" -o "$TMP/x" --prune abc
says "abc" "names the value"
expect 2 "unknown criterion" -- convert "$LLAMA" -o "$TMP/x" --prune 0.2 --prune-criterion l3
says "--prune-criterion" "names the flag"; says "l3" "names the value"
expect 2 "activation without calib" -- convert "$LLAMA" -o "$TMP/x" --prune 0.2 --prune-criterion activation
says "--calib" "names --calib"
expect 2 "refit without calib" -- convert "$LLAMA" -o "$TMP/x" --prune 0.2 --prune-refit
says "--prune-refit" "names the flag"; says "--calib" "names --calib"
expect 2 "criterion without ratio" -- convert "$LLAMA" -o "$TMP/x" --prune-criterion l2
[ -e "$TMP/x" ] && bad "usage errors wrote $TMP/x"
expect 1 "not a decoder checkpoint" -- convert "$ROOT/examples/digits-cnn/eval.safetensors" -o "$TMP/x" --prune 0.2
says "config.json" "says what pruning needs"
[ -e "$TMP/x" ] && bad "a failed prune wrote $TMP/x"

# Half the KV heads and 25 % of the MLP, activation-aware with refit.
expect 0 "prune both" -- convert "$LLAMA" -o "$TMP/p" --prune 0.25 --prune-criterion activation \
  --prune-target both --prune-refit --calib "$CALIB" --calib-samples 4 -v
says "unprunable: hidden (residual stream)" "-v names the unprunable residual stream"
py "
import json, sys
m = json.load(open('$TMP/p/manifest.json'))
rec = [p for p in m['producer']['passes'] if p['name'] == 'prune']
assert len(rec) == 1, m['producer']['passes']
s = rec[0]['stats']
assert rec[0]['options']['criterion'] == 'activation' and rec[0]['options']['refit'] is True
assert [l['intermediate_kept'] for l in s['layers']] == [258] * 4, s
assert [l['kv_heads_kept'] for l in s['layers']] == [1] * 4, s
assert s['parameters_after'] < s['parameters_before'], s
assert m['producer']['recipe']['prune']['ratio'] == 0.25
cfg = json.load(open('$TMP/p/config.json'))
assert (cfg['intermediate_size'], cfg['num_attention_heads'], cfg['num_key_value_heads'], cfg['head_dim']) == (258, 2, 1, 32), cfg
assert cfg['hidden_size'] == 128 and cfg['vocab_size'] == 258
t = {x['name']: x for x in m['tensors']}
assert t['model.layers.0.mlp.down_proj.weight']['shape'] == [128, 258], t['model.layers.0.mlp.down_proj.weight']
assert t['model.layers.3.self_attn.q_proj.weight']['shape'] == [64, 128]
assert t['model.layers.3.self_attn.k_proj.weight']['shape'] == [32, 128]
assert t['model.layers.3.self_attn.o_proj.weight']['shape'] == [128, 64]
" || bad "manifest / config.json of the pruned artifact"
expect 0 "verify pruned" -- verify "$TMP/p"
expect 0 "eval pruned artifact" -- eval "$TMP/p" --tokens "$LLAMA/eval_tokens.npy" --window 64 --json
py "
import json
r = json.load(open('$OUT'))
assert r['windows'] == 256 and 1 < r['perplexity'] < 20, r
" || bad "eval of the pruned artifact"

# Pruning runs before quantization.
expect 0 "prune then gptq" -- convert "$LLAMA" -o "$TMP/q" --prune 0.2 --prune-target mlp \
  --quant int4 --algo gptq --calib "$CALIB" --calib-samples 4
py "
import json
m = json.load(open('$TMP/q/manifest.json'))
names = [p['name'] for p in m['producer']['passes']]
assert names.index('prune') < names.index('quantize-weights'), names
" || bad "prune record before quantize-weights"
expect 0 "eval pruned int4" -- eval "$TMP/q" --tokens "$LLAMA/eval_tokens.npy" --window 64

# Same tensors whatever the thread count (calibration runs in dataset order).
expect 0 "prune 1 thread" -- convert "$LLAMA" -o "$TMP/t1" --prune 0.2 --prune-target mlp \
  --prune-criterion activation --prune-refit --calib "$CALIB" --calib-samples 4 --threads 1
expect 0 "prune 2 threads" -- convert "$LLAMA" -o "$TMP/t2" --prune 0.2 --prune-target mlp \
  --prune-criterion activation --prune-refit --calib "$CALIB" --calib-samples 4 --threads 2
py "
import json
a = json.load(open('$TMP/t1/manifest.json')); b = json.load(open('$TMP/t2/manifest.json'))
assert a['tensors'] == b['tensors'] and a['shards'] == b['shards']
" || bad "pruned tensors differ across thread counts"

# The recorded recipe reproduces the artifact (the "prune" key reads back).
py "
import json
m = json.load(open('$TMP/t1/manifest.json'))
json.dump(m['producer']['recipe'], open('$TMP/recorded.json', 'w'))
" || bad "no recorded recipe"
expect 0 "recorded recipe reproduces" -- convert "$LLAMA" -o "$TMP/t3" --recipe "$TMP/recorded.json" \
  --calib "$CALIB" --threads 1
cmp -s "$TMP/t1/shard-00000.bin" "$TMP/t3/shard-00000.bin" || bad "recipe re-run differs"
printf '{"prune": {"ratio": 0.2, "citerion": "l2"}}' > "$TMP/badprune.json"
expect 1 "recipe with an unknown prune key" -- convert "$LLAMA" -o "$TMP/x" --recipe "$TMP/badprune.json"
says "prune.citerion" "names the key"

# Ratio 0: the same tensors as a plain convert.
expect 0 "plain" -- convert "$LLAMA" -o "$TMP/a"
expect 0 "ratio 0" -- convert "$LLAMA" -o "$TMP/b" --prune 0
py "
import json
a = json.load(open('$TMP/a/manifest.json')); b = json.load(open('$TMP/b/manifest.json'))
assert a['tensors'] == b['tensors'] and a['shards'] == b['shards']
assert not any(p['name'] == 'prune' for p in b['producer']['passes'])
" || bad "ratio 0 is not a no-op"
cmp -s "$TMP/a/config.json" "$TMP/b/config.json" || bad "ratio 0 changed config.json"

exit $fail
