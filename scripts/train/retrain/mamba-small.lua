-- The small mamba model at the retraining budget of budget.lua: 10x the demo's, name substitution
-- on. The learning rate is the paper's 1e-3 doubled, as for the demo model. Dropout 0.3 and
-- weight decay 0.1 instead of the budget's 0.1 and 0.001: at those the pure Mamba overfit the
-- Bible (its validation loss rose from step 2,000-3,000 on the GPU); going on from its step-4000
-- bundle with these, the loss fell again (2.84 at step 4500, 2.74 at 5000) and test BLEU rose
-- from 12.07 to 14.34 by step 5250 and to 16.11 by step 9000 (README, models/provenance.tsv).
-- Run: ./mtlab train scripts/train/retrain/mamba-small.lua [--resume]
--   or every retraining run: ./mtlab run scripts/train/retrain.lua
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local c = dofile(here .. "../budget.lua")("mamba-small", 2e-3)
c.model.dropout = 0.3
c.weight_decay = 0.1
return c
