-- A contrast token typed as a reader reads it finds its token on every tokenizer kind
-- (mt_tokenizer_find_token): "of" is "Ġof" on a byte-level BPE checkpoint (the neox_hf
-- fixture, a GPT-NeoX tokenizer.json), "▁Dios" on a sentencepiece bundle; through Lua's
-- model:attribute and `mtlab attribute --contrast` alike.
local H = dofile("tests/lua/helpers.lua")

local neox = "tests/fixtures/neox_hf/st"
local src, hyp = "Amados hermanos míos, no erréis.", "All of"

describe("a typed contrast", function()
  it("is the word's token on a byte-level model (m:attribute)", function()
    local m <close> = mtlab.load(neox)
    local by_text = m:attribute(src, hyp, {method = "input_x_gradient", contrast = "of"})
    local by_piece = m:attribute(src, hyp, {method = "input_x_gradient", contrast = "\u{120}of"})
    assert.matches(", contrast \u{120}of", by_text.what, 1, true)
    local rows, cols = by_text:shape()
    local own
    for r = 1, rows do
      if by_text:row_labels()[r] == "\u{120}of" then own = r end
      for c = 1, cols do assert.are.equal(by_piece[r][c], by_text[r][c]) end
    end
    -- its own row: log p(of) - log p(of)
    assert.is_not_nil(own)
    for c = 1, cols do assert.are.equal(0, by_text[own][c]) end
  end)

  it("that is not one token is refused, naming how it splits", function()
    local m <close> = mtlab.load(neox)
    assert.has_error(function() m:attribute(src, hyp, {contrast = "Zorvald"}) end,
      "mtlab.model:attribute: contrast 'Zorvald' is 5 tokens (Z or v al d), not one token "
        .. "of this vocabulary")
  end)

  it("is the word's token on a byte-level model (mtlab attribute --contrast)", function()
    local csv, err = H.tmpname(), H.tmpname()
    local out, code = H.sh(string.format(
      "printf '%%s\\n' '%s' | %s attribute -m %s --hyp '%s' --contrast of --csv %s 2>%s",
      src, H.mtlab, neox, hyp, csv, err))
    local e = H.read(err)
    os.remove(csv); os.remove(err)
    assert.are.equal(0, code, e)
    assert.matches("contrast: every row attributes log p(target) - log p(\u{120}of)", out, 1, true)
    out, code = H.sh(string.format(
      "echo x | %s attribute -m %s --contrast Zorvald --csv %s 2>&1", H.mtlab, neox, csv))
    assert.are.equal(1, code)
    assert.matches("attribute: --contrast 'Zorvald' is 5 tokens (Z or v al d), not one token of "
      .. "this vocabulary", out, 1, true)
  end)
end)
