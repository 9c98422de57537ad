-- :checkhealth maxkernel: the server binary and its version, a python with JAX for the local
-- host, and whether each configured host answers. vim.health on 0.10+, health#report_* on 0.7.
local M = {}

-- The reporting functions under their 0.10 names, whichever API this Neovim has.
local report = {}
for _, name in ipairs({ "start", "ok", "warn", "error", "info" }) do
  if vim.health and vim.health.start then
    report[name] = vim.health[name]
  elseif vim.health and vim.health.report_start then
    report[name] = vim.health["report_" .. name]
  else
    report[name] = vim.fn["health#report_" .. name]
  end
end

-- Runs argv with a time limit; returns exit code (-1 on timeout or failure to start) and output.
local function run(argv, timeout_ms)
  local output = {}
  local collect = function(_, data)
    for _, line in ipairs(data or {}) do
      if line ~= "" then
        output[#output + 1] = line
      end
    end
  end
  local ok, job = pcall(vim.fn.jobstart, argv, { on_stdout = collect, on_stderr = collect, stdout_buffered = true, stderr_buffered = true })
  if not ok or job <= 0 then
    return -1, "cannot start " .. tostring(argv[1])
  end
  local code = vim.fn.jobwait({ job }, timeout_ms)[1]
  if code == -1 then
    vim.fn.jobstop(job)
    return -1, "no answer within " .. (timeout_ms / 1000) .. " s"
  end
  return code, table.concat(output, "\n")
end

local JAX_PROBE = "import jax; print(jax.__version__)"

local function check_server(config)
  local cmd = require("maxkernel.client").resolve_cmd(config)
  local binary = cmd[1]
  if vim.fn.executable(binary) ~= 1 then
    report.error("server binary not found: " .. binary, {
      "build it (scripts/build.sh) or set `cmd` in setup(), or $MAXKERNEL_LSP",
    })
    return nil
  end
  local path = vim.fn.exepath(binary)
  local code, out = run({ path, "--version" }, 10000)
  if code == 0 and out:match("maxkernel%-lsp") then
    report.ok(string.format("server: %s (%s)", path, out))
  else
    report.error(string.format("server %s --version failed (%s): %s", path, tostring(code), out))
  end
  return path
end

-- The python the server uses for the local host when `python` is not set.
local function local_python(config, server_path)
  if config.python then
    return config.python
  end
  if vim.env.MAXKERNEL_PYTHON and vim.env.MAXKERNEL_PYTHON ~= "" then
    return vim.env.MAXKERNEL_PYTHON
  end
  if server_path then
    local venv = vim.fn.fnamemodify(server_path, ":p:h:h:h") .. "/.venv/bin/python"
    if vim.fn.executable(venv) == 1 then
      return venv
    end
  end
  return "python3"
end

local function check_python(python)
  local code, out = run({ python, "-c", JAX_PROBE }, 60000)
  if code == 0 then
    report.ok(string.format("python: %s (JAX %s)", python, out))
  else
    report.error(string.format("python %s cannot import JAX: %s", python, out), {
      "set `python` in setup() to an interpreter with JAX (pip install jax)",
    })
  end
end

local function ssh_argv(host, remote)
  local argv = { "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=" .. tostring(host.connectTimeoutSeconds or 10) }
  if host.port then
    vim.list_extend(argv, { "-p", tostring(host.port) })
  end
  if host.identityFile then
    vim.list_extend(argv, { "-i", vim.fn.expand(host.identityFile) })
  end
  for _, option in ipairs(host.sshOptions or {}) do
    vim.list_extend(argv, { "-o", option })
  end
  vim.list_extend(argv, { tostring(host.destination), remote })
  return argv
end

local function check_host(host)
  local name = tostring(host.name or "local")
  local kind = host.kind or "local"
  local python = host.python or "python3"
  local remote = python .. " -c '" .. JAX_PROBE .. "'"
  local argv
  if kind == "local" then
    argv = { python, "-c", JAX_PROBE }
  elseif kind == "ssh" then
    if not host.destination then
      report.error(string.format("host %s: kind ssh needs a destination", name))
      return
    end
    argv = ssh_argv(host, remote)
  elseif kind == "command" then
    argv = {}
    for _, part in ipairs(host.command or {}) do
      argv[#argv + 1] = (tostring(part):gsub("{command}", function()
        return remote
      end))
    end
    if #argv == 0 then
      report.error(string.format("host %s: kind command needs a command list", name))
      return
    end
  elseif kind == "ray" then
    -- The slots' driver runs here and joins the cluster when a job starts: check its python.
    if not host.address then
      report.error(string.format("host %s: kind ray needs an address", name))
      return
    end
    local code, out = run({ python, "-c", "import ray; print(ray.__version__)" }, 30000)
    if code == 0 then
      report.ok(string.format("host %s (ray): Ray %s here; the cluster at %s is joined when a job starts",
        name, out, tostring(host.address)))
    else
      report.error(string.format("host %s (ray): %s cannot import ray (pip install ray): %s", name, python, out))
    end
    return
  else
    report.error(string.format("host %s: unknown kind '%s' (local, ssh, command, ray)", name, tostring(kind)))
    return
  end
  local code, out = run(argv, 30000)
  if code == 0 then
    report.ok(string.format("host %s (%s) reachable: JAX %s", name, kind, out))
  else
    report.error(string.format("host %s (%s) not reachable or without JAX: %s", name, kind, out))
  end
end

function M.check()
  report.start("maxkernel")
  local config = require("maxkernel").config
  if not config then
    report.warn("setup() has not run (or failed); checking with the defaults")
    config = require("maxkernel.config").resolve({})
  else
    report.ok("setup() done")
  end
  local server_path = check_server(config)
  check_python(local_python(config, server_path))

  report.start("maxkernel hosts")
  -- `host` is one name, a list of names, or "a,b" (several hosts share the work).
  local selected = {}
  if type(config.host) == "table" then
    selected = config.host
  else
    for name in string.gmatch(tostring(config.host or "local"), "[^,]+") do
      table.insert(selected, vim.trim(name))
    end
  end
  local defined = {}
  for _, host in ipairs(config.hosts or {}) do
    defined[host.name] = true
    check_host(host)
  end
  for _, name in ipairs(selected) do
    if name == "local" or defined[name] then
      report.ok("selected host: " .. name)
    else
      report.error(string.format("selected host '%s' is not in `hosts`", name))
    end
  end
end

return M
