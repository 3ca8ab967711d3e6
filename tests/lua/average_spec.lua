-- Checkpoint averaging end to end: a tiny run keeps a bundle every 2 steps (keep_every), and
-- scripts/train/average.lua scores the means of its last kept bundles and writes the best.
local H = dofile("tests/lua/helpers.lua")

local root = H.sh("pwd"):gsub("%s+$", "")
local bin = H.mtlab:sub(1, 1) == "/" and H.mtlab or root .. "/" .. H.mtlab:gsub("^%./", "")

describe("scripts/train/average.lua", function()
  local dir
  setup(function()
    dir = H.sh("mktemp -d"):gsub("%s+$", "")
    local _, code = H.sh(string.format("%s/tests/jobs/tiny_run.sh %s %s 6 3 0 >/dev/null 2>&1", root, bin, dir))
    assert(code == 0, "the tiny run's inputs could not be made")
    _, code = H.sh(string.format("cd %s && %s train tiny.lua keep_every=2 >/dev/null 2>&1", dir, bin))
    assert(code == 0, "the tiny run did not train")
  end)
  teardown(function() H.sh("rm -rf " .. dir) end)

  it("scores the means of the last kept bundles and writes the best one", function()
    local out, code = H.sh(string.format("cd %s && %s run %s/scripts/train/average.lua runs/tiny --last 1,2,3 " ..
                                         "--data data --out avg 2>/dev/null", dir, bin, root))
    assert.are.equal(0, code)
    assert.matches("runs/tiny on data/valid.es %(20 lines, beam 1%)", out)
    assert.matches("| step 6 | 1 | %d+%.%d%d |", out)
    assert.matches("| mean of 2: steps 4..6 | 2 | %d+%.%d%d |", out)
    assert.matches("| mean of 3: steps 2..6 | 3 | %d+%.%d%d |", out)
    assert.matches("| runs/tiny/best | 1 | %d+%.%d%d |", out)
    -- the best row is the highest of the table, and it was written
    local best = tonumber(out:match("best: .- %((%d+%.%d+)%)"))
    for v in out:gmatch("| (%d+%.%d%d) |") do assert.is_true(tonumber(v) <= best) end
    assert.is_truthy(H.read(dir .. "/avg/config.json"):find("mamba", 1, true))
    local steps = H.sh("ls " .. dir .. "/runs/tiny/steps"):gsub("%s+", " ")
    assert.are.equal("2 4 6 ", steps)
  end)

  it("never replaces an existing --out bundle unless --force", function()
    local cmd = string.format("cd %s && %s run %s/scripts/train/average.lua runs/tiny --last 1 --data data " ..
                              "--out again %%s >/dev/null 2>err.txt", dir, bin, root)
    local _, code = H.sh(cmd:format(""))
    assert.are.equal(0, code, H.read(dir .. "/err.txt"))
    local first = H.read(dir .. "/again/model.safetensors")
    H.write(dir .. "/again/model.safetensors", "not these weights")
    _, code = H.sh(cmd:format(""))
    assert.are_not.equal(0, code)
    assert.matches("average.lua: %-%-out again already holds a model bundle; not overwritten %(%-%-force " ..
                   "replaces it%)", H.read(dir .. "/err.txt"))
    assert.are.equal("not these weights", H.read(dir .. "/again/model.safetensors"))
    _, code = H.sh(cmd:format("--force"))
    assert.are.equal(0, code, H.read(dir .. "/err.txt"))
    assert.are.equal(first, H.read(dir .. "/again/model.safetensors"))
  end)

  it("says when a run kept no bundles", function()
    local _, code = H.sh(string.format("cd %s && %s run %s/scripts/train/average.lua runs/none 2>err.txt", dir, bin, root))
    assert.are_not.equal(0, code)
    assert.matches("runs/none/steps holds no kept bundle %(train with keep_every = N to keep them%)",
                   H.read(dir .. "/err.txt"))
  end)
end)
