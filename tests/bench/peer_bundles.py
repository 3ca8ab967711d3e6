"""The deployed-size bundles of `make bench-peers` (tests/bench/bench_peers.py), made on first
use under the harness's work directory and reused after (a development tool; nothing here is
committed or read by mtlab's tests):

  marian-base  MarianMTModel of opus-mt's base shape: d_model 512, 6+6 layers, 8 heads, FFN 2048
  tc-big       the same at "tc-big"'s width: d_model 1024, 16 heads, FFN 4096
      random weights (transformers' initialisation), saved as the hub's Helsinki-NLP/opus-mt-*
      repositories are (config.json with the BART-era keys, model.safetensors, source.spm,
      target.spm, vocab.json, tokenizer_config.json) with a real sentencepiece vocabulary of
      58,000 ids: one unigram model (SPM_SIZE pieces) trained on Debian's word lists
      (american-english, spanish) and the Bible's training text (data/bible/train.{es,en}),
      serving as source.spm and target.spm; vocab.json is </s> 0, <unk> 1, its pieces, <pad>
      last, as MarianTokenizer lays it out
  mamba-130m   MambaForCausalLM of state-spaces/mamba-130m-hf's shape: d_model 768, 24 layers,
      state 16, vocabulary 50,280; random weights (transformers' initialisation), saved as the
      hub's mamba-*-hf are (config.json, model.safetensors, a byte-level BPE tokenizer.json of
      BPE_SIZE tokens, <|endoftext|> 0, <|padding|> 1, <sep> 2, trained on the same text), with
      mtlab's prompt template {src}<sep> in config.json (docs/bundles.md)

  python3 tests/bench/peer_bundles.py WORK [NAME ...]   makes (or finds) them; prints the paths
"""
import json
import os
import shutil
import sys

SPM_SIZE = 58000  # the joint vocabulary: 57,997 pieces + </s>, <unk>, <pad> = 58,000 ids
BPE_SIZE = 50277  # GPT-NeoX's tokenizer size; the model's vocabulary is 50,280 as mamba-130m's
MAMBA_VOCAB = 50280
WORD_LISTS = ["/usr/share/dict/american-english", "/usr/share/dict/spanish"]
BIBLE = ["data/bible/train.es", "data/bible/train.en"]
MARIAN = {  # name: (d_model, layers per stack, heads, FFN)
    "marian-base": (512, 6, 8, 2048),
    "tc-big": (1024, 6, 16, 4096),
}
NAMES = [*MARIAN, "mamba-130m"]


def corpus_lines():
    """The training text: every word of the word lists (one per line), then the Bible lines."""
    for path in WORD_LISTS + BIBLE:
        if not os.path.isfile(path):
            sys.exit(f"peer_bundles: {path} is missing (word lists: apt-get install wamerican "
                     "wspanish; the Bible: make data)")
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    yield line


def spm_model(work):
    """The joint unigram sentencepiece model of SPM_SIZE pieces, trained once into work/spm."""
    import sentencepiece as spm
    path = os.path.join(work, "spm", f"joint-{SPM_SIZE}.model")
    if os.path.isfile(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = os.path.join(work, "spm", "text.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in corpus_lines())
    print(f"peer_bundles: training a {SPM_SIZE}-piece sentencepiece model", flush=True)
    spm.set_random_generator_seed(1)
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=path[:-len(".model")], vocab_size=SPM_SIZE,
        model_type="unigram", character_coverage=1.0, input_sentence_size=0,
        normalization_rule_name="identity", num_threads=2, minloglevel=2)
    os.remove(text)
    return path


def marian_vocab(spm_path):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.get_piece_size()):
        if not sp.is_control(i) and not sp.is_unknown(i):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def make_marian(name, work, out):
    import torch
    from transformers import MarianConfig, MarianMTModel

    d, layers, heads, ffn = MARIAN[name]
    sp = spm_model(work)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for f in ("source.spm", "target.spm"):
        shutil.copy(sp, os.path.join(tmp, f))
    vocab = marian_vocab(sp)
    with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=2)
    with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
        json.dump({"source_lang": "es", "target_lang": "en", "model_max_length": 512,
                   "separate_vocabs": False, "tokenizer_class": "MarianTokenizer"}, f, indent=2)
    V, pad = len(vocab), vocab["<pad>"]
    cfg = MarianConfig(
        vocab_size=V, decoder_vocab_size=V, d_model=d, encoder_layers=layers,
        decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, activation_function="swish",
        scale_embedding=True, share_encoder_decoder_embeddings=True,
        static_position_embeddings=True, normalize_before=False, normalize_embedding=False,
        add_final_layer_norm=False, add_bias_logits=False, max_position_embeddings=512,
        pad_token_id=pad, eos_token_id=0, bos_token_id=0, forced_eos_token_id=0,
        decoder_start_token_id=pad, bad_words_ids=[[pad]], max_length=512, num_beams=4)
    torch.manual_seed(44)
    model = MarianMTModel(cfg).eval()
    model.save_pretrained(tmp)
    cfg_path = os.path.join(tmp, "config.json")
    with open(cfg_path) as f:
        saved = json.load(f)
    # the hub's opus-mt configs (made by older transformers) hold the generation keys
    saved.update({"bad_words_ids": [[pad]], "max_length": 512, "num_beams": 4})
    with open(cfg_path, "w") as f:
        json.dump(saved, f, indent=2, sort_keys=True)
        f.write("\n")
    params = sum(p.numel() for p in model.parameters())
    os.rename(tmp, out)
    print(f"peer_bundles: {out}: MarianMTModel d_model {d}, {layers}+{layers} layers, {heads} "
          f"heads, FFN {ffn}, vocabulary {V}, {params / 1e6:.1f}M parameters", flush=True)


def bpe_tokenizer(work):
    """A byte-level BPE tokenizer.json of BPE_SIZE tokens (GPT-NeoX's layout), trained once."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers
    path = os.path.join(work, "bpe", f"tokenizer-{BPE_SIZE}.json")
    if os.path.isfile(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    print(f"peer_bundles: training a {BPE_SIZE}-token byte-level BPE", flush=True)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    specials = [AddedToken(t, special=True, normalized=False) for t in
                ("<|endoftext|>", "<|padding|>", "<sep>")]
    trainer = trainers.BpeTrainer(vocab_size=BPE_SIZE, special_tokens=specials,
                                  show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines(), trainer)
    tok.save(path)
    return path


def make_mamba(work, out):
    import torch
    from transformers import MambaConfig, MambaForCausalLM, PreTrainedTokenizerFast

    tok_path = bpe_tokenizer(work)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copy(tok_path, os.path.join(tmp, "tokenizer.json"))
    fast = PreTrainedTokenizerFast(tokenizer_file=tok_path, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   unk_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": ["<sep>"]})
    cfg = MambaConfig(vocab_size=MAMBA_VOCAB, hidden_size=768, state_size=16,
                      num_hidden_layers=24, expand=2, conv_kernel=4, pad_vocab_size_multiple=8,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0, use_bias=False,
                      use_conv_bias=True, residual_in_fp32=True, tie_word_embeddings=True)
    torch.manual_seed(130)
    model = MambaForCausalLM(cfg).eval()
    model.save_pretrained(tmp)
    fast.save_pretrained(tmp)
    with open(os.path.join(tmp, "config.json"), encoding="utf-8") as f:
        c = json.load(f)
    c["mtlab"] = {"prompt": "{src}<sep>"}
    with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    for extra in ("vocab.json", "merges.txt", "generation_config.json"):
        if os.path.exists(os.path.join(tmp, extra)):
            os.remove(os.path.join(tmp, extra))
    params = sum(p.numel() for p in model.parameters())
    os.rename(tmp, out)
    print(f"peer_bundles: {out}: MambaForCausalLM d_model 768, 24 layers, vocabulary "
          f"{MAMBA_VOCAB} (tokenizer {len(fast)} tokens), {params / 1e6:.1f}M parameters",
          flush=True)


def bundle(name, work):
    """The path of bundle name under work/bundles, made there first when missing."""
    out = os.path.join(work, "bundles", name)
    if not os.path.isfile(os.path.join(out, "config.json")):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if name in MARIAN:
            make_marian(name, work, out)
        else:
            make_mamba(work, out)
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for n in sys.argv[2:] or NAMES:
        if n not in NAMES:
            sys.exit(f"peer_bundles: no bundle '{n}' (one of {', '.join(NAMES)})")
        print(bundle(n, sys.argv[1]))
