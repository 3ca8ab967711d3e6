-- Finetune a pretrained Pythia (GPT-NeoX) from the hub on the Bible (Spanish -> English): the
-- paper's pretrained row (Table 2), EleutherAI/pythia-160m, 160M parameters: a run for a GPU.
-- Run: huggingface-cli download EleutherAI/pythia-160m --local-dir pythia-160m
--      ./mtlab data bible
--      ./mtlab train scripts/train/finetune-pythia.lua
-- init gives the model (architecture, sizes) and the tokenizer (its tokenizer.json), so the
-- config names only init, the data and training keys. The hub's config.json has no prompt
-- template and its tokenizer no separator, so the template is given here: training puts each
-- source into it, and every saved bundle keeps it for translating (docs/bundles.md §2.4).
-- The training keys are finetune-mamba.lua's; another checkpoint (pythia-70m, pythia-410m) or
-- dataset is a key on the command line:
--   mtlab train scripts/train/finetune-pythia.lua init=DIR dataset=data/mycorp name=mycorp-ft
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local c = dofile(here .. "finetune-mamba.lua")
c.name = "finetune-pythia"
c.init = "pythia-160m"
return c
