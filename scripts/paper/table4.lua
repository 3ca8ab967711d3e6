-- Table 4 of the paper: decoding time and the memory of the decoding state against input
-- length, batch 1 and batch 16. Inputs are runs of 1, 2, 4, ... consecutive test verses, so the
-- length grows as a user's paragraph does; attention caches grow with it, Mamba's state does not.
--
--   ./mtlab run scripts/paper/table4.lua [--max-verses 16] [--beam 1] [--out out] [--no-plot] [BUNDLE...]
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, models = R.args("table4.lua", {max_verses = 16, beam = 1, out = "out",
                                            src = "data/bible/test.es", no_plot = false}, arg)
if #models == 0 then models = R.shipped() end
local verses = R.lines(opts.src, opts.max_verses)

local rows, series = {}, {}
for _, dir in ipairs(models) do
  local m <close> = mtlab.load(dir)
  local xs, mem = {}, {}
  local n = 1
  while n <= #verses do
    local text = table.concat(verses, " ", 1, n)
    local one = m:translate(text, {beam = opts.beam})
    local batch = {}
    for i = 1, 16 do batch[i] = text end
    local t0 = os.clock()
    local many = m:translate(batch, {beam = opts.beam, progress = false})
    local tokens, secs = 0, 0
    for _, r in ipairs(many) do
      tokens = tokens + r.tokens
      secs = math.max(secs, r.time_s)
    end
    local src_words = select(2, text:gsub("%S+", ""))
    rows[#rows + 1] = {m.name, src_words, one.tokens / math.max(one.time_s, 1e-9),
                       tokens / math.max(secs, 1e-9), one.state_bytes / 1024, many[1].state_bytes / 1024}
    xs[#xs + 1], mem[#mem + 1] = src_words, one.state_bytes / 1024
    n = n * 2
  end
  series[#series + 1] = {name = m.name, x = xs, y = mem}
end
local md = string.format("Table 4: decoding speed and state memory against input length (beam %d)\n\n", opts.beam)
           .. R.markdown({"model", "source words", "tokens/s b1", "tokens/s b16", "state KiB b1",
                          "state KiB b16"}, rows, "%.1f")
io.write(md)
local plot = mtlab.plot.line{title = "Decoding state memory (batch 1)", xlabel = "source words",
                             ylabel = "KiB", series = series}
if not opts.no_plot then plot:show() end
io.write("wrote ", table.concat(R.write(opts.out, "table4", md, plot), ", "), "\n")
