#!/usr/bin/env python3
"""PyTorch training throughput on the shapes `mtlab bench --device cuda` trains (make bench-cuda).

For the paper's 77M presets (docs/models.md §1.5) with the batch mtlab's GPU report
uses (16 x 256 tokens decoder-only, 16 x (128 + 128) encoder-decoder), bf16 autocast with fp32
master weights, fused AdamW, label smoothing 0.1: the median tokens/s of `--repeat` steps after
two warm-ups, written as {"preset": tokens_per_s, ...} to --out. The peers are the standard
PyTorch implementations of each family:
  transformer    torch.nn.Transformer 6+6 layers, d 512, 8 heads, FFN 2048, ReLU
  transformer++  transformers' LlamaForCausalLM (d 496, 12 layers, 8 heads, FFN 1984)
  mamba          transformers' MambaForCausalLM (d 610, 24 layers); it uses the mamba_ssm CUDA
                 kernels when that package is installed, its PyTorch scan otherwise (printed)
The other four families have no standard PyTorch implementation to compare with and are left
out (the report prints mtlab's figure alone). A development tool: mtlab never imports it."""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn

V = 32000
B = 16


def timed_steps(model, make_loss, repeat):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.001, fused=True)
    times = []
    for i in range(repeat + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = make_loss()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


class EncDec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 512)
        self.core = nn.Transformer(512, 8, 6, 6, 2048, dropout=0.1, batch_first=True)
        self.head = nn.Linear(512, V, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, src, tgt):
        T = tgt.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf"), device=tgt.device), 1)
        return self.head(self.core(self.emb(src), self.emb(tgt), tgt_mask=mask))


def run(preset, repeat):
    dev = "cuda"
    ce = nn.CrossEntropyLoss(label_smoothing=0.1)
    if preset == "transformer":
        model = EncDec().to(dev)
        src = torch.randint(5, V, (B, 128), device=dev)
        tgt = torch.randint(5, V, (B, 128), device=dev)
        tokens = B * 256

        def loss():
            return ce(model(src, tgt[:, :-1]).reshape(-1, V).float(), tgt[:, 1:].reshape(-1))
    else:
        import transformers
        if preset == "transformer++":
            cfg = transformers.LlamaConfig(vocab_size=V, hidden_size=496, intermediate_size=1984,
                                           num_hidden_layers=12, num_attention_heads=8,
                                           max_position_embeddings=512, tie_word_embeddings=False)
            model = transformers.LlamaForCausalLM(cfg).to(dev)
        else:
            cfg = transformers.MambaConfig(vocab_size=V, hidden_size=610, num_hidden_layers=24,
                                           state_size=16, expand=2, conv_kernel=4)
            model = transformers.MambaForCausalLM(cfg).to(dev)
            try:
                import mamba_ssm  # noqa: F401
                print("mamba peer: transformers with the mamba_ssm CUDA kernels")
            except ImportError:
                print("mamba peer: transformers' PyTorch scan (mamba_ssm is not installed)")
        ids = torch.randint(5, V, (B, 256), device=dev)
        tokens = B * 256

        def loss():
            logits = model(ids).logits
            return ce(logits[:, :-1].reshape(-1, V).float(), ids[:, 1:].reshape(-1))
    model.train()
    s = timed_steps(model, loss, repeat)
    return tokens / s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--presets", default="transformer,transformer++,mamba")
    a = ap.parse_args()
    res = {}
    for p in a.presets.split(","):
        res[p] = run(p, a.repeat)
        print(f"PyTorch {p:14s} {res[p]:10.0f} tokens/s")
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
