-- What the evaluation scripts share: their arguments, the shipped bundles, markdown tables and
-- the files they write under out/. Loaded with
--   package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"

local R = {}

-- The seven architectures in the paper's order, by their shipped demo bundles.
R.SEVEN = {"transformer", "transformer++", "retnet", "mamba", "mamba-mha", "mamba-local",
           "mamba-encdec"}

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end
R.exists = exists

-- models/NAME-small for each of the seven that is there (or models/NAME-SUFFIX-small).
function R.shipped(suffix)
  local found = {}
  for _, name in ipairs(R.SEVEN) do
    local dir = "models/" .. name .. (suffix and ("-" .. suffix) or "") .. "-small"
    if exists(dir .. "/config.json") then found[#found + 1] = dir end
  end
  return found
end

-- Parses `--key value` options (spec: key -> default; a boolean default makes a flag) and
-- positional arguments. Unknown options are errors naming the script.
function R.args(script, spec, argv)
  local opts, rest = {}, {}
  for k, v in pairs(spec) do opts[k] = v end
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local key = a:match("^%-%-([%w-]+)$")
    if key then
      local k = key:gsub("-", "_")
      if spec[k] == nil then
        local known = {}
        for name in pairs(spec) do known[#known + 1] = "--" .. name:gsub("_", "-") end
        table.sort(known)
        error(string.format("%s: unknown option %s (known: %s)", script, a, table.concat(known, " ")), 0)
      end
      if type(spec[k]) == "boolean" then
        opts[k] = true
      else
        i = i + 1
        if argv[i] == nil then error(string.format("%s: %s needs a value", script, a), 0) end
        opts[k] = type(spec[k]) == "number" and tonumber(argv[i]) or argv[i]
        if opts[k] == nil then
          error(string.format("%s: %s takes a number, not '%s'", script, a, argv[i]), 0)
        end
      end
    else
      rest[#rest + 1] = a
    end
    i = i + 1
  end
  return opts, rest
end

-- The first n lines of a file (all when n is 0 or nil).
function R.lines(path, n)
  local t = {}
  for line in mtlab.corpus.lines(path) do
    if n and n > 0 and #t >= n then break end
    t[#t + 1] = line
  end
  return t
end

-- A markdown table: headers {...}, rows {{...}, ...}; numbers printed with fmt (default %.2f).
function R.markdown(headers, rows, fmt)
  local out = {"| " .. table.concat(headers, " | ") .. " |",
               "|" .. string.rep("---|", #headers)}
  for _, row in ipairs(rows) do
    local cells = {}
    for i, v in ipairs(row) do
      cells[i] = type(v) == "number" and string.format(fmt or "%.2f", v) or tostring(v)
    end
    out[#out + 1] = "| " .. table.concat(cells, " | ") .. " |"
  end
  return table.concat(out, "\n") .. "\n"
end

-- Writes the markdown as DIR/NAME plus ".md" and, for a plot, its SVG and PNG beside it;
-- returns the paths.
function R.write(dir, name, md, plot)
  assert(os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'"),
         "cannot make the directory " .. dir)
  local base = dir .. "/" .. name
  local f = assert(io.open(base .. ".md", "w"))
  f:write(md)
  f:close()
  local paths = {base .. ".md"}
  if plot then
    paths[#paths + 1] = plot:save(base .. ".svg")
    paths[#paths + 1] = plot:save(base .. ".png")
  end
  return paths
end

-- The short name of a system: "models/mamba-small" -> "mamba-small".
function R.short(name)
  return (name:gsub("/+$", ""):match("([^/]+)$"))
end

return R
