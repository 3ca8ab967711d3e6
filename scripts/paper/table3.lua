-- Table 3 of the paper, paragraph level: each model translates the 8-verse paragraphs of the
-- test set whole (PARA) and verse by verse (VERSES, joined per paragraph), both scored against
-- the paragraph references; the ratio PARA / VERSES shows what long inputs cost. A CAT-trained
-- bundle (models/NAME-catN-small, or NAME-catMtoN-small for joins of M to N verses; docs/models.md
-- §10.3) stands in the row of its original (ORIG, models/NAME-small), so the table reads as the
-- paper's ORIG vs CAT, one row per CAT variant; the ratio a CAT model should keep (issue 21: at
-- least 0.70) is checked in the last column.
--
--   ./mtlab run scripts/paper/table3.lua [--n 0] [--beam 5] [--data data/bible] [--split test]
--                                        [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("table3.lua", {n = 0, beam = 5, out = "out", split = "test",
                                            data = "data/bible", no_plot = false}, arg)
if #models == 0 then models = R.shipped_with_cats() end
local base = opts.data .. "/" .. opts.split
local para_src, para_ref = R.lines(base .. ".para8.es", opts.n), R.lines(base .. ".para8.en", opts.n)
local paragraphs = R.paragraph_verses(base, opts.n)

local TARGET = 0.70
local results, order = {}, {}
for _, dir in ipairs(models) do
  local m <close> = mtlab.load(dir)
  local hyp_para = {}
  for i, r in ipairs(m:translate(para_src, {beam = opts.beam})) do hyp_para[i] = r.text end
  local flat, owner = {}, {}
  for p, para in ipairs(paragraphs) do
    for _, v in ipairs(para.src) do flat[#flat + 1], owner[#flat + 1] = v, p end
  end
  local joined = {}
  for i, r in ipairs(m:translate(flat, {beam = opts.beam})) do
    local p = owner[i]
    joined[p] = joined[p] and (joined[p] .. " " .. r.text) or r.text
  end
  local para = mtlab.score.bleu(hyp_para, para_ref).score
  local verses = mtlab.score.bleu(joined, para_ref).score
  local ratio = verses > 0 and para / verses or 0
  -- "transformer-cat5-small" goes in the row of "transformer-small", as its CAT column
  local key, cat = R.cat_of(m.name)
  if not results[key] then results[key] = {cats = {}}; order[#order + 1] = key end
  local r = {name = m.name, para = para, verses = verses, ratio = ratio,
             label = cat and "CAT-" .. cat:gsub("to", "..")}
  if cat then table.insert(results[key].cats, r) else results[key].orig = r end
end
local rows, labels, orig_ratios, cat_ratios = {}, {}, {}, {}
for _, key in ipairs(order) do
  local o = results[key].orig
  local cats = #results[key].cats > 0 and results[key].cats or {false}
  for _, c in ipairs(cats) do
    local row = {key, c and c.label or "-"}
    for _, r in ipairs({o or false, c}) do
      row[#row + 1] = r and r.para or "-"
      row[#row + 1] = r and r.verses or "-"
      row[#row + 1] = r and r.ratio or "-"
    end
    row[#row + 1] = c and (c.ratio >= TARGET and "yes" or "no") or "-"
    rows[#rows + 1] = row
    labels[#labels + 1] = c and key .. " " .. c.label or key
    orig_ratios[#orig_ratios + 1], cat_ratios[#cat_ratios + 1] = o and o.ratio or 0, c and c.ratio or 0
  end
end
local md = string.format("Table 3 (paragraph level), %d paragraphs of 8 verses (%s.para8), beam %d: BLEU of each "
                         .. "paragraph translated whole (PARA) and verse by verse (VERSES), for the original "
                         .. "model (ORIG) and its CAT-N variant (CAT)\n\n", #para_src, base, opts.beam)
           .. R.markdown({"model", "CAT-N", "ORIG PARA", "ORIG VERSES", "ORIG PARA/VERSES", "CAT PARA", "CAT VERSES",
                          "CAT PARA/VERSES", string.format("CAT >= %.2f", TARGET)}, rows)
io.write(md)
local plot = mtlab.plot.bar{title = "Paragraph BLEU as a share of verse-by-verse BLEU", labels = labels,
                            series = {{name = "ORIG", values = orig_ratios}, {name = "CAT", values = cat_ratios}}}
if not opts.no_plot then plot:show() end
io.write("wrote ", table.concat(R.write(opts.out, "table3", md, plot), ", "), "\n")
