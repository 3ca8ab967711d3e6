-- The small transformer++ demo model trained on the Bible (Spanish -> English).
-- Run: ./mtlab train scripts/train/transformer++-small.lua   (needs `mtlab data bible` and
-- `mtlab tokenizer train` first). The budget is demo_budget.lua's, shared by every demo model;
-- the learning rate is the paper's 4e-4 doubled.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "demo_budget.lua")("transformer++-small", 8e-4)
