#!/usr/bin/env python3
"""Compares ONNX Runtime's cached generation (tests/export/ort_kv_generate.mjs)
with `slimpack run` of the same model over the whole generated sequence
(slimpack's interpreter on its full-sequence decoder graph, no cache):

  logits  every row of ORT's stepwise logits (the prompt run's rows, then one
          per cached step) against slimpack's row at the same position:
          max|ort - ours| / max|ours| <= --max-rel over all rows;
  greedy  slimpack's arg-max at positions P-1 .. P+S-2 equals the token ORT
          chose there, so slimpack's own greedy decoding from the prompt
          produces the same S tokens (greedy is a function of these rows);
  no-cache  ORT's one-run recomputation of the sequence (empty past) against
          its stepwise logits and its final present.* against the stepwise
          run's last cache, same bound;
  padding  a prompt left-padded by 2 in a batch of two against the same
          tokens unpadded alone, in ORT, same bound.

usage: compare_kv_generate.py ORT_DIR OURS.npz --prompt-len P --steps S --label NAME
                              [--max-rel R] [--layers L]
Prints one line per check; exit 1 on a failed check or a missing file.
"""
import argparse
import os
import sys

import numpy as np


def rel_diff(x, ref):
    x = x.astype(np.float64)
    ref = ref.astype(np.float64)
    return float(np.max(np.abs(x - ref))) / max(float(np.max(np.abs(ref))), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ort_dir")
    ap.add_argument("ours")
    ap.add_argument("--prompt-len", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--max-rel", type=float, default=1e-4)
    ap.add_argument("--layers", type=int, required=True)
    a = ap.parse_args()
    p, s = a.prompt_len, a.steps
    d = a.ort_dir
    for f in ["tokens.npy", "cached_logits.npy", "full_logits.npy", "padded_logits.npy",
              "unpadded_logits.npy"]:
        if not os.path.exists(os.path.join(d, f)):
            print(f"FAIL {a.label}: ONNX Runtime wrote no {f} in {d}")
            return 1
    tokens = np.load(os.path.join(d, "tokens.npy")).reshape(-1)
    cached = np.load(os.path.join(d, "cached_logits.npy"))
    full = np.load(os.path.join(d, "full_logits.npy"))
    ours = np.load(a.ours)["logits"]
    ok = True
    if tokens.size != p + s or ours.shape[:2] != (1, p + s) or cached.shape != ours.shape[1:]:
        print(f"FAIL {a.label}: sizes: tokens {tokens.size} (prompt {p} + {s} steps), "
              f"slimpack logits {ours.shape}, ORT cached logits {cached.shape}")
        return 1
    ours = ours[0]

    worst = int(np.argmax(np.max(np.abs(cached.astype(np.float64) - ours), axis=1)))
    rel = rel_diff(cached, ours)
    good = rel <= a.max_rel
    print(f"{'ok  ' if good else 'FAIL'} {a.label}: ORT logits of the prompt run and {s} cached steps vs "
          f"slimpack's full-sequence logits: max|diff|/max|ours| {rel:.3g} (bound {a.max_rel:g}; "
          f"worst row {worst}, {'prompt' if worst < p else 'step ' + str(worst - p + 1)})")
    ok = ok and good

    picked = np.argmax(ours[p - 1:p + s - 1], axis=1)
    generated = tokens[p:]
    same = int(np.sum(picked == generated))
    top2 = np.sort(ours[p - 1:p + s - 1], axis=1)[:, -2:]
    margin = float(np.min(top2[:, 1] - top2[:, 0]))
    good = same == s
    first = "" if good else f", first difference at step {int(np.argmax(picked != generated)) + 1}"
    print(f"{'ok  ' if good else 'FAIL'} {a.label}: greedy tokens, slimpack's arg-max equals ORT's cached "
          f"choice {same}/{s}{first} (smallest top-2 logit margin {margin:.3g}); tokens "
          f"{' '.join(str(int(t)) for t in generated)}")
    ok = ok and good

    rel = rel_diff(full, cached)
    good = rel <= a.max_rel
    print(f"{'ok  ' if good else 'FAIL'} {a.label}: ORT one-run recomputation vs its cached steps: "
          f"logits max|diff|/max|cached| {rel:.3g} (bound {a.max_rel:g})")
    ok = ok and good
    worst_present = 0.0
    for layer in range(a.layers):
        for kind in ("key", "value"):
            name = f"present.{layer}.{kind}.npy"
            try:
                c = np.load(os.path.join(d, "cached_" + name))
                f = np.load(os.path.join(d, "full_" + name))
            except OSError as e:
                print(f"FAIL {a.label}: {e}")
                return 1
            if c.shape != f.shape:
                print(f"FAIL {a.label}: {name} shape {c.shape} (cached) vs {f.shape} (one run)")
                return 1
            worst_present = max(worst_present, rel_diff(c, f))
    good = worst_present <= a.max_rel
    print(f"{'ok  ' if good else 'FAIL'} {a.label}: final present.* of the cached steps vs the one run: "
          f"max|diff|/max|one run| {worst_present:.3g} over {2 * a.layers} tensors (bound {a.max_rel:g})")
    ok = ok and good

    padded = np.load(os.path.join(d, "padded_logits.npy"))
    unpadded = np.load(os.path.join(d, "unpadded_logits.npy"))
    rel = rel_diff(padded, unpadded) if padded.shape == unpadded.shape else float("inf")
    good = rel <= a.max_rel
    print(f"{'ok  ' if good else 'FAIL'} {a.label}: left padding: the padded row of a batch of two vs "
          f"the same {unpadded.shape[0]} tokens alone: max|diff|/max|alone| {rel:.3g} (bound {a.max_rel:g})")
    ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
