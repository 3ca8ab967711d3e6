-- Shared by the specs: paths of the shipped bundles, running mtlab itself, temporary files.
local H = {}

-- the binary under test (make test-lua runs the specs with ./mtlab and the ASan build)
H.mtlab = os.getenv("MTLAB") or "./mtlab"
H.transformer = "models/transformer-small"
H.mamba = "models/mamba-small"

function H.tmpname()
  local p = os.tmpname()
  return p
end

function H.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function H.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Runs a shell command; returns its stdout, its exit code.
function H.sh(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

-- Runs a Lua chunk through `mtlab run`; returns stdout, stderr, exit code.
function H.run_lua(chunk, args)
  local script, err = H.tmpname(), H.tmpname()
  H.write(script, chunk)
  local out, code = H.sh(string.format("%s run %s %s 2>%s", H.mtlab, script, args or "", err))
  local e = H.read(err)
  os.remove(script)
  os.remove(err)
  return out, e, code
end

return H
