-- mtlab.jobs: tiny training runs launched, watched, stopped and resumed from Lua. The runs live
-- in a temporary directory (jobs are runs/NAME/ of the directory they start from), so they are
-- driven by `mtlab run` scripts started there.
local H = dofile("tests/lua/helpers.lua")

local root = H.sh("pwd"):gsub("%s+$", "")
local bin = H.mtlab:sub(1, 1) == "/" and H.mtlab or root .. "/" .. H.mtlab:gsub("^%./", "")

-- A directory with a 200-pair corpus, its tokenizer and a 20-step config (tiny.lua), made by
-- tests/jobs/tiny_run.sh.
local function workdir()
  local dir = H.sh("mktemp -d"):gsub("%s+$", "")
  local _, code = H.sh(string.format("%s/tests/jobs/tiny_run.sh %s %s 20 10 5 >/dev/null 2>&1", root, bin, dir))
  assert(code == 0, "the tiny run's inputs could not be made")
  return dir
end

-- Runs a Lua chunk with `mtlab run` in dir; returns stdout, stderr, exit code.
local function run_in(dir, chunk)
  H.write(dir .. "/script.lua", chunk)
  local out, code = H.sh(string.format("cd %s && %s run script.lua 2>stderr.txt", dir, bin))
  return out, H.read(dir .. "/stderr.txt"), code
end

describe("mtlab.jobs", function()
  local dir
  setup(function() dir = workdir() end)
  teardown(function() H.sh("rm -rf " .. dir) end)

  it("starts a run, watches it to the end and reads its log", function()
    local out, err, code = run_in(dir, [[
local j = mtlab.jobs.start("tiny.lua", {name = "a", overrides = {max_steps = 12, ["model.d_model"] = 8}})
print(getmetatable(j).__name, j.name, j.launcher, j.max_steps)
local same, finished = j:wait(120)
print(same == j, finished, j.state, j.step)
local recs = j:log()
local valid = 0
for _, r in ipairs(recs) do if r.event == "valid" then valid = valid + 1 end end
print(#recs, valid, recs[1].event, recs[1].step, type(recs[#recs].valid_bleu))
print(tostring(j))
local listed = mtlab.jobs.list()
print(#listed, listed[1].name, listed[1].state)
print(mtlab.jobs.log("a")[1].loss == recs[1].loss)
]])
    assert.are.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("mtlab.job\ta\tlocal\t12", lines[1])
    assert.are.equal("true\ttrue\tcompleted\t12", lines[2])
    -- log_every 2 over 12 steps, validations at 10 and 12
    assert.are.equal("8\t2\ttrain\t2\tnumber", lines[3])
    assert.are.equal("mtlab.job: a (local, completed, step 12/12)", lines[4])
    assert.are.equal("1\ta\tcompleted", lines[5])
    assert.are.equal("true", lines[6])
    assert.matches("d_model = 8,", H.read(dir .. "/runs/a/config.lua"))
  end)

  it("stops a run with a checkpoint and resumes it", function()
    local out, err, code = run_in(dir, [[
local j = mtlab.jobs.start("tiny.lua", {name = "b", overrides = {max_steps = 100000, valid_every = 0}})
while j.step < 4 do j:wait(0.05) end
j:stop()
local _, finished = j:wait(60)
print(finished, j.state)
-- the wait returns once the trainer has exited, not only recorded its end: its lock is free
local stat = io.open("/proc/" .. j.pid .. "/stat")
local st = stat and stat:read("a"):match("%) (%a)")
if stat then stat:close() end
print((st == nil or st == "Z") and "trainer gone" or "trainer alive")
j:resume()
print(j.state)
mtlab.jobs.stop("b")
j:wait(60)
print(j.state)
]])
    assert.are.equal(0, code, err)
    assert.are.equal("true\tcancelled\ntrainer gone\nrunning\ncancelled\n", out)
    assert.matches("resumed from step", H.read(dir .. "/runs/b/train.log"))
  end)

  it("extends a completed run with jobs resume NAME max_steps=N, and refuses a plain resume", function()
    local function jobs(args)
      return H.sh(string.format("cd %s && %s jobs %s 2>&1", dir, bin, args))
    end
    local out, code = jobs("start tiny.lua --name e max_steps=6 valid_every=0")
    assert.are.equal(0, code, out)
    run_in(dir, 'mtlab.jobs.wait("e", 120)')
    local before = jobs("list"):match("\ne .-\n")
    out, code = jobs("resume e")
    assert.are_not.equal(0, code)
    assert.matches("e is complete: its checkpoint is at step 6 of max_steps 6, nothing to resume", out)
    assert.are.equal(before, jobs("list"):match("\ne .-\n"))
    out, code = jobs("resume e max_steps=4")
    assert.are_not.equal(0, code)
    assert.matches("max_steps=4 does not extend e: its checkpoint is at step 6", out)
    out, code = jobs("resume e max_steps=9")
    assert.are.equal(0, code, out)
    assert.matches("e: resumed, pid %d+, to max_steps 9", out)
    run_in(dir, 'mtlab.jobs.wait("e", 120)')
    assert.matches("\ne +local +completed +9/9 ", jobs("list"))
    assert.matches("resumed from step 6", H.read(dir .. "/runs/e/train.log"))
    assert.matches("max_steps = 9,", H.read(dir .. "/runs/e/config.lua"))
  end)

  it("takes the ranks as jobs start and jobs resume do, and checks them first", function()
    local out, err, code = run_in(dir, [[
local before = #mtlab.jobs.list()
for _, o in ipairs({{tasks = 2}, {procs = 0}, {launcher = "slurm", procs = 2}, {prcs = 2}}) do
  local ok, e = pcall(mtlab.jobs.start, "tiny.lua", o)
  print(ok, e)
end
print(#mtlab.jobs.list() - before)
]])
    assert.are.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.matches("^false\tmtlab.jobs.start: %-%-nodes, %-%-gpus%-per%-node and %-%-tasks are for " ..
      "%-%-launcher slurm %(local: %-%-procs N%) %(nothing was started%)$", lines[1])
    assert.matches("^false\tmtlab.jobs.start: option procs must be a whole number from 1 to 65536, not 0$",
      lines[2])
    assert.matches("^false\tmtlab.jobs.start: %-%-procs is for %-%-launcher local", lines[3])
    assert.matches("^false\tmtlab.jobs.start: .*prcs", lines[4])
    assert.are.equal("0", lines[5])
    if H.sh("command -v mpirun") == "" then
      pending("mpirun is not installed (Debian: openmpi-bin)")
      return
    end
    -- 4 steps on 2 ranks, 2 more in one process: the ranks a job runs on follow the resume
    out, err, code = run_in(dir, [[
local j = mtlab.jobs.start("tiny.lua", {name = "r", procs = 2, overrides = {max_steps = 4, valid_every = 0}})
print(j.ranks)
j:wait(120)
print(j.state, j.step)
local ok, e = pcall(j.resume, j, {tasks = 2, max_steps = 6})
print(ok, e)
j:resume({procs = 1, max_steps = 6})
print(j.ranks)
j:wait(120)
print(j.state, j.step, mtlab.jobs.list()[1].ranks)
]])
    assert.are.equal(0, code, err)
    assert.are.equal("2\ncompleted\t4\nfalse\tjob:resume: r (a local job): --nodes, --gpus-per-node " ..
      "and --tasks are for --launcher slurm (local: --procs N)\n1\ncompleted\t6\t1\n", out)
    local log = H.read(dir .. "/runs/r/train.log")
    assert.matches("ranks 2 %(mpi%)", log)
    assert.matches("ranks 1 %(.-%): each batch of max_tokens 600 x 2 is cut into 2 shards", log)
  end)

  it("runs scripts/jobs/two_runs.lua: two runs, a table and a plot of validation BLEU by step", function()
    H.write(dir .. "/tiny2.lua", H.read(dir .. "/tiny.lua"):gsub('name = "tiny"', 'name = "other"'))
    local out, code = H.sh(string.format("cd %s && %s run %s/scripts/jobs/two_runs.lua tiny.lua tiny2.lua " ..
      "max_steps=4 valid_every=2 valid_bleu_lines=2 2>&1", dir, bin, root))
    assert.are.equal(0, code, out)
    assert.matches("tiny%-short: completed at step 4\nother%-short: completed at step 4\n", out)
    assert.matches("| step | tiny%-short BLEU | other%-short BLEU |\n| %-%-%-: | %-%-%-: | %-%-%-: |\n" ..
      "| 2 | %d+%.%d%d | %d+%.%d%d |\n| 4 | %d+%.%d%d | %d+%.%d%d |\n", out)
    assert.matches("Validation BLEU", out)
    assert.matches("wrote out/two_runs.svg, out/two_runs.png", out)
    assert.are.equal("\137PNG", H.read(dir .. "/out/two_runs.png"):sub(1, 4))
  end)

  it("lists a run whose job.json cannot be read as broken, with the reason", function()
    local d = H.sh("mktemp -d"):gsub("%s+$", "")
    H.sh("mkdir -p " .. d .. "/runs/bad")
    H.write(d .. "/runs/bad/job.json", "{\"name\": ")
    local out, err, code = run_in(d, [[
local listed = mtlab.jobs.list()
print(#listed, listed[1].name, listed[1].state)
print(listed[1].error)
print(tostring(listed[1]))
]])
    H.sh("rm -rf " .. d)
    assert.are.equal(0, code, err)
    assert.matches("^1\tbad\tbroken\nruns/bad/job.json:1: ", out)
    assert.matches("\nmtlab.job: bad %(broken: runs/bad/job.json:1: [^\n]+%)\n$", out)
    assert.matches("listed as broken", H.run_lua('print(mtlab.help("job.name"))'))
  end)

  it("reports errors naming the function and the argument", function()
    local _, err = run_in(dir, 'mtlab.jobs.start("tiny.lua", {name = "c", overrides = {lr = "fast"}})')
    assert.matches("mtlab.jobs.start: tiny.lua: 'lr' must be a number %(nothing was started%)", err)
    assert.are.equal("", H.sh("ls " .. dir .. "/runs | grep -x c"))
    assert.has_error(function() mtlab.jobs.start(42, {launcher = "pbs"}) end,
      "mtlab.jobs.start: option launcher \"pbs\" is not local or slurm")
    assert.has_error(function() mtlab.jobs.start("x.lua", {nmae = "x"}) end,
      "mtlab.jobs.start: unknown option 'nmae' (known: launcher, name, overrides, procs, tasks, nodes, gpus_per_node)")
    assert.has_error(function() mtlab.jobs.stop(42) end,
      "mtlab.jobs.stop: argument 1 must be a job or a job's name, not number")
    assert.has_error(function() mtlab.jobs.wait("no-such-job") end,
      "mtlab.jobs.wait: runs/no-such-job: no such job (no job.json)")
    local _, err2 = run_in(dir, 'local j = mtlab.jobs.list()[1]; j:wait(-1)')
    assert.matches("job:wait: timeout must be a number of seconds >= 0, not %-1", err2)
    local _, err3 = run_in(dir, 'local j = mtlab.jobs.list()[1]; return j.nope')
    assert.matches("job: no field or method 'nope'", err3)
  end)
  it("drives runs with scripts/train/retrain.lua: starts, resumes, skips, one at a time", function()
    H.sh(string.format("cd %s && sed 's/name = \"tiny\"/name = \"r1\"/' tiny.lua > r1.lua && "
                       .. "sed 's/name = \"tiny\"/name = \"r2\"/' tiny.lua > r2.lua", dir))
    local driver = string.format("cd %s && %s run %s/scripts/train/retrain.lua --poll 1 ", dir, bin, root)
    -- --once with room for one run: r1 starts, r2 waits its turn
    local out, code = H.sh(driver .. "--once r1.lua r2.lua max_steps=6 2>&1")
    assert.are.equal(0, code, out)
    assert.matches("r1%s+started from r1.lua", out)
    assert.is_nil(out:find("r2 ", 1, true), out)
    assert.matches("0 of 2 runs completed, 0 left alone, 2 still to go", out)
    -- waiting: r1 ends, then r2 starts and ends
    out, code = H.sh(driver .. "r1.lua r2.lua max_steps=6 2>&1")
    assert.are.equal(0, code, out)
    assert.matches("r2%s+started from r2.lua", out)
    assert.matches("2 of 2 runs completed", out)
    -- run again: nothing to do
    out, code = H.sh(driver .. "r1.lua r2.lua 2>&1")
    assert.are.equal(0, code, out)
    assert.is_nil(out:find("started", 1, true), out)
    assert.matches("r1%s+completed %(step 6%)", out)
    -- a stopped run is resumed from its checkpoint
    H.sh(string.format("cd %s && sed 's/name = \"tiny\"/name = \"r3\"/' tiny.lua > r3.lua", dir))
    out, code = H.sh(driver .. "--once r3.lua max_steps=100000 save_every=2 valid_every=0 2>&1")
    assert.are.equal(0, code, out)
    local _, err, rc = run_in(dir, [[
local j
for _, x in ipairs(mtlab.jobs.list()) do if x.name == "r3" then j = x end end
while j.step < 4 do j:wait(0.05) end
j:stop()
j:wait(60)
assert(j.state == "cancelled", j.state)
]])
    assert.are.equal(0, rc, err)
    out, code = H.sh(driver .. "--once r3.lua 2>&1")
    assert.are.equal(0, code, out)
    assert.matches("r3%s+resumed %(cancelled at step %d+ of 100000%)", out)
    _, err, rc = run_in(dir, 'local j = mtlab.jobs.stop("r3"); j:wait(60); assert(j.step >= 4)')
    assert.are.equal(0, rc, err)
    -- a config that is not one is an error naming it
    H.write(dir .. "/bad.lua", "return 42")
    out, code = H.sh(driver .. "bad.lua 2>&1")
    assert.are_not.equal(0, code)
    assert.matches("retrain.lua: bad.lua: not a training config", out)
    -- an input it cannot make (only data/bible/ is made here) is an error naming it, before
    -- any run starts
    H.sh(string.format("cd %s && sed 's/name = \"tiny\"/name = \"r4\"/' tiny.lua | "
                       .. "sed 's|\"data/spm.model\"|\"nowhere/spm.model\"|' > r4.lua", dir))
    out, code = H.sh(driver .. "--once r1.lua r4.lua 2>&1")
    assert.are_not.equal(0, code)
    assert.matches('r4.lua: tokenizer = "nowhere/spm.model" does not exist %(nothing was started%)', out)
    assert.is_nil(out:find("started from", 1, true), out)
  end)
end)
