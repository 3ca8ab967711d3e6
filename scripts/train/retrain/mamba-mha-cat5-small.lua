-- The CAT-5 variant of the small mamba-mha model (docs/models.md §10.3: each pair stays alone with
-- probability 0.5, else is joined with 4 random pairs) at the retraining budget of budget.lua: 10x
-- the demo's, name substitution on. The learning rate is the paper's 7e-4 doubled, as for the demo
-- model.
-- Run: ./mtlab train scripts/train/retrain/mamba-mha-cat5-small.lua [--resume]
--   or every retraining run: ./mtlab run scripts/train/retrain.lua
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "../budget.lua")("mamba-mha-small", 1.4e-3, {cat_n = 5})
