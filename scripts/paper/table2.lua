-- Table 2 of the paper, sentence level: BLEU and chrF of every shipped architecture on the
-- Bible test verses, with named-entity recall. Prints what `mtlab eval` prints for the same
-- systems and verses, then the markdown table and a bar plot; writes out/table2.{md,svg,png}.
-- With a COMET checkpoint (--comet DIR, else the MTLAB_COMET environment variable; README,
-- "COMET") the tables have COMET too. A * marks a score that differs from the first system's
-- (paired bootstrap, p <= 0.05), as in `mtlab eval`.
--
--   ./mtlab run scripts/paper/table2.lua [--n 50] [--beam 5] [--out out] [--no-plot]
--                                        [--comet DIR] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("table2.lua", {n = 0, beam = 5, out = "out", src = "data/bible/test.es",
                                            ref = "data/bible/test.en", no_plot = false,
                                            comet = os.getenv("MTLAB_COMET") or ""}, arg)
local comet = opts.comet ~= "" and opts.comet or nil
if #models == 0 then models = R.shipped() end
if #models == 0 then error("table2.lua: no bundles given and none shipped under models/", 0) end

local result = mtlab.eval{models = models, src = R.lines(opts.src, opts.n),
                          ref = R.lines(opts.ref, opts.n), beam = opts.beam,
                          src_name = opts.src, ref_name = opts.ref, comet = comet}
io.write(result.text)

-- a score with its mark: * when the paired test says it differs from the first system's
local function marked(s, metric, fmt)
  local t = s.significance and s.significance[metric]
  return string.format(fmt, s[metric]) .. (t and t.significant and "*" or "")
end

local rows, names, bleu, chrf = {}, {}, {}, {}
for i, s in ipairs(result.systems) do
  names[i], bleu[i], chrf[i] = R.short(s.name), s.bleu, s.chrf
  rows[i] = {names[i], marked(s, "bleu", "%.2f"), marked(s, "chrf", "%.2f")}
  if comet then rows[i][#rows[i] + 1] = marked(s, "comet", "%.4f") end
  rows[i][#rows[i] + 1] = 100 * s.ne.all.recall
end
local headers = {"model", "BLEU", "chrF"}
if comet then headers[#headers + 1] = "COMET" end
headers[#headers + 1] = "NE recall %"
local md = string.format("\nTable 2 (sentence level), %d verses of %s, beam %d\n\n", result.segments,
                         opts.src, opts.beam)
           .. R.markdown(headers, rows)
if result.paired_test then
  md = md .. string.format("\n*: differs from %s at p <= 0.05 (paired %s, %d %s)\n",
                           R.short(result.paired_test.baseline),
                           result.paired_test.test == "bs" and "bootstrap" or "approximate randomization",
                           result.paired_test.samples,
                           result.paired_test.test == "bs" and "resamples" or "trials")
end
if comet then md = md .. string.format("COMET: %s, the mean segment score\n", comet) end
io.write(md)
local plot = mtlab.plot.bar{title = "Sentence-level BLEU and chrF", labels = names,
                            series = {{name = "BLEU", values = bleu}, {name = "chrF", values = chrf}}}
if not opts.no_plot then plot:show() end
local paths = R.write(opts.out, "table2", md, plot)
io.write("wrote ", table.concat(paths, ", "), "\n")
