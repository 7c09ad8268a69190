#!/usr/bin/python3
"""Writes calib_tokens.npy: 64 windows of 64 byte-level tokens from the tiny Llama's *training* split
(chapters the eval set never uses), for calibration-driven quantization (imatrix, GPTQ, AWQ) in
`slimpack convert --calib`. Deterministic: evenly spaced windows over the training token stream.

Usage: /usr/bin/python3 examples/tiny-llama/make_calib_tokens.py
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402  (reuses its text loading and tokenisation; torch is imported but unused)

WINDOWS = 64
SEQ = 64


def main():
    chapters, _ = train.load_chapters()
    train_chapters = [c for i, c in enumerate(chapters) if i % train.HELD_OUT_EVERY != train.HELD_OUT_PHASE]
    stream = train.to_stream(train_chapters)
    # Offset by half a window so these windows are not the ones the training sample metrics used.
    tokens = train.windows(stream[SEQ // 2:], SEQ, WINDOWS).astype(np.int64)
    out = os.path.join(HERE, "calib_tokens.npy")
    np.save(out, tokens)
    print(f"wrote {out}: {tokens.shape} int64")


if __name__ == "__main__":
    main()
