-- Copying names never seen in training (issue 21, part 2): each system translates test.names,
-- the test verses whose shared names were replaced by names the Bible never uses
-- (docs/data.md §9), and is scored by BLEU and by the verbatim recall of those names
-- (docs/metrics.md §9). Apertium, which passes unknown words through, is the reference point.
--
--   ./mtlab run scripts/paper/names.lua [--beam 5] [--data data/bible] [--apertium apertium:spa-eng]
--                                       [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("names.lua", {beam = 5, data = "data/bible", out = "out", no_plot = false,
                                           apertium = "apertium:spa-eng"}, arg)
if #models == 0 then models = R.shipped() end
if opts.apertium ~= "" and opts.apertium ~= "none" then models[#models + 1] = opts.apertium end
local base = opts.data .. "/test.names"
if not R.exists(base .. ".tsv") then
  error("names.lua: " .. base .. ".tsv is missing: run `mtlab data bible` (it writes test.names.*)", 0)
end
local result = mtlab.eval{models = models, src = base .. ".es", ref = base .. ".en", names = base .. ".tsv",
                          beam = opts.beam}
local rows, labels, recalls = {}, {}, {}
for _, s in ipairs(result.systems) do
  rows[#rows + 1] = {R.short(s.name), s.bleu, 100 * s.names.recall, string.format("%d / %d", s.names.hits, s.names.names)}
  labels[#labels + 1], recalls[#recalls + 1] = R.short(s.name), 100 * s.names.recall
end
local md = string.format("Substituted-name recall: %d verses of %s with %d names they never saw in training, beam %d\n\n",
                         result.segments, base, result.systems[1].names.names, opts.beam)
           .. R.markdown({"system", "BLEU", "name recall %", "names copied"}, rows)
io.write(md)
local plot = mtlab.plot.bar{title = "Unseen names copied verbatim", ylabel = "recall %", labels = labels,
                            values = recalls}
if not opts.no_plot then plot:show() end
io.write("wrote ", table.concat(R.write(opts.out, "names", md, plot), ", "), "\n")
