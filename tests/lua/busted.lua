-- Runs the Lua specs inside `mtlab run`, so that every spec sees the real `mtlab` module:
--   ./mtlab run tests/lua/busted.lua [busted options] tests/lua/
require "busted.runner" { standalone = false }
