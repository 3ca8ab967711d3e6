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
-- "transformer-cat2to10-small" -> "transformer-small", "2to10" (a CAT variant and its original's
-- name); "transformer-small" -> "transformer-small", nil
local function cat_of(name)
  return (name:gsub("%-cat%d[%dto]*", "")), name:match("%-cat(%d[%dto]*)")
end

if #models == 0 then
  local cats = {} -- original's name -> its CAT variants' directories
  local ls = io.popen("ls -1 models 2>/dev/null")
  for d in ls:lines() do
    local orig, cat = cat_of(d)
    if cat then cats[orig] = cats[orig] or {}; table.insert(cats[orig], "models/" .. d) end
  end
  ls:close()
  for _, name in ipairs(R.SEVEN) do
    local dirs = cats[name .. "-small"] or {}
    table.sort(dirs)
    table.insert(dirs, 1, "models/" .. name .. "-small")
    for _, dir in ipairs(dirs) do
      if R.exists(dir .. "/config.json") then models[#models + 1] = dir end
    end
  end
end
local base = opts.data .. "/" .. opts.split
local para_src, para_ref = R.lines(base .. ".para8.es", opts.n), R.lines(base .. ".para8.en", opts.n)
local para_keys = R.lines(base .. ".para8.keys", opts.n)

-- the verses of each paragraph, found through the keys ("Esther 1:1-8" -> Esther 1:1 .. 1:8)
local verse_src, index = {}, {}
do
  local keys, src = R.lines(base .. ".keys"), R.lines(base .. ".es")
  for i, k in ipairs(keys) do index[k] = i end
  for p, key in ipairs(para_keys) do
    local book, ch, a, b = key:match("^(.-) (%d+):(%d+)%-(%d+)$")
    if not book then error(string.format("table3.lua: %s.para8.keys:%d: cannot read '%s'", base, p, key), 0) end
    local verses = {}
    for v = tonumber(a), tonumber(b) do
      local i = index[string.format("%s %s:%d", book, ch, v)]
      if not i then error(string.format("table3.lua: verse %s %s:%d of paragraph %d is not in %s.keys", book, ch, v, p, base), 0) end
      verses[#verses + 1] = src[i]
    end
    verse_src[p] = verses
  end
end

local TARGET = 0.70
local results, order = {}, {}
for _, dir in ipairs(models) do
  local m <close> = mtlab.load(dir)
  local hyp_para = {}
  for i, r in ipairs(m:translate(para_src, {beam = opts.beam})) do hyp_para[i] = r.text end
  local flat, owner = {}, {}
  for p, verses in ipairs(verse_src) do
    for _, v in ipairs(verses) do flat[#flat + 1], owner[#flat + 1] = v, p end
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
  local key, cat = cat_of(m.name)
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
