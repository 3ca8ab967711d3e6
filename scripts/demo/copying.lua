-- Copying: a sentence with names the models never saw in training, through every shipped
-- model the workbench has open. Who copies the names, who invents something, and the maps that
-- show why: attention can point at the name's source tokens, a state must have kept them.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local sentence = "Y Zorvald habló con Quimberly en Taravesh."
local names = {"Zorvald", "Quimberly", "Taravesh"}
local models = {"transformer-small", "mamba-small", "mamba-mha-small", "mamba-local-small"}
local kinds = {"cross", "implicit", "attention", "attention"}

-- How many of the three names each model writes, with the panes' search, and where each
-- pane's map has the translation's first token (the row after <sep>, or the first row of a
-- cross-attention map) and the first name's column.
local facts = lesson.facts(function()
  local f = {copied = {}, text = {}, row = {}, col = {}}
  for i, name in ipairs(models) do
    local text, m = lesson.translate_with(name, sentence)
    local map = m:probe(sentence, text, {kind = kinds[i]})
    m:close()
    local copied = 0
    for _, n in ipairs(names) do copied = copied + (text:find(n, 1, true) and 1 or 0) end
    f.copied[i], f.text[i] = copied, text
    f.row[i] = (lesson.row_of(map, "<sep>") or 0) + 1
    f.col[i] = lesson.column_of(map, names[1]:sub(1, 2)) or 1
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
     local f = facts()
     for i = 1, #models do ui.heatmap(i, {kind = kinds[i], scale = "row"}) end
     ui.wait()
     for i = 1, #models do ui.scroll(i, f.row[i]) ui.cursor(i, f.row[i], f.col[i]) end
   end,
   say = "Each map per row, from the translation's first token down (the cursors, on the column " ..
         "of 'Zorvald'): which source tokens it draws on. Attention points at tokens; Mamba's " ..
         "implicit map is what its state still carries."},
  {run = function() for i = 1, #ui.panes() do ui.text_view(i) end end,
   say = "Who copies can look back at the name; who invents had to squeeze it through a state."},
})
