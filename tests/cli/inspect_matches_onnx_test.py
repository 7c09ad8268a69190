"""Checks `slimpack inspect --json` against the onnx Python package.

For every ONNX fixture and example, the op histogram, parameter count and
bytes, default-domain opset and input/output names must equal what
scripts/fixtures/expected_inspect.py computes with `import onnx`.
"""
import glob
import json
import os
import subprocess
import sys


def main():
    slimpack, root = sys.argv[1], sys.argv[2]
    models = sorted(glob.glob(os.path.join(root, "tests/testdata/models/*.onnx")))
    models.append(os.path.join(root, "examples/digits-cnn/model.onnx"))
    if len(models) < 3:
        print(f"expected at least 3 ONNX fixtures, found {models}")
        return 1
    expected = json.loads(subprocess.run(
        [sys.executable, os.path.join(root, "scripts/fixtures/expected_inspect.py"), *models],
        check=True, capture_output=True, text=True).stdout)
    failures = 0
    for path in models:
        got = json.loads(subprocess.run([slimpack, "inspect", "--json", path], check=True,
                                        capture_output=True, text=True).stdout)
        # expected_inspect.py keys files by their path relative to the repo root.
        want = next(v for k, v in expected.items()
                    if os.path.abspath(os.path.join(root, k)) == os.path.abspath(path))
        checks = {
            "op_histogram": (got["op_histogram"], want["op_histogram"]),
            "parameter_count": (got["parameter_count"], want["parameter_count"]),
            "parameter_bytes": (got["parameter_bytes"], want["parameter_bytes"]),
            "opset": (got["opset"], want["opset"]),
            "inputs": ([v["name"] for v in got["inputs"]], want["inputs"]),
            "outputs": ([v["name"] for v in got["outputs"]], want["outputs"]),
        }
        for key, (g, w) in checks.items():
            if g != w:
                failures += 1
                print(f"FAIL {path}: {key}: slimpack {g!r} != onnx {w!r}")
        print(f"checked {os.path.relpath(path, root)}: {sum(got['op_histogram'].values())} nodes, "
              f"{got['parameter_count']} parameters")
    print(f"{len(models) * 6 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
