-- Shared by the headless tests: assertions, waiting on events with a timeout, and finishing
-- with an exit code the runner reads (0 pass, 1 fail, 3 a declared skip).
local H = {}

H.repo = vim.env.MAXKERNEL_REPO
H.server = vim.env.MAXKERNEL_LSP
H.python = vim.env.MAXKERNEL_TEST_PYTHON
H.tmp = vim.env.MAXKERNEL_TEST_TMP

function H.log(fmt, ...)
  io.stderr:write(string.format(fmt, ...) .. "\n")
end

function H.fail(fmt, ...)
  error(string.format(fmt, ...), 2)
end

function H.check(cond, fmt, ...)
  if not cond then
    error(string.format(fmt, ...), 2)
  end
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(string.format("%s: want %s, got %s", what, vim.inspect(want), vim.inspect(got)), 2)
  end
end

-- Waits until `cond()` is truthy, processing events; fails naming `what` after `timeout_ms`.
function H.wait(timeout_ms, cond, what)
  local value
  local ok = vim.wait(timeout_ms, function()
    value = cond()
    return value
  end, 20)
  if not ok then
    error(string.format("timed out after %d ms waiting for %s", timeout_ms, what), 2)
  end
  return value
end

-- Replaces vim.notify with a recorder; returns the list of {msg, level} it fills.
function H.capture_notify()
  local seen = {}
  vim.notify = function(msg, level)
    seen[#seen + 1] = { msg = msg, level = level }
    H.log("notify[%s] %s", tostring(level), tostring(msg))
  end
  return seen
end

function H.find(list, pred)
  for _, item in ipairs(list) do
    if pred(item) then
      return item
    end
  end
  return nil
end

-- Copies a repository file into the test's temp folder; returns the new path.
function H.copy(rel, dest_name, extra)
  local src = H.repo .. "/" .. rel
  local lines = vim.fn.readfile(src)
  if extra then
    vim.list_extend(lines, extra)
  end
  local dest = H.tmp .. "/" .. (dest_name or vim.fn.fnamemodify(rel, ":t"))
  vim.fn.writefile(lines, dest)
  return dest
end

-- setup() with the test server and python, plus `extra` options.
function H.setup(extra)
  local opts = { cmd = { H.server }, python = H.python }
  for k, v in pairs(extra or {}) do
    opts[k] = v
  end
  local ok = require("maxkernel").setup(opts)
  H.check(ok, "setup() failed")
end

-- Opens a file and waits for the client to attach and the server to publish diagnostics.
function H.open(path, timeout_ms)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  H.wait(timeout_ms or 10000, function()
    local client = require("maxkernel").client(bufnr)
    return client and client.initialized ~= false and (client.server_capabilities or client.resolved_capabilities)
  end, "the maxkernel client to attach")
  return bufnr
end

-- Runs `body` and ends Neovim with the right exit code.
function H.run(name, body)
  local ok, err = xpcall(body, debug.traceback)
  if ok then
    H.log("%s: ok", name)
    vim.cmd("qall!")
  elseif type(err) == "string" and err:find("DECLARED SKIP: ", 1, true) then
    H.log("%s", err:match("(DECLARED SKIP: [^\n]*)"))
    vim.cmd("cquit 3")
  else
    H.log("%s: FAILED: %s", name, tostring(err))
    vim.cmd("cquit 1")
  end
end

-- A test that cannot run on this kind of machine says why; run.sh lists it (a skip that does
-- not come through here is a failure). Nothing uses it today.
function H.declared_skip(why)
  error("DECLARED SKIP: " .. why, 0)
end

return H
