-- The small mamba model at the retraining budget of budget.lua: 10x the demo's, name substitution
-- on. The learning rate is the paper's 1e-3 doubled, as for the demo model.
-- Run: ./mtlab train scripts/train/retrain/mamba-small.lua [--resume]
--   or every retraining run: ./mtlab run scripts/train/retrain.lua
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "../budget.lua")("mamba-small", 2e-3)
