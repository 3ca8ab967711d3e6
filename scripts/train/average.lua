-- Checkpoint averaging for a run that kept bundles (`keep_every`, docs/models.md §10.10): for each
-- k of --last, the mean of the run's last k kept bundles (at or after --from), scored on held-out
-- text beside the run's best/ and any BUNDLE named; the candidate that scores best is written to
-- --out (when given; a bundle already there is replaced only with --force). Choose on the
-- validation split, never on the test set.
--
--   ./mtlab run scripts/train/average.lua RUN_DIR [--last 1,2,4,8] [--from 0] [--para]
--        [--data data/bible] [--src FILE --ref FILE] [--n 0] [--beam 1] [--device cpu] [--out DIR [--force]]
--        [BUNDLE...]
--
-- Scored on DATA/valid.{es,en} (verses), or with --para on DATA/valid.para8.{es,en} (8-verse
-- paragraphs translated whole: what a CAT-N run is for), or on --src/--ref. --device cuda:0 scores
-- the candidates there (a GPU machine's lease, docs/cuda.md §6); the averaging itself is the CPU's.
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local S = "average.lua"
local opts, rest = R.args(S, {last = "1,2,4,8", from = 0, para = false, data = "data/bible", src = "",
                              ref = "", n = 0, beam = 1, device = "cpu", out = "",
                              force = false}, arg)
local run = table.remove(rest, 1)
if not run then
  error(S .. ": usage: ./mtlab run scripts/train/average.lua RUN_DIR [--last 1,2,4,8] [--from STEP] " ..
        "[--para] [--data DIR] [--src F --ref F] [--n N] [--beam N] [--device D] [--out DIR [--force]] [BUNDLE...]", 0)
end
-- before the scoring, not after it (mtlab.average refuses it again when it writes)
if opts.out ~= "" and not opts.force and R.exists(opts.out .. "/config.json") then
  error(string.format("%s: --out %s already holds a model bundle; not overwritten (--force replaces it)", S, opts.out), 0)
end
local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- the kept steps, in order
local steps = {}
do
  local p = io.popen("ls -1 " .. quote(run .. "/steps") .. " 2>/dev/null")
  for name in p:lines() do
    local step = tonumber(name:match("^(%d+)$"))
    if step and step >= opts.from and R.exists(run .. "/steps/" .. name .. "/config.json") then
      steps[#steps + 1] = step
    end
  end
  p:close()
  table.sort(steps)
end
if #steps == 0 then
  error(string.format("%s: %s/steps holds no kept bundle%s (train with keep_every = N to keep them)", S, run,
                      opts.from > 0 and " at or after step " .. opts.from or ""), 0)
end

local ks = {}
for k in opts.last:gmatch("[^,]+") do
  local v = math.tointeger(tonumber(k))
  if not v or v < 1 then error(string.format("%s: --last takes counts such as 1,2,4,8, not '%s'", S, opts.last), 0) end
  if v <= #steps then ks[#ks + 1] = v end
end
if #ks == 0 then ks[1] = #steps end

local src_path, ref_path = opts.src, opts.ref
if src_path == "" or ref_path == "" then
  local base = opts.data .. "/valid" .. (opts.para and ".para8" or "")
  src_path, ref_path = base .. ".es", base .. ".en"
end
local src, ref = R.lines(src_path, opts.n), R.lines(ref_path, opts.n)

local function score(dir)
  local m <close> = mtlab.load(dir, {device = opts.device})
  local hyps = {}
  for i, r in ipairs(m:translate(src, {beam = opts.beam})) do hyps[i] = r.text end
  return mtlab.score.bleu(hyps, ref).score
end

-- candidates: {label, bundles to average}
local cands = {}
for _, k in ipairs(ks) do
  local dirs = {}
  for i = #steps - k + 1, #steps do dirs[#dirs + 1] = run .. "/steps/" .. steps[i] end
  local label = k == 1 and string.format("step %d", steps[#steps])
                or string.format("mean of %d: steps %d..%d", k, steps[#steps - k + 1], steps[#steps])
  cands[#cands + 1] = {label = label, dirs = dirs}
end
if R.exists(run .. "/best/config.json") then cands[#cands + 1] = {label = run .. "/best", dirs = {run .. "/best"}} end
for _, b in ipairs(rest) do cands[#cands + 1] = {label = b, dirs = {b}} end

local tmp = os.tmpname()
os.remove(tmp)
local rows, best = {}, nil
for _, c in ipairs(cands) do
  local dir = c.dirs[1]
  if #c.dirs > 1 then
    mtlab.average(c.dirs, tmp, {force = true}) -- the previous candidate's
    dir = tmp
  end
  local ok, bleu = pcall(score, dir)
  if not ok then
    os.execute("rm -rf " .. quote(tmp))
    error(bleu, 0)
  end
  c.bleu = bleu
  rows[#rows + 1] = {c.label, tostring(#c.dirs), bleu}
  if not best or bleu > best.bleu then best = c end
  io.stderr:write(string.format("%s: %-40s BLEU %.2f\n", S, c.label, bleu))
end
os.execute("rm -rf " .. quote(tmp))

print(string.format("%s on %s (%d %s, beam %d)\n", run, src_path, #src, opts.para and "paragraphs" or "lines",
                    opts.beam))
print(R.markdown({"candidate", "bundles", "BLEU"}, rows))
print(string.format("\nbest: %s (%.2f)", best.label, best.bleu))
if opts.out ~= "" then
  mtlab.average(best.dirs, opts.out, {force = opts.force})
  print("wrote " .. opts.out)
end
