-- Copying: a sentence with names the models never saw in training, through every shipped
-- model the workbench has open. Who copies the names, who invents something, and the maps that
-- show why: attention can point at the name's source tokens, a state must have kept them.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local sentence = "Y Zorvald habló con Quimberly en Taravesh."
local names = {"Zorvald", "Quimberly", "Taravesh"}
local verdicts = ""

local function who_copies()
  local out = {}
  for _, p in ipairs(ui.panes()) do
    if p.loaded then
      local m = mtlab.load(lesson.model(p.name))
      local text = m:translate(sentence).text
      local copied = 0
      for _, n in ipairs(names) do copied = copied + (text:find(n, 1, true) and 1 or 0) end
      out[#out + 1] = string.format("%s %d/3", p.name, copied)
      m:close()
    end
  end
  return table.concat(out, ", ")
end

lesson.run("copying: names the models never saw", {
  {run = function() lesson.panes{"transformer-small", "mamba-small", "mamba-mha-small", "mamba-local-small"} end,
   say = "Four models: the Transformer, Mamba, Mamba with attention layers, Mamba with local attention."},
  {run = function() lesson.translate(sentence) end,
   say = "Zorvald, Quimberly and Taravesh are in no training sentence: compare the four translations."},
  {run = function() verdicts = who_copies() end,
   say = function() return "Names copied: " .. verdicts .. "." end},
  {run = function()
     ui.heatmap(1, {kind = "cross"}) ui.heatmap(2, {kind = "implicit"})
     ui.heatmap(3, {kind = "attention"}) ui.heatmap(4, {kind = "attention"}) ui.wait()
   end,
   say = "Attention maps point from each output token at the source tokens it copies; Mamba's map blurs."},
  {run = function() for i = 1, #ui.panes() do ui.text_view(i) end end,
   say = "Who copies can look back at the name; who invents had to squeeze it through a state."},
})
