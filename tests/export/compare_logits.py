#!/usr/bin/python3
"""Compares slimpack's logits (an .npz from `slimpack run`, entry "logits",
[batch, seq, vocab]) with llama.cpp's (llama_logits.mjs's raw .f32 output,
[sequence][position][vocab]) and prints one line:
  <label> max_abs=... rel_rms=... top1=...
rel_rms is the RMS of the difference over the RMS of slimpack's logits.
Exits 1 when rel_rms > --max-rel-rms or top-1 agreement < --min-top1."""
import argparse
import json
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("theirs")
    ap.add_argument("--label", default="")
    ap.add_argument("--max-rel-rms", type=float, required=True)
    ap.add_argument("--min-top1", type=float, required=True)
    a = ap.parse_args()
    ours = np.load(a.ours)["logits"].astype(np.float64)
    meta = json.load(open(a.theirs + ".json"))
    theirs = np.fromfile(a.theirs, dtype="<f4").astype(np.float64)
    if theirs.size != ours.size or meta["n_vocab"] != ours.shape[2]:
        print(f"{a.label} size mismatch: ours {ours.shape}, llama.cpp {theirs.size} values"
              f" with n_vocab {meta['n_vocab']}")
        return 1
    theirs = theirs.reshape(ours.shape)
    diff = ours - theirs
    rel = np.sqrt(np.mean(diff ** 2)) / np.sqrt(np.mean(ours ** 2))
    top1 = np.mean(ours.argmax(-1) == theirs.argmax(-1))
    ok = rel <= a.max_rel_rms and top1 >= a.min_top1
    print(f"{a.label} max_abs={np.abs(diff).max():.4g} rel_rms={rel:.4g} top1={top1:.4f}"
          f" (limits rel_rms<={a.max_rel_rms} top1>={a.min_top1}) {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
