-- Copying: a sentence with names the models never saw in training, through every shipped
-- model the workbench has open. Who copies the names, who invents something, and the maps that
-- show why: attention can point at the name's source tokens, a state must have kept them.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local sentence = "Y Zorvald habló con Quimberly en Taravesh."
local names = {"Zorvald", "Quimberly", "Taravesh"}
local models = {"transformer-small", "mamba-small", "mamba-mha-small", "mamba-local-small"}

-- How many of the three names each model writes, with the panes' search.
local facts = lesson.facts(function()
  local f = {copied = {}, text = {}}
  for i, name in ipairs(models) do
    local text, m = lesson.translate_with(name, sentence)
    m:close()
    local copied = 0
    for _, n in ipairs(names) do copied = copied + (text:find(n, 1, true) and 1 or 0) end
    f.copied[i], f.text[i] = copied, text
  end
  return f
end)

return lesson.run("copying: names the models never saw", {
  {run = function() lesson.panes(models) end,
   say = "Four models: the Transformer, Mamba, Mamba with attention layers, Mamba with local attention."},
  {run = function() lesson.translate(sentence) end,
   say = "Zorvald, Quimberly and Taravesh are in no training sentence: compare the four translations."},
  {say = function()
     local f, out = facts(), {}
     for i, name in ipairs(models) do out[i] = string.format("%s %d/3", name, f.copied[i]) end
     return "Names copied: " .. table.concat(out, ", ") .. "."
   end},
  {run = function()
     ui.heatmap(1, {kind = "cross", scale = "row"}) ui.heatmap(2, {kind = "implicit", scale = "row"})
     ui.heatmap(3, {kind = "attention", scale = "row"}) ui.heatmap(4, {kind = "attention", scale = "row"})
     ui.wait()
   end,
   say = "Each map per row: for each token, which earlier (or source) tokens it draws on. " ..
         "Attention points at tokens; Mamba's implicit map is what its state still carries."},
  {run = function() for i = 1, #ui.panes() do ui.text_view(i) end end,
   say = "Who copies can look back at the name; who invents had to squeeze it through a state."},
})
