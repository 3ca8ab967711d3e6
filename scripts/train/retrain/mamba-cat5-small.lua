-- The CAT-5 variant of the small mamba model (docs/models.md §10.3: each pair stays alone with
-- probability 0.5, else is joined with 4 random pairs) at the retraining budget of budget.lua: 10x
-- the demo's, name substitution on. The learning rate is the paper's 1e-3 doubled, as for the demo
-- model.
-- Run: ./mtlab train scripts/train/retrain/mamba-cat5-small.lua [--resume]
--   or every retraining run: ./mtlab run scripts/train/retrain.lua
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "../budget.lua")("mamba-small", 2e-3, {cat_n = 5})
