#!/usr/bin/python3
"""Re-derives the tiny-llama reference numbers from the committed files alone, with a NumPy Llama forward pass.

Reads config.json + model.safetensors by their HF names, runs eval.safetensors through a float64 NumPy
implementation of HF LlamaForCausalLM (written separately from train.py's torch modules), and checks it against
reference_logits and expected.json. It is the executable statement of what the C++ interpreter must compute.
Run: /usr/bin/python3 examples/tiny-llama/verify.py
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))
from safetensors_lite import read_safetensors  # noqa: E402


def rms_norm(x, weight, eps):
    return weight * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rope(x, positions, theta):
    """HF rotate-half RoPE: pairs dimension i with i + head_dim/2."""
    half = x.shape[-1] // 2
    inv_freq = theta ** (-np.arange(0, half, dtype=np.float64) * 2 / x.shape[-1])
    angles = positions[:, None] * inv_freq[None, :]                  # [seq, half]
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def forward(w, cfg, ids):
    """ids [batch, seq] -> logits [batch, seq, vocab], float64."""
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // heads)
    eps = cfg["rms_norm_eps"]
    b, s = ids.shape
    positions = np.arange(s, dtype=np.float64)
    causal = np.triu(np.full((s, s), -np.inf), 1)
    x = w["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(b, s, heads, head_dim).transpose(0, 2, 1, 3)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(b, s, kv_heads, head_dim).transpose(0, 2, 1, 3)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(b, s, kv_heads, head_dim).transpose(0, 2, 1, 3)
        q, k = rope(q, positions, cfg["rope_theta"]), rope(k, positions, cfg["rope_theta"])
        group = heads // kv_heads  # query head j reads kv head j // group
        k = k[:, np.arange(heads) // group]
        v = v[:, np.arange(heads) // group]
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim) + causal
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attn = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, heads * head_dim)
        x = x + attn @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
    return rms_norm(x, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


def next_token_loss(logits, ids):
    z = logits[:, :-1]
    z = z - z.max(-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, ids[:, 1:, None], axis=-1)
    return float(-picked.mean())


def main():
    with open(os.path.join(HERE, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(HERE, "expected.json")) as f:
        expected = json.load(f)
    weights, _ = read_safetensors(os.path.join(HERE, "model.safetensors"))
    weights = {k: v.astype(np.float64) for k, v in weights.items()}
    data, _ = read_safetensors(os.path.join(HERE, "eval.safetensors"))
    ids, reference = data["input_ids"], data["reference_logits"]

    logits = np.concatenate([forward(weights, cfg, ids[i:i + 32]) for i in range(0, len(ids), 32)])
    logit_diff = float(np.abs(logits[:len(reference)] - reference).max())
    loss = next_token_loss(logits, ids)
    want = expected["eval_set"]["loss"]
    print(f"max |numpy - reference_logits| = {logit_diff:.3g}; eval loss {loss:.6f} (expected {want}), "
          f"perplexity {np.exp(loss):.4f}")
    if logit_diff > 1e-3 or abs(loss - want) > 1e-4:
        raise SystemExit("mismatch")


if __name__ == "__main__":
    main()
