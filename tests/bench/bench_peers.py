#!/usr/bin/env python3
"""`make bench-peers`: mtlab's decoding speed against established implementations on the same
bundles, the same token ids, the same thread count, in one run on this machine (development
tool; not part of `make test` or CI).

  transformer bundle (Hugging Face Marian layout)
      -> converted with CTranslate2's own converter, decoded by ctranslate2 (fp32)
      -> also decoded by transformers' MarianMTModel (PyTorch eager), for reference
  mamba bundle (MambaForCausalLM layout)
      -> decoded by transformers' MambaForCausalLM (PyTorch eager)

Every system decodes greedily exactly NEW_TOKENS tokens per source (<eos> suppressed until
then), batch by batch in file order, after one warm-up batch; each figure is the median of
--repeat passes. mtlab's figure comes from `mtlab bench --peer-inputs FILE -m BUNDLE`.
Bundles: the trained ones under models/ when present, else random-weight bundles made by
`mtlab bench --make-bundles` (speed does not depend on what the weights say).
Missing Python packages (ctranslate2, transformers, torch, safetensors) are pip-installed.

  python3 tests/bench/bench_peers.py [--mtlab ./mtlab] [--work DIR] [--threads N]
                                     [--new-tokens N] [--repeat N]
"""
import argparse
import importlib
import importlib.util
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

PACKAGES = [("ctranslate2", "ctranslate2"), ("transformers", "transformers"),
            ("torch", "torch"), ("safetensors", "safetensors")]
SETTINGS = [(1, 4), (16, 32)]  # (batch, sources)
FIRST_WORD_ID = 5              # ids below frame prompts: <pad> <eos> <sep> <bos> <unk>


def ensure_packages():
    missing = [pip for mod, pip in PACKAGES if importlib.util.find_spec(mod) is None]
    if missing:
        print("bench-peers: installing from PyPI:", " ".join(missing), flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
        importlib.invalidate_caches()


def load_average():
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


# ---------------------------------------------------------------- bundles and inputs
def find_bundles(mtlab, work):
    """(transformer dir, mamba dir, where they came from)."""
    found = {}
    if os.path.isdir("models"):
        for name in sorted(os.listdir("models")):
            path = os.path.join("models", name, "config.json")
            if os.path.isfile(path):
                with open(path) as f:
                    kind = json.load(f).get("model_type")
                found.setdefault(kind, os.path.join("models", name))
    if "marian" in found and "mamba" in found:
        return found["marian"], found["mamba"], "trained bundles under models/"
    out = os.path.join(work, "bundles")
    subprocess.run([mtlab, "bench", "--make-bundles", out], check=True, capture_output=True)
    return (os.path.join(out, "transformer-small"), os.path.join(out, "mamba-small"),
            f"random-weight bundles from `mtlab bench --make-bundles {out}`")


def bundle_config(bundle):
    with open(os.path.join(bundle, "config.json")) as f:
        return json.load(f)


def write_inputs(path, vocab, n):
    """n sources of 12..40 ordinary ids, sorted by length so batches pad little (the same
    batches for every system, which all take the file in order)."""
    rng = random.Random(1)
    lengths = sorted(rng.randint(12, 40) for _ in range(n))
    # vocab - 1 stays out: CTranslate2's Marian conversion drops the last vocabulary row
    sources = [[rng.randint(FIRST_WORD_ID, vocab - 2) for _ in range(k)] for k in lengths]
    with open(path, "w") as f:
        for s in sources:
            f.write(" ".join(map(str, s)) + "\n")
    return sources


def batches(sources, batch):
    return [sources[i:i + batch] for i in range(0, len(sources), batch)]


def timed_passes(decode_batch, sources, batch, repeat, new_tokens):
    """tokens/s: one warm-up batch, then the median of repeat passes over all batches."""
    decode_batch(sources[:batch])
    times, produced = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        produced = sum(decode_batch(b) for b in batches(sources, batch))
        times.append(time.perf_counter() - t0)
    expected = len(sources) * new_tokens
    if produced != expected:
        print(f"bench-peers: warning: produced {produced} tokens, expected {expected}")
    return produced / statistics.median(times)


# ---------------------------------------------------------------- mtlab
def mtlab_tokens_per_s(mtlab, bundle, ids_path, batch, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))
    cmd = [mtlab, "bench", "--peer-inputs", ids_path, "-m", bundle, "--new-tokens",
           str(args.new_tokens), "--batch", str(batch), "--repeat", str(args.repeat)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"= ([0-9.]+) tokens/s", run.stdout)
    if run.returncode != 0 or not m:
        sys.exit(f"bench-peers: `{' '.join(cmd)}` exited with {run.returncode}: "
                 f"{(run.stderr or run.stdout).strip()}")
    return float(m.group(1))


# ---------------------------------------------------------------- CTranslate2
class IdTokenizer:
    """What CTranslate2's Marian loader asks of a tokenizer, for a bundle whose tokens are ids:
    token i is "t<i>", with Marian's names for <eos>, <unk> and the trailing <pad> that the
    loader removes."""

    def __init__(self, vocab, eos_id, unk_id):
        self.tokens = [f"t{i}" for i in range(vocab)]
        self.tokens[eos_id], self.tokens[unk_id], self.tokens[-1] = "</s>", "<unk>", "<pad>"
        self.eos_token, self.unk_token, self.bos_token = "</s>", "<unk>", "<s>"

    def get_vocab(self):
        return {t: i for i, t in enumerate(self.tokens)}


def ct2_translator(bundle, work, threads):
    import ctranslate2
    from ctranslate2.converters import TransformersConverter

    cfg = bundle_config(bundle)
    tok = IdTokenizer(cfg["vocab_size"], cfg["eos_token_id"], cfg["mtlab"]["unk_token_id"])

    class IdConverter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return tok

    out = os.path.join(work, "ct2-" + os.path.basename(os.path.normpath(bundle)))
    IdConverter(bundle).convert(out, force=True)
    translator = ctranslate2.Translator(out, device="cpu", compute_type="float32",
                                        intra_threads=threads, inter_threads=1)
    return translator, tok, ctranslate2.__version__


def ct2_tokens_per_s(translator, tok, sources, batch, args):
    def decode_batch(b):
        src = [[tok.tokens[i] for i in s] + ["</s>"] for s in b]
        res = translator.translate_batch(src, beam_size=1, max_batch_size=len(b),
                                         min_decoding_length=args.new_tokens,
                                         max_decoding_length=args.new_tokens)
        return sum(len(r.hypotheses[0]) for r in res)
    return timed_passes(decode_batch, sources, batch, args.repeat, args.new_tokens)


# ---------------------------------------------------------------- transformers (PyTorch eager)
def hf_tokens_per_s(model, cfg, sources, batch, args, encdec):
    import torch

    pad, eos = cfg["pad_token_id"], cfg["eos_token_id"]
    sep = cfg.get("mtlab", {}).get("sep_token_id", 2)

    def decode_batch(b):
        longest = max(len(s) for s in b) + 1
        if encdec:  # `src <eos>`, right padded
            rows = [s + [eos] + [pad] * (longest - len(s) - 1) for s in b]
            mask = [[1] * (len(s) + 1) + [0] * (longest - len(s) - 1) for s in b]
        else:       # `src <sep>`, left padded
            rows = [[pad] * (longest - len(s) - 1) + s + [sep] for s in b]
            mask = [[0] * (longest - len(s) - 1) + [1] * (len(s) + 1) for s in b]
        kwargs = dict(input_ids=torch.tensor(rows), attention_mask=torch.tensor(mask),
                      do_sample=False, num_beams=1, min_new_tokens=args.new_tokens,
                      max_new_tokens=args.new_tokens, pad_token_id=pad, eos_token_id=eos)
        if encdec:
            kwargs["decoder_start_token_id"] = cfg["decoder_start_token_id"]
        with torch.inference_mode():
            out = model.generate(**kwargs)
        new = out.shape[1] - (1 if encdec else len(rows[0]))
        return new * len(b)
    return timed_passes(decode_batch, sources, batch, args.repeat, args.new_tokens)


def hf_model(bundle, encdec):
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    cls = AutoModelForSeq2SeqLM if encdec else AutoModelForCausalLM
    return cls.from_pretrained(bundle, dtype=torch.float32).eval()


# ---------------------------------------------------------------- main
def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mtlab", default="./mtlab")
    p.add_argument("--work", default="build/bench-peers")
    p.add_argument("--threads", type=int,
                   default=int(os.environ.get("OMP_NUM_THREADS", 0)) or os.cpu_count())
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ensure_packages()
    import torch
    import transformers

    transformers.logging.set_verbosity_error()  # the eager-fallback notices are expected here
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    start_load = load_average()
    transformer, mamba, origin = find_bundles(args.mtlab, args.work)
    print(f"bench-peers: {args.threads} threads for every system, greedy, exactly "
          f"{args.new_tokens} new tokens per source, median of {args.repeat} passes after a "
          f"warm-up batch")
    print(f"bundles: {transformer}, {mamba} ({origin})")
    print(f"load average at start: {start_load} on {os.cpu_count()} CPUs", flush=True)
    if os.getloadavg()[0] > 0.5 * os.cpu_count():
        print("note: the machine is busy; OpenMP threads of every system spin-wait for peers "
              "held off the CPU, so figures are pessimistic and the ratios noisy")

    rows = []
    t_cfg, m_cfg = bundle_config(transformer), bundle_config(mamba)
    translator, tok, ct2_version = ct2_translator(transformer, args.work, args.threads)
    marian = hf_model(transformer, True)
    mamba_model = hf_model(mamba, False)
    hf = f"transformers {transformers.__version__} eager (torch {torch.__version__})"
    for batch, n in SETTINGS:
        for name, bundle, cfg in (("transformer", transformer, t_cfg), ("mamba", mamba, m_cfg)):
            ids_path = os.path.join(args.work, f"{name}-b{batch}.ids")
            sources = write_inputs(ids_path, cfg["vocab_size"], n)
            ours = mtlab_tokens_per_s(args.mtlab, bundle, ids_path, batch, args)
            if name == "transformer":
                peers = [(f"ctranslate2 {ct2_version} fp32",
                          ct2_tokens_per_s(translator, tok, sources, batch, args)),
                         (hf, hf_tokens_per_s(marian, cfg, sources, batch, args, True))]
            else:
                peers = [(hf, hf_tokens_per_s(mamba_model, cfg, sources, batch, args, False))]
            for peer, theirs in peers:
                rows.append((name, batch, n, ours, peer, theirs))
                print(f"  {name:<12} batch {batch:>2}: mtlab {ours:8.1f} tok/s, {peer}: "
                      f"{theirs:8.1f} tok/s", flush=True)

    print()
    print(f"{'model':<12} {'batch':>5} {'sources':>7} {'mtlab tok/s':>12} {'peer tok/s':>11} "
          f"{'mtlab/peer':>10}  peer")
    for name, batch, n, ours, peer, theirs in rows:
        print(f"{name:<12} {batch:>5} {n:>7} {ours:>12.1f} {theirs:>11.1f} "
              f"{ours / theirs:>9.2f}x  {peer}")
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
