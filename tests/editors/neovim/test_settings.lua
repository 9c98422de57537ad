-- The plugin's options against the one settings schema (editors/settings.schema.json): the section
-- it sends, with every option set, holds only settings the schema declares, with their types, and
-- covers every setting the server reads (autotuneConfigs too). The budget reaches the server: a
-- value only the server judges comes back as its error when an Auto run starts.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

local islist = vim.islist or vim.tbl_islist

local function is_type(value, name)
  if name == "integer" then
    return type(value) == "number" and math.floor(value) == value
  elseif name == "array" then
    return type(value) == "table" and (next(value) == nil or islist(value))
  elseif name == "object" then
    return type(value) == "table" and not (next(value) ~= nil and islist(value))
  elseif name == "null" then
    return value == vim.NIL
  end
  return type(value) == name
end

-- Problems of `value` against `schema` (types, and no key the schema does not declare).
local function conforms(value, schema, path, problems)
  local types = type(schema.type) == "table" and schema.type or { schema.type }
  local ok = schema.type == nil
  for _, t in ipairs(types) do
    ok = ok or is_type(value, t)
  end
  if not ok then
    problems[#problems + 1] = string.format("%s: %s is not %s", path, vim.inspect(value), table.concat(types, " or "))
    return
  end
  if schema.properties and type(value) == "table" then
    for key, sub in pairs(value) do
      local declared = schema.properties[key]
      if declared then
        conforms(sub, declared, path .. "." .. key, problems)
      else
        problems[#problems + 1] = path .. "." .. key .. " is not in the schema"
      end
    end
  end
end

local function line_of(bufnr, needle)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if line:find(needle, 1, true) then
      return i
    end
  end
  H.fail("no line with %q", needle)
end

H.run("settings", function()
  local schema = vim.fn.json_decode(table.concat(vim.fn.readfile(H.repo .. "/editors/settings.schema.json"), "\n"))
  local config_mod = require("maxkernel.config")
  local config, problems = config_mod.resolve({
    target = "v5p",
    host = { "local" },
    hosts = { { name = "far", kind = "ssh" } },
    python = "/usr/bin/python3",
    lower_on_save = false,
    autotune_configs = 4,
    llm = { provider = "openai", model = "m", base_url = "http://127.0.0.1:9", fixture = "f.jsonl" },
    budget = { max_cost_usd = 1, max_iterations = 2, max_wall_seconds = 60, target_speedup = 1.5,
      max_evaluations = 3, patience = 1 },
  })
  H.check(config, "resolve failed: %s", vim.inspect(problems))
  local section = config_mod.server_settings(config)
  local found = {}
  conforms(section, schema, "maxkernel", found)
  H.eq({}, found, "the section against the schema")
  -- Every setting the server reads can be set from Neovim.
  for key, sub in pairs(schema.properties) do
    if sub["x-reader"] ~= "client" then
      H.check(section[key] ~= nil, "no option sends maxkernel.%s", key)
      if sub.properties then
        for nested in pairs(sub.properties) do
          H.check(section[key][nested] ~= nil, "no option sends maxkernel.%s.%s", key, nested)
        end
      end
    end
  end
  H.eq(4, section.autotuneConfigs, "autotuneConfigs")
  H.eq(60, section.budget.maxWallSeconds, "budget.maxWallSeconds")

  -- The first release's `budgets` names still arrive, under the server's names.
  local old = config_mod.server_settings(config_mod.resolve({
    budgets = { max_usd = 2, max_steps = 7, max_minutes = 3, target_speedup = 1.2 },
  }))
  H.eq({ maxCostUsd = 2, maxIterations = 7, maxWallSeconds = 180, targetSpeedup = 1.2 }, old.budget, "budgets")
  found = {}
  conforms(old, schema, "maxkernel", found)
  H.eq({}, found, "the old names' section against the schema")

  -- The budget reaches the server: 1.5 iterations is a number for the plugin and an error for
  -- the server, which says so when the run would start.
  local notes = H.capture_notify()
  H.setup({ budget = { max_iterations = 1.5 } })
  local path = H.copy("examples/softmax_rows.py", "softmax_rows.py", {
    "", "", "def reference(x):", "    return jax.nn.softmax(x, axis=-1)", "", "",
    "def make_inputs(key):", "    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)", "", "",
    "candidate = softmax",
  })
  local bufnr = H.open(path)
  vim.api.nvim_win_set_cursor(0, { line_of(bufnr, "grid="), 8 })
  local reply
  require("maxkernel").execute("maxkernel.optimizeAuto", bufnr, function(err, result)
    reply = { err = err, result = result }
  end)
  reply = H.wait(15000, function()
    return reply
  end, "the reply to optimizeAuto")
  H.check(reply.err and reply.err.message:find("maxkernel.budget.maxIterations must be a non-negative integer", 1, true),
    "optimizeAuto with budget.max_iterations = 1.5 answered %s", vim.inspect(reply))
  H.check(not H.find(notes, function(n)
    return n.msg:find("is not a setting", 1, true)
  end), "the server found an unknown setting: %s", vim.inspect(notes))
end)
