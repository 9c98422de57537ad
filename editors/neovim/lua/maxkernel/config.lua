-- Options of setup(): defaults, validation (unknown keys and wrong types are reported, never
-- thrown), and the `maxkernel` settings section the server reads (docs/lsp.md, Settings). The
-- server's options are those of editors/settings.schema.json in snake_case (test_setup.lua holds
-- them to it).
local M = {}

-- One entry per option: the type check, a description for messages, and the default.
-- `fields` lists the keys of a nested table option.
local schema = {
  cmd = { check = "string_list", desc = "a list of strings (server command and arguments)" },
  target = { check = "string", desc = "a TPU generation name such as 'v5e'" },
  host = {
    check = "string_or_list",
    desc = "a host name from `hosts` or 'local', or a list of them (the work is spread)",
  },
  python = { check = "string", desc = "a path to a python with JAX" },
  hosts = { check = "table_list", desc = "a list of host tables (docs/hosts.md)" },
  lower_on_save = { check = "boolean", desc = "true or false" },
  autotune_configs = { check = "number", desc = "a whole number from 0 to 4096" },
  llm = {
    check = "fields",
    desc = "a table",
    fields = {
      provider = "string",
      model = "string",
      base_url = "string",
      fixture = "string",
    },
  },
  budget = {
    check = "fields",
    desc = "a table",
    fields = {
      max_cost_usd = "number",
      max_iterations = "number",
      max_wall_seconds = "number",
      target_speedup = "number",
      max_evaluations = "number",
      patience = "number",
    },
  },
  -- The names of the first release, still read: sent as `budget` (max_minutes in seconds).
  budgets = {
    check = "fields",
    desc = "a table",
    fields = {
      max_usd = "number",
      max_steps = "number",
      max_minutes = "number",
      target_speedup = "number",
    },
  },
  on_attach = { check = "function", desc = "a function(client, bufnr)" },
  filetypes = { check = "string_list", desc = "a list of filetype names", default = { "python" } },
  inlay_hints = { check = "boolean", desc = "true or false", default = true },
  codelens = { check = "boolean", desc = "true or false", default = true },
  root_markers = {
    check = "string_list",
    desc = "a list of file names",
    default = { ".git", "pyproject.toml", "setup.py", "baseline.py", "kernel_task.yaml" },
  },
}

local function is_list(value, element_type)
  if type(value) ~= "table" then
    return false
  end
  local count = 0
  for _ in pairs(value) do
    count = count + 1
  end
  for i = 1, count do
    if type(value[i]) ~= element_type then
      return false
    end
  end
  return true
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    keys[#keys + 1] = tostring(k)
  end
  table.sort(keys)
  return keys
end

-- Returns nil when `value` fits `spec`, else a message naming the option.
local function check_value(name, value, spec)
  local ok
  if spec.check == "string_list" then
    ok = is_list(value, "string") and #value > 0
  elseif spec.check == "string_or_list" then
    ok = type(value) == "string" or (is_list(value, "string") and #value > 0)
  elseif spec.check == "table_list" then
    ok = is_list(value, "table")
  elseif spec.check == "fields" then
    if type(value) ~= "table" then
      return string.format("option '%s' must be %s, got %s", name, spec.desc, type(value))
    end
    for key, sub in pairs(value) do
      local want = spec.fields[key]
      if not want then
        return string.format(
          "unknown option '%s.%s' (known: %s)",
          name,
          tostring(key),
          table.concat(sorted_keys(spec.fields), ", ")
        )
      end
      if type(sub) ~= want then
        return string.format("option '%s.%s' must be a %s, got %s", name, key, want, type(sub))
      end
    end
    return nil
  else
    ok = type(value) == spec.check
  end
  if ok then
    return nil
  end
  return string.format("option '%s' must be %s, got %s", name, spec.desc, vim.inspect(value))
end

-- Validates user options. Returns the merged configuration, or nil and a list of problems.
function M.resolve(opts)
  if opts == nil then
    opts = {}
  end
  if type(opts) ~= "table" then
    return nil, { "setup() takes a table of options, got " .. type(opts) }
  end
  local problems = {}
  for key, value in pairs(opts) do
    local spec = schema[key]
    if not spec then
      problems[#problems + 1] = string.format(
        "unknown option '%s' (known: %s)",
        tostring(key),
        table.concat(sorted_keys(schema), ", ")
      )
    else
      local problem = check_value(key, value, spec)
      if problem then
        problems[#problems + 1] = problem
      end
    end
  end
  if #problems > 0 then
    table.sort(problems)
    return nil, problems
  end
  local config = {}
  for key, spec in pairs(schema) do
    if spec.default ~= nil then
      config[key] = vim.deepcopy(spec.default)
    end
  end
  for key, value in pairs(opts) do
    config[key] = vim.deepcopy(value)
  end
  return config
end

local function camel(name)
  return (name:gsub("_(%a)", function(c)
    return c:upper()
  end))
end

-- The `maxkernel` settings section: only what the user set, so the server keeps its defaults.
function M.server_settings(config)
  local section = vim.empty_dict()
  for _, key in ipairs({ "target", "host", "python", "hosts", "lower_on_save", "autotune_configs" }) do
    if config[key] ~= nil then
      section[camel(key)] = config[key]
    end
  end
  for _, key in ipairs({ "llm", "budget" }) do
    if config[key] ~= nil then
      local nested = {}
      for k, v in pairs(config[key]) do
        nested[camel(k)] = v
      end
      section[key] = nested
    end
  end
  if config.budgets ~= nil then
    local old = config.budgets
    local budget = section.budget or {}
    budget.maxCostUsd = budget.maxCostUsd or old.max_usd
    budget.maxIterations = budget.maxIterations or old.max_steps
    budget.maxWallSeconds = budget.maxWallSeconds or (old.max_minutes and old.max_minutes * 60)
    budget.targetSpeedup = budget.targetSpeedup or old.target_speedup
    section.budget = budget
  end
  return section
end

return M
