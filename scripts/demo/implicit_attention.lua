-- Implicit attention: one verse with one name through mamba-mha (Mamba with attention layers)
-- and Mamba. An attention layer's map is explicit; a Mamba layer computes no such map, but its
-- recurrence unrolls into one (the implicit attention of Ali et al., 2024). Attention rows are
-- softmax weights (each sums to 1), implicit ones unnormalised |alpha|: the two are compared
-- drawn per row, each cell against its row's strongest, never by their raw numbers.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local verse = "Y después de muchos días vino a Jerusalén un varón llamado Gamaliel, doctor de la ley."
local NAME = "Gamaliel"
local MHA, MAMBA = "mamba-mha-small", "mamba-small"

-- The step before the name: the row reading `named`, whose output is the next token.
local function before_name(map, sep)
  return lesson.row_of(map, "named", sep) or lesson.row_of(map, "called", sep)
end

local facts = lesson.facts(function()
  local f = {}
  local a, m
  f.mha, a = lesson.translate_with(MHA, verse)
  f.mamba, m = lesson.translate_with(MAMBA, verse)
  f.mha_copies = f.mha:find(NAME, 1, true) ~= nil
  f.mamba_copies = f.mamba:find(NAME, 1, true) ~= nil
  f.mamba_word = f.mamba:match("named (%a+)") or f.mamba:match("called (%a+)") or "?"
  -- mamba-mha's first attention layer (its default map) and Mamba's first layer
  local att = a:probe(verse, f.mha, {kind = "attention"})
  local imp = m:probe(verse, f.mamba, {kind = "implicit", layer = 1})
  f.a_col, f.m_col = lesson.column_of(att, NAME:sub(1, 3)), lesson.column_of(imp, NAME:sub(1, 3))
  f.a_row = before_name(att, lesson.row_of(att, "<sep>"))
  f.m_row = before_name(imp, lesson.row_of(imp, "<sep>"))
  if f.a_row then
    f.a_value, f.a_top = lesson.row_max(att, f.a_row)
    f.a_top_label = att:col_labels()[f.a_top]
  end
  if f.m_row then
    f.m_share = lesson.share(imp, f.m_row, f.m_col)
    local _, top = lesson.row_max(imp, f.m_row)
    f.m_top_label = imp:col_labels()[top]
    local imp2 = m:probe(verse, f.mamba, {kind = "implicit", layer = 2})
    f.m_share2 = lesson.share(imp2, f.m_row, f.m_col)
  end
  a:close() m:close()
  return f
end)

return lesson.run("implicit attention: mamba-mha's attention next to Mamba's implicit attention", {
  {run = function() lesson.panes{MHA, MAMBA} lesson.translate(verse) end,
   say = function()
     local f = facts()
     return string.format("One verse, one name (%s), through mamba-mha (left, with attention layers) "
                          .. "and Mamba (right, none): mamba-mha %s, Mamba %s.", NAME,
                          f.mha_copies and "writes " .. NAME or "does not write it",
                          f.mamba_copies and "writes " .. NAME or "writes '" .. f.mamba_word .. "'")
   end,
   holds = function()
     local f = facts()
     return f.mha_copies and not f.mamba_copies, "both or neither copy the name"
   end},
  {run = function()
     ui.heatmap(1, {kind = "attention", scale = "row"})
     ui.heatmap(2, {kind = "implicit", layer = 1, scale = "row"})
     ui.wait()
   end,
   say = "Left: mamba-mha's first attention layer (softmax weights, each row sums to 1). Right: "
         .. "Mamba's implicit attention, layer 1 (|alpha|, not normalised). Both drawn per row: "
         .. "each cell against its row's strongest."},
  {run = function()
     local f = facts()
     ui.cursor(1, f.a_row, f.a_col)
     ui.cursor(2, f.m_row, f.m_col)
   end,
   say = function()
     local f = facts()
     return string.format("The cursors: the step before the name (row %d left, %d right, reading "
                          .. "'named'). Attention's strongest cell there is '%s' (%.2f); in Mamba's "
                          .. "row '%s' has %.0f%% of the strongest ('%s').", f.a_row or 0,
                          f.m_row or 0, f.a_top_label or "?", f.a_value or 0, NAME,
                          100 * (f.m_share or 0), f.m_top_label or "?")
   end,
   holds = function()
     local f = facts()
     return f.a_top_label == NAME and (f.m_share or 1) < 0.5,
            "attention looks elsewhere, or Mamba's state still holds the name"
   end},
  {run = function()
     local f = facts()
     lesson.show(2, {kind = "implicit", layer = 2, scale = "row"}, f.m_row, f.m_col)
   end,
   say = function()
     local f = facts()
     return string.format("Mamba's layer 2, same cell: '%s' has %.0f%% of the row's strongest "
                          .. "(layer 1: %.0f%%); each layer keeps its own share of the past.", NAME,
                          100 * (f.m_share2 or 0), 100 * (f.m_share or 0))
   end},
  {run = function() ui.text_view(1) ui.text_view(2) end,
   say = function()
     local f = facts()
     return string.format("Attention looked the name up where it was needed and copied it; Mamba's "
                          .. "state had to carry it, and wrote '%s'.", f.mamba_word)
   end,
   holds = function()
     local f = facts()
     return f.mha_copies and not f.mamba_copies, "both or neither copy the name"
   end},
})
