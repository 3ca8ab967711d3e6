-- The small retnet model at the retraining budget of budget.lua: 10x the demo's, name substitution
-- on. The learning rate is the paper's 1e-3 doubled, as for the demo model. Dropout 0.3 and
-- weight decay 0.1 instead of the budget's 0.1 and 0.001, as for the pure Mamba: at those RetNet
-- overfit the Bible (its validation loss rose from 3.09 to 3.49 on the GPU after its best step,
-- 5,000); going on from that step with these, the loss fell to 2.79 by step 10,000 and test BLEU
-- rose from 11.08 to 13.56; on past the budget to step 23,500 (a GPU, max_steps = 30000), to 16.45
-- (README, models/provenance.tsv).
-- Run: ./mtlab train scripts/train/retrain/retnet-small.lua [--resume]
--   or every retraining run: ./mtlab run scripts/train/retrain.lua
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local c = dofile(here .. "../budget.lua")("retnet-small", 2e-3)
c.model.dropout = 0.3
c.weight_decay = 0.1
return c
