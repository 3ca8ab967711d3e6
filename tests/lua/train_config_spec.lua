-- docs/training-config.md is `mtlab train --reference`, made from the key tables that read
-- training configs (app/common/train_config.c), so the document cannot drift from the keys.
local H = dofile("tests/lua/helpers.lua")

describe("mtlab train --reference", function()
  it("is docs/training-config.md", function()
    local ref, code = H.sh(H.mtlab .. " train --reference")
    assert.are.equal(0, code)
    local ok, doc = pcall(H.read, "docs/training-config.md")
    assert.is_true(ok, "docs/training-config.md is missing: write it with `mtlab train --reference`")
    assert.are.equal(ref, doc, "docs/training-config.md differs from `mtlab train --reference`: regenerate it")
  end)

  it("gives each run key its type and default, each model key its type", function()
    local ref = H.sh(H.mtlab .. " train --reference")
    assert.is_truthy(ref:find("| `max_tokens` | integer | `4096` |", 1, true))
    assert.is_truthy(ref:find("| `bf16` | boolean | `false` |", 1, true))
    assert.is_truthy(ref:find("| `attn_layers` | list of integers |", 1, true))
  end)
end)
