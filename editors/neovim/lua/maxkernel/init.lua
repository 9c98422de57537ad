-- MaxKernel for Neovim: a thin client over maxkernel-lsp (docs/neovim.md, :help maxkernel).
local M = {}

M.config = nil -- the validated configuration once setup() succeeded

-- Validates `opts` and starts the client for the configured filetypes. Returns true on success;
-- on bad options it reports every problem with vim.notify and starts nothing.
function M.setup(opts)
  local config, problems = require("maxkernel.config").resolve(opts)
  if not config then
    vim.notify("maxkernel.setup: " .. table.concat(problems, "; "), vim.log.levels.ERROR)
    return false
  end
  M.config = config
  require("maxkernel.client").start(config)
  return true
end

-- For 'statusline': the newest running job and its progress, "" when nothing runs.
function M.statusline()
  return require("maxkernel.progress").statusline()
end

-- Runs a server command (e.g. "maxkernel.test") on the kernel at the cursor of `bufnr`.
-- `on_reply(err, result)` is called with the server's answer.
function M.execute(command, bufnr, on_reply)
  local commands = require("maxkernel.commands")
  local entry = commands.entry(command) or { command = command }
  return commands.run(entry, bufnr or 0, on_reply)
end

-- Lists HITL sessions and resumes the chosen one.
function M.sessions(bufnr, on_reply)
  return require("maxkernel.commands").sessions(bufnr or 0, on_reply)
end

-- Writes a Pallas kernel for the task the buffer defines (maxkernel.writeKernel).
function M.write_kernel(bufnr, on_reply)
  return require("maxkernel.commands").write_kernel(bufnr or 0, on_reply)
end

-- The maxkernel-lsp client attached to `bufnr` (0 = current), or nil.
function M.client(bufnr)
  return require("maxkernel.client").get(bufnr or 0)
end

return M
