-- The evaluation scripts users run (scripts/eval.lua, scripts/paper/*.lua), on the shipped
-- bundles and a Bible corpus built by `mtlab data bible` into a temporary directory.
local H = dofile("tests/lua/helpers.lua")

local function without_timing(text)
  local keep = {}
  for line in text:gmatch("[^\n]*\n") do
    if not (line:match("^time ") or line:match("^ms / sentence") or line:match("^tokens / s")) then
      keep[#keep + 1] = line
    end
  end
  return table.concat(keep)
end

describe("scripts", function()
  local dir
  setup(function()
    dir = H.tmpname()
    os.remove(dir)
    local _, code = H.sh(string.format("%s data bible --out %s >/dev/null 2>&1", H.mtlab, dir))
    assert.are.equal(0, code)
    H.sh(string.format("head -50 %s/test.es > %s/t50.es; head -50 %s/test.en > %s/t50.en", dir, dir, dir, dir))
    -- the first 5 lines of test.names, its names list cut to match
    H.sh(string.format("mkdir %s/n5 && head -5 %s/test.names.es > %s/n5/test.names.es && "
                       .. "head -5 %s/test.names.en > %s/n5/test.names.en && "
                       .. "awk -F'\t' 'NR == 1 {print; next} NR == 2 {print \"# segments=5\"; next} $1 <= 5' "
                       .. "%s/test.names.tsv > %s/n5/test.names.tsv", dir, dir, dir, dir, dir, dir, dir))
  end)
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("table2.lua prints what `mtlab eval` prints #slow", function()
    local models = H.transformer .. " " .. H.mamba
    local cli = H.sh(string.format("%s eval -m %s -m %s --src %s/t50.es --ref %s/t50.en --beam 1 2>/dev/null",
                                   H.mtlab, H.transformer, H.mamba, dir, dir))
    local out, code = H.sh(string.format("%s run scripts/paper/table2.lua --src %s/t50.es --ref %s/t50.en " ..
                                         "--beam 1 --out %s/out --no-plot %s 2>/dev/null", H.mtlab, dir, dir, dir, models))
    assert.are.equal(0, code)
    assert.is_true(#cli > 500)
    assert.are.equal(without_timing(cli), without_timing(out:sub(1, #cli)))
    assert.matches("| transformer%-small | ", out)
    local markdown = dir .. "/out/table2" .. ".md"
    assert.is_truthy(H.read(markdown):find("| mamba-small |", 1, true))
    assert.are.equal("\137PNG", H.read(dir .. "/out/table2.png"):sub(1, 4))
    assert.matches("<svg", H.read(dir .. "/out/table2.svg"))
  end)

  it("table2.lua and mtlab.eval add COMET and its paired test with a COMET checkpoint", function()
    local comet, fixtures = "tests/fixtures/comet/model", "tests/fixtures/models/"
    local src = {"Y dijo Dios: Sea la luz", "Y fué la luz", "Y vió Dios que la luz era buena"}
    local ref = {"God said, “Let there be light,”", "and there was light.", "God saw the light, and saw that it was good."}
    local r = mtlab.eval{models = {fixtures .. "mamba", fixtures .. "marian"}, src = src, ref = ref, beam = 1,
                         comet = comet}
    assert.are.equal(comet, r.comet_model)
    assert.are.equal("number", type(r.systems[1].comet))
    assert.are.equal("number", type(r.systems[2].significance.comet.p))
    assert.is_nil(r.systems[1].significance.comet.p)
    assert.matches("\nCOMET ", r.text)
    local plain = mtlab.eval{models = {fixtures .. "mamba"}, src = src, ref = ref, beam = 1}
    assert.is_nil(plain.systems[1].comet)
    -- the checkpoint from the environment, as README says
    local f = io.open(dir .. "/c3.es", "w") f:write(table.concat(src, "\n"), "\n") f:close()
    f = io.open(dir .. "/c3.en", "w") f:write(table.concat(ref, "\n"), "\n") f:close()
    local out, code = H.sh(string.format("MTLAB_COMET=%s %s run scripts/paper/table2.lua --src %s/c3.es --ref %s/c3.en "
                                         .. "--beam 1 --out %s/c3 --no-plot %smamba %smarian 2>/dev/null",
                                         comet, H.mtlab, dir, dir, dir, fixtures, fixtures))
    assert.are.equal(0, code)
    assert.matches("| model | BLEU | chrF | COMET | NE recall % |", out, 1, true)
    assert.matches("\n| marian | [%d.]+%*? | [%d.]+%*? | %-?[%d.]+%*? | ", out)
    assert.matches("*: differs from mamba at p <= 0.05 (paired bootstrap, 1000 resamples)", out, 1, true)
    out = H.sh(string.format("%s run scripts/paper/table2.lua --src %s/c3.es --ref %s/c3.en --beam 1 --out %s/c3 "
                             .. "--no-plot %smamba 2>/dev/null", H.mtlab, dir, dir, dir, fixtures))
    assert.matches("| model | BLEU | chrF | NE recall % |", out, 1, true)
  end)

  it("mtlab.eval gives the figures as data", function()
    local r = mtlab.eval{models = {H.transformer, "apertium:spa-eng"}, src = {"Y dijo Dios: Sea la luz"},
                         ref = {"God said, “Let there be light,”"}, beam = 1, ref_name = "x.en"}
    assert.are.equal(1, r.segments)
    assert.are.equal(2, #r.systems)
    assert.are.equal("apertium:spa-eng", r.systems[2].name)
    assert.is_true(r.systems[2].bleu > 0)
    assert.are.equal(1, #r.systems[1].hyps)
    assert.are.equal(5, #r.systems[1].buckets)
    assert.are.equal("1-32", r.systems[1].buckets[1].label)
    assert.are.equal("english", r.ner)
    assert.matches("^%s+models/transformer%-small%s+apertium:spa%-eng\nBLEU", tostring(r))
    assert.has_error(function() mtlab.eval{models = {}, src = {"a"}, ref = {"b"}} end,
      "mtlab.eval: models must list 1 to 16 systems, not 0")
    assert.has_error(function() mtlab.eval{models = {H.mamba}, src = {"a"}, ref = {"b", "c"}} end,
      "mtlab.eval: src has 1 lines but ref has 2: source and reference must be line-aligned")
    assert.has_error(function() mtlab.eval{models = {H.mamba}, src = {"a"}} end)
    assert.has_error(function() mtlab.eval{models = {"nope"}, src = {"a"}, ref = {"b"}} end)
  end)

  it("mtlab.eval tests every system against the first", function()
    local src = {"Y dijo Dios: Sea la luz", "Y fué la luz", "Y vió Dios que la luz era buena"}
    local ref = {"God said, “Let there be light,”", "and there was light.", "God saw the light, and saw that it was good."}
    local r = mtlab.eval{models = {H.transformer, "apertium:spa-eng"}, src = src, ref = ref, beam = 1, ref_name = "x.en"}
    assert.are.same({"bs", 1000, 12345, "models/transformer-small"},
      {r.paired_test.test, r.paired_test.samples, r.paired_test.seed, r.paired_test.baseline})
    assert.is_nil(r.systems[1].significance.bleu.p)
    for _, m in ipairs{"bleu", "chrf", "chrfpp"} do
      local t = r.systems[2].significance[m]
      assert.is_true(t.p > 0 and t.p <= 1)
      assert.are.equal(t.p <= 0.05, t.significant)
      assert.is_number(t.mean)
      assert.is_number(t.ci)
    end
    assert.is_true(r.systems[2].chrfpp > 0)
    assert.matches("p vs first, BLEU", tostring(r))
    local ar = mtlab.eval{models = {H.transformer, "apertium:spa-eng"}, src = src, ref = ref, beam = 1, ref_name = "x.en", paired = "ar"}
    assert.are.equal("ar", ar.paired_test.test)
    assert.is_nil(ar.systems[2].significance.bleu.mean)
    local none = mtlab.eval{models = {H.transformer, "apertium:spa-eng"}, src = src, ref = ref, beam = 1, ref_name = "x.en", paired = "none"}
    assert.is_nil(none.paired_test)
    assert.is_nil(none.systems[2].significance)
    assert.has_error(function() mtlab.eval{models = {H.transformer}, src = src, ref = ref, paired = "t"} end,
      "mtlab.eval: eval: paired test 't': give bs (paired bootstrap), ar (approximate randomization) or none")
  end)

  it("table3.lua puts each CAT bundle in a row of its original", function()
    H.sh(string.format("cp -r %s %s/transformer-cat5-small && cp -r %s %s/transformer-cat2to10-small",
                       H.transformer, dir, H.transformer, dir))
    local out, code = H.sh(string.format("%s run scripts/paper/table3.lua --n 1 --data %s --beam 1 --out %s/out "
                                         .. "--no-plot %s %s/transformer-cat5-small %s/transformer-cat2to10-small 2>&1",
                                         H.mtlab, dir, dir, H.transformer, dir, dir))
    assert.are.equal(0, code, out)
    local row = "| transformer%%-small | %s | [%%d.]+ | [%%d.]+ | [%%d.]+ | [%%d.]+ | [%%d.]+ | [%%d.]+ | %%a+ |"
    assert.matches(string.format(row, "CAT%-5"), out)
    assert.matches(string.format(row, "CAT%-2%.%.10"), out)
    assert.is_nil(out:find("| transformer-cat5-small |", 1, true), out)
    assert.is_nil(out:find("to10", 1, true), out)
  end)

  it("para_length.lua takes rising lengths of 1 to 8 verses, and says so otherwise", function()
    for _, bad in ipairs({"2,1", "1,9", "0,4", "1,x", "1,,2"}) do
      local out, code = H.sh(string.format("%s run scripts/paper/para_length.lua --lengths %s --data %s --no-plot %s 2>&1",
                                           H.mtlab, bad, dir, H.transformer))
      assert.are_not.equal(0, code, out)
      local says = "para_length.lua: --lengths takes rising whole numbers of verses from 1 to 8, not '" .. bad .. "'"
      assert.is_truthy(out:find(says, 1, true), out)
    end
  end)

  it("mtlab.eval scores the recall of substituted names", function()
    local tsv = dir .. "/names.tsv"
    H.write(tsv, "# mtlab names 1\n# segments=2\n1\tAachen\tDavid\n2\tBoise\tMoab\n")
    local r = mtlab.eval{models = {"apertium:spa-eng"}, src = {"Y Aachen dijo", "Boise y Moab"},
                         ref = {"And Aachen said", "Boise and Moab"}, names = tsv}
    assert.are.equal(2, r.systems[1].names.names)
    assert.are.equal(2, r.systems[1].names.hits)
    assert.are.equal(1, r.systems[1].names.recall)
    assert.matches("names recall %(2 substituted%)%s+100.0%%", tostring(r))
    assert.has_error(function() mtlab.eval{models = {"apertium:spa-eng"}, src = {"a"}, ref = {"b"}, names = tsv} end,
      "mtlab.eval: " .. tsv .. " lists names for 2 segments but src has 1 lines")
    -- the names the data step wrote fit its test.names files
    local out, code = H.sh(string.format("%s eval -m apertium:spa-eng --src %s/test.names.es --ref %s/test.names.en "
                                         .. "--names %s/test.names.tsv 2>/dev/null", H.mtlab, dir, dir, dir))
    assert.are.equal(0, code, out)
    assert.matches("names recall %(%d+ substituted%)", out)
  end)

  for _, case in ipairs({
    {"table3.lua", "--n 1 --split test --data DIR", "| model | CAT-N | ORIG PARA | ORIG VERSES | ORIG PARA/VERSES |"},
    {"names.lua", "--data DIR/n5", "| system | BLEU | name recall % | names copied |"},
    {"table4.lua", "--max-verses 2", "state KiB b1"},
    {"fig1_ne_recall.lua", "--n 5", "| model | unseen |"},
    {"fig2_length.lua", "--n 2", "1-32"},
    {"para_length.lua", "--n 1 --lengths 1,3,8 --data DIR", "| model | 1 verse | 3 verses | 8 verses | 8 / 1 |"},
  }) do
    it(case[1] .. " runs and writes its files", function()
      local name = case[1]:gsub("%.lua$", "")
      local own_data = case[1] == "table3.lua" or case[1] == "names.lua" or case[1] == "para_length.lua"
      local extra = own_data and "" or string.format("--src %s/t50.es", dir)
      if case[1] == "fig1_ne_recall.lua" then extra = extra .. string.format(" --ref %s/t50.en", dir) end
      if case[1] == "fig2_length.lua" then extra = "--data " .. dir end
      local out, code = H.sh(string.format("%s run scripts/paper/%s %s %s --beam 1 --out %s/out --no-plot %s 2>&1",
                                           H.mtlab, case[1], case[2]:gsub("DIR", dir), extra, dir, H.transformer))
      assert.are.equal(0, code, out)
      assert.is_truthy(out:find(case[3], 1, true), out)
      assert.is_truthy(H.read(dir .. "/out/" .. name .. ".md"))
      assert.are.equal("\137PNG", H.read(dir .. "/out/" .. name .. ".png"):sub(1, 4))
    end)
  end
end)
