local presets = { "mamba-small", "transformer++-small", "mamba-mha-small", "mamba-encdec-small" }
local cfg = { model = { preset = presets[#presets], rope_theta = 1e4 * 5 }, lr = -0.0, warmup = math.maxinteger }
for i = 1, 10 do cfg.max_steps = (cfg.max_steps or 0) + i end
cfg.name = ("run-%d"):format(cfg.max_steps) .. string.char(200, 10, 0x22, 92)
return cfg
