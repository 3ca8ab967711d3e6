-- mtlab.load, model:translate, model:probe and the matrix handle, on the shipped bundles.
local H = dofile("tests/lua/helpers.lua")

describe("mtlab.load", function()
  it("opens a bundle and shows what it is", function()
    local m <close> = mtlab.load(H.mamba)
    assert.are.equal("<mtlab.model mamba-small · mamba · 4.6M · cpu>", tostring(m))
    assert.are.equal("mamba-small", m.name)
    assert.are.equal("mamba", m.arch)
    assert.are.equal(4556736, m.params)
    assert.are.equal("cpu", m.device)
    assert.are.equal("table", type(m.config))
    assert.are.equal(8000, m.config.vocab_size)
    assert.are.equal("fp32", m.precision)
  end)

  it("says on one line what is wrong with a config.json that changed since loading", function()
    local dir = H.tmpname()
    os.remove(dir)
    H.sh("cp -r " .. H.mamba .. " '" .. dir .. "'")
    local m <close> = mtlab.load(dir)
    -- an invalid escape before a newline: jansson quotes both
    H.write(dir .. "/config.json", '{"model_type": "x\\\ny"}\n')
    local ok, err = pcall(function() return m.config end)
    H.sh("rm -rf '" .. dir .. "'")
    assert.is_false(ok)
    assert.matches("config.json:2: invalid escape near '\"x\\?'", err, 1, true)
    assert.is_nil(err:find("[\r\n]"))
  end)

  it("opens a bundle with its linear layers in int8", function()
    local m <close> = mtlab.load(H.transformer, {precision = "int8"})
    assert.are.equal("int8", m.precision)
    assert.are.equal("<mtlab.model transformer-small · int8 · transformer · 4.7M · cpu>", tostring(m))
    local r = m:translate("Y dijo Dios: Sea la luz: y fué la luz.", {beam = 1})
    assert.matches("God", r.text)
    assert.has_error(function() mtlab.load(H.mamba, {precision = "int4"}) end,
      "mtlab.load: unknown precision 'int4' (fp32, int8 or bf16)")
  end)

  it("refuses bf16 on the CPU, saying where it runs", function()
    local ok, err = pcall(mtlab.load, H.mamba, {precision = "bf16"})
    assert.is_false(ok)
    assert.matches("no bf16 linear layers %(bf16 runs on a CUDA device; on the CPU use fp32 or int8%)", err)
  end)

  it("names the function and the problem for bad arguments", function()
    assert.has_error(function() mtlab.load("no/such/dir") end,
      "mtlab.load: no model bundle at 'no/such/dir' (not a directory)")
    assert.has_error(function() mtlab.load("tests") end,
      "mtlab.load: no model bundle at 'tests' (config.json missing)")
    assert.has_error(function() mtlab.load(H.mamba, {devise = "cpu"}) end,
      "mtlab.load: unknown option 'devise' (known: device, precision)")
    assert.has_error(function() mtlab.load(H.mamba, {device = 3}) end,
      "mtlab.load: option device must be a string, not number")
    local ok, err = pcall(mtlab.load, H.mamba, {device = "tpu"})
    assert.is_false(ok)
    assert.matches("^mtlab.load: .*tpu", err)
    ok, err = pcall(mtlab.load, "apertium:xx-yy")
    assert.is_false(ok)
    assert.matches("^mtlab.load: .*xx%-yy", err)
  end)

  it("raises a clear error on a closed handle, never a crash", function()
    local m = mtlab.load(H.mamba)
    m:close()
    assert.are.equal("<mtlab.model closed>", tostring(m))
    assert.has_error(function() m:translate("hola") end,
      "mtlab.model:translate: the model handle is closed")
    assert.has_error(function() return m.arch end,
      "mtlab.model: the model handle is closed (reading 'arch')")
    m:close() -- twice is fine
  end)
end)

describe("model:translate", function()
  local m
  setup(function() m = mtlab.load(H.transformer) end)
  teardown(function() m:close() end)

  it("gives what `mtlab translate` prints", function()
    local src = {"Y dijo Dios: Sea la luz", "Y el rey dijo á sus siervos"}
    local path = H.tmpname()
    H.write(path, table.concat(src, "\n") .. "\n")
    local cli = H.sh(string.format("%s translate -m %s --beam 1 -i %s", H.mtlab, H.transformer, path))
    os.remove(path)
    local rs = m:translate(src, {beam = 1})
    assert.are.equal(cli, rs[1].text .. "\n" .. rs[2].text .. "\n")
    local one = m:translate(src[1], {beam = 1})
    assert.are.equal(rs[1].text, one.text)
    assert.is_true(one.tokens > 0 and one.time_s > 0 and one.state_bytes > 0)
    assert.are.equal(one.tokens, #one.ids)
    assert.is_true(one.score <= 0)
  end)

  it("gives the model's own state apart from the working set", function()
    -- the transformer's KV cache grows with the length decoded; Mamba's state does not
    local short = "Y dijo Dios: Sea la luz"
    local long = "Y dijo Dios: Sea la luz; y fué la luz. Y vió Dios que la luz era buena"
    local t1, t2 = m:translate(short, {beam = 1}), m:translate(long, {beam = 1})
    assert.is_true(t1.model_state_bytes > 0 and t1.model_state_bytes < t1.state_bytes)
    assert.is_true(t2.model_state_bytes > t1.model_state_bytes)
    local mamba <close> = mtlab.load(H.mamba)
    local m1, m2 = mamba:translate(short, {beam = 1}), mamba:translate(long, {beam = 1})
    assert.is_true(m1.model_state_bytes > 0 and m1.model_state_bytes < m1.state_bytes)
    assert.are.equal(m1.model_state_bytes, m2.model_state_bytes)
  end)

  it("streams tokens to on_token", function()
    local seen, last = 0, nil
    local r = m:translate("Y dijo Dios: Sea la luz", {beam = 1, on_token = function(piece, i, text)
      assert.are.equal(1, i)
      assert.are.equal("string", type(piece))
      seen, last = seen + 1, text
    end})
    assert.are.equal(r.tokens, seen)
    assert.are.equal(r.text, last)
  end)

  it("cancels the decode when on_token raises, with the callback's traceback", function()
    local calls = 0
    local ok, err = pcall(m.translate, m, {"Y dijo Dios: Sea la luz", "En el principio"},
      {beam = 1, on_token = function() calls = calls + 1; error("stop here") end})
    assert.is_false(ok)
    assert.matches("stop here", err)
    assert.matches("stack traceback", err)
    assert.are.equal(1, calls)
  end)

  it("gives back the very value on_token raised, whatever its type", function()
    for _, value in ipairs({{code = 7}, 42, true, setmetatable({}, {__tostring = function() return "obj" end})}) do
      local ok, err = pcall(m.translate, m, {"Y dijo Dios: Sea la luz", "En el principio"},
        {beam = 1, on_token = function() error(value) end})
      assert.is_false(ok)
      assert.are.equal(value, err)
    end
    -- a string keeps its traceback; error(msg, 0) stays as it is
    local _, err = pcall(m.translate, m, "Y dijo Dios", {beam = 1, on_token = function() error("plain", 0) end})
    assert.are.equal("plain", err)
  end)

  it("raises a clear error when its handle is closed inside on_token, and stops decoding", function()
    local h = mtlab.load(H.mamba)
    local calls = 0
    -- a whole clause: the fragment "Y dijo Dios" alone the pure Mamba may end at once
    local ok, err = pcall(h.translate, h, {"Y dijo Dios: Sea la luz", "En el principio creó Dios los cielos y la tierra"},
      {beam = 1, on_token = function() calls = calls + 1; h:close() end})
    assert.is_false(ok)
    assert.are.equal("mtlab.model:translate: the model was closed during translate (by its on_token callback)", err)
    assert.are.equal(1, calls)
    assert.are.equal("<mtlab.model closed>", tostring(h))
    assert.has_error(function() h:translate("x") end, "mtlab.model:translate: the model handle is closed")
    -- closed and then raising: the callback's own error wins
    local h2 = mtlab.load(H.mamba)
    ok, err = pcall(h2.translate, h2, "Y dijo Dios: Sea la luz", {beam = 1, on_token = function() h2:close(); error({mine = true}) end})
    assert.is_false(ok)
    assert.is_true(err.mine)
  end)

  it("translates a list batch by batch, the results and callbacks in input order", function()
    local texts = {}
    for i = 1, 19 do texts[i] = ({"Y dijo Dios", "Sea la luz", "En el principio"})[i % 3 + 1] .. " " .. i end
    local last = {}
    local rs = m:translate(texts, {beam = 1, batch = 1, on_token = function(_, i, text) last[i] = text end})
    assert.are.equal(19, #rs)
    for i = 1, 19 do
      assert.are.equal(m:translate(texts[i], {beam = 1}).text, rs[i].text, texts[i])
      assert.are.equal(rs[i].text, last[i] or "", texts[i])
    end
    -- a bad text near the end fails before anything is translated, named once and from 1
    texts[18] = "\xff"
    local calls = 0
    local ok, err = pcall(m.translate, m, texts, {beam = 1, batch = 1, on_token = function() calls = calls + 1 end})
    assert.is_false(ok)
    assert.matches("text[18]: invalid UTF-8 at byte 0", err, 1, true)
    assert.are.equal(0, calls)
  end)

  it("refuses a text over the one-input limit (mtlab/files.h) before tokenizing it, naming the limit", function()
    local long = string.rep("Hola ", 220000) -- 1,100,000 bytes
    local ok, err = pcall(m.translate, m, long)
    assert.is_false(ok)
    assert.matches("1100000 bytes is over the 1048576-byte limit", err, 1, true)
    ok, err = pcall(m.translate, m, {"Hola", long})
    assert.is_false(ok)
    assert.matches("text[2]: a text of 1100000 bytes is over the 1048576-byte limit", err, 1, true)
    ok, err = pcall(m.probe, m, long, "Hello")
    assert.is_false(ok)
    assert.matches("src: a text of 1100000 bytes is over the 1048576-byte limit", err, 1, true)
  end)

  it("refuses a re-entrant call and bad options", function()
    assert.has_error(function()
      m:translate("Y dijo Dios", {beam = 1, on_token = function() m:translate("x") end})
    end)
    assert.has_error(function() m:translate("x", {beam = 0}) end,
      "mtlab.model:translate: option beam must be a whole number from 1 to 256, not 0")
    assert.has_error(function() m:translate("x", {bean = 2}) end)
    assert.has_error(function() m:translate(42) end,
      "mtlab.model:translate: text must be a string or a list of strings, not number")
    assert.has_error(function() m:translate({"ok", 7}) end,
      "mtlab.model:translate: text[2] must be a string, not number")
    assert.has_error(function() m:translate("x", {on_token = 1}) end,
      "mtlab.model:translate: option on_token must be a function, not number")
  end)
end)

describe("model:probe", function()
  it("gives Mamba's state norms and implicit attention as matrices", function()
    local m <close> = mtlab.load(H.mamba)
    local r = m:translate("Y dijo Dios", {beam = 1})
    local norms = m:probe("Y dijo Dios", r, {kind = "state_norms"})
    local rows, cols = norms:shape()
    assert.are.equal(m.config.num_hidden_layers or m.config.n_layer, rows)
    assert.are.equal(3 + 1 + r.tokens, cols) -- src <sep> hyp
    assert.are.equal(rows, #norms)
    assert.are.same({"Y", "dijo", "Dios", "<sep>"}, {table.unpack(norms:col_labels(), 1, 4)})
    assert.are.equal(norms:get(2, 3), norms[2][3])
    local v, i, j = norms:max()
    assert.are.equal(v, norms[i][j])
    local t = norms:totable()
    assert.are.equal(norms[rows][cols], t[rows][cols])
    local imp = m:probe("Y dijo Dios", r, {kind = "implicit", layer = 2})
    assert.matches("implicit attention, layer 2", tostring(imp))
    local n = select(1, imp:shape())
    assert.are.equal(0, imp[1][n]) -- causal: the first row sees only itself
    assert.has_error(function() return norms[rows + 1] end,
      "mtlab.matrix: row " .. (rows + 1) .. " is out of range 1.." .. rows)
    assert.has_error(function() m:probe("Y", r, {kind = "attention"}) end,
      "mtlab.model:probe: mamba-small has no attention map")
    assert.has_error(function() m:probe("Y", r, {kind = "colour"}) end)
  end)

  it("gives the transformer's attention per head or averaged", function()
    local m <close> = mtlab.load(H.transformer)
    local r = m:translate("Y dijo Dios", {beam = 1})
    local cross = m:probe("Y dijo Dios", r.ids, {kind = "cross", layer = 1})
    local rows, cols = cross:shape()
    assert.are.equal(4, cols) -- the source and its <eos>
    local sum = 0
    for j = 1, cols do sum = sum + cross[1][j] end
    assert.is_true(math.abs(sum - 1) < 1e-4) -- softmax rows, also after the mean of heads
    local h1 = m:probe("Y dijo Dios", r.ids, {kind = "cross", layer = 1, head = 1})
    assert.are.equal(rows, select(1, h1:shape()))
    assert.has_error(function() m:probe("Y", r, {kind = "cross", layer = 99}) end)
    assert.has_error(function() m:probe("Y", r, {kind = "cross", head = 99}) end)
    -- layers and heads are 1-based: 0 is out of range, not "the first"
    assert.has_error(function() m:probe("Y", r, {kind = "cross", layer = 0}) end,
      "mtlab.model:probe: option layer must be a whole number from 1 to 4096, not 0")
    assert.has_error(function() m:probe("Y", r, {kind = "cross", head = 0}) end,
      "mtlab.model:probe: option head must be a whole number from 1 to 4096, not 0")
  end)
end)

describe("mtlab.average", function()
  it("writes the mean of bundles of one model, in their dtype or the one asked for", function()
    local dir = H.tmpname()
    os.remove(dir)
    assert.are.equal(dir, mtlab.average({H.mamba, H.mamba}, dir))
    local src = "Y dijo Dios: Sea la luz: y fué la luz."
    local a <close> = mtlab.load(H.mamba)
    local b <close> = mtlab.load(dir)
    -- two equal F16 bundles average to the same F16 weights: the same translation
    assert.are.equal(a:translate(src, {beam = 1}).text, b:translate(src, {beam = 1}).text)
    local f16 = #H.read(dir .. "/model.safetensors")
    mtlab.average({H.mamba}, dir, {dtype = "f32", force = true})
    local f32 = #H.read(dir .. "/model.safetensors")
    assert.is_true(f32 > 1.9 * f16)
    H.sh("rm -rf '" .. dir .. "'")
  end)

  it("never replaces an existing bundle unless asked (force = true), and then whole", function()
    local dir = H.tmpname()
    os.remove(dir)
    mtlab.average({H.mamba}, dir)
    local before = H.read(dir .. "/model.safetensors")
    local ok, err = pcall(mtlab.average, {H.mamba}, dir, {dtype = "f32"})
    assert.is_false(ok)
    assert.are.equal("mtlab.average: " .. dir .. ": already exists and holds a model bundle; not overwritten " ..
                     "(force = true replaces it)", err)
    assert.are.equal(before, H.read(dir .. "/model.safetensors"))
    assert.are.equal(dir, mtlab.average({H.mamba}, dir, {dtype = "f32", force = true}))
    assert.is_true(#H.read(dir .. "/model.safetensors") > 1.9 * #before)
    H.sh("rm -rf '" .. dir .. "'")
    -- a directory holding anything but a bundle is not replaced, forced or not
    H.sh("mkdir -p '" .. dir .. "/notes'")
    ok, err = pcall(mtlab.average, {H.mamba}, dir, {force = true})
    assert.is_false(ok)
    assert.matches("^mtlab.average: " .. dir:gsub("%p", "%%%0") .. ": holds notes/", err)
    H.sh("rm -rf '" .. dir .. "'")
  end)

  it("names what cannot be averaged", function()
    local dir = H.tmpname()
    os.remove(dir)
    local ok, err = pcall(mtlab.average, {H.mamba, H.transformer}, dir)
    assert.is_false(ok)
    assert.matches("^mtlab.average: models/transformer%-small is a transformer model, models/mamba%-small is mamba", err)
    assert.has_error(function() mtlab.average({}, dir) end,
      "mtlab.average: no bundles to average (the list is empty)")
    assert.has_error(function() mtlab.average({H.mamba, 3}, dir) end,
      "mtlab.average: bundle 2 must be a path (a string), not number")
    assert.has_error(function() mtlab.average({H.mamba}, dir, {dtype = "f8"}) end,
      "mtlab.average: unknown dtype 'f8' (f32, f16 or bf16)")
    ok, err = pcall(mtlab.average, {H.mamba}, H.mamba)
    assert.is_false(ok)
    assert.matches("models/mamba%-small: already exists and holds a model bundle; not overwritten", err)
  end)
end)

describe("the shipped models", function()
  it("know only the Bible's vocabulary, as README warns", function()
    assert.matches("The shipped models know only the Bible", H.read("README.md"), 1, true)
    local m <close> = mtlab.load(H.transformer)
    assert.matches("⁇", m:translate("Tengo 3 perros y un teléfono.").text, 1, true)
  end)
end)

describe("model:translate's search", function()
  it("is beam 5 outside the workbench unless given, and each result says which", function()
    local m <close> = mtlab.load(H.transformer)
    assert.are.equal("beam 5", m:translate("Y dijo Dios: Sea la luz.").search)
    assert.are.equal("greedy", m:translate("Y dijo Dios: Sea la luz.", {beam = 1}).search)
    assert.are.equal("beam 3", m:translate({"Y dijo Dios."}, {beam = 3})[1].search)
  end)
end)
