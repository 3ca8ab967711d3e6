-- The small mamba demo model trained on the Bible (Spanish -> English), shipped in models/.
-- Run: ./mtlab train scripts/train/mamba-small.lua   (needs `mtlab data bible` and
-- `mtlab tokenizer train` first). The budget is demo_budget.lua's, shared by every demo model;
-- the learning rate is the paper's 1e-3 doubled.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "demo_budget.lua")("mamba-small", 2e-3)
