#!/usr/bin/python3
"""Writes calib.npz: 128 images from the digits CNN's *training* split (never the eval set), as the array
`input` [128, 1, 8, 8] f32 the model's input takes, for static W8A8 calibration
(`slimpack convert model.onnx --quant w8a8 --calib calib.npz`). Same split as train.py; deterministic.

Usage: /usr/bin/python3 examples/digits-cnn/make_calib.py
"""
import os

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 1234  # train.py's split seed
COUNT = 128


def main():
    import importlib.util
    spec = importlib.util.spec_from_file_location("train", os.path.join(HERE, "train.py"))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    x_train, _, _, _ = train_test_split(images, labels, test_size=0.25, random_state=train.SEED, stratify=labels)
    calib = x_train[:COUNT]
    out = os.path.join(HERE, "calib.npz")
    np.savez(out, input=calib)
    print(f"wrote {out}: input {calib.shape} {calib.dtype}")


if __name__ == "__main__":
    main()
