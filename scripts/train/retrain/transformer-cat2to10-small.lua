-- The transformer's CAT-N variant whose joins hold a drawn 2 to 10 verses (docs/models.md §10.3:
-- each pair stays alone with probability 0.5, else is joined with 1 to 9 random pairs), at the
-- retraining budget of budget.lua. The CAT-5 transformer never sees a side past 5 verses and
-- loses its way after about 5 verses of an 8-verse paragraph (its absolute positions beyond
-- those it trained on); this one sees every length up to 10 verses. The learning rate is the
-- paper's 4e-4 doubled, as for the other transformer runs. The shipped bundle went on from the
-- CAT-5 transformer (models/provenance.tsv):
--   ./mtlab train scripts/train/retrain/transformer-cat2to10-small.lua \
--     init=models/transformer-cat5-small init_step=20250 max_steps=22250 keep_every=250 [--resume]
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
return dofile(here .. "../budget.lua")("transformer-small", 8e-4, {cat_n = 10, cat_min = 2})
