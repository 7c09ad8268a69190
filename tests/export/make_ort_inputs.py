#!/usr/bin/env python3
"""Inputs for ort_export_test.sh, from committed files only (numpy, no onnx):

  digits_eval.npz     input = the 450 held-out digits images [450,1,8,8]
  digits_labels.npy   their labels
  llama_tokens.npz    input_ids = 4 x 32 tokens of the tiny-llama eval set
  kv_prompt.npy       the first 16 tokens of its first eval row [1, 16] (BOS first)
  <fixture>.npz       each tests/testdata/models fixture's reference input
                      (inputs.<name> of <fixture>.io.safetensors)

usage: make_ort_inputs.py SOURCE_DIR OUT_DIR
"""
import json
import struct
import sys

import numpy as np

_DTYPES = {"F32": np.float32, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        raw = blob[8 + n + lo:8 + n + hi]
        out[name] = np.frombuffer(raw, dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def main():
    src, out = sys.argv[1], sys.argv[2]
    digits = read_safetensors(src + "/examples/digits-cnn/eval.safetensors")
    np.savez(out + "/digits_eval.npz", input=digits["inputs"].astype(np.float32))
    np.save(out + "/digits_labels.npy", digits["labels"].astype(np.int64))
    ids = np.load(src + "/examples/tiny-llama/eval_tokens.npy").reshape(-1)[:4 * 32]
    np.savez(out + "/llama_tokens.npz", input_ids=ids.astype(np.int64).reshape(4, 32))
    np.save(out + "/kv_prompt.npy", ids[:16].astype(np.int64).reshape(1, 16))
    for fixture in ("torch_mlp", "torch_encoder_block", "torch_llama_block", "paddle_style",
                    "paddle_hardswish_ln"):
        io = read_safetensors(f"{src}/tests/testdata/models/{fixture}.io.safetensors")
        feeds = {k[len("inputs."):]: v for k, v in io.items() if k.startswith("inputs.")}
        np.savez(f"{out}/{fixture}.npz", **feeds)


if __name__ == "__main__":
    main()
