-- Forgetting: the twelve apostles (Matthew 10:2-4), fifteen names in one long verse, through
-- Mamba and the Transformer. Mamba carries everything it read in one fixed-size state; the
-- Transformer's decoder looks back at every source token. The lesson picks the first name the
-- Transformer writes and Mamba does not, and shows both maps where that name is needed.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local verse = "Y los nombres de los doce apóstoles son estos: el primero, Simón, que es dicho Pedro, " ..
              "y Andrés su hermano; Jacobo hijo de Zebedeo, y Juan su hermano; Felipe, y Bartolomé; " ..
              "Tomás, y Mateo el publicano; Jacobo hijo de Alfeo, y Lebeo, por sobrenombre Tadeo; " ..
              "Simón el Cananita, y Judas Iscariote, que también le entregó."
-- each name as the verse has it, and as an English Bible writes it
local names = {
  {"Simón", "Simon"}, {"Pedro", "Peter"}, {"Andrés", "Andrew"}, {"Jacobo", "James"},
  {"Zebedeo", "Zebedee"}, {"Juan", "John"}, {"Felipe", "Philip"}, {"Bartolomé", "Bartholomew"},
  {"Tomás", "Thomas"}, {"Mateo", "Matthew"}, {"Alfeo", "Alphaeus"}, {"Lebeo", "Lebbaeus"},
  {"Tadeo", "Thaddaeus"}, {"Judas", "Judas"}, {"Iscariote", "Iscariot"},
}
local MAMBA, TRANSFORMER = "mamba-small", "transformer-small"

local facts = lesson.facts(function()
  local f = {}
  local m, t
  f.mamba, m = lesson.translate_with(MAMBA, verse)
  f.transformer, t = lesson.translate_with(TRANSFORMER, verse)
  f.mamba_names, f.transformer_names = 0, 0
  for _, n in ipairs(names) do
    local in_m, in_t = f.mamba:find(n[2], 1, true), f.transformer:find(n[2], 1, true)
    f.mamba_names = f.mamba_names + (in_m and 1 or 0)
    f.transformer_names = f.transformer_names + (in_t and 1 or 0)
    if in_t and not in_m and not f.es then f.es, f.en = n[1], n[2] end
  end
  if not f.es then m:close() t:close() return f end
  -- Mamba's implicit attention (layer 1) over the verse and its own translation: the name's
  -- column, from the first row of the translation on (the row after <sep>)
  local im = m:probe(verse, f.mamba, {kind = "implicit", layer = 1})
  f.col = lesson.column_of(im, f.es:sub(1, 3))
  f.sep = lesson.row_of(im, "<sep>")
  f.most, f.most_row = 0, f.sep + 1
  for i = f.sep + 1, im:shape() do
    local s = lesson.share(im, i, f.col)
    if s > f.most then f.most, f.most_row = s, i end
  end
  f.most_label = im:row_labels()[f.most_row]
  f.own = lesson.share(im, f.col, f.col)
  -- the Transformer's cross-attention (its last layer, the one next to the output) at the
  -- step that writes the name: the row before the one that reads it
  f.t_layer = 1
  while pcall(t.probe, t, verse, f.transformer, {kind = "cross", layer = f.t_layer + 1}) do
    f.t_layer = f.t_layer + 1
  end
  local cross = t:probe(verse, f.transformer, {kind = "cross", layer = f.t_layer})
  local reads = lesson.row_of(cross, f.en:sub(1, 3)) or lesson.row_of(cross, f.en)
  f.t_row = reads and reads - 1
  if f.t_row then
    f.t_value, f.t_col = lesson.row_max(cross, f.t_row)
    f.t_reading = cross:row_labels()[f.t_row]
    f.t_source = cross:col_labels()[f.t_col]
  end
  m:close() t:close()
  return f
end)

return lesson.run("forgetting: fifteen names in one long verse", {
  {run = function() lesson.panes{MAMBA, TRANSFORMER} end,
   say = "Mamba (left) carries what it read in one fixed-size state; the Transformer (right) " ..
         "looks back at every source token."},
  {run = function() lesson.translate(verse) ui.scroll(1, 1) ui.scroll(2, 1) end,
   say = function()
     local f = facts()
     return string.format("The apostles, %d names: Mamba writes %d of them, the Transformer %d. "
                          .. "'%s' comes early; the Transformer writes '%s', Mamba does not.",
                          #names, f.mamba_names, f.transformer_names, f.es or "?", f.en or "?")
   end,
   holds = function()
     local f = facts()
     return f.es ~= nil and f.mamba_names < f.transformer_names, "no name the Transformer keeps and Mamba loses"
   end},
  {run = function()
     local f = facts()
     lesson.show(1, {kind = "implicit", layer = 1, scale = "row"}, f.most_row, f.col)
   end,
   say = function()
     local f = facts()
     return string.format("Mamba's implicit attention, layer 1, each row against its strongest cell. "
                          .. "Column '%s': once the translation starts (row %d), it never has more "
                          .. "than %.0f%% of a row's strongest cell (row %d '%s', the cursor).",
                          f.es or "?", (f.sep or 0) + 1, 100 * (f.most or 0), f.most_row or 0,
                          f.most_label or "?")
   end,
   holds = function()
     local f = facts()
     return f.col ~= nil and f.most < 0.25 and f.own > 0.99, "the name keeps a large share of Mamba's state"
   end},
  {run = function()
     local f = facts()
     lesson.show(2, {kind = "cross", layer = f.t_layer, scale = "row"}, f.t_row, f.t_col)
   end,
   say = function()
     local f = facts()
     return string.format("The Transformer's cross-attention, layer %d: at the step that writes "
                          .. "'%s' (row %d, reading '%s') its strongest source token is '%s' (%.2f).",
                          f.t_layer or 0, f.en or "?", f.t_row or 0, f.t_reading or "?",
                          f.t_source or "?", f.t_value or 0)
   end,
   holds = function()
     local f = facts()
     return f.t_source ~= nil and f.t_source:find(f.es:sub(1, 3), 1, true) ~= nil,
            "the Transformer looks elsewhere when it writes the name"
   end},
  {run = function() ui.text_view(1) ui.text_view(2) end,
   say = "Back to the translations: what Mamba's state let go of, it cannot write; attention can look it up."},
})
