-- Two short training runs side by side, then their validation BLEU against steps, as a
-- markdown table and a plot.
--   ./mtlab run scripts/jobs/two_runs.lua [CONFIG_A CONFIG_B] [KEY=VALUE...]
-- Defaults: the transformer and mamba demo configs (they need `mtlab data bible` and
-- `mtlab tokenizer train`), cut to 200 steps with a validation every 50. Each run is a job
-- (runs/NAME-short/): `mtlab jobs list` shows it while this script waits, and Ctrl-C stops the
-- waiting, not the runs.
local configs, overrides = {}, {max_steps = 200, valid_every = 50, valid_bleu_lines = 50, save_every = 50}
for _, a in ipairs(arg) do
  local k, v = a:match("^([%w_.]+)=(.*)$")
  if k then overrides[k] = tonumber(v) or v else configs[#configs + 1] = a end
end
if #configs == 0 then
  configs = {"scripts/train/transformer-small.lua", "scripts/train/mamba-small.lua"}
end
assert(#configs == 2, "two configs, or none for the defaults")

-- The validation BLEU of a run: {{step, bleu}, ...}
local function bleu_curve(job)
  local curve = {}
  for _, r in ipairs(job:log()) do
    if r.event == "valid" and r.valid_bleu then curve[#curve + 1] = {r.step, r.valid_bleu} end
  end
  return curve
end

-- Every run's curve as a markdown table: one row per step, one column per run.
local function print_table(jobs, curves)
  local steps, seen, at = {}, {}, {}
  for i, curve in ipairs(curves) do
    at[i] = {}
    for _, p in ipairs(curve) do
      at[i][p[1]] = p[2]
      if not seen[p[1]] then seen[p[1]] = true; steps[#steps + 1] = p[1] end
    end
  end
  table.sort(steps)
  local head, rule = {"step"}, {"---:"}
  for _, j in ipairs(jobs) do head[#head + 1] = j.name .. " BLEU"; rule[#rule + 1] = "---:" end
  print("| " .. table.concat(head, " | ") .. " |")
  print("| " .. table.concat(rule, " | ") .. " |")
  for _, s in ipairs(steps) do
    local row = {tostring(s)}
    for i = 1, #jobs do row[#row + 1] = at[i][s] and string.format("%.2f", at[i][s]) or "" end
    print("| " .. table.concat(row, " | ") .. " |")
  end
end

-- The curves drawn in the terminal, one line per run (BLEU against steps), and written as
-- out/two_runs.svg and out/two_runs.png.
local function plot(jobs, curves)
  local series = {}
  for i, j in ipairs(jobs) do
    local xs, ys = {}, {}
    for k, p in ipairs(curves[i]) do xs[k], ys[k] = p[1], p[2] end
    if #xs > 0 then series[#series + 1] = {name = j.name, x = xs, y = ys} end
  end
  if #series == 0 then
    print("(no validation BLEU logged yet: nothing to plot)")
    return
  end
  local p = mtlab.plot.line{title = "Validation BLEU", xlabel = "step", ylabel = "BLEU", series = series}
  print()
  p:show()
  assert(os.execute("mkdir -p out"), "cannot make out/")
  print("wrote " .. p:save("out/two_runs.svg") .. ", " .. p:save("out/two_runs.png"))
end

local jobs = {}
for _, config in ipairs(configs) do
  local name = dofile(config).name .. "-short"
  jobs[#jobs + 1] = mtlab.jobs.start(config, {name = name, overrides = overrides})
  print(string.format("started %s (%s)", name, config))
end
for _, j in ipairs(jobs) do
  j:wait()
  print(string.format("%s: %s at step %d%s", j.name, j.state, j.step, j.error and (": " .. j.error) or ""))
end
local curves = {}
for i, j in ipairs(jobs) do curves[i] = bleu_curve(j) end
print()
print_table(jobs, curves)
plot(jobs, curves)
