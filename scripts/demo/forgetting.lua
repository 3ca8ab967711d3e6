-- Forgetting: a long paragraph whose name comes first, through Mamba and the Transformer.
-- Mamba carries everything it read in a fixed-size state; the Transformer looks back at every
-- source token. The state norms show how Mamba's state evolves, its implicit attention how
-- much of the name is still in the state at each later token.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local paragraph = "Y Pedro subió a Jerusalén, y estuvo con los discípulos muchos días, y hablaba " ..
                  "con ellos de las cosas del reino, y comía con ellos, y después salió de la " ..
                  "ciudad con todos los hermanos, y les enseñaba en el templo cada día."
local mamba_out, transformer_out, fade = "", "", "?"

-- Where Mamba's state stops carrying the name: the first later token whose implicit attention
-- (first layer) to the name falls below 10% of that token's strongest weight.
local function where_the_name_fades()
  local m = mtlab.load(lesson.model("mamba-small"))
  local r = m:translate(paragraph)
  local implicit = m:probe(paragraph, r.text, {kind = "implicit"})
  local name = lesson.columns_of(implicit, "Pedro")[1]
  local labels = implicit:row_labels()
  local rows = implicit:shape()
  m:close()
  for i = name + 1, rows do
    local best = 0
    for j = 1, i do best = math.max(best, implicit:get(i, j)) end
    if best > 0 and implicit:get(i, name) / best < 0.1 then
      return string.format("Mamba's state lets go of 'Pedro' at token %d ('%s'), %d tokens on "
                           .. "(under 10%% of its strongest weight).", i, labels[i], i - name)
    end
  end
  return "Mamba's state still carries 'Pedro' (10% or more) at the paragraph's last token."
end

lesson.run("forgetting: a name at the start of a long paragraph", {
  {run = function() lesson.panes{"mamba-small", "transformer-small"} end,
   say = "Mamba (left) keeps one fixed-size state; the Transformer (right) attends to every source token."},
  {run = function()
     lesson.translate(paragraph)
     local m = mtlab.load(lesson.model("mamba-small"))
     local t = mtlab.load(lesson.model("transformer-small"))
     mamba_out, transformer_out = m:translate(paragraph).text, t:translate(paragraph).text
     m:close() t:close()
   end,
   say = function()
     return string.format("Pedro is the paragraph's first name: Mamba %s it, the Transformer %s it.",
                          mamba_out:find("Peter") and "keeps" or "drops",
                          transformer_out:find("Peter") and "keeps" or "drops")
   end},
  {run = function() ui.heatmap(1, {kind = "state_norms"}) ui.wait(1) end,
   say = "Mamba's state norms, layer by layer along the text: how much each layer's state holds."},
  {run = function() ui.heatmap(1, {kind = "implicit"}) ui.heatmap(2, {kind = "cross"}) ui.wait() end,
   say = "Implicit attention (left) and cross-attention (right): how far back each token still reaches."},
  {run = function() fade = where_the_name_fades() end,
   say = function() return fade end},
  {run = function() ui.text_view(1) ui.text_view(2) end,
   say = "Back to the translations: a long gap after a name is where a state space model forgets it."},
})
