#!/usr/bin/env bash
# Structured channel pruning of the bundled digits CNN: parameters removed
# and top-1 accuracy on the 450 held-out images for l1 / l2 / activation at
# 10 / 20 / 30 %, with and without least-squares refit (calibrated on
# calib.npz, 128 training images). Parameters are the artifact's (after the
# default fusion passes fold BatchNorm into the convs). Prints a markdown table.
# usage: bench/prune/prune_cnn.sh [SLIMPACK]   (default build/cli/slimpack)
set -eu
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SLIMPACK="${1:-$ROOT/build/cli/slimpack}"
CNN="$ROOT/examples/digits-cnn"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

/usr/bin/python3 -c "
import json, struct, numpy as np
b = open('$CNN/eval.safetensors', 'rb').read()
n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
def get(k, dt):
    s, e = h[k]['data_offsets']
    return np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(h[k]['shape'])
np.savez('$TMP/in.npz', input=get('inputs', np.float32))
np.save('$TMP/labels.npy', get('labels', np.int64))
"
row() {  # criterion ratio refit(0/1)
  local out="$TMP/m" args=()
  rm -rf "$out"
  if [ "$2" != "0" ]; then
    args=(--prune "$2" --prune-criterion "$1")
    [ "$3" = 1 ] && args+=(--prune-refit)
    { [ "$1" = activation ] || [ "$3" = 1 ]; } && args+=(--calib "$CNN/calib.npz")
  fi
  "$SLIMPACK" convert "$CNN/model.onnx" -o "$out" "${args[@]}" >/dev/null 2>&1
  "$SLIMPACK" run "$out" --inputs "$TMP/in.npz" -o "$TMP/logits.npz" >/dev/null 2>&1
  /usr/bin/python3 -c "
import json, numpy as np
m = json.load(open('$out/manifest.json'))
params = sum(int(np.prod(t['shape'])) for t in m['tensors'])
if '$2' == '0': open('$TMP/base_params', 'w').write(str(params))
before = int(open('$TMP/base_params').read())
l = np.load('$TMP/logits.npz')['logits']; y = np.load('$TMP/labels.npy')
ok = int((l.argmax(1) == y).sum())
print('| $1 | $2 | %s | %d -> %d (-%.1f %%) | %d/450 (%.2f %%) |' % (
    'yes' if '$3' == '1' else 'no', before, params, 100.0 * (before - params) / before, ok,
    100.0 * ok / 450))
"
}
echo "| criterion | ratio | refit | artifact parameters | top-1 |"
echo "|---|---|---|---|---|"
row none 0 0
for c in l1 l2 activation; do
  for r in 0.1 0.2 0.3; do
    for f in 0 1; do row "$c" "$r" "$f"; done
  done
done
