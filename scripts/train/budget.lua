-- The shared budget of the retrained models (issue 21, part 4), ten times demo_budget.lua's:
-- 10,000 steps of the same batches of 4096 padded tokens per side (a decoder-only model's rows
-- hold both sides, so its batches hold 8192), about 120 sentence pairs per step, about 42
-- epochs of the Bible train split for every architecture. As in demo_budget.lua only the
-- budget is shared: each family keeps the paper's learning rate (docs/models.md §1.5) doubled.
-- New here: name substitution (docs/data.md §8) teaches copying names never seen, and a
-- checkpoint every 250 steps keeps what a stopped run loses small (scripts/train/retrain.lua
-- resumes it).
-- Use: return dofile(<this file>)("mamba-small", 2e-3 [, {cat_n = 5 [, cat_min = 2]}])
--   preset, peak lr, and for a CAT-N variant (docs/models.md §10.3) cat_n: the run is then
--   named PRESET-catN-10k instead of PRESET-10k (with cat_min, joins of a drawn cat_min..N
--   verses: PRESET-catMINtoN-10k), and its sides may hold up to 512 ids so that N verses fit in
--   one example (the test paragraphs of 8 verses are about 300 ids).
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local demo_budget = dofile(here .. "demo_budget.lua")

return function(preset, lr, variant)
  local cat_n = variant and variant.cat_n or 0
  local cat_min = variant and variant.cat_min or 0
  local c = demo_budget(preset, lr)
  local cat = cat_min > 0 and cat_min .. "to" .. cat_n or tostring(cat_n)
  c.name = cat_n > 1 and preset:gsub("%-small$", "") .. "-cat" .. cat .. "-small-10k" or preset .. "-10k"
  c.max_len = cat_n > 1 and 512 or 128
  c.cat_n = cat_n
  c.cat_min = cat_min
  c.max_steps = 10000
  c.valid_every = 1000
  c.name_substitution = 0.3
  c.gazetteer = "scripts/data/gazetteer.train.txt"
  return c
end
