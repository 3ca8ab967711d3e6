local n = 0
local t = { name = "m", model = setmetatable({ preset = "mamba-small" }, { __index = function(t, k) n = n + 1 return nil end }) }
return setmetatable(t, { __len = function() return -1 end, __index = function(t, k) return string.rep("x", 3) end })
