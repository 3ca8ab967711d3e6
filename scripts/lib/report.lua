-- What the evaluation scripts share: their arguments, the shipped bundles, markdown tables and
-- the files they write under out/. Loaded with
--   package.path = arg[0]:match("^(.-)[^/]*$") .. "../lib/?.lua;" .. package.path
local mtlab = require "mtlab"

local R = {}

-- The architectures in the paper's order (the engine's registry), by their shipped demo bundles.
R.ARCHS = mtlab.architectures()

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end
R.exists = exists

-- models/NAME-small for each architecture that is there (or models/NAME-SUFFIX-small).
function R.shipped(suffix)
  local found = {}
  for _, name in ipairs(R.ARCHS) do
    local dir = "models/" .. name .. (suffix and ("-" .. suffix) or "") .. "-small"
    if exists(dir .. "/config.json") then found[#found + 1] = dir end
  end
  return found
end

-- "transformer-cat2to10-small" -> "transformer-small", "2to10" (a CAT variant and its
-- original's name; docs/models.md §10.3); "transformer-small" -> "transformer-small", nil
function R.cat_of(name)
  return (name:gsub("%-cat%d[%dto]*", "")), name:match("%-cat(%d[%dto]*)")
end

-- The shipped bundles of the architectures with their CAT variants (models/NAME-small, then each
-- models/NAME-catN-small or NAME-catMtoN-small by name), in the paper's order.
function R.shipped_with_cats()
  local cats = {} -- original's name -> its CAT variants' directories
  local ls = io.popen("ls -1 models 2>/dev/null")
  for d in ls:lines() do
    local orig, cat = R.cat_of(d)
    if cat then cats[orig] = cats[orig] or {}; table.insert(cats[orig], "models/" .. d) end
  end
  ls:close()
  local found = {}
  for _, name in ipairs(R.ARCHS) do
    local dirs = cats[name .. "-small"] or {}
    table.sort(dirs)
    table.insert(dirs, 1, "models/" .. name .. "-small")
    for _, dir in ipairs(dirs) do
      if exists(dir .. "/config.json") then found[#found + 1] = dir end
    end
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

-- The verses of the first n 8-verse paragraphs of BASE (data/bible/test: its .para8.keys,
-- "Esther 1:1-8", looked up in .keys): {{src = {8 verses}, ref = {8 verses}}, ...}. A key that
-- cannot be read or a verse missing from BASE.keys is an error naming it.
function R.paragraph_verses(base, n)
  local script = arg[0]:match("([^/]*)$")
  local keys, src, ref = R.lines(base .. ".keys"), R.lines(base .. ".es"), R.lines(base .. ".en")
  local index = {}
  for i, k in ipairs(keys) do index[k] = i end
  local paragraphs = {}
  for p, key in ipairs(R.lines(base .. ".para8.keys", n)) do
    local book, ch, a, b = key:match("^(.-) (%d+):(%d+)%-(%d+)$")
    if not book then error(string.format("%s: %s.para8.keys:%d: cannot read '%s'", script, base, p, key), 0) end
    local para = {src = {}, ref = {}}
    for v = tonumber(a), tonumber(b) do
      local i = index[string.format("%s %s:%d", book, ch, v)]
      if not i then
        error(string.format("%s: verse %s %s:%d of paragraph %d is not in %s.keys", script, book, ch, v, p, base), 0)
      end
      para.src[#para.src + 1], para.ref[#para.ref + 1] = src[i], ref[i]
    end
    paragraphs[p] = para
  end
  return paragraphs
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
