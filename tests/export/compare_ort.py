#!/usr/bin/env python3
"""Compares `slimpack run`'s outputs (an .npz) with ONNX Runtime's (a
directory of <output>.npy written by bench/ort/ort_run.mjs).

  float:  max|ours - ort| / max|ours| <= --max-rel, per output; for an output
          named 'logits' also the mean KL divergence of ORT's next-token
          distribution from ours <= 1e-4 and top-1 agreement >= 99.5 %
          (issue 15's bounds for int4 decoders; the relative bound is tighter)
  --w8a8: max|ours - ort| <= --max-steps output quantization steps, where a
          step is the output's observed range [min(lo, 0), max(hi, 0)] over
          this batch divided by 255 (the u8 grid a QuantizeLinear of the
          output would use); and the arg-max along the last axis (top-1)
          equal for every row. With --labels, prints both accuracies.

usage: compare_ort.py OURS.npz ORT_DIR --label NAME [--max-rel R | --w8a8 --max-steps S]
                      [--labels labels.npy]
Prints one line per output; exit 1 on a failed bound or a missing output.
"""
import argparse
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("ort_dir")
    ap.add_argument("--label", required=True)
    ap.add_argument("--max-rel", type=float, default=1e-4)
    ap.add_argument("--w8a8", action="store_true")
    ap.add_argument("--max-steps", type=float, default=1.0)
    ap.add_argument("--labels")
    a = ap.parse_args()
    ours = np.load(a.ours)
    ok = True
    if not ours.files:
        print(f"FAIL {a.label}: no outputs in {a.ours}")
        return 1
    for name in ours.files:
        path = os.path.join(a.ort_dir, name.replace("/", "_") + ".npy")
        if not os.path.exists(path):
            print(f"FAIL {a.label}: ONNX Runtime wrote no output '{name}' ({path})")
            ok = False
            continue
        x = ours[name].astype(np.float64)
        y = np.load(path).astype(np.float64)
        if x.shape != y.shape:
            print(f"FAIL {a.label}: output '{name}' shape {x.shape} (slimpack) vs {y.shape} (ORT)")
            ok = False
            continue
        diff = float(np.max(np.abs(x - y))) if x.size else 0.0
        if not a.w8a8:
            scale = max(float(np.max(np.abs(x))), 1e-30)
            rel = diff / scale
            good = rel <= a.max_rel
            extra = ""
            if name == "logits" and x.size:
                rows_x = x.reshape(-1, x.shape[-1])
                rows_y = y.reshape(-1, y.shape[-1])
                def log_softmax(r):
                    r = r - r.max(axis=1, keepdims=True)
                    return r - np.log(np.exp(r).sum(axis=1, keepdims=True))
                lp, lq = log_softmax(rows_x), log_softmax(rows_y)
                kld = float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))
                agree = float(np.mean(np.argmax(rows_x, 1) == np.argmax(rows_y, 1)))
                good = good and kld <= 1e-4 and agree >= 0.995
                extra = (f", mean KLD {kld:.3g} (bound 1e-4), top-1 agreement "
                         f"{agree * 100:.2f} % of {rows_x.shape[0]} rows (bound 99.5 %)")
            print(f"{'ok  ' if good else 'FAIL'} {a.label}: '{name}' max|diff| {diff:.3g}, "
                  f"relative {rel:.3g} (bound {a.max_rel:g}){extra}")
            ok = ok and good
            continue
        step = (max(float(x.max()), 0.0) - min(float(x.min()), 0.0)) / 255.0
        top_ours = np.argmax(x.reshape(-1, x.shape[-1]), axis=1)
        top_ort = np.argmax(y.reshape(-1, y.shape[-1]), axis=1)
        same = int(np.sum(top_ours == top_ort))
        good = diff <= a.max_steps * step and same == top_ours.size
        line = (f"{'ok  ' if good else 'FAIL'} {a.label}: '{name}' max|diff| {diff:.4g} = "
                f"{diff / step:.3f} output steps ({step:.4g}; bound {a.max_steps:g}), "
                f"top-1 equal {same}/{top_ours.size}")
        if a.labels:
            labels = np.load(a.labels).reshape(-1)
            line += (f", accuracy slimpack {np.mean(top_ours == labels):.4f} "
                     f"ORT {np.mean(top_ort == labels):.4f}")
        print(line)
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
