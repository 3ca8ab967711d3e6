-- Table 2 of the paper, sentence level: BLEU and chrF of every shipped architecture on the
-- Bible test verses, with named-entity recall. Prints what `mtlab eval` prints for the same
-- systems and verses, then the markdown table and a bar plot; writes out/table2.{md,svg,png}.
--
--   ./mtlab run scripts/paper/table2.lua [--n 50] [--beam 5] [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("table2.lua", {n = 0, beam = 5, out = "out", src = "data/bible/test.es",
                                            ref = "data/bible/test.en", no_plot = false}, arg)
if #models == 0 then models = R.shipped() end
if #models == 0 then error("table2.lua: no bundles given and none shipped under models/", 0) end

local result = mtlab.eval{models = models, src = R.lines(opts.src, opts.n),
                          ref = R.lines(opts.ref, opts.n), beam = opts.beam,
                          src_name = opts.src, ref_name = opts.ref}
io.write(result.text)

local rows, names, bleu, chrf = {}, {}, {}, {}
for i, s in ipairs(result.systems) do
  names[i], bleu[i], chrf[i] = R.short(s.name), s.bleu, s.chrf
  rows[i] = {names[i], s.bleu, s.chrf, 100 * s.ne.all.recall}
end
local md = string.format("\nTable 2 (sentence level), %d verses of %s, beam %d\n\n", result.segments,
                         opts.src, opts.beam)
           .. R.markdown({"model", "BLEU", "chrF", "NE recall %"}, rows)
io.write(md)
local plot = mtlab.plot.bar{title = "Sentence-level BLEU and chrF", labels = names,
                            series = {{name = "BLEU", values = bleu}, {name = "chrF", values = chrf}}}
if not opts.no_plot then plot:show() end
local paths = R.write(opts.out, "table2", md, plot)
io.write("wrote ", table.concat(paths, ", "), "\n")
