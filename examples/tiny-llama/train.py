#!/usr/bin/python3
"""Trains the bundled tiny Llama-architecture byte-level LM on the KJV Bible and writes an HF-style model dir.

Outputs (next to this script): model.safetensors, config.json, tokenizer.json, eval.safetensors, expected.json.
Text source: Debian package bible-kjv(-text) 4.38, extracted with its `bible` command (public domain text).
Run: /usr/bin/python3 examples/tiny-llama/train.py   (about 8 minutes on an idle machine; deterministic).
"""

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time

# One thread for everything: at this model size (matrices of 128-344 columns) a step took the same ~0.19 s with 1
# or 2 torch threads on an idle 2-core machine, 2x longer when OpenBLAS's own pool ran on top of torch's, and up to
# 20x longer with 2 threads while other jobs shared the cores (threads stall at every barrier). The thread count
# also fixes the reduction order, so it is part of what makes the result reproducible.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
TORCH_THREADS = 1

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "fixtures"))
from safetensors_lite import read_safetensors, write_safetensors  # noqa: E402

# Byte-level vocabulary: ids 0..255 are the raw bytes, then two specials.
BOS_ID = 256
EOS_ID = 257
VOCAB_SIZE = 258

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 344,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "max_position_embeddings": 128,
    "vocab_size": VOCAB_SIZE,
    "bos_token_id": BOS_ID,
    "eos_token_id": EOS_ID,
    "pad_token_id": None,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "torch_dtype": "float32",
}

TRAIN_SEQ = 128
BATCH = 16
STEPS = 2400
WARMUP = 100
PEAK_LR = 3e-3
MIN_LR = 3e-4
WEIGHT_DECAY = 0.1
SEED = 1234
HELD_OUT_EVERY = 20  # chapter i is held out when i % 20 == 7 (about 5% of the text)
HELD_OUT_PHASE = 7
EVAL_SEQ = 64
EVAL_COUNT = 256
REFERENCE_LOGITS_COUNT = 2
EXPECTED_BIBLE_VERSION = "4.38"


# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------

def load_chapters():
    """Returns the KJV as a list of chapters, each 'Book N\\n1 verse...\\n2 verse...\\n' in UTF-8 bytes."""
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bible-kjv-text"], capture_output=True,
                             text=True).stdout.strip()
    if version != EXPECTED_BIBLE_VERSION:
        print(f"warning: bible-kjv-text {version!r} != {EXPECTED_BIBLE_VERSION}; results may differ",
              file=sys.stderr)
    # -l10000: one verse per line (the default wraps at the terminal width).
    raw = subprocess.run(["bible", "-l10000", "gen1:1-rev22:21"], capture_output=True, check=True).stdout
    # Chapter headings ("Genesis 1", "1 Kings 3") are unindented; verse lines are indented.
    chapters = []
    for raw_line in raw.decode("ascii").splitlines():
        if not raw_line.strip():
            continue
        if not raw_line.startswith(" "):
            chapters.append([raw_line.strip()])
        else:
            chapters[-1].append(raw_line.strip())
    text_hash = hashlib.sha256(raw).hexdigest()
    return [("\n".join(c) + "\n").encode("ascii") for c in chapters], text_hash


def to_stream(chapters):
    """Concatenates chapters as BOS + bytes + EOS into one int64 token stream."""
    pieces = []
    for chapter in chapters:
        pieces.append(np.array([BOS_ID], dtype=np.int64))
        pieces.append(np.frombuffer(chapter, dtype=np.uint8).astype(np.int64))
        pieces.append(np.array([EOS_ID], dtype=np.int64))
    return np.concatenate(pieces)


def windows(stream, seq, count):
    """`count` non-overlapping windows of length `seq`, evenly spread over `stream` (deterministic)."""
    total = len(stream) // seq
    count = min(count, total)
    starts = (np.arange(count, dtype=np.int64) * total // count) * seq
    return np.stack([stream[s:s + seq] for s in starts])


# ---------------------------------------------------------------------------------------------------------------
# Model: Llama as in HF transformers' modeling_llama (rotate-half RoPE, repeat_kv GQA, SwiGLU, pre-norm)
# ---------------------------------------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(seq, head_dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg["num_key_value_heads"]
        self.head_dim = cfg["head_dim"]
        hidden = cfg["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # repeat_kv: kv head j serves query heads j*rep .. j*rep+rep-1.
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
        out = F.softmax(scores, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        hidden, inter = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaBody(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = LlamaBody(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=cfg["initializer_range"])

    def forward(self, ids):
        s = ids.shape[1]
        cos, sin = rope_cos_sin(s, self.cfg["head_dim"], self.cfg["rope_theta"])
        mask = torch.full((s, s), float("-inf")).triu(1)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.model.norm(x))


def mean_next_token_loss(model, seqs, batch=64):
    """Mean cross-entropy (nats) of predicting seq[t+1] from seq[:t+1], over all positions of all sequences."""
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(seqs), batch):
            ids = torch.from_numpy(seqs[i:i + batch])
            logits = model(ids)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                                   reduction="sum")
            total += loss.item()
            count += ids[:, 1:].numel()
    return total / count


def lr_at(step):
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, STEPS - WARMUP)
    return MIN_LR + 0.5 * (PEAK_LR - MIN_LR) * (1 + math.cos(math.pi * progress))


def byte_level_tokenizer_json():
    """An HF `tokenizers`-style byte-level BPE with no merges: token id == byte value, plus <s>/</s>."""
    # GPT-2's printable stand-in for each byte, which is what the ByteLevel pre-tokenizer emits.
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = {}
    extra = 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    vocab = {chars[b]: b for b in range(256)}
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in ((BOS_ID, "<s>"), (EOS_ID, "</s>"))]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": False},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": []},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=STEPS, help="override for quick smoke runs only")
    parser.add_argument("--out", default=HERE)
    args = parser.parse_args()

    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)

    chapters, text_hash = load_chapters()
    train_chapters = [c for i, c in enumerate(chapters) if i % HELD_OUT_EVERY != HELD_OUT_PHASE]
    held_chapters = [c for i, c in enumerate(chapters) if i % HELD_OUT_EVERY == HELD_OUT_PHASE]
    train_stream = to_stream(train_chapters)
    held_stream = to_stream(held_chapters)
    print(f"chapters: {len(chapters)} ({len(train_chapters)} train, {len(held_chapters)} held out); "
          f"tokens: {len(train_stream)} train, {len(held_stream)} held out; bible text sha256 {text_hash}")

    model = LlamaForCausalLM(CONFIG)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}], lr=PEAK_LR, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(SEED)
    train_t = torch.from_numpy(train_stream)
    offsets = torch.arange(TRAIN_SEQ)
    start = time.time()
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        starts = torch.randint(0, len(train_t) - TRAIN_SEQ, (BATCH,), generator=gen)
        ids = train_t[starts[:, None] + offsets]
        logits = model(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB_SIZE), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:5d} loss {loss.item():.4f} lr {lr_at(step):.2e} {time.time() - start:.0f}s",
                  flush=True)
    print(f"training took {time.time() - start:.0f}s")
    model.eval()

    # Save with HF tensor names; the module tree above already uses them.
    state = {name: t.detach().numpy().astype(np.float32) for name, t in model.state_dict().items()}
    model_path = os.path.join(args.out, "model.safetensors")
    write_safetensors(model_path, state, metadata={"format": "pt"})
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "tokenizer.json"), "w") as f:
        json.dump(byte_level_tokenizer_json(), f, indent=1, ensure_ascii=False)
        f.write("\n")

    # Reload from disk so the reference numbers describe exactly the committed file.
    loaded, _ = read_safetensors(model_path)
    reference = LlamaForCausalLM(CONFIG)
    reference.load_state_dict({k: torch.from_numpy(v) for k, v in loaded.items()}, strict=True)
    reference.eval()

    eval_ids = windows(held_stream, EVAL_SEQ, EVAL_COUNT)
    with torch.no_grad():
        ref_logits = reference(torch.from_numpy(eval_ids[:REFERENCE_LOGITS_COUNT])).numpy().astype(np.float32)
    write_safetensors(os.path.join(args.out, "eval.safetensors"),
                      {"input_ids": eval_ids, "reference_logits": ref_logits},
                      metadata={"description": "held-out KJV windows (seq 64) and FP32 logits of the first 2"})

    eval_loss = mean_next_token_loss(reference, eval_ids)
    held_128 = windows(held_stream, TRAIN_SEQ, 10 ** 9)
    train_128 = windows(train_stream, TRAIN_SEQ, len(held_128))
    held_loss = mean_next_token_loss(reference, held_128)
    train_loss = mean_next_token_loss(reference, train_128)
    expected = {
        "description": "Reference PyTorch FP32 metrics of model.safetensors. Loss is the mean natural-log "
                       "cross-entropy of predicting input_ids[:, t+1] from input_ids[:, :t+1], over "
                       "all t < seq-1 of all sequences; perplexity = exp(loss).",
        "eval_set": {
            "file": "eval.safetensors",
            "sequences": int(eval_ids.shape[0]),
            "seq_len": EVAL_SEQ,
            "predicted_tokens": int(eval_ids.shape[0] * (EVAL_SEQ - 1)),
            "loss": round(eval_loss, 6),
            "perplexity": round(math.exp(eval_loss), 6),
            "bits_per_byte": round(eval_loss / math.log(2), 6),
        },
        "held_out_split_seq128": {
            "sequences": int(held_128.shape[0]), "loss": round(held_loss, 6),
            "perplexity": round(math.exp(held_loss), 6),
        },
        "train_split_seq128_sample": {
            "sequences": int(train_128.shape[0]), "loss": round(train_loss, 6),
            "perplexity": round(math.exp(train_loss), 6),
        },
        "reference_logits": {"tensor": "reference_logits", "sequences": REFERENCE_LOGITS_COUNT,
                             "max_abs": float(np.abs(ref_logits).max())},
        "parameters": n_params,
        "training": {
            "data": "King James Bible from Debian bible-kjv-text " + EXPECTED_BIBLE_VERSION +
                    " via `bible -l10000 gen1:1-rev22:21`",
            "text_sha256": text_hash,
            "held_out": f"chapters with index % {HELD_OUT_EVERY} == {HELD_OUT_PHASE}",
            "steps": args.steps, "batch": BATCH, "seq_len": TRAIN_SEQ, "peak_lr": PEAK_LR, "seed": SEED,
            "torch": torch.__version__,
        },
    }
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    print(json.dumps({k: expected[k] for k in ("eval_set", "held_out_split_seq128", "train_split_seq128_sample")},
                     indent=2))


if __name__ == "__main__":
    main()
