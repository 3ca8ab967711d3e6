-- Implicit attention: one verse through mamba-mha (Mamba with two attention layers) and Mamba.
-- An attention layer's map is explicit; a Mamba layer computes no such map, but its recurrence
-- unrolls into one (the implicit attention of Ali et al., 2024). On one shared scale the two
-- can be compared cell by cell.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local verse = "Y dijo Dios: Sea la luz: y fué la luz."

local function peak(model, kind)
  local m = mtlab.load(lesson.model(model))
  local r = m:translate(verse)
  local map = m:probe(verse, r.text, {kind = kind})
  local v, i, j = map:max()
  local rows, cols = map:row_labels(), map:col_labels()
  m:close()
  return string.format("%.2f at %s -> %s", v, rows[i], cols[j])
end
local mha_peak, mamba_peak = "", ""

lesson.run("implicit attention: mamba-mha's attention next to Mamba's implicit attention", {
  {run = function() lesson.panes{"mamba-mha-small", "mamba-small"} lesson.translate(verse) end,
   say = "One verse through mamba-mha (left, two attention layers) and Mamba (right, none)."},
  {run = function()
     ui.heatmap(1, {kind = "attention", scale = "raw"})
     ui.heatmap(2, {kind = "implicit", scale = "raw"})
     ui.wait()
   end,
   say = "Left: an attention layer's map. Right: Mamba's implicit attention. One scale for both (raw)."},
  {run = function() ui.heatmap(2, {kind = "implicit", layer = 2, scale = "raw"}) ui.wait(2) end,
   say = "Mamba's next layer: each layer forgets at its own rate (the decay along each row)."},
  {run = function() mha_peak, mamba_peak = peak("mamba-mha-small", "attention"), peak("mamba-small", "implicit") end,
   say = function() return "Largest weight, attention " .. mha_peak .. "; implicit " .. mamba_peak .. "." end},
  {run = function() ui.text_view(1) ui.text_view(2) end,
   say = "Both read the same verse; only attention can look a name up again exactly."},
})
