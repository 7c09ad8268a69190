"""Writes the seed corpora of the fuzz harnesses (fuzz/corpus/<parser>/):
small valid files plus a few interesting near-misses, from the repository's
own fixtures where they exist. The loader's corpus is written by the
fuzz_make_loader_corpus target instead (fuzz/README.md).

Run from anywhere:  /usr/bin/python3 fuzz/make_corpus.py
(Debian python3-numpy and python3-onnx; the output is deterministic.)
"""
import io
import json
import os
import shutil
import struct
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")


def out_dir(parser):
    d = os.path.join(CORPUS, parser)
    if os.path.isdir(d):
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
    else:
        os.makedirs(d)
    return d


def write(parser_dir, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(parser_dir, name), "wb") as f:
        f.write(data)


def copy(parser_dir, src, name=None):
    shutil.copyfile(os.path.join(ROOT, src), os.path.join(parser_dir, name or os.path.basename(src)))


# --- prequantized (already-quantized checkpoints) -------------------------------

def make_prequantized():
    """One small linear (in 16, out 8) per config of fuzz/prequantized_fuzz.cc: the first byte
    is the config index, then the safetensors file as that library packs it."""
    d = out_dir("prequantized")
    rng = np.random.default_rng(18)

    def i32(a):
        return np.ascontiguousarray(a, np.uint32).view(np.int32).tobytes()

    def f16(shape):
        return (rng.uniform(0.01, 0.1, shape)).astype(np.float16).tobytes()

    def words(values, bits):  # little-endian bit string -> uint32 words
        stream = 0
        for k, v in enumerate(values):
            stream |= int(v) << (bits * k)
        n = len(values) * bits // 32
        return [(stream >> (32 * w)) & 0xFFFFFFFF for w in range(n)]

    def gptq(bits, group, g_idx=None):
        n_in, out = (32, 32) if bits == 3 else (16, 16) if bits == 2 else (16, 8)
        q = rng.integers(0, 1 << bits, (n_in, out))
        groups = -(-n_in // group)
        z = rng.integers(0, (1 << bits) - 1, (groups, out))
        qw = np.array([words(q[:, o], bits) for o in range(out)]).T
        qz = np.array([words(z[k], bits) for k in range(groups)])
        g = np.arange(n_in) // group if g_idx is None else np.asarray(g_idx)
        return [("m.g_idx", "I32", [n_in], g.astype(np.int32).tobytes()),
                ("m.qweight", "I32", list(qw.shape), i32(qw)),
                ("m.qzeros", "I32", list(qz.shape), i32(qz)),
                ("m.scales", "F16", [groups, out], f16((groups, out)))]

    actorder = np.concatenate([rng.permutation(16)]) // 4
    write(d, "gptq4_actorder", b"\x00" + safetensors_bytes(gptq(4, 4, actorder)))
    write(d, "gptq8_v2", b"\x01" + safetensors_bytes(gptq(8, 16)))
    write(d, "gptq3", b"\x02" + safetensors_bytes(gptq(3, 16)))
    write(d, "gptq2_v2", b"\x03" + safetensors_bytes(gptq(2, 8)))
    order = [0, 2, 4, 6, 1, 3, 5, 7]
    q = rng.integers(0, 16, (16, 8))
    z = rng.integers(0, 16, (4, 8))
    awq = [("m.qweight", "I32", [16, 1], i32([[words(r[order], 4)[0]] for r in q])),
           ("m.qzeros", "I32", [4, 1], i32([[words(r[order], 4)[0]] for r in z])),
           ("m.scales", "F16", [4, 8], f16((4, 8)))]
    write(d, "awq", b"\x04" + safetensors_bytes(awq))
    q = rng.integers(0, 16, (8, 16))
    ct = [("m.weight_packed", "I32", [8, 2], i32([words(r, 4) for r in q])),
          ("m.weight_scale", "F16", [8, 2], f16((8, 2))),
          ("m.weight_shape", "I64", [2], np.array([8, 16], np.int64).tobytes())]
    write(d, "ct_sym", b"\x05" + safetensors_bytes(ct))
    q = rng.integers(0, 256, (8, 16))
    z = rng.integers(0, 256, 8)
    ct8 = [("m.weight_packed", "I32", [8, 4], i32([words(r, 8) for r in q])),
           ("m.weight_scale", "F16", [8, 1], f16((8, 1))),
           ("m.weight_shape", "I64", [2], np.array([8, 16], np.int64).tobytes()),
           ("m.weight_zero_point", "I32", [2, 1], i32([[words(z[4 * r:4 * r + 4], 8)[0]] for r in range(2)]))]
    write(d, "ct8_asym", b"\x06" + safetensors_bytes(ct8))

    r = os.path.join(HERE, "regressions", "prequantized")
    os.makedirs(r, exist_ok=True)
    # weight_shape claiming 2^30 x 2^30 over an 8-byte packed tensor (an allocation bomb if the
    # shape were trusted before the packed size is checked).
    bomb = [("m.weight_packed", "I32", [1, 2], b"\0" * 8), ("m.weight_scale", "F16", [1, 1], b"\0\x3c"),
            ("m.weight_shape", "I64", [2], np.array([1 << 30, 1 << 30], np.int64).tobytes())]
    write(r, "known_weight_shape_bomb", b"\x05" + safetensors_bytes(bomb))
    write(r, "known_g_idx_out_of_range", b"\x00" + safetensors_bytes(gptq(4, 4, [7] * 16)))


# --- safetensors --------------------------------------------------------------

def safetensors_bytes(tensors, metadata=None, pad_to=8):
    """tensors: list of (name, dtype string, shape, raw bytes), stored in order."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % pad_to)
    return struct.pack("<Q", len(text)) + text + data


def make_safetensors():
    d = out_dir("safetensors")
    ramp = np.arange(6, dtype=np.float32) * 0.25 - 1
    write(d, "f32_two.safetensors", safetensors_bytes(
        [("a.weight", "F32", [2, 3], ramp.tobytes()),
         ("a.bias", "F32", [3], ramp[:3].tobytes())], {"format": "pt"}))
    write(d, "mixed_dtypes.safetensors", safetensors_bytes(
        [("h", "F16", [2, 2], np.arange(4, dtype=np.float16).tobytes()),
         ("b", "BF16", [4], b"\x80\x3f" * 4),
         ("i", "I8", [5], bytes(range(5))),
         ("u", "U8", [3], b"\x01\x02\x03"),
         ("l", "I64", [2], np.array([-1, 7], dtype=np.int64).tobytes()),
         ("t", "BOOL", [2], b"\x00\x01"),
         ("d", "F64", [1], np.array([3.5]).tobytes())]))
    write(d, "zero_size.safetensors", safetensors_bytes(
        [("empty", "F32", [0, 4], b""), ("x", "F32", [1], b"\x00\x00\x80\x3f")]))
    write(d, "scalar.safetensors", safetensors_bytes([("s", "I32", [], b"\x2a\x00\x00\x00")]))
    write(d, "empty_header.safetensors", safetensors_bytes([]))
    # A decoder-style name set (roles are tagged only with a config.json).
    write(d, "llama_names.safetensors", safetensors_bytes(
        [("model.embed_tokens.weight", "F32", [4, 2], bytes(32)),
         ("model.layers.0.self_attn.q_proj.weight", "F32", [2, 2], bytes(16)),
         ("model.norm.weight", "F32", [2], bytes(8))]))


# --- onnx ---------------------------------------------------------------------

def onnx_bytes(graph, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="slimpack-fuzz-seed")
    model.ir_version = 7
    return model.SerializeToString()


def make_onnx():
    d = out_dir("onnx")
    for f in ["external_by_onnx.onnx", "fp16_helper.onnx", "if_subgraph.onnx",
              "paddle_constants.onnx"]:
        copy(d, os.path.join("tests/testdata/onnx", f))
    for f in ["paddle_hardswish_ln.onnx", "torch_script_if.onnx", "torch_einsum_attention.onnx"]:
        copy(d, os.path.join("tests/testdata/models", f))
    f32 = TensorProto.FLOAT
    # Conv + pool windows, typed float_data weights (shape inference, window checks).
    w = helper.make_tensor("w", f32, [2, 1, 3, 3], [0.5] * 18)
    conv = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], strides=[1, 1], pads=[1, 1, 1, 1],
                          dilations=[1, 1], name="conv"),
         helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                          name="pool")],
        "conv", [helper.make_tensor_value_info("x", f32, [1, 1, 8, "W"])],
        [helper.make_tensor_value_info("y", f32, None)], [w])
    write(d, "conv_pool.onnx", onnx_bytes(conv))
    # Opset 7: upgraded by the version converter before anything else.
    old = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["y"], name="relu")],
        "old", [helper.make_tensor_value_info("x", f32, [2, 3])],
        [helper.make_tensor_value_info("y", f32, [2, 3])],
        [numpy_helper.from_array(np.ones((3,), np.float32), "b")])
    write(d, "opset7_add.onnx", onnx_bytes(old, opset=7))
    # Reshape / Gather with int64 typed data, a Constant-node weight.
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 2])
    idx = helper.make_tensor("idx", TensorProto.INT64, [2], [0, 2])
    table = helper.make_node("Constant", [], ["table"], name="const",
                             value=numpy_helper.from_array(
                                 np.arange(12, dtype=np.float32).reshape(4, 3)))
    gather = helper.make_graph(
        [table,
         helper.make_node("Gather", ["table", "idx"], ["g"], axis=0, name="gather"),
         helper.make_node("Reshape", ["g", "shape"], ["y"], name="reshape")],
        "gather", [], [helper.make_tensor_value_info("y", f32, [3, 2])], [shape, idx])
    write(d, "constant_gather_reshape.onnx", onnx_bytes(gather))
    # External data in a file that never exists beside the fuzzed model.
    ext = numpy_helper.from_array(np.ones((4,), np.float32), "e")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "weights.bin"), ("offset", "0"), ("length", "16")]:
        entry = ext.external_data.add()
        entry.key, entry.value = k, v
    ext.ClearField("raw_data")
    extg = helper.make_graph(
        [helper.make_node("Identity", ["e"], ["y"], name="id")], "ext", [],
        [helper.make_tensor_value_info("y", f32, [4])], [ext])
    write(d, "external_missing.onnx", onnx_bytes(extg))


# --- numpy --------------------------------------------------------------------

def npy_bytes(array, version=None):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version, allow_pickle=False)
    return buf.getvalue()


def npz_bytes(arrays, compressed):
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, array in arrays:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, npy_bytes(array))
    return buf.getvalue()


def make_numpy():
    d = out_dir("numpy")
    write(d, "f4_2x3.npy", npy_bytes(np.arange(6, dtype="<f4").reshape(2, 3) * 0.5))
    write(d, "i8.npy", npy_bytes(np.array([-1, 0, 1 << 40], dtype="<i8")))
    write(d, "f2.npy", npy_bytes(np.array([1.5, -2], dtype="<f2")))
    write(d, "b1.npy", npy_bytes(np.array([True, False, True])))
    write(d, "u1_scalar.npy", npy_bytes(np.array(7, dtype="|u1")))
    write(d, "empty_0x4.npy", npy_bytes(np.zeros((0, 4), dtype="<i4")))
    write(d, "v2_u2.npy", npy_bytes(np.array([1, 2, 3], dtype="<u2"), version=(2, 0)))
    write(d, "v3_f8.npy", npy_bytes(np.array([0.25], dtype="<f8"), version=(3, 0)))
    arrays = [("ids", np.arange(8, dtype="<i8")), ("layer/0/w", np.ones((2, 2), "<f4"))]
    write(d, "stored.npz", npz_bytes(arrays, compressed=False))
    write(d, "deflated.npz", npz_bytes(arrays, compressed=True))


# --- config.json ----------------------------------------------------------------

def make_hf_config():
    d = out_dir("hf_config")
    copy(d, "examples/tiny-llama/config.json", "tiny_llama.json")
    base = json.load(open(os.path.join(ROOT, "examples/tiny-llama/config.json")))
    qwen = dict(base, model_type="qwen2", architectures=["Qwen2ForCausalLM"],
                use_sliding_window=True, sliding_window=64, attention_bias=True)
    qwen.pop("head_dim")
    write(d, "qwen2.json", json.dumps(qwen, indent=1))
    mistral = dict(base, model_type="mistral", sliding_window=32,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0})
    write(d, "mistral_rope_scaling.json", json.dumps(mistral, indent=1))
    pruned = dict(base, intermediate_size_per_layer=[344, 200, 100, 8],
                  num_attention_heads_per_layer=[4, 4, 2, 2],
                  num_key_value_heads_per_layer=[2, 2, 1, 1])
    write(d, "per_layer.json", json.dumps(pruned, indent=1))
    write(d, "gpt2.json", json.dumps({"model_type": "gpt2", "n_embd": 64, "vocab_size": 100}))
    write(d, "null_fields.json", json.dumps(dict(base, num_key_value_heads=None, head_dim=None,
                                                 tie_word_embeddings=True, hidden_act="gelu")))


# --- recipes ----------------------------------------------------------------------

def make_recipe():
    d = out_dir("recipe")
    for f in sorted(os.listdir(os.path.join(ROOT, "examples/recipes"))):
        if f.endswith(".json"):
            copy(d, os.path.join("examples/recipes", f))
    write(d, "dtype_shards_passes.json", json.dumps(
        {"dtype": "bf16", "shard_size": "256M", "passes": ["fold-constants", "fuse-bn-into-conv"]}))
    write(d, "shard_size_int.json", json.dumps({"shard_size": 1 << 20, "passes": []}))
    write(d, "prune_sparsity.json", json.dumps(
        {"prune": {"mlp": 0.25}, "sparsity": {"ratio": 0.5, "pattern": "2:4"}}))
    # llama-quantize types (converter/gguf_recipe.h): a planned size, rules.
    write(d, "ggml_target_bpw.json", json.dumps(
        {"quant": {"scheme": "q4_k_m", "target_bpw": 4.8, "calib_samples": 16}}))
    write(d, "ggml_rules.json", json.dumps(
        {"quant": {"scheme": "q4_0", "algorithm": "imatrix",
                   "rules": [{"match": "(v_proj|down_proj)$", "scheme": "q6_k"},
                             {"match": "embed", "scheme": "q8_0"}]}}))


# --- gguf ---------------------------------------------------------------------------

GGUF_TYPES = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7,
              "str": 8, "arr": 9, "u64": 10, "i64": 11, "f64": 12}
SCALAR_FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i",
              "f32": "<f", "bool": "<B", "u64": "<Q", "i64": "<q", "f64": "<d"}


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, value):
    if vtype == "str":
        return gguf_str(value)
    if vtype.startswith("arr:"):
        etype = vtype[4:]
        out = struct.pack("<IQ", GGUF_TYPES[etype], len(value))
        return out + b"".join(gguf_value(etype, v) for v in value)
    return struct.pack(SCALAR_FMT[vtype], value)


def gguf_bytes(kvs, tensors, alignment=32):
    """kvs: (key, type, value); tensors: (name, ne list, ggml type, raw bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        t = "arr" if vtype.startswith("arr:") else vtype
        out += gguf_str(key) + struct.pack("<I", GGUF_TYPES[t]) + gguf_value(vtype, value)
    offset = 0
    for name, ne, gtype, raw in tensors:
        out += gguf_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", gtype, offset)
        offset += len(raw) + (-len(raw) % alignment)
    out += b"\0" * (-len(out) % alignment)
    for _, _, _, raw in tensors:
        out += raw + b"\0" * (-len(raw) % alignment)
    return out


def q8_0(values):
    """ggml's Q8_0: per 32 values an f16 scale then 32 int8."""
    out = b""
    for i in range(0, len(values), 32):
        block = np.asarray(values[i:i + 32], np.float32)
        amax = float(np.abs(block).max())
        d = amax / 127 if amax else 0.0
        q = np.round(block / d).astype(np.int8) if d else np.zeros(32, np.int8)
        out += np.float16(d).tobytes() + q.tobytes()
    return out


def q4_0(values):
    """ggml's Q4_0: per 32 values an f16 scale then 16 bytes of nibbles."""
    out = b""
    for i in range(0, len(values), 32):
        block = np.asarray(values[i:i + 32], np.float32)
        m = block[np.argmax(np.abs(block))]
        d = m / -8 if m else 0.0
        q = np.clip(np.floor(block / d + 8.5), 0, 15).astype(np.uint8) if d else np.full(32, 8, np.uint8)
        out += np.float16(d).tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return out


def tiny_llama_gguf(quant, quant_type):
    hidden, heads, kv, ff, vocab = 32, 2, 1, 32, 8
    head_dim = hidden // heads
    rng = np.random.RandomState(0)

    def mat(rows, cols):
        return quant(list(rng.uniform(-1, 1, rows * cols)))

    def vec(n):
        return np.ones(n, np.float32).tobytes()

    kvs = [("general.architecture", "str", "llama"), ("general.alignment", "u32", 32),
           ("llama.embedding_length", "u32", hidden), ("llama.feed_forward_length", "u32", ff),
           ("llama.block_count", "u32", 1), ("llama.attention.head_count", "u32", heads),
           ("llama.attention.head_count_kv", "u32", kv), ("llama.context_length", "u32", 64),
           ("llama.rope.freq_base", "f32", 10000.0),
           ("llama.attention.layer_norm_rms_epsilon", "f32", 1e-5),
           ("tokenizer.ggml.model", "str", "gpt2"),
           ("tokenizer.ggml.tokens", "arr:str", ["<s>", "</s>", "a", "b", "c", "d", "e", "f"]),
           ("tokenizer.ggml.token_type", "arr:i32", [3, 3, 1, 1, 1, 1, 1, 1]),
           ("tokenizer.ggml.bos_token_id", "u32", 0), ("tokenizer.ggml.eos_token_id", "u32", 1)]
    tensors = [("token_embd.weight", [hidden, vocab], quant_type, mat(vocab, hidden)),
               ("blk.0.attn_norm.weight", [hidden], 0, vec(hidden)),
               ("blk.0.attn_q.weight", [hidden, hidden], quant_type, mat(hidden, hidden)),
               ("blk.0.attn_k.weight", [hidden, kv * head_dim], quant_type, mat(kv * head_dim, hidden)),
               ("blk.0.attn_v.weight", [hidden, kv * head_dim], quant_type, mat(kv * head_dim, hidden)),
               ("blk.0.attn_output.weight", [hidden, hidden], quant_type, mat(hidden, hidden)),
               ("blk.0.ffn_norm.weight", [hidden], 0, vec(hidden)),
               ("blk.0.ffn_gate.weight", [hidden, ff], quant_type, mat(ff, hidden)),
               ("blk.0.ffn_up.weight", [hidden, ff], quant_type, mat(ff, hidden)),
               ("blk.0.ffn_down.weight", [ff, hidden], quant_type, mat(hidden, ff)),
               ("output_norm.weight", [hidden], 0, vec(hidden))]
    return gguf_bytes(kvs, tensors)


def make_gguf():
    d = out_dir("gguf")
    write(d, "tiny_llama_q8_0.gguf", tiny_llama_gguf(q8_0, 8))
    write(d, "tiny_llama_q4_0.gguf", tiny_llama_gguf(q4_0, 2))
    # Every scalar type, an array of each, no tensors.
    kvs = [("k." + t, t, 1.5 if t.startswith("f") else 1) for t in SCALAR_FMT]
    kvs += [("a." + t, "arr:" + t, [0, 1] if not t.startswith("f") else [0.5, -1.0])
            for t in SCALAR_FMT]
    kvs += [("s", "str", "text"), ("a.str", "arr:str", ["x", "", "yz"])]
    write(d, "all_value_types.gguf", gguf_bytes(kvs, []))
    # f16 / f32 / bf16 tensors, 64-byte alignment, a zero-size tensor.
    write(d, "plain_types.gguf", gguf_bytes(
        [("general.alignment", "u32", 64)],
        [("f32", [4, 2], 0, np.arange(8, dtype=np.float32).tobytes()),
         ("f16", [8], 1, np.arange(8, dtype=np.float16).tobytes()),
         ("bf16", [2], 30, b"\x80\x3f\x00\x40"),
         ("empty", [0, 3], 0, b"")], alignment=64))
    # llama.cpp's importance matrix (the same harness parses it): two
    # entries and the trailer llama-imatrix appends (chunks, dataset name).
    def imatrix_entry(name, values, ncall):
        b = name.encode()
        return (struct.pack("<i", len(b)) + b + struct.pack("<ii", ncall, len(values)) +
                struct.pack(f"<{len(values)}f", *values))
    write(d, "two_entries.imatrix", struct.pack("<i", 2) +
          imatrix_entry("blk.0.attn_q.weight", [0.5, 1, 2, 0, 3, 4, 0.25, 8], 3) +
          imatrix_entry("blk.0.ffn_down.weight", [1, 2, 3, 4], 1) +
          struct.pack("<ii", 3, 9) + b"calib.txt")


# --- tokenizer.json -----------------------------------------------------------------

LLAMA_BPE_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                   r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def make_tokenizer():
    d = out_dir("tokenizer")
    copy(d, "examples/tiny-llama/tokenizer.json", "tiny_llama.json")
    vocab = {c: i for i, c in enumerate("abcdefgh")}
    vocab.update({"ab": 8, "abc": 9, "Ġa": 10})
    split = {
        "version": "1.0",
        "added_tokens": [{"id": 256, "content": "<|begin|>", "special": True},
                         {"id": 257, "content": "<|end|>", "special": False}],
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA_BPE_SPLIT}, "behavior": "Isolated"},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
        "model": {"type": "BPE", "vocab": vocab, "merges": ["a b", ["ab", "c"]]},
        # Read from the same file as tokenizer_config.json by the harness.
        "add_bos_token": True,
        "chat_template": [{"name": "default", "template": "{{ messages }}"},
                          {"name": "tool_use", "template": "{{ tools }}"}],
    }
    write(d, "llama_bpe_split.json", json.dumps(split, indent=1))
    gpt2 = {"model": {"type": "BPE", "vocab": vocab, "merges": [["a", "b"]]},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
            "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}
    write(d, "gpt2_bytelevel.json", json.dumps(gpt2))


# --- known hostile inputs (fuzz/regressions/<parser>/) ----------------------------
# bad-inputs.md cases each parser must refuse without crashing; written beside
# the crash inputs the fuzzers found (which this script never touches).

def make_regressions():
    def reg(parser, name, data):
        d = os.path.join(HERE, "regressions", parser)
        os.makedirs(d, exist_ok=True)
        write(d, name, data)

    deep = "[" * 100000  # bad-inputs.md #12: nesting depth bomb
    reg("safetensors", "known_shape_overflow.safetensors", safetensors_bytes(
        [("x", "F32", [4194305, 4194305, 211106198978564], b"\0" * 4)]))  # 6
    reg("safetensors", "known_header_len_max.safetensors", b"\xff" * 8 + b"{}")  # 14
    reg("safetensors", "known_depth_bomb.safetensors",
        struct.pack("<Q", len(deep)) + deep.encode())  # 12
    f32 = TensorProto.FLOAT
    ext = TensorProto(name="e", data_type=f32, dims=[4], data_location=TensorProto.EXTERNAL)
    for k, v in [("location", "sub/../../../etc/passwd"), ("offset", "0"), ("length", "16")]:
        entry = ext.external_data.add()
        entry.key, entry.value = k, v
    reg("onnx", "known_external_dotdot.onnx", onnx_bytes(helper.make_graph(
        [helper.make_node("Identity", ["e"], ["y"], name="id")], "g", [],
        [helper.make_tensor_value_info("y", f32, [4])], [ext])))  # 23
    big = TensorProto(name="w", data_type=TensorProto.INT64, dims=[1], raw_data=b"\0" * 4096)
    reg("onnx", "known_raw_data_mismatch.onnx", onnx_bytes(helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"], name="id")], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [1])], [big])))  # 28
    reg("onnx", "known_zero_stride.onnx", onnx_bytes(helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], strides=[0], name="p")],
        "g", [helper.make_tensor_value_info("x", f32, [1, 1, 4])],
        [helper.make_tensor_value_info("y", f32, None)])))
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4194305, 4194305, 211106198978564), }"
    hdr += " " * (-(len(hdr) + 11) % 64) + "\n"
    reg("numpy", "known_shape_overflow.npy",
        b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + b"\0" * 4)  # 6
    bomb = npz_bytes([("x", np.zeros((1 << 16,), np.float32))], compressed=True)
    # Declared uncompressed size (local and central headers) raised to 2^31.
    bomb = bomb.replace(struct.pack("<I", len(npy_bytes(np.zeros((1 << 16,), np.float32)))),
                        struct.pack("<I", 1 << 31))
    reg("numpy", "known_inflate_bomb.npz", bomb)  # 13
    reg("hf_config", "known_depth_bomb.json", deep)  # 12
    reg("hf_config", "known_kv_heads_not_dividing.json", json.dumps(
        {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 3, "hidden_size": 8, "intermediate_size": 8, "vocab_size": 4}))
    reg("recipe", "known_depth_bomb.json", deep)  # 12
    reg("recipe", "known_shard_size_overflow.json", json.dumps({"shard_size": "99999999999999999999T"}))
    reg("loader", "known_depth_bomb", deep)  # 42
    reg("loader", "known_offset_over_2p53", json.dumps(
        {"format": "slimpack-shard", "format_version": {"major": 1, "minor": 0},
         "tensors": [{"name": "a", "dtype": "f32", "shape": [1], "shard": 0,
                      "offset": 18014398509481984, "nbytes": 4, "layout": {"kind": "plain"}}],
         "shards": [{"file": "shard-00000.bin", "index": 0, "size": 16448,
                     "sha256": "0" * 64}], "complete": True, "manifest_sha256": "0" * 64}))  # 38, 42
    reg("gguf", "known_n_tensors_max.gguf", b"GGUF" + struct.pack("<IQQ", 3, (1 << 64) - 1, 0))  # 4
    reg("gguf", "known_string_len_max.gguf",
        b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", (1 << 64) - 1) + b"k" * 16)  # 5
    reg("gguf", "known_alignment_zero.gguf", gguf_bytes([("general.alignment", "u32", 0)], []))  # 31
    reg("tokenizer", "known_depth_bomb.json", deep)  # 12
    reg("tokenizer", "known_negative_id.json", json.dumps(
        {"model": {"type": "BPE", "vocab": {"a": -1}}, "pre_tokenizer": {"type": "ByteLevel"}}))


def main():
    make_regressions()
    make_safetensors()
    make_prequantized()
    make_onnx()
    make_numpy()
    make_hf_config()
    make_recipe()
    make_gguf()
    make_tokenizer()


if __name__ == "__main__":
    main()
