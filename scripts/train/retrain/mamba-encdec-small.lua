-- The small mamba-encdec model at the retraining budget of budget.lua: 10x the demo's, name
-- substitution on. The learning rate is the paper's 7e-4 doubled, as for the demo model.
-- Run: ./mtlab train scripts/train/retrain/mamba-encdec-small.lua [--resume]
--   or every retraining run: ./mtlab run scripts/train/retrain.lua
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "../budget.lua")("mamba-encdec-small", 1.4e-3)
