-- :checkhealth maxkernel reports the server and its version, the python with JAX, and each
-- configured host; a host that cannot answer is an error, not a hang.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

local function health_lines()
  vim.cmd("checkhealth maxkernel")
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

local function has(text, needle)
  H.check(text:find(needle, 1, true), "checkhealth output lacks %q:\n%s", needle, text)
end

H.run("health", function()
  H.setup({
    hosts = {
      { name = "local", kind = "local", python = H.python },
      -- Nothing listens on port 1 of loopback: the check must fail quickly and say so.
      { name = "nowhere", kind = "ssh", destination = "nobody@127.0.0.1", port = 1, connectTimeoutSeconds = 2 },
      { name = "pod", kind = "ray", address = "127.0.0.1:6379", python = H.python },
    },
  })
  local text = health_lines()
  local version = vim.fn.system({ H.server, "--version" }):gsub("%s+$", "")
  has(text, "setup() done")
  has(text, "server: " .. H.server .. " (" .. version .. ")")
  has(text, "python: " .. H.python .. " (JAX ")
  has(text, "host local (local) reachable: JAX ")
  has(text, "host nowhere (ssh) not reachable or without JAX")
  has(text, "host pod (ray): Ray ")
  has(text, "the cluster at 127.0.0.1:6379 is joined when a job starts")
  has(text, "selected host: local")
  -- The OK lines are reported as OK, the unreachable host as an error.
  H.check(text:match("OK[^\n]*server: "), "server line is not OK:\n%s", text)
  H.check(text:match("ERROR[^\n]*host nowhere"), "unreachable host is not an ERROR:\n%s", text)

  -- A missing server binary and a python without JAX are errors.
  vim.cmd("bwipeout!")
  -- (host as a list: several hosts share the work; each name is checked)
  H.check(require("maxkernel").setup({ cmd = { "/nonexistent/maxkernel-lsp" }, python = "/bin/false", host = { "local", "v5e" } }), "setup")
  text = health_lines()
  has(text, "server binary not found: /nonexistent/maxkernel-lsp")
  has(text, "python /bin/false cannot import JAX")
  has(text, "selected host: local")
  has(text, "selected host 'v5e' is not in `hosts`")
end)
