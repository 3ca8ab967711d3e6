-- The lessons of scripts/demo/ teach only what the shipped models do: run without the
-- workbench, each demo computes every step's words from the models' output (greedy, as the
-- panes show it) and checks its claims; every claim must hold and no number be missing.
describe("demos", function()
  for _, demo in ipairs{"forgetting", "implicit_attention", "copying"} do
    it(demo .. ".lua: every claim holds on the shipped models", function()
      local results = dofile("scripts/demo/" .. demo .. ".lua")
      assert.is_true(#results >= 4)
      for i, r in ipairs(results) do
        assert.is_true(r.holds, string.format("%s step %d: %s (%s)", demo, i, r.say, r.why or ""))
        assert.is_nil(r.say:find("?", 1, true), string.format("%s step %d: %s", demo, i, r.say))
      end
    end)
  end

  it("copying shows each model's attribution at the name, naming the tokens the models write", function()
    local results = dofile("scripts/demo/copying.lua")
    local step
    for _, r in ipairs(results) do
      if r.say:find("^Attribution") then step = r end
    end
    assert.is_not_nil(step, "copying has no attribution step")
    assert.is_true(step.holds, step.why)
    local mha_tok, mamba_tok = step.say:match("mamba%-mha%-small writes '(%S+)',.-mamba%-small writes '(%S+)',")
    assert.is_not_nil(mha_tok, step.say)
    -- the tokens it names are the second pieces of the name in each model's own translation
    local sentence = "Y Zorvald habló con Quimberly en Taravesh."
    for name, tok in pairs{["mamba-mha-small"] = mha_tok, ["mamba-small"] = mamba_tok} do
      local m = mtlab.load("models/" .. name)
      local text = m:translate(sentence, {beam = 1}).text
      local rows = m:attribute(sentence, text, {method = "saliency"}):row_labels()
      assert.are.equal("\u{2581}Zo", rows[1])
      assert.are.equal(tok, rows[2])
      m:close()
    end
  end)

  it("forgetting names a name Mamba drops and the Transformer writes #slow", function()
    local results = dofile("scripts/demo/forgetting.lua")
    local es, en = results[2].say:match("'(%S+)' comes early; the Transformer writes '(%S+)'")
    assert.is_not_nil(es)
    local m = mtlab.load("models/mamba-small")
    local t = mtlab.load("models/transformer-small")
    local verse = "Y los nombres de los doce apóstoles son estos: el primero, Simón, que es dicho Pedro, " ..
                  "y Andrés su hermano; Jacobo hijo de Zebedeo, y Juan su hermano; Felipe, y Bartolomé; " ..
                  "Tomás, y Mateo el publicano; Jacobo hijo de Alfeo, y Lebeo, por sobrenombre Tadeo; " ..
                  "Simón el Cananita, y Judas Iscariote, que también le entregó."
    assert.is_nil(m:translate(verse, {beam = 1}).text:find(en, 1, true))
    assert.is_truthy(t:translate(verse, {beam = 1}).text:find(en, 1, true))
    m:close() t:close()
  end)
end)
