-- Copying: a sentence with names the models never saw in training, through every shipped
-- model the workbench has open. Who copies the names, who invents something, and the maps that
-- show why: attention can point at the name's source tokens, a state must have kept them; the
-- attribution map (the same gradient measure for every architecture) shows which inputs each
-- model's token at the name actually drew on.
local lesson = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "./") .. "lesson.lua")

local sentence = "Y Zorvald habló con Quimberly en Taravesh."
local names = {"Zorvald", "Quimberly", "Taravesh"}
local models = {"transformer-small", "mamba-small", "mamba-mha-small", "mamba-local-small"}
local kinds = {"cross", "implicit", "attention", "attention"}

-- The attribution (saliency) of the name's second token: the row after the translation's
-- first token holding the name's first letters (where a copy must go on with the source's
-- next piece; the first row when there is none), the share of its row's total on the name's
-- source pieces (its first piece up to the next word), and its strongest input.
local function name_attribution(m, text)
  local a = m:attribute(sentence, text, {method = "saliency"})
  local rows, cols = a:row_labels(), a:col_labels()
  local start = names[1]:sub(1, 2)
  local row = 1
  for i, label in ipairs(rows) do
    if label:find(start, 1, true) then row = math.min(i + 1, #rows) break end
  end
  local first = lesson.column_of(a, start)
  local last = first
  while cols[last + 1] and not cols[last + 1]:find("^\u{2581}") do last = last + 1 end
  local sep = 1
  while cols[sep] and cols[sep] ~= "<sep>" and cols[sep] ~= "</s>" and cols[sep] ~= "<eos>" do
    sep = sep + 1
  end
  local total, on_name, best, top = 0, 0, -1, 1
  for j = 1, #cols do
    local v = math.abs(a:get(row, j))
    total = total + v
    if j >= first and j <= last then on_name = on_name + v end
    if v > best then best, top = v, j end
  end
  return {row = row, token = rows[row], share = total > 0 and on_name / total or 0,
          top = cols[top], top_source = top < sep, name_col = first}
end

-- How many of the three names each model writes, with the panes' search, and where each
-- pane's map has the translation's first token (the row after <sep>, or the first row of a
-- cross-attention map) and the first name's column.
local facts = lesson.facts(function()
  local f = {copied = {}, text = {}, row = {}, col = {}, attr = {}}
  for i, name in ipairs(models) do
    local text, m = lesson.translate_with(name, sentence)
    local map = m:probe(sentence, text, {kind = kinds[i]})
    f.attr[i] = name_attribution(m, text)
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
  {run = function()
     local f = facts()
     for i = 1, #models do
       ui.heatmap(i, {kind = "attribution", method = "saliency", scale = "row"})
     end
     ui.wait()
     for i = 1, #models do
       ui.scroll(i, 1)
       ui.cursor(i, f.attr[i].row, f.attr[i].name_col + 1)
     end
   end,
   say = function()
     local f = facts()
     local function piece(s) return (s:gsub("\u{2581}", "")) end
     local mha, mamba = f.attr[3], f.attr[2]
     local function input(a) return (a.top_source and "the source's '" or "its own '") .. piece(a.top) .. "'" end
     return string.format("Attribution (saliency) at the name's second token, the cursor " ..
       "rows: mamba-mha-small writes '%s', %.0f%% of the row on the source's '%s', most of all " ..
       "%s; mamba-small writes '%s', %.0f%% there, most of all %s.",
       piece(mha.token), 100 * mha.share, names[1], input(mha), piece(mamba.token),
       100 * mamba.share, input(mamba))
   end,
   holds = function()
     local f = facts()
     local mha, mamba = f.attr[3], f.attr[2]
     if not (mha.share > mamba.share) then
       return false, "mamba-mha-small's row draws no more on the name than mamba-small's"
     end
     if not (mha.top_source and mha.top == mha.token) then
       return false, "mamba-mha-small's strongest input is not the source piece it writes"
     end
     return true
   end},
  {run = function() for i = 1, #ui.panes() do ui.text_view(i) end end,
   say = "Who copies can look back at the name; who invents had to squeeze it through a state."},
})
