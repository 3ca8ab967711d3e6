-- The retraining driver (issue 21, part 4): brings every run of scripts/train/retrain/ to its
-- end, at most --parallel of them at once, as background jobs (runs/NAME/, mtlab.jobs). Each run
-- not yet started is started, each stopped or failed one is resumed from its checkpoint, each
-- completed one is skipped; so the driver can be stopped (Ctrl-C stops the waiting, never the
-- runs) and run again at any time, after a machine restart too, and it carries on. On a fresh
-- machine it first makes the corpus and the tokenizer the runs read.
--
--   OMP_NUM_THREADS=T ./mtlab run scripts/train/retrain.lua [--parallel 1] [--poll 60] [--once]
--                                   [--suffix S] [CONFIG...] [KEY=VALUE...]
--
-- Every run inherits OMP_NUM_THREADS, the threads each one uses: with P runs at once on C cores,
-- give T = C / P. --once starts or resumes what fits and returns at once (for cron or a login
-- script); without it the driver waits, polling every --poll seconds, until every run is
-- completed or has failed twice in a row without progress. CONFIG: the runs to drive (default:
-- every scripts/train/retrain/*.lua); KEY=VALUE overrides keys of new runs and --suffix renames
-- them (a short try: --suffix -try max_steps=30 scripts/train/retrain/mamba-small.lua).
package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"
local R = require "report"

local opts, rest = R.args("retrain.lua", {parallel = 1, poll = 60, once = false, suffix = ""}, arg)
if opts.parallel < 1 or opts.poll <= 0 then error("retrain.lua: --parallel must be >= 1 and --poll > 0", 0) end
local configs, overrides = {}, {}
for _, a in ipairs(rest) do
  local k, v = a:match("^([%w_.]+)=(.*)$")
  if k then
    if v == "true" or v == "false" then overrides[k] = v == "true" else overrides[k] = tonumber(v) or v end
  else
    configs[#configs + 1] = a
  end
end
if #configs == 0 then
  local here = arg[0]:match("^(.-)[^/]*$")
  local ls = assert(io.popen("ls '" .. here .. "retrain/'"))
  for f in ls:lines() do
    if f:match("%.lua$") then configs[#configs + 1] = here .. "retrain/" .. f end
  end
  ls:close()
  if #configs == 0 then error("retrain.lua: no configs in " .. here .. "retrain/", 0) end
end

-- The runs: config, name, and what this invocation did to them.
local runs = {}
for _, config in ipairs(configs) do
  local ok, cfg = pcall(dofile, config)
  if not ok or type(cfg) ~= "table" or type(cfg.name) ~= "string" then
    error(string.format("retrain.lua: %s: not a training config (%s)", config, ok and "no name" or cfg), 0)
  end
  runs[#runs + 1] = {config = config, cfg = cfg, name = cfg.name .. opts.suffix, failures = 0, last_step = -1}
end
-- What the runs read and a fresh machine lacks: the corpus (`mtlab data bible`) and the
-- tokenizer (`mtlab tokenizer train`: seeded, so it is the shipped bundles' tokenizer.model).
-- Both are made here, once, with this same binary; any other missing input is an error that
-- names it, before anything starts.
local BUILT_BY = {["data/bible/spm.model"] = "tokenizer train"}
local function built_by(path)
  return BUILT_BY[path] or (path:match("^data/bible/[^/]+$") and "data bible") or nil
end
local function prepare_inputs()
  local missing, steps = {}, {}
  for _, r in ipairs(runs) do
    for _, key in ipairs({"train_src", "train_tgt", "valid_src", "valid_tgt", "tokenizer", "gazetteer"}) do
      local path = r.cfg[key]
      if type(path) == "string" and not R.exists(path) and not missing[path] then
        missing[path] = true
        local step = built_by(path)
        if not step then
          error(string.format("retrain.lua: %s: %s = %q does not exist (nothing was started)", r.config, key,
                              path), 0)
        end
        if not steps[step] then steps[#steps + 1], steps[step] = step, true end
      end
    end
  end
  if #steps == 0 then return end
  -- popen's shell is a child of this process, so its $PPID names the mtlab binary running us
  local p = assert(io.popen("readlink /proc/$PPID/exe"))
  local exe = p:read("l")
  p:close()
  if not exe or exe == "" then error("retrain.lua: cannot find the mtlab binary (/proc/PID/exe)", 0) end
  table.sort(steps, function(a, b) return a == "data bible" and b ~= "data bible" end) -- corpus first
  for _, step in ipairs(steps) do
    print("retrain: inputs missing, running: mtlab " .. step)
    local ok = os.execute("'" .. exe:gsub("'", "'\\''") .. "' " .. step)
    if not ok then error("retrain.lua: `mtlab " .. step .. "` failed (nothing was started)", 0) end
  end
end
prepare_inputs()

print(string.format("retrain: %d runs, at most %d at once, OMP_NUM_THREADS=%s each", #runs, opts.parallel,
                    os.getenv("OMP_NUM_THREADS") or "(unset: every core)"))

local function jobs_by_name()
  local by = {}
  for _, j in ipairs(mtlab.jobs.list()) do by[j.name] = j end
  return by
end

local function has_checkpoint(name)
  return R.exists("runs/" .. name .. "/checkpoint/trainer.json")
end

-- One pass: count the active runs, then start or resume others while there is room. Returns
-- the runs not finished yet (active or still to do).
local function pass()
  local jobs, active, todo = jobs_by_name(), 0, {}
  for _, r in ipairs(runs) do
    local j = jobs[r.name]
    r.job = j
    if j and (j.state == "running" or j.state == "pending") then
      active = active + 1
    elseif j and j.state == "completed" then
      if not r.reported then print(string.format("  %-28s completed (step %d)", r.name, j.step)) end
      r.reported = true
    elseif r.gave_up then -- reported when it happened
    elseif not j and has_checkpoint(r.name) then
      print(string.format("  %-28s runs/%s has a checkpoint but no job: resume it by hand "
                          .. "(mtlab train %s --resume)", r.name, r.name, r.config))
      r.gave_up = true
    else
      todo[#todo + 1] = r
    end
  end
  for _, r in ipairs(todo) do
    if active >= opts.parallel then break end
    local j = r.job
    if j then
      -- failed or cancelled: resume, unless it failed again without getting anywhere
      if j.state == "failed" then
        r.failures = (j.step == r.last_step) and r.failures + 1 or 1
        r.last_step = j.step
      end
      if r.failures >= 2 then
        print(string.format("  %-28s failed twice at step %d, left alone: %s (see runs/%s/train.log)", r.name,
                            j.step, j.error or "?", r.name))
        r.gave_up = true
      else
        local was, step = j.state, j.step
        mtlab.jobs.resume(j)
        active = active + 1
        print(string.format("  %-28s resumed (%s at step %d of %d)", r.name, was, step, j.max_steps))
      end
    else
      local o = {name = r.name}
      if next(overrides) then o.overrides = overrides end
      mtlab.jobs.start(r.config, o)
      active = active + 1
      print(string.format("  %-28s started from %s", r.name, r.config))
    end
  end
  local left = {}
  for _, r in ipairs(runs) do
    local j = jobs_by_name()[r.name]
    if not r.gave_up and not (j and j.state == "completed") then left[#left + 1] = r end
  end
  return left
end

local function report(left)
  local jobs = jobs_by_name()
  for _, r in ipairs(left) do
    local j = jobs[r.name]
    if j and (j.state == "running" or j.state == "pending") then
      print(string.format("  %-28s %s, step %d of %d, %.0f tokens/s, valid BLEU %s", r.name, j.state, j.step,
                          j.max_steps, j.tokens_per_s or 0,
                          (j.valid_bleu and j.valid_bleu >= 0) and string.format("%.2f", j.valid_bleu) or "-"))
    end
  end
end

local left = pass()
while #left > 0 and not opts.once do
  report(left)
  -- wait for any active run to end, or for the poll interval
  local waited = false
  for _, j in pairs(jobs_by_name()) do
    for _, r in ipairs(left) do
      if r.name == j.name and (j.state == "running" or j.state == "pending") then
        j:wait(opts.poll)
        waited = true
        break
      end
    end
    if waited then break end
  end
  if not waited then break end -- nothing active and nothing could start
  left = pass()
end
local done, failed = 0, 0
for _, r in ipairs(runs) do
  local j = jobs_by_name()[r.name]
  if j and j.state == "completed" then done = done + 1 elseif r.gave_up then failed = failed + 1 end
end
print(string.format("retrain: %d of %d runs completed, %d left alone, %d still to go%s", done, #runs, failed,
                    #runs - done - failed, opts.once and " (--once: run me again to carry on)" or ""))
