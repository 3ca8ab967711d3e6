return { model = { preset = "mamba-local-small", window = 32, attn_layers = {0, 2, 9} }, name = "l" }
--@overrides
lr=2e-3
model.attn_layers={1,3}
name=try2
model.d_model=64
