-- mtlab.plot: the drawing on a terminal, the files, and the errors.
local H = dofile("tests/lua/helpers.lua")

describe("mtlab.plot", function()
  it("draws a line plot as text, the same every time", function()
    local p = mtlab.plot.line{title = "BLEU", series = {{name = "a", x = {1, 2, 3}, y = {1, 4, 9}}}}
    local t = p:text{width = 40, height = 10, color = false, ascii = false}
    assert.matches("BLEU", t)
    assert.matches("[\u{2801}-\u{28ff}]", t) -- braille dots
    assert.are.equal(t, p:text{width = 40, height = 10, color = false, ascii = false})
    local a = p:text{width = 40, height = 10, color = false, ascii = true}
    assert.is_nil(a:find("[\128-\255]")) -- 7-bit only
    local c = p:text{width = 40, height = 10, color = true, ascii = false}
    assert.matches("\27%[", c)
  end)

  it("writes SVG, PNG and CSV files", function()
    local dir = H.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir -p " .. dir))
    local p = mtlab.plot.bar{labels = {"unseen", "1-15", "16+"}, series = {{name = "mamba", values = {0.1, 0.5, 0.9}}}}
    assert.are.equal(dir .. "/b.svg", p:save(dir .. "/b.svg"))
    p:save(dir .. "/b.png", {width = 300, height = 200})
    p:save(dir .. "/b.csv")
    assert.matches("<svg", H.read(dir .. "/b.svg"))
    assert.are.equal("\137PNG", H.read(dir .. "/b.png"):sub(1, 4))
    assert.are.equal("label,mamba\nunseen,0.1\n1-15,0.5\n16+,0.9\n", H.read(dir .. "/b.csv"))
    os.execute("rm -r " .. dir)
  end)

  it("draws a probe's matrix with its tokens", function()
    local m <close> = mtlab.load(H.mamba)
    local r = m:translate("Y dijo Dios", {beam = 1})
    local imp = m:probe("Y dijo Dios", r, {kind = "implicit", layer = 1})
    local t = mtlab.plot.heatmap(imp, {causal = true}):text{width = 60, height = 40, color = false}
    assert.matches("dijo", t)
    assert.is_nil(t:find("▁", 1, true)) -- no word-start marks: labels a class can read
    assert.matches("<sep>", t)
    local small = mtlab.plot.heatmap({{1, 2}, {3, 4}}, {row_labels = {"a", "b"}, col_labels = {"x", "y"}})
    assert.matches("a", small:text{width = 30, height = 10, color = false})
  end)

  it("names the problem", function()
    assert.has_error(function() mtlab.plot.line{series = {}} end, "mtlab.plot.line: series is empty")
    assert.has_error(function() mtlab.plot.line{y = {1, "x"}} end,
      "mtlab.plot.line: y[2] must be a number, not string")
    assert.has_error(function() mtlab.plot.line{y = {1, 2}, x = {1}} end,
      "mtlab.plot.line: x has 1 values but y has 2")
    assert.has_error(function() mtlab.plot.line{y = {1}, colour = "red"} end)
    assert.has_error(function() mtlab.plot.heatmap({{1, 2}, {3}}) end,
      "mtlab.plot.heatmap: row 2 has 1 values, row 1 has 2")
    -- parallel lists, each one the longer
    assert.has_error(function() mtlab.plot.line{y = {1}, x = {1, 2}} end,
      "mtlab.plot.line: x has 2 values but y has 1")
    assert.has_error(function() mtlab.plot.line{series = {{y = {1, 2}}, {y = {1}, x = {}}}} end,
      "mtlab.plot.line: series[2].x has 0 values but y has 1")
    assert.has_error(function() mtlab.plot.heatmap({{1}, {3, 4}}) end,
      "mtlab.plot.heatmap: row 2 has 2 values, row 1 has 1")
    assert.has_error(function() mtlab.plot.heatmap({{1, 2}, {3, 4}}, {row_labels = {"a"}}) end,
      "mtlab.plot.heatmap: row_labels has 1 labels for 2 rows")
    assert.has_error(function() mtlab.plot.heatmap({{1, 2}, {3, 4}}, {row_labels = {"a", "b", "c"}}) end,
      "mtlab.plot.heatmap: row_labels has 3 labels for 2 rows")
    assert.has_error(function() mtlab.plot.heatmap({{1, 2}, {3, 4}}, {col_labels = {"x"}}) end,
      "mtlab.plot.heatmap: col_labels has 1 labels for 2 columns")
    assert.has_error(function() mtlab.plot.heatmap({{1, 2}, {3, 4}}, {col_labels = {"x", "y", "z"}}) end,
      "mtlab.plot.heatmap: col_labels has 3 labels for 2 columns")
    for _, values in ipairs({{1}, {1, 2, 3}, {}}) do
      local ok, err = pcall(mtlab.plot.bar, {labels = {"a", "b"}, series = {{name = "s", values = values}}})
      assert.is_false(ok)
      assert.matches("series s has " .. #values .. " values for 2 labels", err, 1, true)
    end
    local p = mtlab.plot.line{y = {1, 2}}
    local ok, err = pcall(p.save, p, "/tmp/plot.gif")
    assert.is_false(ok)
    assert.matches("^mtlab.plot:save: .*gif", err)
    ok, err = pcall(p.save, p, "/no/such/dir/p.png")
    assert.is_false(ok)
    assert.matches("/no/such/dir/p.png", err)
    p:close()
    assert.has_error(function() p:show() end, "mtlab.plot:show: the plot is closed")
  end)
end)
