-- `mtlab run`: arguments, exit status, tracebacks and Ctrl-C, as a user meets them.
local H = dofile("tests/lua/helpers.lua")

describe("mtlab run", function()
  it("passes arguments as lua.c does", function()
    local out, _, code = H.run_lua('print(arg[-1], #arg, arg[1], arg[2], select("#", ...), ...)', "a 'b c'")
    assert.are.equal(0, code)
    assert.are.equal("run\t2\ta\tb c\t2\ta\tb c\n", out)
  end)

  it("prints the traceback of an error and exits 1", function()
    local _, err, code = H.run_lua('local function f() error("boom") end\nf()\n')
    assert.are.equal(1, code)
    assert.matches("^mtlab run: .*:1: boom\nstack traceback:", err)
    assert.matches("in local 'f'", err)
    assert.matches("in main chunk", err)
  end)

  it("prints error(msg, 0) as the script's own message, without a traceback", function()
    local _, err, code = H.run_lua('error("usage: mtlab run x.lua FILE", 0)')
    assert.are.equal(1, code)
    assert.are.equal("mtlab run: usage: mtlab run x.lua FILE\n", err)
    -- a message with what looks like a position (chunk:line: ) keeps its traceback, as does a
    -- binding's error
    _, err, code = H.run_lua('error("see b.lua:3: there", 0)')
    assert.are.equal(1, code)
    assert.matches("stack traceback", err)
    _, err, code = H.run_lua('mtlab.load("no/such/bundle")')
    assert.are.equal(1, code)
    assert.matches("stack traceback:.*in main chunk", err)
  end)

  it("prints a command's --help on stdout", function()
    for _, cmd in ipairs({"eval", "score", "run", "translate", "inspect"}) do
      local out, code = H.sh(string.format("%s %s --help 2>/dev/null", H.mtlab, cmd))
      assert.are.equal(0, code)
      assert.matches("^usage: mtlab " .. cmd .. " ", out)
    end
  end)

  it("reports a syntax error and a missing script", function()
    local _, err, code = H.run_lua("x = = 1")
    assert.are.equal(1, code)
    assert.matches("unexpected symbol", err)
    _, code = H.sh(H.mtlab .. " run no/such.lua 2>/dev/null")
    assert.are.equal(1, code)
    _, code = H.sh(H.mtlab .. " run 2>/dev/null")
    assert.are.equal(2, code)
  end)

  -- Starts a script in the background, waits until it wrote `ready`, sends SIGINT, and
  -- returns its exit status and stderr (a script still running 30 s after the signal is
  -- killed, and its stderr says so).
  local function interrupt(chunk)
    local script, ready, err = H.tmpname(), H.tmpname(), H.tmpname()
    os.remove(ready)
    H.write(script, chunk:gsub("READY", ready))
    local out = H.sh(string.format([[
%s run %s 2>%s & pid=$!
for i in $(seq 1 600); do [ -e %s ] && break; sleep 0.05; done
kill -INT $pid
for i in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
kill -KILL $pid 2>/dev/null && echo "still running 30 s after SIGINT" >>%s
wait $pid; echo $?]], H.mtlab, script, err, ready, err))
    local e = H.read(err)
    os.remove(script); os.remove(ready); os.remove(err)
    return tonumber(out:match("(%d+)%s*$")), e
  end

  it("stops a busy loop on Ctrl-C with exit status 130 and a traceback", function()
    -- the ready file is written from inside spin, so a signal that lands while it is being
    -- closed still finds spin on the stack
    local code, err = interrupt('local function spin() io.open("READY", "w"):close() for i = 1, 1e12 do end end\nspin()\n')
    assert.are.equal(130, code)
    assert.matches("interrupted", err)
    assert.matches("in local 'spin'", err)
  end)

  it("stops a loop that catches every error on Ctrl-C: pcall, xpcall and coroutines cannot swallow it", function()
    for _, loop in ipairs({
      "while true do pcall(function() while true do end end) end",
      "while true do xpcall(function() while true do end end, function(e) return e end) end",
      "while true do pcall(error, 'x') end",
      "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
      "while true do pcall(coroutine.wrap(function() pcall(function() while true do end end) end)) end",
    }) do
      local code, err = interrupt('io.open("READY", "w"):close()\n' .. loop .. '\n')
      assert.are.equal(130, code, loop .. "\n" .. err)
      assert.matches("interrupted", err, 1, true)
      assert.is_nil(err:find("still running", 1, true), loop)
    end
  end)

  it("stops a long translation on Ctrl-C", function()
    local code, err = interrupt(string.format([[
local m = mtlab.load("%s")
local texts = {}
for i = 1, 200 do texts[i] = "Y dijo Dios: Sea la luz, y fue la luz " .. i end
m:translate(texts, {beam = 5, on_token = function()
  if not done then io.open("READY", "w"):close(); done = true end
end})
print("finished")
]], H.mamba))
    assert.are.equal(130, code)
    assert.matches("interrupted", err)
    assert.matches("in function 'mtlab.model:translate'", err, 1, true)
  end)

  it("starts OpenMP with 1,000 spins unless the user set how it waits (docs/decoding.md §9.1)", function()
    local script = H.tmpname()
    H.write(script, 'print(os.getenv("GOMP_SPINCOUNT"), os.getenv("OMP_WAIT_POLICY"), arg[1])')
    local function env_of(set)
      local out, code = H.sh(string.format("env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY %s %s run %s 'a b'",
                                           set, H.mtlab, script))
      assert.are.equal(0, code, out)
      return out
    end
    -- set, and the arguments survive the second start
    assert.are.equal("1000\tnil\ta b\n", env_of(""))
    -- the user's own choice stays
    assert.are.equal("5\tnil\ta b\n", env_of("GOMP_SPINCOUNT=5"))
    assert.are.equal("nil\tpassive\ta b\n", env_of("OMP_WAIT_POLICY=passive"))
    os.remove(script)
  end)
end)
