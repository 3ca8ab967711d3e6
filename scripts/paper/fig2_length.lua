-- Figure 2 of the paper: BLEU by source length (whitespace tokens: 1-32, 33-64, ...), one line
-- per model; the buckets are those of `mtlab eval`. The test set is the verses and the 8-verse
-- paragraphs together, so that every bucket up to 257+ has segments.
--
--   ./mtlab run scripts/paper/fig2_length.lua [--data data/bible] [--split test] [--n N]
--                                             [--beam 5] [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("fig2_length.lua", {n = 0, beam = 5, out = "out", no_plot = false,
                                                 data = "data/bible", split = "test"}, arg)
if #models == 0 then models = R.shipped() end
local base = opts.data .. "/" .. opts.split
local src, ref = R.lines(base .. ".es", opts.n), R.lines(base .. ".en", opts.n)
for _, pair in ipairs(mtlab.corpus.read(base .. ".para8.es", base .. ".para8.en")) do
  if opts.n > 0 and #src >= 2 * opts.n then break end
  src[#src + 1], ref[#ref + 1] = pair.src, pair.ref
end
local result = mtlab.eval{models = models, src = src, ref = ref, beam = opts.beam,
                          src_name = base .. ".es + .para8.es", ref_name = base .. ".en"}
local headers, rows, series = {"model"}, {}, {}
for i, b in ipairs(result.systems[1].buckets) do
  headers[#headers + 1] = string.format("%s (%d)", b.label, b.segments)
end
for _, s in ipairs(result.systems) do
  local row, xs, ys = {R.short(s.name)}, {}, {}
  for i, b in ipairs(s.buckets) do
    row[#row + 1] = b.segments > 0 and b.bleu or "-"
    xs[i], ys[i] = i, b.segments > 0 and b.bleu or 0 / 0 -- NaN: a gap in the line
  end
  rows[#rows + 1] = row
  series[#series + 1] = {name = R.short(s.name), x = xs, y = ys}
end
local md = string.format("Figure 2: BLEU by source length (%s), %d segments of %s, beam %d\n\n",
                         result.length_unit, result.segments, result.src, opts.beam)
           .. R.markdown(headers, rows)
io.write(md)
local plot = mtlab.plot.line{title = "BLEU by source length (bucket 1 = 1-32 tokens, x2 each)",
                             xlabel = "length bucket", ylabel = "BLEU", series = series}
if not opts.no_plot then plot:show() end
io.write("wrote ", table.concat(R.write(opts.out, "fig2_length", md, plot), ", "), "\n")
