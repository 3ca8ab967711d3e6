-- model:attribute on the shipped bundles: the matrix's shape and labels, contrast as the
-- difference of two attributions, and the errors (docs/attribution.md).
local H = dofile("tests/lua/helpers.lua")

describe("model:attribute", function()
  it("gives one row per target token and </s>, one column per input", function()
    for _, path in ipairs({H.mamba, H.transformer}) do
      local m <close> = mtlab.load(path)
      local a = m:attribute("En el principio creó Dios los cielos y la tierra.", "And God said", {method = "input_x_gradient"})
      local rows, cols = a:shape()
      local labels, inputs = a:row_labels(), a:col_labels()
      assert.are.equal(labels[rows], "<eos>")
      assert.are.equal(inputs[1], "▁En")
      assert.are.equal(#inputs, cols)
      assert.matches("^input_x_gradient attribution", a.what)
      -- the greedy translation when hyp is nil
      local g = m:attribute("En el principio creó Dios los cielos y la tierra.", nil)
      local r = m:translate("En el principio creó Dios los cielos y la tierra.", {beam = 1})
      assert.are.equal(#r.ids + 1, (g:shape()))
    end
  end)

  it("attributes log p(target) - log p(contrast) with contrast=", function()
    local m <close> = mtlab.load(H.mamba)
    local src, ids = "En el principio creó Dios los cielos y la tierra.", m:translate("En el principio creó Dios los cielos y la tierra.", {beam = 1}).ids
    assert.is_true(#ids >= 2)
    local foil = {ids[2]}
    for i = 2, #ids do foil[i] = ids[i] end
    local opts = {method = "input_x_gradient"}
    local mine, theirs = m:attribute(src, ids, opts), m:attribute(src, foil, opts)
    local both = m:attribute(src, ids, {method = "input_x_gradient", contrast = ids[2]})
    -- row 1 sees only the prompt, which the two hypotheses share
    for j = 1, select(2, both:shape()) do
      assert.is_true(math.abs(both[1][j] - (mine[1][j] - theirs[1][j])) <= 1e-4)
    end
    assert.matches(", contrast ", both.what, 1, true)
  end)

  it("places integrated gradients' nodes by rule=", function()
    local m <close> = mtlab.load(H.transformer)
    local src, hyp = "En el principio creó Dios los cielos y la tierra.", "In the beginning God"
    local function ig(rule)
      return m:attribute(src, hyp, {method = "integrated_gradients", steps = 16, rule = rule})
    end
    local adaptive, plain, default = ig("adaptive"), ig("gauss-legendre"), ig(nil)
    local rows, cols = adaptive:shape()
    local differ = false
    for i = 1, rows do
      for j = 1, cols do
        assert.are.equal(adaptive[i][j], default[i][j]) -- adaptive is the default
        if adaptive[i][j] ~= plain[i][j] then differ = true end
      end
    end
    assert.is_true(differ)
    assert.matches("adaptive rule", adaptive.what, 1, true)
    assert.matches("gauss-legendre rule", plain.what, 1, true)
    assert.has_error(function() ig("simpson") end,
      "mtlab.model:attribute: unknown integration rule 'simpson' (adaptive or gauss-legendre)")
    assert.has_error(function() m:attribute(src, hyp, {rule = "adaptive"}) end,
      "mtlab.model:attribute: rule is for method integrated_gradients")
  end)

  it("stops a long integrated-gradients attribution on Ctrl-C", function()
    -- `mtlab run` in the background; SIGINT once the script is about to attribute (4096 steps
    -- of every row: minutes when nothing stops it)
    local script, ready, err = H.tmpname(), H.tmpname(), H.tmpname()
    os.remove(ready)
    H.write(script, string.format([[
local m = mtlab.load("%s")
io.open("%s", "w"):close()
m:attribute("En el principio creó Dios los cielos y la tierra.", "In the beginning God created",
            {method = "integrated_gradients", steps = 4096})
print("finished")
]], H.mamba, ready))
    local out = H.sh(string.format([[
%s run %s 2>%s & pid=$!
for i in $(seq 1 600); do [ -e %s ] && break; sleep 0.05; done
kill -INT $pid
for i in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
kill -KILL $pid 2>/dev/null && echo "still running 30 s after SIGINT" >>%s
wait $pid; echo $?]], H.mtlab, script, err, ready, err))
    local e = H.read(err)
    os.remove(script); os.remove(ready); os.remove(err)
    assert.is_nil(e:find("still running", 1, true), e)
    assert.are.equal(130, tonumber(out:match("(%d+)%s*$")), e)
    assert.matches("interrupted", e, 1, true)
  end)

  it("says what is wrong with its options", function()
    local m <close> = mtlab.load(H.mamba)
    assert.has_error(function() m:attribute("Y", nil, {method = "gradient"}) end,
      "mtlab.model:attribute: unknown attribution method 'gradient' (saliency, " ..
      "input_x_gradient or integrated_gradients)")
    assert.has_error(function() m:attribute("Y", nil, {contrast = "Dios y"}) end,
      "mtlab.model:attribute: contrast 'Dios y' is 2 tokens (\u{2581}Dios \u{2581}y), not one "
        .. "token of this vocabulary")
    assert.has_error(function() m:attribute("Y", nil, {colour = 1}) end)
  end)
end)
