#!/usr/bin/python3
"""Brute-force NumPy reference for the entropy (KL) calibration threshold.

Writes entropy_reference.json: folded |x| histograms of several shapes and,
for each, the threshold bin a brute-force search picks: every candidate i
from `levels` to the last occupied bin is tried (no candidate striding; the
histograms are small enough that slimpack tries every one too), P is the
first i bins with the clipped mass folded into bin i-1, Q merges P's bins
into `levels` groups (integer split g*i//levels) and spreads each group's
mass evenly over its occupied bins, both are normalised, Q's empty bins
where P is not get eps = 1e-4 taken evenly from its non-empty bins (MXNet's
_smooth_distribution), and the smallest KL(P||Q) wins (first on ties).
Written with NumPy array operations, independently of
calibration/range_methods.cc, which tests/calibration/range_methods_test.cc
checks against this file.

  /usr/bin/python3 tests/testdata/calibration/make_entropy_reference.py
"""
import json
import os

import numpy as np

EPS = 1e-4


def kl(p, q):
    p_sum, q_sum = p.sum(), q.sum()
    if p_sum == 0 or q_sum == 0:
        return np.inf
    zero = q == 0
    n_zero, n_nonzero = int(zero.sum()), int((~zero).sum())
    take = EPS * n_zero / n_nonzero if n_nonzero else 0.0
    qn = np.where(zero, EPS, q / q_sum - take)
    qn = np.where(qn <= 0, EPS, qn)
    pn = p / p_sum
    m = p > 0
    return float(np.sum(pn[m] * np.log(pn[m] / qn[m])))


def threshold_bin(counts, levels):
    counts = np.asarray(counts, dtype=np.float64)
    last = int(np.nonzero(counts)[0][-1]) + 1
    if last <= levels:
        return last, []
    best, best_i, kls = np.inf, last, []
    for i in range(levels, last + 1):
        p = counts[:i].copy()
        p[i - 1] += counts[i:].sum()
        q = np.zeros(i)
        for g in range(levels):
            b, e = g * i // levels, (g + 1) * i // levels
            seg = counts[b:e]
            nz = seg != 0
            if nz.any():
                q[b:e][nz] = seg.sum() / nz.sum()
        d = kl(p, q)
        kls.append(d)
        if d < best:
            best, best_i = d, i
    return best_i, kls


def folded(values, bins, top):
    h, _ = np.histogram(np.abs(values), bins=bins, range=(0.0, top))
    return h


def main():
    rng = np.random.default_rng(19)
    cases = []
    shapes = {
        "gaussian": rng.standard_normal(100000),
        "gaussian_outliers": np.concatenate([rng.standard_normal(100000), [40.0] * 8]),
        "laplace": rng.laplace(size=100000),
        "bimodal": np.concatenate([rng.normal(-3, 0.5, 50000), rng.normal(3, 0.5, 50000)]),
        "relu_like": np.maximum(rng.standard_normal(100000), 0) ** 1.5,
        "sparse_spikes": np.concatenate([rng.standard_normal(2000) * 0.1,
                                         rng.choice([1.0, 2.5, 7.0], 300)]),
    }
    for name, v in shapes.items():
        for bins, levels in ((400, 128), (600, 255)):
            top = float(np.abs(v).max()) * 1.0001
            counts = folded(v, bins, top)
            best_i, kls = threshold_bin(counts, levels)
            # The runner-up's KL, so the test can tell a near-tie from a bug.
            runner = sorted(kls)[1] if len(kls) > 1 else None
            cases.append({"name": f"{name}_{bins}_{levels}", "counts": counts.tolist(),
                          "bin_width": top / bins, "levels": levels,
                          "threshold_bin": best_i, "best_kl": min(kls) if kls else None,
                          "runner_up_kl": runner})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "entropy_reference.json")
    with open(out, "w") as f:
        json.dump({"generator": "make_entropy_reference.py", "cases": cases}, f)
    for c in cases:
        print(c["name"], c["threshold_bin"], c["best_kl"], c["runner_up_kl"])


if __name__ == "__main__":
    main()
