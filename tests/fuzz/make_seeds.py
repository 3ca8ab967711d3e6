#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (a development tool). Valid files from the bundle fixtures
plus small hand-made files, each close to one of the reader's checks.
The regress_* seeds are inputs that once broke a promise of a target (kept by hand; each also
has a unit test). Run from the repository root:  python3 tests/fuzz/make_seeds.py"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "bundle")


def safetensors_file(header, data_len):
    text = header.encode()
    return struct.pack("<Q", len(text)) + text + bytes(range(256)) * (data_len // 256) + bytes(data_len % 256)


ST_SEEDS = {
    "empty": ("{}", 0),
    "metadata_only": ('{"__metadata__":{"format":"pt","k":"v"}}', 0),
    "scalar_f32": ('{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', 4),
    "mixed": ('{"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},'
              '"b":{"dtype":"F16","shape":[3],"data_offsets":[8,14]},'
              '"c":{"dtype":"I64","shape":[1],"data_offsets":[14,22]},'
              '"d":{"dtype":"F64","shape":[1,1],"data_offsets":[22,30]},'
              '"e":{"dtype":"BOOL","shape":[0,5],"data_offsets":[30,30]}}', 30),
    "overlap": ('{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
                '"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}', 6),
    "size_mismatch": ('{"w":{"dtype":"F32","shape":[3,4],"data_offsets":[0,40]}}', 48),
    "bad_dtype": ('{"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}', 1),
}

CONFIG_SEEDS = {
    "small": '{"model_type": "mamba", "hidden_size": 32, "layer_norm_epsilon": 1e-05, "ssm_cfg": {},'
             ' "architectures": ["MambaForCausalLM"], "bos_token_id": null, "use_bias": false}',
    "nested": '{"a": {"b": {"c": [1, 2.5, "x", true, null, {"d": []}]}}, "e": "caf\\u00e9 \\ud83d\\ude00"}',
    "numbers": '{"i": -9223372036854775808, "r": 1.7976931348623157e308, "t": 5e-324, "z": -0.0}',
}

def torch_seeds(out):
    """fuzz_torch_pickle: checkpoints from tests/fixtures/torch_pickle/ whole (zip archives and
    the legacy format) and their data.pkl alone (the target makes storages up for those)."""
    import zipfile
    src = os.path.join(HERE, "..", "fixtures", "torch_pickle")
    os.makedirs(out, exist_ok=True)
    for name in ["tensors.bin", "tensors_protocol5.bin", "nested.bin", "parameter.bin", "attributes.bin",
                 "float8.bin", "evil.bin", "marian/pytorch_model.bin"]:
        base = name.replace("/", "_")
        if os.path.getsize(os.path.join(src, name)) < 8192:
            shutil.copy(os.path.join(src, name), os.path.join(out, base))
        with zipfile.ZipFile(os.path.join(src, name)) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            with open(os.path.join(out, base[:-4] + ".pkl"), "wb") as f:
                f.write(z.read(pkl))
    shutil.copy(os.path.join(src, "legacy.bin"), os.path.join(out, "legacy.bin"))


if __name__ == "__main__":
    torch_seeds(os.path.join(HERE, "seeds", "fuzz_torch_pickle"))
    st_dir = os.path.join(HERE, "seeds", "fuzz_safetensors")
    cfg_dir = os.path.join(HERE, "seeds", "fuzz_config")
    os.makedirs(st_dir, exist_ok=True)
    os.makedirs(cfg_dir, exist_ok=True)
    for name in ["hf_written.safetensors", "mtlab_layout.safetensors"]:
        shutil.copy(os.path.join(FIXTURES, name), os.path.join(st_dir, name))
    for name, (header, data_len) in ST_SEEDS.items():
        with open(os.path.join(st_dir, name + ".safetensors"), "wb") as f:
            f.write(safetensors_file(header, data_len))
    shutil.copy(os.path.join(FIXTURES, "config_hf.json"), os.path.join(cfg_dir, "config_hf.json"))
    for name, text in CONFIG_SEEDS.items():
        with open(os.path.join(cfg_dir, name + ".json"), "w") as f:
            f.write(text)
