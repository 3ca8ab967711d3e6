-- mtlab.score, mtlab.corpus, mtlab.entities and mtlab.help.
local H = dofile("tests/lua/helpers.lua")
local HYP, REF = "tests/fixtures/metrics/bible/test.apertium.en", "tests/fixtures/metrics/bible/test.en"

local function lines(path)
  local t = {}
  for l in mtlab.corpus.lines(path) do t[#t + 1] = l end
  return t
end

describe("mtlab.score", function()
  it("prints what `mtlab score` prints, to the last digit", function()
    local cli = H.sh(string.format("%s score --hyp %s --ref %s -m bleu chrf chrf++", H.mtlab, HYP, REF))
    local hyps, refs = lines(HYP), lines(REF)
    local b = mtlab.score.bleu(hyps, refs)
    local c = mtlab.score.chrf(hyps, refs)
    local cpp = mtlab.score.chrf(hyps, {refs}, {word_order = 2})
    assert.matches(b.line:gsub("%p", "%%%0"), cli)
    assert.matches(c.line:gsub("%p", "%%%0"), cli)
    assert.matches(cpp.line:gsub("%p", "%%%0"), cli)
    assert.are.equal(b.line, tostring(b))
    assert.are.equal("chrF2++", cpp.name)
    assert.are.equal(4, #b.precisions)
  end)

  it("TER and BLEU's tokenizers print what sacreBLEU printed for the Bible", function()
    local hyps, refs = lines(HYP), lines(REF)
    local f = io.open("tests/fixtures/metrics/ter.json")
    local fixture = f:read("a")
    f:close()
    -- ter.json's `sacrebleu REF -i HYP -m ter [--ter-normalized --ter-case-sensitive]` lines
    local t = mtlab.score.ter(hyps, refs)
    assert.are.equal("TER|nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.6.0 = 70.87", t.line)
    assert.truthy(fixture:find(t.line .. "\\n", 1, true))
    local tn = mtlab.score.ter(hyps, {refs}, {normalized = true, case_sensitive = true})
    assert.truthy(fixture:find(tn.line .. "\\n", 1, true))
    assert.matches("norm:yes", tn.signature)
    assert.are.equal("TER", t.name)
    local cli = H.sh(string.format("%s score --hyp %s --ref %s -m bleu --tokenize flores200 --spm %s",
      H.mtlab, HYP, REF, "tests/fixtures/metrics/spm_bpe300.model"))
    local sp = mtlab.score.bleu(hyps, refs, {tokenize = "flores200", spm = "tests/fixtures/metrics/spm_bpe300.model"})
    assert.are.equal(sp.line .. "\n", cli)
    assert.matches("tok:flores200", sp.signature)
    local intl = mtlab.score.bleu(hyps, refs, {tokenize = "intl"})
    assert.matches("tok:intl", intl.signature)
    assert.has_error(function() mtlab.score.bleu(hyps, refs, {tokenize = "flores101"}) end,
      "mtlab.score.bleu: tokenize = 'flores101' needs spm = FILE (its SentencePiece model)")
    assert.has_error(function() mtlab.score.bleu({"a"}, {"a"}, {tokenize = "ja"}) end)
    assert.has_error(function() mtlab.score.ter({"a"}, {"a"}, {normalised = true}) end)
  end)

  it("COMET per segment, as comet-score gave it on the fixture, and as mtlab score prints it", function()
    local dir = "tests/fixtures/comet"
    local c = mtlab.score.comet(lines(dir .. "/src.txt"), lines(dir .. "/hyp.txt"), lines(dir .. "/ref.txt"),
      {model = dir .. "/model"})
    local f = io.open(dir .. "/scores.json")
    local fixture = f:read("a")
    f:close()
    -- scores.json's "segments": [..] from unbabel-comet's comet-score on the same files
    local want = {}
    for x in fixture:match('"segments": %[(.-)%]'):gmatch("[-%d.e]+") do want[#want + 1] = tonumber(x) end
    assert.are.equal(50, #want)
    assert.are.equal(#want, #c.segments)
    for i = 1, #want do assert.is_true(math.abs(c.segments[i] - want[i]) < 1e-4, "segment " .. i) end
    local cli = H.sh(string.format("%s score --hyp %s/hyp.txt --ref %s/ref.txt --src %s/src.txt -m comet --comet %s/model",
      H.mtlab, dir, dir, dir, dir))
    assert.are.equal(c.line .. "\n", cli)
    assert.are.equal("COMET", c.name)
    assert.has_error(function() mtlab.score.comet({"a"}, {"a"}, {"a"}) end,
      "mtlab.score.comet: model = DIR (a COMET model directory, docs/metrics.md §11) is required")
    assert.has_error(function() mtlab.score.comet({"a"}, {"a", "b"}, {"a"}, {model = dir .. "/model"}) end,
      "mtlab.score.comet: srcs, hyps and refs must be as long: 1, 2 and 1 lines")
  end)

  it("takes several reference streams and options", function()
    local two = mtlab.score.bleu({"the cat sat on the mat today"},
      {{"the cat sat on the mat today"}, {"a dog"}})
    assert.is_true(math.abs(two.score - 100) < 1e-9)
    assert.matches("^nrefs:2", two.signature)
    local lc = mtlab.score.bleu({"THE CAT SAT ON THE MAT"}, {"the cat sat on the mat"},
      {lowercase = true})
    assert.is_true(math.abs(lc.score - 100) < 1e-9)
    assert.matches("case:lc", lc.signature)
  end)

  it("names the problem", function()
    assert.has_error(function() mtlab.score.bleu({"a", "b"}, {"a"}) end,
      "mtlab.score.bleu: refs has 1 lines but there are 2 hypotheses")
    -- every stream against the hypotheses, each way, in both metrics
    for _, score in ipairs({"bleu", "chrf"}) do
      local f, fn = mtlab.score[score], "mtlab.score." .. score
      assert.has_error(function() f({"a"}, {"a", "b"}) end, fn .. ": refs has 2 lines but there are 1 hypotheses")
      assert.has_error(function() f({"a", "b"}, {"a"}) end, fn .. ": refs has 1 lines but there are 2 hypotheses")
      assert.has_error(function() f({}, {"a"}) end, fn .. ": refs has 1 lines but there are 0 hypotheses")
      assert.has_error(function() f({"a"}, {{"a"}, {}}) end, fn .. ": refs[2] has 0 lines but there are 1 hypotheses")
      assert.has_error(function() f({"a", "b"}, {{"a", "b"}, {"a"}}) end, fn .. ": refs[2] has 1 lines but there are 2 hypotheses")
      assert.has_error(function() f({"a"}, {{"a"}, {"a", "b"}}) end, fn .. ": refs[2] has 2 lines but there are 1 hypotheses")
    end
    assert.has_error(function() mtlab.score.bleu({"a"}, {"a"}, {smooth = "log"}) end,
      "mtlab.score.bleu: unknown smoothing 'log' (exp, floor, add-k, none)")
    assert.has_error(function() mtlab.score.chrf("a", {"a"}) end,
      "mtlab.score.chrf: hyps must be a list of strings, not string")
    assert.has_error(function() mtlab.score.bleu({"\xff"}, {"a"}) end)
  end)
end)

describe("mtlab.corpus", function()
  local src, ref
  before_each(function()
    src, ref = H.tmpname(), H.tmpname()
    H.write(src, "uno\ndos  \ntres\n")
    H.write(ref, "one\ntwo\nthree\n")
  end)
  after_each(function() os.remove(src); os.remove(ref) end)

  it("iterates lines and pairs, reads and concatenates", function()
    assert.are.same({"uno", "dos", "tres"}, lines(src))
    local got = {}
    for s, r in mtlab.corpus.pairs(src, ref) do got[#got + 1] = s .. "=" .. r end
    assert.are.same({"uno=one", "dos=two", "tres=three"}, got)
    local pairs_ = mtlab.corpus.read(src, ref)
    assert.are.same({src = "dos", ref = "two"}, pairs_[2])
    local cat = mtlab.corpus.cat(pairs_, 2)
    assert.are.same({{src = "uno dos", ref = "one two"}, {src = "tres", ref = "three"}}, cat)
    assert.are.same({{src = "a b", ref = "A B"}}, mtlab.corpus.cat({{"a", "A"}, {"b", "B"}}, 5))
  end)

  it("names the problem", function()
    H.write(ref, "one\n")
    assert.has_error(function() mtlab.corpus.pairs(src, ref) end,
      string.format("mtlab.corpus.pairs: '%s' has 3 lines but '%s' has 1: the files are not parallel", src, ref))
    assert.has_error(function() mtlab.corpus.pairs(ref, src) end,
      string.format("mtlab.corpus.pairs: '%s' has 1 lines but '%s' has 3: the files are not parallel", ref, src))
    assert.has_error(function() mtlab.corpus.read(ref, src) end)
    assert.has_error(function() mtlab.corpus.lines("no/such/file") end,
      "mtlab.corpus.lines: no/such/file: No such file or directory")
    H.write(src, "ok\nbad \xff byte\n")
    local ok, err = pcall(mtlab.corpus.lines, src)
    assert.is_false(ok)
    assert.matches(":2: invalid UTF%-8", err)
    assert.has_error(function() mtlab.corpus.cat({{"a", "A"}}, 0) end,
      "mtlab.corpus.cat: n must be at least 1, not 0")
    assert.has_error(function() mtlab.corpus.cat({{"a", 1}}, 1) end,
      "mtlab.corpus.cat: pairs[1].ref must be a string, not number")
  end)
end)

describe("mtlab.entities.recall", function()
  it("bins copyable reference entities by training counts", function()
    local srcs = {"Y Abraham fue a Hebrón con Zorobabel", "Y Zorobabel dijo"}
    local refs = {"And Abraham went to Hebron with Zerubbabel", "Zorobabel said"}
    local hyps = {"Abraham went to Hebron", "Zorobabel said"}
    local plain = mtlab.entities.recall(srcs, hyps, refs)
    assert.are.equal(2, plain.all.entities) -- Abraham, Zorobabel (Hebron is not in the source)
    assert.are.equal(2, plain.unseen.entities)
    assert.are.equal(1, plain.all.recall)
    local r = mtlab.entities.recall(srcs, hyps, refs, {stats = H.transformer .. "/corpus_stats.tsv"})
    assert.are.equal(1, r.frequent.entities) -- Abraham is everywhere in Genesis
    assert.are.equal(1, r.unseen.entities)
    assert.are.equal("english", r.lang)
    assert.has_error(function() mtlab.entities.recall({"a"}, {}, {"a"}) end,
      "mtlab.entities.recall: srcs, hyps and refs must be as long as each other (1, 0, 1)")
    assert.has_error(function() mtlab.entities.recall({}, {}, {}, {stats = "nope.tsv"}) end)
  end)

  it("says its recall is the macro average over distinct entities and gives the micro one", function()
    -- Abraham found in 1 of his 2 sentences (0.5), Zorobabel in his one (1): macro 0.75,
    -- micro 2 hits of 3 occurrences
    local r = mtlab.entities.recall({"Abraham dijo", "Abraham fue", "Zorobabel dijo"},
      {"Abraham said", "He went", "Zorobabel said"}, {"Abraham said", "Abraham went", "Zorobabel said"})
    assert.are.equal(0.75, r.all.recall)
    assert.are.equal(0.75, r.all.macro_recall)
    assert.are.equal(2 / 3, r.all.micro_recall)
    assert.are.equal(2, r.all.hits)
    assert.are.equal(3, r.all.occurrences)
  end)

  it("refuses lists of different lengths, each one shorter or longer than the others, empty included", function()
    local two, one = {"Y Abraham dijo", "Y Moisés dijo"}, {"Abraham said"}
    for _, c in ipairs({
      {one, two, two, "1, 2, 2"}, {two, one, two, "2, 1, 2"}, {two, two, one, "2, 2, 1"},
      {two, one, one, "2, 1, 1"}, {one, two, one, "1, 2, 1"}, {one, one, two, "1, 1, 2"},
      {{}, two, two, "0, 2, 2"}, {two, {}, two, "2, 0, 2"}, {two, two, {}, "2, 2, 0"},
      {{}, {}, one, "0, 0, 1"},
    }) do
      assert.has_error(function() mtlab.entities.recall(c[1], c[2], c[3]) end,
        "mtlab.entities.recall: srcs, hyps and refs must be as long as each other (" .. c[4] .. ")")
    end
    local none = mtlab.entities.recall({}, {}, {})
    assert.are.equal(0, none.all.entities)
    assert.are.equal(0, none.all.hits)
  end)
end)

describe("text arguments", function()
  it("refuses a NUL byte inside a text, which C would cut there without a word", function()
    assert.has_error(function() mtlab.score.bleu({"a\0b"}, {"a"}) end,
      "mtlab.score.bleu: hyps[1] holds a NUL byte at byte 1")
    assert.has_error(function() mtlab.score.chrf({"a"}, {{"a"}, {"x\0"}}) end,
      "mtlab.score.chrf: refs[2][1] holds a NUL byte at byte 1")
    assert.has_error(function() mtlab.entities.recall({"\0"}, {"a"}, {"a"}) end,
      "mtlab.entities.recall: srcs[1] holds a NUL byte at byte 0")
    local m <close> = mtlab.load(H.transformer)
    assert.has_error(function() m:translate("Hola\0 mundo") end,
      "mtlab.model:translate: text holds a NUL byte at byte 4")
    assert.has_error(function() m:translate({"Hola", "Y dijo\0"}) end,
      "mtlab.model:translate: text[2] holds a NUL byte at byte 6")
  end)
end)

describe("mtlab.help", function()
  it("has an entry for every function of the module, and a function for every entry", function()
    local names = {}
    local function walk(t, prefix)
      for k, v in pairs(t) do
        if type(v) == "function" then names[#names + 1] = prefix .. k
        elseif type(v) == "table" then walk(v, prefix .. k .. ".") end
      end
    end
    walk(mtlab, "mtlab.")
    local m <close> = mtlab.load(H.mamba)
    for _, k in ipairs({"translate", "probe", "attribute", "close"}) do names[#names + 1] = "model:" .. k end
    for _, name in ipairs(names) do
      assert.is_truthy(mtlab.help(name), name)
    end
    local listed = 0
    for line in mtlab.help():gmatch("[^\n]+") do
      listed = listed + 1
      local name = line:match("^([%w_.:]+)")
      local ok = false
      for _, n in ipairs(names) do ok = ok or n == name end
      ok = ok or name:match("^matrix:") or name:match("^model%.") or name:match("^plot:")
      ok = ok or name:match("^job[:.]")
      assert.is_truthy(ok, line)
    end
    assert.is_true(listed >= #names)
    assert.matches("^mtlab.score.bleu%(", mtlab.help("score.bleu"))
    assert.has_error(function() mtlab.help("nope") end,
      "mtlab.help: no function named 'nope' (mtlab.help() lists them)")
  end)

  it("names every function in its argument errors, called as a field, a method or through pcall", function()
    -- luaL_argerror names a function called from C (pcall, a callback) only when it finds it
    -- in package.loaded; "bad argument #1 to '?'" is what it says otherwise
    local co = coroutine.create(print)
    local seen = 0
    local function check(f, name)
      local ok, e = pcall(f, co, co, co, co)
      seen = seen + 1
      if not ok then
        e = tostring(e)
        assert.is_nil(e:find("to '?'", 1, true), name .. ": " .. e)
        assert.is_nil(e:find("'?'", 1, true), name .. ": " .. e)
      end
    end
    local function walk(t, prefix)
      for k, v in pairs(t) do
        if type(v) == "function" then check(v, prefix .. k)
        elseif type(v) == "table" then walk(v, prefix .. k .. ".") end
      end
    end
    walk(mtlab, "mtlab.")
    -- the handles' methods and metamethods, through their metatables
    for meta, mt in pairs(debug.getregistry()) do
      if type(meta) == "string" and meta:match("^mtlab%.") and type(mt) == "table" then
        for k, v in pairs(mt) do
          if type(v) == "function" then check(v, meta .. "." .. k)
          elseif type(v) == "table" then walk(v, meta .. ":") end
        end
      end
    end
    assert.is_true(seen > 40, tostring(seen))
    -- the standard libraries' names are kept
    local _, e = pcall(coroutine.resume, 1)
    assert.matches("bad argument #1 to 'coroutine.resume'", e, 1, true)
    _, e = pcall(string.rep)
    assert.matches("bad argument #1 to 'string.rep'", e, 1, true)
  end)

  it("is README's API reference", function()
    local ref = H.sh(H.mtlab .. " run --reference")
    local readme = H.read("README.md")
    assert.is_truthy(readme:find(ref, 1, true), "README.md's Lua API section differs from `mtlab run --reference`")
  end)
end)
