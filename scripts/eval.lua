-- Evaluates the given systems on a test set: the table `mtlab eval` prints, then BLEU/chrF and
-- NE recall as plots; writes out/eval.{md,svg,png} and out/eval_ne.{svg,png}.
--
--   ./mtlab run scripts/eval.lua [--src F] [--ref F] [--n N] [--beam 5] [--out out] [--no-plot]
--                                SYSTEM...      (bundle directories or apertium:MODE)
package.path = arg[0]:match("^(.-)[^/]*$") .. "lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, systems = R.args("eval.lua", {src = "data/bible/test.es", ref = "data/bible/test.en",
                                          n = 0, beam = 5, out = "out", no_plot = false}, arg)
if #systems == 0 then systems = R.shipped() end
local result = mtlab.eval{models = systems, src = R.lines(opts.src, opts.n), ref = R.lines(opts.ref, opts.n),
                          beam = opts.beam, src_name = opts.src, ref_name = opts.ref}
io.write(result.text, "\n")
local rows, names, bleu, chrf, ne = {}, {}, {}, {}, {}
for i, s in ipairs(result.systems) do
  names[i], bleu[i], chrf[i], ne[i] = R.short(s.name), s.bleu, s.chrf, 100 * s.ne.all.recall
  rows[i] = {names[i], s.bleu, s.chrf, ne[i], s.time_s, s.peak_bytes / 1048576}
end
local md = R.markdown({"system", "BLEU", "chrF", "NE recall %", "time s", "peak MiB"}, rows)
io.write(md)
local scores = mtlab.plot.bar{title = "BLEU and chrF", labels = names,
                              series = {{name = "BLEU", values = bleu}, {name = "chrF", values = chrf}}}
local recall = mtlab.plot.bar{title = "Named-entity recall %", labels = names, values = ne}
if not opts.no_plot then scores:show(); recall:show() end
local paths = R.write(opts.out, "eval", md, scores)
paths[#paths + 1] = recall:save(opts.out .. "/eval_ne.svg")
paths[#paths + 1] = recall:save(opts.out .. "/eval_ne.png")
io.write("wrote ", table.concat(paths, ", "), "\n")
