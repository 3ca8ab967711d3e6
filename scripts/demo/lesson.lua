-- What the three demos share: a lesson is a list of steps, each explained in the status line
-- and the console. Space or Enter goes to the next step, Backspace back to the one before;
-- every other key drives the workbench as usual (F6 another map, arrows move the cursor...).
-- Only in the workbench (it uses `ui`):
--
--   ./mtlab tui --script scripts/demo/copying.lua      or, in the console (Ctrl-O):
--   dofile("scripts/demo/copying.lua")
--
-- Everything a step says is computed from the models' own output, with the search the panes
-- use (greedy), and each step can say what must hold for its words to be true (`holds`).
-- Without `ui` (`mtlab run scripts/demo/copying.lua`, tests/lua/demos_spec.lua) lesson.run
-- drives nothing: it checks every step's claim and returns the results.
local lesson = {}

-- the project's root, from where this file lies (the demos run from any directory)
local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./"
lesson.root = here .. "../../"

function lesson.model(name) return lesson.root .. "models/" .. name end

-- The search the panes show: their beam (1, greedy, unless `mtlab tui --beam N`).
function lesson.beam()
  if ui then
    for _, p in ipairs(ui.panes()) do return p.beam or 1 end
  end
  return 1
end

-- A function computing a demo's facts once (the models' translations and maps), on demand.
function lesson.facts(compute)
  local value
  return function()
    if value == nil then value = compute() end
    return value
  end
end

-- Translate text with a model bundle (a name under models/) as the panes do.
function lesson.translate_with(name, text)
  local m = mtlab.load(lesson.model(name))
  local out = m:translate(text, {beam = lesson.beam()}).text
  return out, m
end

local function text_of(step)
  return type(step.say) == "function" and step.say() or step.say
end

-- Headless: every step's words and whether its claim holds.
local function check(title, steps)
  local results = {title = title}
  for i, step in ipairs(steps) do
    local say = text_of(step)
    local holds, why = true, nil
    if step.holds then holds, why = step.holds() end
    results[i] = {say = say, holds = holds and true or false, why = why}
    print(string.format("[%d/%d] %s %s%s", i, #steps, holds and "holds:" or "DOES NOT HOLD:", say,
                        (not holds and why) and (" (" .. why .. ")") or ""))
  end
  return results
end

-- text broken into lines of at most width columns at spaces (a word longer than a line
-- keeps its own line)
function lesson.wrap(text, width)
  local lines, line = {}, ""
  for word in text:gmatch("%S+") do
    if line ~= "" and utf8.len(line) + 1 + utf8.len(word) > width then
      lines[#lines + 1] = line
      line = word
    else
      line = line == "" and word or line .. " " .. word
    end
  end
  if line ~= "" then lines[#lines + 1] = line end
  return table.concat(lines, "\n")
end

-- One lesson: title, then its steps in order; each step is {say = "..." or function,
-- run = function() end (may be nil), holds = function() -> ok, why (may be nil)} and says
-- `say` after it ran.
function lesson.run(title, steps)
  if not ui then return check(title, steps) end
  -- the keys drive the workbench; the console keeps a few lines for the lesson's text
  local width = ui.console{height = 6, focus = false}
  print(lesson.wrap("== " .. title .. " (" .. #steps .. " steps; Space: next, Backspace: back, "
                    .. "Ctrl-C: stop)", width))
  local i = 1
  while i <= #steps do
    local step = steps[i]
    if step.run then step.run() end
    local say = text_of(step)
    if step.holds then
      local ok, why = step.holds()
      if not ok then say = say .. " [not so with these models: " .. (why or "see the panes") .. "]" end
    end
    print(lesson.wrap(string.format("[%d/%d] %s", i, #steps, say), width))
    ui.notify(string.format("[%d/%d · Space: next · Backspace: back] %s", i, #steps, say))
    local key = ui.wait_key{"Space", "Enter", "Backspace"}
    i = key == "Backspace" and math.max(1, i - 1) or i + 1
  end
  ui.notify("end of the demo (Ctrl-O: the console, Ctrl-Q quits)")
  print("end of the demo")
end

-- Close every pane, open the given bundles (names under models/) and wait until they loaded.
function lesson.panes(names)
  for i = #ui.panes(), 1, -1 do ui.close(i) end
  for _, name in ipairs(names) do ui.open(lesson.model(name)) end
  ui.set_text("")
  ui.wait()
end

-- Put text in the editor, translate it now and wait for every pane.
function lesson.translate(text)
  ui.set_text(text)
  ui.translate()
  ui.wait()
end

-- The first column whose label contains the piece (a name's first subword), or nil.
function lesson.column_of(matrix, piece)
  for j, label in ipairs(matrix:col_labels()) do
    if label:find(piece, 1, true) then return j end
  end
end

-- The first row whose label is the token, after row `after` (default 0), or nil.
function lesson.row_of(matrix, token, after)
  local labels = matrix:row_labels()
  for i = (after or 0) + 1, #labels do
    if labels[i] == token then return i end
  end
end

-- Row i's strongest cell: value and column (cells past the row's end of a causal map count
-- as they are: zero).
function lesson.row_max(matrix, i)
  local _, cols = matrix:shape()
  local best, at = -math.huge, 1
  for j = 1, cols do
    local v = matrix:get(i, j)
    if v > best then best, at = v, j end
  end
  return best, at
end

-- Share of row i's strongest cell that column j has: what a map drawn per row (scale "row")
-- shows at that cell.
function lesson.share(matrix, i, j)
  local best = lesson.row_max(matrix, i)
  return best > 0 and matrix:get(i, j) / best or 0
end

-- Heatmap of a pane with the cursor on (row, col), the map scrolled to it.
function lesson.show(pane, spec, row, col)
  ui.heatmap(pane, spec)
  ui.wait(pane)
  if row then ui.cursor(pane, row, col) end
end

return lesson
