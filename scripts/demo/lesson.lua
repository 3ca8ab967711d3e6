-- What the three demos share: a lesson is a list of steps, each explained in the status line
-- and the console, the next one coming on any key. Only in the workbench (it uses `ui`):
--
--   ./mtlab tui --script scripts/demo/copying.lua      or, in the console (Ctrl-O):
--   dofile("scripts/demo/copying.lua")
local lesson = {}

-- the project's root, from where this file lies (the demos run from any directory)
local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./"
lesson.root = here .. "../../"

function lesson.model(name) return lesson.root .. "models/" .. name end

-- One lesson: title, then its steps in order; each step is {say = "...", run = function() end}
-- (run may be nil) and says `say` after it ran.
function lesson.run(title, steps)
  assert(ui, "the demos drive the workbench: run them with `mtlab tui --script FILE`")
  print("== " .. title .. " (" .. #steps .. " steps; any key: next, Ctrl-C: stop)")
  for i, step in ipairs(steps) do
    if step.run then step.run() end
    local say = type(step.say) == "function" and step.say() or step.say
    print(string.format("[%d/%d] %s", i, #steps, say))
    ui.notify(string.format("[%d/%d · key: next] %s", i, #steps, say))
    ui.wait_key()
  end
  ui.notify("end of the demo (Ctrl-O closes the console, Ctrl-Q quits)")
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

-- The columns whose label contains the piece (a name's first subword).
function lesson.columns_of(matrix, piece)
  local cols = {}
  for j, label in ipairs(matrix:col_labels()) do
    if label:find(piece, 1, true) then cols[#cols + 1] = j end
  end
  return cols
end

return lesson
