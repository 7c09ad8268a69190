"""Validates every model exported by onnx_export_fixtures with the onnx
package's own checker (full_check also runs strict shape inference) and
loads each tensor, including external data, through onnx.numpy_helper.

Usage: check_exported.py OUT_DIR MIN_MODELS
"""
import glob
import os
import sys

import onnx
import onnx.checker
import onnx.numpy_helper


def main():
    root, min_models = sys.argv[1], int(sys.argv[2])
    paths = sorted(p for p in glob.glob(os.path.join(root, "*", "model.onnx")))
    if len(paths) < min_models:
        print(f"expected at least {min_models} exported models, found {len(paths)}")
        return 1
    failures = 0
    for path in paths:
        try:
            # onnx 1.12 accepts a path here; with a path it also checks that
            # external data locations exist beside the model.
            onnx.checker.check_model(path, full_check=True)
            model = onnx.load(path)  # loads external data as well
            for tensor in model.graph.initializer:
                array = onnx.numpy_helper.to_array(tensor)
                expected = 1
                for d in tensor.dims:
                    expected *= d
                if array.size != expected:
                    raise ValueError(f"{tensor.name}: {array.size} elements, "
                                     f"expected {expected}")
            print(f"ok   {path}")
        except Exception as e:  # report every failing model, not just one
            failures += 1
            print(f"FAIL {path}: {type(e).__name__}: {e}")
    print(f"{len(paths) - failures}/{len(paths)} exported models pass onnx.checker")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
