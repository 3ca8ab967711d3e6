-- Figure 1 of the paper: named-entity recall by how often the entity was seen in training
-- (unseen / 1-15 / 16+ training pairs), one group of bars per model.
--
--   ./mtlab run scripts/paper/fig1_ne_recall.lua [--n 0] [--beam 5] [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("fig1_ne_recall.lua", {n = 0, beam = 5, out = "out", no_plot = false,
                                                    src = "data/bible/test.es", ref = "data/bible/test.en"}, arg)
if #models == 0 then models = R.shipped() end
local result = mtlab.eval{models = models, src = R.lines(opts.src, opts.n), ref = R.lines(opts.ref, opts.n),
                          beam = opts.beam, src_name = opts.src, ref_name = opts.ref}
local bins = {"unseen", "regular", "frequent"}
local labels, rows, series = {"unseen (0)", "1-15", "16+"}, {}, {}
for _, s in ipairs(result.systems) do
  local v = {}
  for i, b in ipairs(bins) do v[i] = 100 * s.ne[b].recall end
  rows[#rows + 1] = {R.short(s.name), v[1], v[2], v[3], 100 * s.ne.all.recall}
  series[#series + 1] = {name = R.short(s.name), values = v}
end
local first = result.systems[1].ne
local md = string.format("Figure 1: NE recall %% by training frequency (%d / %d / %d entities), %d verses, beam %d\n\n",
                         first.unseen.entities, first.regular.entities, first.frequent.entities,
                         result.segments, opts.beam)
           .. R.markdown({"model", "unseen", "1-15", "16+", "all"}, rows, "%.1f")
io.write(md)
local plot = mtlab.plot.bar{title = "NE recall by training frequency", ylabel = "recall %",
                            labels = labels, series = series}
if not opts.no_plot then plot:show() end
io.write("wrote ", table.concat(R.write(opts.out, "fig1_ne_recall", md, plot), ", "), "\n")
