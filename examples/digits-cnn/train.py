#!/usr/bin/python3
"""Trains the bundled digits CNN on scikit-learn's 8x8 digits data and exports it with torch.onnx.export.

Outputs (next to this script): model.onnx, eval.safetensors, expected.json.
Data: sklearn.datasets.load_digits (UCI optical recognition of handwritten digits, bundled with scikit-learn).
Run: /usr/bin/python3 examples/digits-cnn/train.py   (under a minute on 2 cores; deterministic).
"""

import argparse
import json
import os
import sys

# Single-threaded: the model is tiny, so extra threads only add barrier stalls on a shared machine, and a fixed
# thread count keeps the reduction order (hence the committed bytes) reproducible.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))
from numpy_onnx_eval import run_model  # noqa: E402
from safetensors_lite import read_safetensors, write_safetensors  # noqa: E402

SEED = 20240607
EPOCHS = 40
BATCH = 64
LR = 1e-2
# HardSwish only exists as an ONNX op from opset 14; at opset 13 torch exports it as HardSigmoid + Mul.
OPSET = 14
REFERENCE_COUNT = 16


class DigitsCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.bn3 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))          # [N,16,8,8]
        x = F.hardswish(self.bn2(self.conv2(x)))     # [N,32,4,4]
        x = F.relu(self.bn3(self.conv3(x)))          # [N,32,4,4]
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)                            # logits [N,10]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=HERE)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # pixel values 0..16 -> 0..1
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(images, labels, test_size=0.25, random_state=SEED,
                                                        stratify=labels)

    model = DigitsCnn()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    gen = torch.Generator().manual_seed(SEED)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            loss = F.cross_entropy(model(xt[idx]), yt[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if epoch % 10 == 0 or epoch == EPOCHS - 1:
            print(f"epoch {epoch:3d} train loss {total / len(xt):.4f}", flush=True)
    model.eval()

    with torch.no_grad():
        train_acc = (model(xt).argmax(1) == yt).float().mean().item()
        test_logits = model(torch.from_numpy(x_test)).numpy()
    test_acc = float((test_logits.argmax(1) == y_test).mean())
    print(f"train accuracy {train_acc:.4f}, test accuracy {test_acc:.4f} ({len(y_test)} held-out images)")

    # Eval-mode export normally folds each BatchNormalization into the preceding Conv (the ONNX "eval peephole").
    # TrainingMode.PRESERVE skips that pass while the module is still in eval mode, so the graph keeps real
    # BatchNormalization nodes (inference form, running statistics) for our own folding pass to handle.
    model_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(model, torch.from_numpy(x_test[:1]), model_path, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    onnx_model = onnx.load(model_path)
    onnx.checker.check_model(onnx_model, full_check=True)
    ops = [n.op_type for n in onnx_model.graph.node]
    for required in ("BatchNormalization", "HardSwish", "Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm"):
        if required not in ops:
            raise SystemExit(f"exported graph lacks {required}: {ops}")
    for node in onnx_model.graph.node:
        if node.op_type == "BatchNormalization" and (len(node.output) != 1 or any(
                a.name == "training_mode" and a.i for a in node.attribute)):
            raise SystemExit(f"BatchNormalization {node.name} was exported in training form")

    # The ONNX graph, run by an independent NumPy interpreter, must reproduce torch on every eval image.
    (onnx_logits,) = run_model(onnx_model, {"input": x_test})
    max_diff = float(np.abs(onnx_logits - test_logits).max())
    onnx_acc = float((onnx_logits.argmax(1) == y_test).mean())
    print(f"onnx vs torch max |diff| {max_diff:.3g}; onnx test accuracy {onnx_acc:.4f}")
    if max_diff > 1e-4 or onnx_acc != test_acc:
        raise SystemExit("ONNX export does not match torch")

    eval_path = os.path.join(args.out, "eval.safetensors")
    write_safetensors(eval_path, {"inputs": x_test, "labels": y_test,
                                  "reference_logits": test_logits[:REFERENCE_COUNT].astype(np.float32)},
                      metadata={"description": "held-out sklearn digits (pixels/16), labels, torch FP32 logits "
                                               "of the first 16 inputs"})
    loaded, _ = read_safetensors(eval_path)
    assert np.array_equal(loaded["inputs"], x_test) and np.array_equal(loaded["labels"], y_test)

    histogram = {}
    for op in ops:
        histogram[op] = histogram.get(op, 0) + 1
    expected = {
        "description": "Reference metrics of model.onnx on eval.safetensors. accuracy = mean(argmax(logits) == "
                       "labels) over all held-out images; reference_logits are torch FP32 outputs for inputs[:16].",
        "eval_set": {"file": "eval.safetensors", "images": int(len(y_test)), "input_shape": [1, 8, 8],
                     "input_scale": "pixel / 16", "classes": 10},
        "test_accuracy": round(test_acc, 6),
        "test_correct": int((test_logits.argmax(1) == y_test).sum()),
        "train_accuracy": round(train_acc, 6),
        "onnx_vs_torch_max_abs_diff": max_diff,
        "reference_outputs": {"tensor": "reference_logits", "count": REFERENCE_COUNT},
        "onnx": {"opset": OPSET, "ops": histogram, "inputs": ["input"], "outputs": ["logits"]},
        "training": {"data": "sklearn.datasets.load_digits (1797 images), stratified 75/25 split",
                     "split_seed": SEED, "epochs": EPOCHS, "batch": BATCH, "lr": LR, "optimizer": "Adam+cosine",
                     "torch": torch.__version__},
    }
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
