#!/usr/bin/python3
"""Writes a small random llama checkpoint whose rows divide ggml's 256-weight
super-blocks (hidden 256, intermediate 512), so every K-quant type is used
for real when it is exported to GGUF. The bundled tiny-llama (hidden 128,
intermediate 344) exercises only the 32-weight types and the fallbacks.

usage: make_random_llama.py OUT_DIR TOKENIZER [llama|qwen2|mistral|pruned]
TOKENIZER is a tokenizer.json or a SentencePiece .model (copied beside the
weights as tokenizer.model). The vocabulary size is the tokenizer's (its
largest token id + 1, or its number of pieces).
Deterministic (seed 7); ~5 MB of f32 weights, made at test time so nothing
large is committed. qwen2 adds q/k/v biases (Qwen2's attention) and its
rope_theta; mistral takes head_dim 32, not hidden/heads (q/k/v/o narrower
than hidden), and a sliding_window of null. llama (the default) is the file
the GGUF test has always used. pruned is a llama whose second layer keeps
half its heads, KV heads and MLP channels, with the per-layer lists
slimpack's pruning writes into config.json (hf/layer_sizes.h)."""
import json
import shutil
import struct
import sys

import numpy as np

HIDDEN, INTER, LAYERS, HEADS, KV_HEADS = 256, 512, 2, 4, 2
HEAD_DIM = HIDDEN // HEADS


def main():
    out, tokenizer = sys.argv[1], sys.argv[2]
    # One embedding row per token id of the tokenizer (258 for the
    # tiny-llama's byte tokenizer).
    if tokenizer.endswith(".model"):
        # SentencePiece: one row per piece, <s> 1 and </s> 2 (its defaults).
        vocab, specials = count_pieces(tokenizer), [1, 2]
    else:
        with open(tokenizer, encoding="utf-8") as f:
            tok = json.load(f)
        vocab = 1 + max(list(tok["model"]["vocab"].values()) +
                        [t["id"] for t in tok.get("added_tokens", [])])
        # bos / eos: the first and last special added tokens (the tiny-llama's
        # <s> 256 and </s> 257).
        specials = [t["id"] for t in tok.get("added_tokens", []) if t.get("special")] or [0]
    model_type = sys.argv[3] if len(sys.argv) > 3 else "llama"
    if model_type not in ("llama", "qwen2", "mistral", "pruned"):
        sys.exit(f"make_random_llama.py: model type '{model_type}' is not llama, qwen2, mistral "
                 "or pruned")
    head_dim = 32 if model_type == "mistral" else HEAD_DIM
    pruned = model_type == "pruned"
    inter = [INTER, INTER // 2] if pruned else [INTER] * LAYERS
    heads = [HEADS, HEADS // 2] if pruned else [HEADS] * LAYERS
    kv_heads = [KV_HEADS, KV_HEADS // 2] if pruned else [KV_HEADS] * LAYERS
    rng = np.random.default_rng(7)

    def matrix(rows, cols):
        # Unit-variance outputs keep the logits spread out, so top-1 is a
        # meaningful comparison; a few large columns give outliers like real
        # checkpoints have.
        w = rng.standard_normal((rows, cols)).astype(np.float32) / np.sqrt(cols)
        w[:, rng.integers(0, cols, 4)] *= 2.0
        return w

    tensors = {
        "model.embed_tokens.weight": rng.standard_normal((vocab, HIDDEN)).astype(np.float32),
        "model.norm.weight": (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
        "lm_head.weight": matrix(vocab, HIDDEN) * 4.0,
    }
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        tensors[p + "input_layernorm.weight"] = (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
        tensors[p + "post_attention_layernorm.weight"] = (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
        tensors[p + "self_attn.q_proj.weight"] = matrix(heads[i] * head_dim, HIDDEN)
        tensors[p + "self_attn.k_proj.weight"] = matrix(kv_heads[i] * head_dim, HIDDEN)
        tensors[p + "self_attn.v_proj.weight"] = matrix(kv_heads[i] * head_dim, HIDDEN)
        tensors[p + "self_attn.o_proj.weight"] = matrix(HIDDEN, heads[i] * head_dim) * 0.5
        tensors[p + "mlp.gate_proj.weight"] = matrix(inter[i], HIDDEN)
        tensors[p + "mlp.up_proj.weight"] = matrix(inter[i], HIDDEN)
        tensors[p + "mlp.down_proj.weight"] = matrix(HIDDEN, inter[i]) * 0.5
        if model_type == "qwen2":
            for m, rows in (("q_proj", HEADS), ("k_proj", KV_HEADS), ("v_proj", KV_HEADS)):
                tensors[p + f"self_attn.{m}.bias"] = \
                    (0.5 * rng.standard_normal(rows * head_dim)).astype(np.float32)

    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name]).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(f"{out}/model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    arch = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "mistral": "MistralForCausalLM", "pruned": "LlamaForCausalLM"}[model_type]
    config = {"architectures": [arch], "model_type": "llama" if pruned else model_type,
              "hidden_size": HIDDEN, "intermediate_size": INTER, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
              "head_dim": head_dim, "hidden_act": "silu", "rms_norm_eps": 1e-5,
              "rope_theta": 1000000.0 if model_type == "qwen2" else 10000.0,
              "max_position_embeddings": 256, "vocab_size": vocab,
              "bos_token_id": specials[0], "eos_token_id": specials[-1], "tie_word_embeddings": False,
              "torch_dtype": "float32"}
    if model_type == "mistral":
        config["sliding_window"] = None
    if pruned:
        config["intermediate_size_per_layer"] = inter
        config["num_attention_heads_per_layer"] = heads
        config["num_key_value_heads_per_layer"] = kv_heads
    with open(f"{out}/config.json", "w") as f:
        json.dump(config, f, indent=1)
    shutil.copy(tokenizer, f"{out}/tokenizer.model" if tokenizer.endswith(".model")
                else f"{out}/tokenizer.json")


def count_pieces(path):
    """The number of `pieces` (field 1) of a sentencepiece.ModelProto, read
    from the protobuf wire format (no sentencepiece needed at test time)."""
    data, at, n = open(path, "rb").read(), 0, 0

    def varint():
        nonlocal at
        v, shift = 0, 0
        while True:
            b = data[at]
            at += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return v
    while at < len(data):
        key = varint()
        wire = key & 7
        if wire == 0:
            varint()
        elif wire == 2:
            length = varint()  # before `at +=` reads at
            at += length
        elif wire == 5:
            at += 4
        elif wire == 1:
            at += 8
        else:
            sys.exit(f"{path}: wire type {wire} at byte {at}")
        n += key >> 3 == 1
    return n


if __name__ == "__main__":
    main()
