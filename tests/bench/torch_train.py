#!/usr/bin/env python3
"""PyTorch training throughput on the shapes mtlab trains: the GPU report's (make bench-cuda) or,
with --device cpu, the CPU training steps of `mtlab bench` (make bench-peers).

GPU (the default):

For the paper's 77M presets (docs/models.md §1.5) with the batch mtlab's GPU report
uses (16 x 256 tokens decoder-only, 16 x (128 + 128) encoder-decoder), bf16 autocast with fp32
master weights, fused AdamW, label smoothing 0.1: the median tokens/s of `--repeat` steps after
two warm-ups, written as {"preset": tokens_per_s, ...} to --out. The peers are the standard
PyTorch implementations of each family:
  transformer    torch.nn.Transformer 6+6 layers, d 512, 8 heads, FFN 2048, ReLU
  transformer++  transformers' LlamaForCausalLM (d 496, 12 layers, 8 heads, FFN 1984)
  mamba          mamba_ssm's MambaLMHeadModel (d 610, 24 layers, its CUDA kernels) where
                 mamba-ssm imports (scripts/gpu/pack_peer.sh builds it on a lent GPU machine),
                 transformers' MambaForCausalLM with its PyTorch scan otherwise (printed)
The other four families have no standard PyTorch implementation to compare with and are left
out (the report prints mtlab's figure alone).

CPU (--device cpu --mtlab ./mtlab): the demo presets' shapes (vocabulary 8000; docs/models.md
§10.7) with the batch of `mtlab bench`'s training section, 64 rows of 64 tokens (decoder-only)
or of 32 source + 32 target tokens, fp32, dropout 0.1, label smoothing 0.1, AdamW, the same
thread count (torch.set_num_threads, OMP_NUM_THREADS for mtlab). Every preset has a peer:
transformer-small torch.nn.Transformer, transformer++-small LlamaForCausalLM, mamba-small
MambaForCausalLM (its sequential PyTorch scan: mamba_ssm's kernels are CUDA only), retnet-small
written here (retention's parallel form), mamba-mha-small and mamba-local-small
MambaForCausalLM with two mixers swapped for attention units, mamba-encdec-small built from
MambaBlocks, gpt-neox-small GPTNeoXForCausalLM. Each peer runs in its own process, one after
another, and `mtlab bench --only gemm` after them, then before them in the next round, for
--rounds interleaved rounds; the table gives the medians of both tokens/s and of the rounds'
mtlab / PyTorch (target >= 2). A development tool: mtlab never imports it."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn

V = 32000
B = 16


def timed_steps(model, make_loss, repeat, dev="cuda"):
    gpu = dev == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), weight_decay=0.001,
                            fused=gpu)
    times = []
    for i in range(repeat + 2):
        if gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if gpu:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = make_loss()
        else:
            loss = make_loss()
        loss.backward()
        opt.step()
        if gpu:
            torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ---------------------------------------------------------------- CPU: the demo presets
# mtlab's "-small" presets (engine/models/arch.c) and `mtlab bench`'s training batch
SMALL_V = 8000
SMALL_B = 64
SMALL_PEERS = ["transformer-small", "transformer++-small", "retnet-small", "mamba-small",
               "mamba-mha-small", "mamba-local-small", "mamba-encdec-small", "gpt-neox-small"]


class SmallEncDec(nn.Module):
    """transformer-small: 3+3 post-norm layers, d 192, 4 heads, FFN 768, ReLU, tied output."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(SMALL_V, 192)
        self.core = nn.Transformer(192, 4, 3, 3, 768, dropout=0.1, batch_first=True)
        self.head = nn.Linear(192, SMALL_V, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, src, tgt):
        T = tgt.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf")), 1)
        return self.head(self.core(self.emb(src), self.emb(tgt), tgt_mask=mask))


class SmallRetNet(nn.Module):
    """retnet-small (docs/models.md §4, §7): 4 pre-norm layers, d 176, 4 heads, values 352,
    GLU 352, embedding x sqrt(176), untied output; retention's parallel form as torchscale's
    MultiScaleRetention (rotated q and k, normalised decay, detached |S| row normaliser, a
    per-head RMS norm, SiLU gate); dropout 0.1 on the embedding and each unit's output."""

    def __init__(self, C=176, H=4, Vw=352, F=352, layers=4):
        super().__init__()
        self.C, self.H, self.Vw = C, H, Vw
        self.emb = nn.Embedding(SMALL_V, C)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "norm1": nn.RMSNorm(C, eps=1e-5), "q": nn.Linear(C, C, bias=False),
                "k": nn.Linear(C, C, bias=False), "v": nn.Linear(C, Vw, bias=False),
                "g": nn.Linear(C, Vw, bias=False), "o": nn.Linear(Vw, C, bias=False),
                "norm2": nn.RMSNorm(C, eps=1e-5), "fc1": nn.Linear(C, F, bias=False),
                "gate": nn.Linear(C, F, bias=False), "fc2": nn.Linear(F, C, bias=False)}))
        self.norm = nn.RMSNorm(C, eps=1e-5)
        self.head = nn.Linear(C, SMALL_V, bias=False)
        self.drop = nn.Dropout(0.1)

    def rotate(self, x, T):
        dk = x.shape[-1]
        theta = 1.0 / (10000 ** torch.linspace(0, 1, dk // 2))
        ang = torch.arange(T)[:, None] * theta[None, :]
        sin, cos = ang.sin().repeat_interleave(2, -1), ang.cos().repeat_interleave(2, -1)
        rot = torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)
        return x * cos + rot * sin

    def retention(self, l, x):
        B, T, _ = x.shape
        H, dk, dv = self.H, self.C // self.H, self.Vw // self.H
        q = l["q"](x).view(B, T, H, dk).transpose(1, 2)
        k = (l["k"](x) * dk ** -0.5).view(B, T, H, dk).transpose(1, 2)
        v = l["v"](x).view(B, T, H, dv).transpose(1, 2)
        q, k = self.rotate(q, T), self.rotate(k, T)
        gamma = 1 - 2.0 ** (-5 - torch.arange(H, dtype=torch.float32))
        n = torch.arange(T)
        diff = (n[:, None] - n[None, :]).float()
        w = torch.where(diff >= 0, gamma[:, None, None] ** diff.clamp(min=0), 0.0)
        decay = w / w.sum(-1, keepdim=True).sqrt()
        s = (q @ k.transpose(-1, -2)) * decay
        s = s / s.detach().abs().sum(-1, keepdim=True).clamp(1, 5e4)
        o = (s @ v).transpose(1, 2)
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-5)
        return l["o"](nn.functional.silu(l["g"](x)) * o.reshape(B, T, self.Vw))

    def forward(self, ids):
        x = self.drop(self.emb(ids) * self.C ** 0.5)
        T = ids.shape[1]
        for l in self.layers:
            x = x + self.drop(self.retention(l, l["norm1"](x)))
            h = l["norm2"](x)
            x = x + self.drop(l["fc2"](nn.functional.silu(l["fc1"](h)) * l["gate"](h)))
        return self.head(self.norm(x))


class Attention(nn.Module):
    """The Mamba hybrids' attention: 8 heads, no biases, no positions; causal self-attention
    (within `window` earlier keys when given) or, with memory, cross-attention."""

    def __init__(self, C, H=8, window=0):
        super().__init__()
        self.H, self.window, self.memory = H, window, None
        self.q_proj, self.k_proj = nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False)
        self.v_proj, self.o_proj = nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False)

    def forward(self, x, **_):
        B, T, C = x.shape
        kv = x if self.memory is None else self.memory
        S, H = kv.shape[1], self.H

        def heads(t, n):
            return t.view(B, n, H, C // H).transpose(1, 2)
        q, k, v = heads(self.q_proj(x), T), heads(self.k_proj(kv), S), heads(self.v_proj(kv), S)
        if self.memory is not None:
            o = nn.functional.scaled_dot_product_attention(q, k, v)
        elif self.window:
            n = torch.arange(T)
            d = n[:, None] - n[None, :]
            o = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=(d >= 0) &
                                                           (d <= self.window))
        else:
            o = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, C))


class GatedMLP(nn.Module):
    """mamba-encdec's MLP: fc2(value * SiLU(gate)), [value; gate] = fc1 h, biases."""

    def __init__(self, C, F):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(C, 2 * F), nn.Linear(F, C)

    def forward(self, x, **_):
        value, gate = self.fc1(x).chunk(2, -1)
        return self.fc2(value * nn.functional.silu(gate))


def mamba_config(C, layers, vocab=SMALL_V):
    import transformers
    return transformers.MambaConfig(vocab_size=vocab, hidden_size=C, num_hidden_layers=layers,
                                    state_size=16, expand=2, conv_kernel=4)


class SmallMambaEncDec(nn.Module):
    """mamba-encdec-small: an encoder of 4 pre-norm Mamba blocks (own embedding, final norm),
    a decoder of 3 blocks of pre-norm Mamba, cross-attention (8 heads) and gated MLP (608)
    units, d 152, final norm, output tied to the decoder's embedding; the blocks are
    transformers' MambaBlock with the mixer swapped for the two other units."""

    def __init__(self, C=152, enc_layers=4, dec_layers=3):
        super().__init__()
        from transformers.models.mamba.modeling_mamba import MambaBlock, MambaRMSNorm
        cfg = mamba_config(C, enc_layers + 3 * dec_layers)
        self.src_emb, self.tgt_emb = nn.Embedding(SMALL_V, C), nn.Embedding(SMALL_V, C)
        self.enc = nn.ModuleList(MambaBlock(cfg, i) for i in range(enc_layers))
        self.dec = nn.ModuleList()
        for i in range(3 * dec_layers):
            blk = MambaBlock(cfg, enc_layers + i)
            if i % 3 == 1:
                blk.mixer = Attention(C)
            elif i % 3 == 2:
                blk.mixer = GatedMLP(C, 4 * C)
            self.dec.append(blk)
        self.enc_norm, self.dec_norm = MambaRMSNorm(C), MambaRMSNorm(C)
        self.head = nn.Linear(C, SMALL_V, bias=False)
        self.head.weight = self.tgt_emb.weight
        nn.init.normal_(self.src_emb.weight, std=0.02)  # as mamba-encdec's init_std
        nn.init.normal_(self.tgt_emb.weight, std=0.02)

    def forward(self, src, tgt):
        mem = self.src_emb(src)
        for blk in self.enc:
            mem = blk(mem)
        mem = self.enc_norm(mem)
        x = self.tgt_emb(tgt)
        for i, blk in enumerate(self.dec):
            if i % 3 == 1:
                blk.mixer.memory = mem
            x = blk(x)
        return self.head(self.dec_norm(x))


def mamba_hybrid(window):
    """mamba-mha-small / mamba-local-small: MambaForCausalLM (12 layers, d 200) whose layers 5
    and 11 (0-based) are pre-norm causal self-attention units (8 heads, no MLP), over every
    earlier key or a window of 64."""
    import transformers
    model = transformers.MambaForCausalLM(mamba_config(200, 12))
    for i in (5, 11):
        model.backbone.layers[i].mixer = Attention(200, window=window)
    return model


def run_cpu(preset, repeat):
    """tokens/s (both sides) of PyTorch eager training steps on preset's shapes."""
    ce = nn.CrossEntropyLoss(label_smoothing=0.1)
    if preset in ("transformer-small", "mamba-encdec-small"):
        model = SmallEncDec() if preset == "transformer-small" else SmallMambaEncDec()
        src = torch.randint(5, SMALL_V, (SMALL_B, 32))
        tgt = torch.randint(5, SMALL_V, (SMALL_B, 33))

        def loss():
            logits = model(src, tgt[:, :-1])
            return ce(logits.reshape(-1, SMALL_V), tgt[:, 1:].reshape(-1))
    else:
        import transformers
        if preset == "transformer++-small":
            cfg = transformers.LlamaConfig(vocab_size=SMALL_V, hidden_size=168,
                                           intermediate_size=672, num_hidden_layers=4,
                                           num_attention_heads=4, tie_word_embeddings=False)
            model = transformers.LlamaForCausalLM(cfg)
        elif preset == "gpt-neox-small":
            cfg = transformers.GPTNeoXConfig(vocab_size=SMALL_V, hidden_size=168,
                                             num_hidden_layers=6, num_attention_heads=7,
                                             intermediate_size=672, rotary_pct=0.25,
                                             use_parallel_residual=True,
                                             tie_word_embeddings=False)
            model = transformers.GPTNeoXForCausalLM(cfg)
        elif preset == "retnet-small":
            model = SmallRetNet()
        elif preset == "mamba-small":
            model = transformers.MambaForCausalLM(mamba_config(192, 12))
        else:
            model = mamba_hybrid(64 if preset == "mamba-local-small" else 0)
        ids = torch.randint(5, SMALL_V, (SMALL_B, 65))

        def loss():
            out = model(ids[:, :-1])
            logits = out if isinstance(out, torch.Tensor) else out.logits
            return ce(logits.reshape(-1, SMALL_V), ids[:, 1:].reshape(-1))
    model.train()
    return SMALL_B * 64 / timed_steps(model, loss, repeat, "cpu")


def mtlab_small(mtlab, threads, repeat):
    """{preset: tokens/s} from `mtlab bench --only gemm` (its training-step table)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([mtlab, "bench", "--only", "gemm", "--repeat", str(repeat)],
                         capture_output=True, text=True, env=env, check=True).stdout
    rows = re.findall(r"^\s+(\S+-small)\s+\S+\s+[\d.]+\s+(\d+)\s", out, re.M)
    return {p: float(t) for p, t in rows}


def main_cpu(a):
    """--rounds interleaved rounds, each every PyTorch peer in its own process and mtlab's
    steps, in turn first and second: a machine whose speed drifts (a shared VM moved PyTorch's
    two-thread transformer from 4,309 to 7,645 tokens/s between two sessions) moves both sides
    of a round alike, and the table gives each side's median over the rounds and the median of
    the rounds' ratios."""
    peers, ours, ratios = {}, {}, {}
    presets = a.presets.split(",")
    loads = [os.getloadavg()[0]]

    def time_peers():
        for p in presets:
            cmd = [sys.executable, __file__, "--device", "cpu", "--one", p, "--threads",
                   str(a.threads), "--repeat", str(a.repeat)]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"torch_train: PyTorch {p} failed:\n{run.stderr}")
            peers.setdefault(p, []).append(float(run.stdout.split()[-1]))

    for r in range(a.rounds):
        # the peers first in the first round, mtlab first in the second, and so on
        if r % 2 == 0:
            time_peers()
        mine = mtlab_small(a.mtlab, a.threads, a.repeat)
        if r % 2 == 1:
            time_peers()
        for p, t in mine.items():
            ours.setdefault(p, []).append(t)
            if p in presets:
                ratios.setdefault(p, []).append(t / peers[p][-1])
        loads.append(os.getloadavg()[0])
    med = statistics.median
    print(f"training steps on the CPU, {a.threads} threads, fp32, batch {SMALL_B}x64 tokens, "
          f"median of {a.repeat} steps each, {a.rounds} interleaved rounds (1-minute load "
          f"{min(loads):.2f}-{max(loads):.2f})")
    print(f"  {'preset':20s} {'mtlab tok/s':>12s} {'PyTorch tok/s':>14s} {'ratio':>7s}  rounds")
    for p in sorted(ours, key=lambda k: (k not in peers, k)):
        if p in peers:
            r = med(ratios[p])
            each = " ".join(f"{x:.2f}" for x in ratios[p])
            print(f"  {p:20s} {med(ours[p]):12.0f} {med(peers[p]):14.0f} {r:6.2f}x  "
                  f"{each}  {'ok' if r >= 2 else 'below target'}")
        else:
            print(f"  {p:20s} {med(ours[p]):12.0f} {'(no peer)':>14s}")
    print("  ratio: the median over the rounds of mtlab tokens/s / PyTorch eager tokens/s on the "
          "same shapes (target >= 2x); rounds: each round's ratio")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"mtlab": ours, "pytorch": peers, "ratios": ratios}, f, indent=1)


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


def mamba_ssm_model():
    """The 77M Mamba as mamba_ssm's own MambaLMHeadModel (its fused selective-scan and
    causal-conv1d CUDA kernels, Triton's fused add + RMSNorm), the Mamba training users know;
    None, saying why, where mamba_ssm does not import (transformers' PyTorch scan then)."""
    try:
        from mamba_ssm.models.config_mamba import MambaConfig
        from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel
    except Exception as e:  # ImportError, or a build that does not load
        print(f"mamba peer: transformers' PyTorch scan (mamba_ssm does not import: {e})")
        return None
    try:
        import causal_conv1d  # noqa: F401
        conv = "causal-conv1d's kernel"
    except Exception:
        conv = "PyTorch's conv1d (causal-conv1d does not import)"
    print(f"mamba peer: mamba_ssm's MambaLMHeadModel, its selective-scan kernels, {conv}")
    cfg = MambaConfig(d_model=610, n_layer=24, vocab_size=V, ssm_cfg={"layer": "Mamba1"},
                      rms_norm=True, residual_in_fp32=True, fused_add_norm=True,
                      pad_vocab_size_multiple=1, tie_embeddings=True)
    return MambaLMHeadModel(cfg)


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
            model = mamba_ssm_model()
            if model is None:
                model = transformers.MambaForCausalLM(mamba_config(610, 24, V))
            model = model.to(dev)
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
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--presets")
    ap.add_argument("--rounds", type=int, default=1,
                    help="--device cpu: interleaved rounds of every peer and mtlab (medians)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--mtlab", default="./mtlab")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # the child process timing one peer
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
        if a.one:
            print(f"{run_cpu(a.one, a.repeat):.1f}")
        else:
            a.presets = a.presets or ",".join(SMALL_PEERS)
            main_cpu(a)
        return
    if not a.out:
        ap.error("--out is required with --device cuda")
    a.presets = a.presets or "transformer,transformer++,mamba"
    res = {}
    for p in a.presets.split(","):
        res[p] = run(p, a.repeat)
        print(f"PyTorch {p:14s} {res[p]:10.0f} tokens/s")
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
