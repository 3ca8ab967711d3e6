-- BLEU against the length of the input, the content held fixed: the 8-verse paragraphs of the
-- test set cut into runs of 1, 2, 4 and 8 consecutive verses (--lengths), each run translated
-- whole and scored against its references joined the same way, so every column translates the
-- same verses and only the length of what the model reads at once changes. One row and one
-- line per model; the last column is the 8-verse BLEU as a share of the 1-verse BLEU (the
-- longest length against the shortest). A model that must hold the whole source in a fixed
-- state (the pure Mamba) falls with the length; attention layers and CAT-N training
-- (docs/models.md §10.3) keep it level.
--
--   ./mtlab run scripts/paper/para_length.lua [--lengths 1,2,4,8] [--n 0] [--beam 5]
--                 [--data data/bible] [--split test] [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("para_length.lua", {lengths = "1,2,4,8", n = 0, beam = 5, out = "out",
                                                 split = "test", data = "data/bible", no_plot = false}, arg)
local lengths = {}
for field in (opts.lengths .. ","):gmatch("([^,]*),") do
  local k = tonumber(field)
  if not k or k ~= math.floor(k) or k < 1 or k > 8 or (#lengths > 0 and k <= lengths[#lengths]) then
    error(string.format("para_length.lua: --lengths takes rising whole numbers of verses from 1 to 8, "
                        .. "not '%s'", opts.lengths), 0)
  end
  lengths[#lengths + 1] = k
end
if #models == 0 then models = R.shipped_with_cats() end
local base = opts.data .. "/" .. opts.split
local paragraphs = R.paragraph_verses(base, opts.n)

-- runs of k verses within each paragraph (a shorter last run where k does not divide 8)
local function runs_of(k)
  local src, ref = {}, {}
  for _, para in ipairs(paragraphs) do
    for first = 1, #para.src, k do
      local last = math.min(first + k - 1, #para.src)
      src[#src + 1] = table.concat(para.src, " ", first, last)
      ref[#ref + 1] = table.concat(para.ref, " ", first, last)
    end
  end
  return src, ref
end

local sets = {}
for i, k in ipairs(lengths) do
  local src, ref = runs_of(k)
  sets[i] = {src = src, ref = ref}
end

local headers = {"model"}
for _, k in ipairs(lengths) do headers[#headers + 1] = k == 1 and "1 verse" or k .. " verses" end
headers[#headers + 1] = string.format("%d / %d", lengths[#lengths], lengths[1])
local rows, series = {}, {}
for _, dir in ipairs(models) do
  local m <close> = mtlab.load(dir)
  local row, ys = {m.name}, {}
  for i, set in ipairs(sets) do
    local hyp = {}
    for j, r in ipairs(m:translate(set.src, {beam = opts.beam})) do hyp[j] = r.text end
    ys[i] = mtlab.score.bleu(hyp, set.ref).score
    row[#row + 1] = ys[i]
  end
  row[#row + 1] = ys[1] > 0 and ys[#ys] / ys[1] or "-"
  rows[#rows + 1] = row
  series[#series + 1] = {name = m.name, x = lengths, y = ys}
end
local md = string.format("BLEU by input length, %d paragraphs of 8 verses (%s.para8) cut into runs of %s verses, "
                         .. "each run translated whole, beam %d\n\n", #paragraphs, base, opts.lengths, opts.beam)
           .. R.markdown(headers, rows)
io.write(md)
local plot = mtlab.plot.line{title = "BLEU by input length, the same verses", xlabel = "verses read at once",
                             ylabel = "BLEU", series = series}
if not opts.no_plot then plot:show() end
io.write("wrote ", table.concat(R.write(opts.out, "para_length", md, plot), ", "), "\n")
