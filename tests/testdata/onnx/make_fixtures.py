"""Regenerates the committed ONNX fixtures in this directory with the onnx
python package (Debian python3-onnx 1.12), so the importer is also tested on
files it did not write itself.

Run from anywhere:  /usr/bin/python3 tests/testdata/onnx/make_fixtures.py

Values follow simple formulas that onnx_python_fixtures_test.cc recomputes:
  weight i of a tensor = i * 0.25 - 1   (float32)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def ramp(*shape):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float32) * 0.25 - 1).reshape(shape)


def save(model, name, **kwargs):
    onnx.checker.check_model(model)
    onnx.save_model(model, os.path.join(HERE, name), **kwargs)


def paddle_constants():
    # Paddle2ONNX keeps weights in unnamed Constant nodes.
    w = helper.make_node("Constant", [], ["fc_w"], value=numpy_helper.from_array(ramp(4, 3)))
    b = helper.make_node("Constant", [], ["fc_b"], value=numpy_helper.from_array(ramp(3)))
    mm = helper.make_node("MatMul", ["x", "fc_w"], ["h"])
    add = helper.make_node("Add", ["h", "fc_b"], ["y"])
    graph = helper.make_graph(
        [w, b, mm, add], "paddle_constants",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    model = helper.make_model(graph, producer_name="PaddlePaddle",
                              opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    save(model, "paddle_constants.onnx")


def external_by_onnx():
    w = numpy_helper.from_array(ramp(16, 8), "w")
    b = numpy_helper.from_array(ramp(8), "b")
    mm = helper.make_node("MatMul", ["x", "w"], ["h"], name="mm")
    add = helper.make_node("Add", ["h", "b"], ["y"], name="add")
    graph = helper.make_graph(
        [mm, add], "external_by_onnx",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        initializer=[w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(HERE, "external_by_onnx.data")
    if os.path.exists(path):
        os.remove(path)  # onnx appends to an existing data file
    save(model, "external_by_onnx.onnx", save_as_external_data=True,
         all_tensors_to_one_file=True, location="external_by_onnx.data",
         size_threshold=0)


def fp16_helper():
    # helper.make_tensor stores float16 as bit patterns in int32_data.
    vals = ramp(6).astype(np.float16)
    w = helper.make_tensor("w16", TensorProto.FLOAT16, [6], vals)
    add = helper.make_node("Add", ["x", "w16"], ["y"], name="add")
    graph = helper.make_graph(
        [add], "fp16_helper",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [6])],
        initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, "fp16_helper.onnx")


def if_subgraph():
    bias = helper.make_node("Constant", [], ["bias"], value=numpy_helper.from_array(ramp(4)))
    then_add = helper.make_node("Add", ["x", "bias"], ["t"])
    then_g = helper.make_graph([bias, then_add], "then_g", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
    else_neg = helper.make_node("Neg", ["x"], ["e"])
    else_g = helper.make_graph([else_neg], "else_g", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])])
    node = helper.make_node("If", ["c"], ["y"], name="branch",
                            then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph(
        [node], "if_subgraph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    save(model, "if_subgraph.onnx")


if __name__ == "__main__":
    paddle_constants()
    external_by_onnx()
    fp16_helper()
    if_subgraph()
    print("fixtures written to", HERE)
