-- Every server command as a user command on the kernel under the cursor. The kernel's code
-- lenses carry the command arguments ({uri, kernel, name, version}); the lens of the kernel at
-- or above the cursor is the one used.
local client_mod = require("maxkernel.client")
local compat = require("maxkernel.compat")
local progress = require("maxkernel.progress")

local M = {}

-- User command -> server command. `lens` commands appear as code lenses; the others take the
-- same kernel argument.
M.list = {
  { user = "MaxKernelTest", command = "maxkernel.test", desc = "Test the kernel on the configured host" },
  { user = "MaxKernelProfile", command = "maxkernel.profile", desc = "Profile the kernel" },
  { user = "MaxKernelOptimize", command = "maxkernel.optimizeStepByStep", desc = "Optimize step by step (HITL)" },
  { user = "MaxKernelOptimizeAuto", command = "maxkernel.optimizeAuto", desc = "Optimize unattended (Auto)" },
  { user = "MaxKernelGraphSearch", command = "maxkernel.graphSearch", desc = "Graph search over variants" },
  { user = "MaxKernelCancel", command = "maxkernel.cancelJob", desc = "Cancel the kernel's running job" },
  { user = "MaxKernelApplyBest", command = "maxkernel.applyBestVariant", desc = "Apply the best variant found" },
  { user = "MaxKernelReport", command = "maxkernel.openReport", desc = "Open the kernel's report" },
}

local jobs = {} -- job id -> { command, name, token }, newest last in `job_order`
local job_order = {}

local function notify_error(message)
  vim.notify("MaxKernel: " .. message, vim.log.levels.ERROR)
end

local function client_or_error(bufnr)
  local client = client_mod.get(bufnr)
  if not client then
    notify_error("no maxkernel-lsp client is attached to this buffer (did setup() run?)")
  end
  return client
end

-- Asks the server for the buffer's code lenses (fresh, not the display cache).
-- The buffer (nil or 0: the current one) and its MaxKernel client, nil after an error message.
local function buffer_client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  return bufnr, client_or_error(bufnr)
end

-- workspace/executeCommand: an error is shown, `on_ok(result)` (optional) runs on success and
-- `on_reply(err, result)` (optional) runs last either way.
local function execute(client, bufnr, command, arguments, on_ok, on_reply)
  local params = { command = command, arguments = arguments }
  compat.request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      notify_error(string.format("%s failed: %s", command, tostring(err.message)))
    elseif on_ok then
      on_ok(result)
    end
    if on_reply then
      on_reply(err, result)
    end
  end, bufnr)
end

-- A command over a buffer (nil or 0: the current one): `body(client, bufnr, on_reply)` runs when
-- the buffer has a MaxKernel client; the command returns whether it did.
local function over_buffer(body)
  return function(bufnr, on_reply)
    local client
    bufnr, client = buffer_client(bufnr)
    if not client then
      return false
    end
    body(client, bufnr, on_reply)
    return true
  end
end

function M.lenses(client, bufnr, timeout_ms)
  local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr) }
  local response, err = compat.request_sync(client, "textDocument/codeLens", params, timeout_ms or 5000, bufnr)
  if not response then
    return nil, "textDocument/codeLens failed: " .. tostring(err)
  end
  if response.err then
    return nil, "textDocument/codeLens failed: " .. tostring(response.err.message)
  end
  return response.result or {}
end

-- The argument of the kernel at the cursor: the lens whose range holds the cursor line, else
-- the nearest one above it, else (a single kernel) the only one.
function M.kernel_at(lenses, line)
  local inside, above, kernels = nil, nil, {}
  for _, lens in ipairs(lenses) do
    local arg = lens.command and lens.command.arguments and lens.command.arguments[1]
    if type(arg) == "table" then
      local r = lens.range
      kernels[tostring(arg.kernel)] = arg
      if r.start.line <= line and line <= r["end"].line then
        inside = arg
      elseif r.start.line <= line and (not above or r.start.line >= above.line) then
        above = { line = r.start.line, arg = arg }
      end
    end
  end
  if inside then
    return inside
  end
  if above then
    return above.arg
  end
  local only = vim.tbl_values(kernels)
  if #only == 1 then
    return only[1]
  end
  return nil
end

local function describe_reply(entry, result, arg)
  if type(result) ~= "table" then
    return
  end
  if result.status == "started" then
    if result.job then
      jobs[result.job] = { command = entry.command, name = arg.name, token = result.progressToken }
      job_order[#job_order + 1] = result.job
    end
    vim.notify(string.format("MaxKernel: %s started on %s (%s)", entry.command, arg.name or "kernel", tostring(result.job)), vim.log.levels.INFO)
  elseif result.uri and entry.command == "maxkernel.openReport" then
    vim.cmd("edit " .. vim.fn.fnameescape(vim.uri_to_fname(result.uri)))
  end
end

-- Runs `entry` on the kernel at the cursor of `bufnr`; `on_reply(err, result)` is optional.
function M.run(entry, bufnr, on_reply)
  local client
  bufnr, client = buffer_client(bufnr)
  if not client then
    return false
  end
  local lenses, err = M.lenses(client, bufnr)
  if not lenses then
    notify_error(err)
    return false
  end
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local arg = M.kernel_at(lenses, line)
  if not arg then
    notify_error("no Pallas kernel at or above the cursor")
    return false
  end
  arg = vim.deepcopy(arg)
  if entry.command == "maxkernel.cancelJob" then
    return M.cancel(client, bufnr, arg, on_reply)
  end
  execute(client, bufnr, entry.command, { arg }, function(result)
    describe_reply(entry, result, arg)
  end, on_reply)
  return true
end

local function server_offers(client, command)
  local provider = (client.server_capabilities or {}).executeCommandProvider
  return type(provider) == "table" and type(provider.commands) == "table" and vim.tbl_contains(provider.commands, command)
end

-- maxkernel.cancelJob when the server offers it (with the newest job of this kernel), else
-- window/workDoneProgress/cancel on the job's progress token, which servers must honour.
function M.cancel(client, bufnr, arg, on_reply)
  local job_id
  for i = #job_order, 1, -1 do
    local job = jobs[job_order[i]]
    if job and job.name == arg.name then
      job_id = job_order[i]
      break
    end
  end
  if not job_id or not progress.is_active(jobs[job_id].token) then
    notify_error("no running job for " .. tostring(arg.name))
    return false
  end
  if server_offers(client, "maxkernel.cancelJob") then
    arg.job = job_id
    execute(client, bufnr, "maxkernel.cancelJob", { arg }, nil, on_reply)
    return true
  end
  compat.notify(client, "window/workDoneProgress/cancel", { token = jobs[job_id].token })
  vim.notify("MaxKernel: cancelling " .. job_id, vim.log.levels.INFO)
  if on_reply then
    on_reply(nil, { status = "cancelling", job = job_id })
  end
  return true
end

-- :MaxKernelSessions: lists HITL sessions (request maxkernel/sessions) and resumes the chosen
-- one with maxkernel.optimizeStepByStep {session = id}.
M.sessions = over_buffer(function(client, bufnr, on_reply)
  compat.request(client, "maxkernel/sessions", vim.empty_dict(), function(err, result)
    if err then
      notify_error("maxkernel/sessions failed: " .. tostring(err.message))
      if on_reply then
        on_reply(err, nil)
      end
      return
    end
    local sessions = (type(result) == "table" and (result.sessions or result)) or {}
    if #sessions == 0 then
      vim.notify("MaxKernel: no sessions to resume", vim.log.levels.INFO)
      if on_reply then
        on_reply(nil, result)
      end
      return
    end
    vim.ui.select(sessions, {
      prompt = "MaxKernel: resume which session?",
      format_item = function(s)
        return string.format("%s  %s  %s", tostring(s.id), tostring(s.kernel or s.name or ""), tostring(s.status or s.phase or ""))
      end,
      kind = "maxkernel.sessions",
    }, function(choice)
      if not choice then
        return
      end
      execute(client, bufnr, "maxkernel.optimizeStepByStep", { { session = choice.id, uri = choice.uri } }, nil, on_reply)
    end)
  end, bufnr)
end)

-- :MaxKernelWriteKernel: what the "Write a Pallas kernel for this" code action runs
-- (maxkernel.writeKernel {uri}) on a buffer that defines a task with no pallas_call yet. The
-- server writes the kernel in the background and proposes it as an edit (maxkernel.edits).
M.write_kernel = over_buffer(function(client, bufnr, on_reply)
  execute(client, bufnr, "maxkernel.writeKernel", { { uri = vim.uri_from_bufnr(bufnr) } }, function(result)
    if type(result) == "table" and result.status == "started" then
      vim.notify("MaxKernel: writing a Pallas kernel (" .. tostring(result.job) .. "); the edit is proposed when it is ready",
        vim.log.levels.INFO)
    end
  end, on_reply)
end)

function M.create_user_commands()
  for _, entry in ipairs(M.list) do
    vim.api.nvim_create_user_command(entry.user, function()
      M.run(entry, 0)
    end, { desc = "MaxKernel: " .. entry.desc })
  end
  vim.api.nvim_create_user_command("MaxKernelSessions", function()
    M.sessions(0)
  end, { desc = "MaxKernel: resume a step-by-step session" })
  vim.api.nvim_create_user_command("MaxKernelWriteKernel", function()
    M.write_kernel(0)
  end, { desc = "MaxKernel: write a Pallas kernel for this file's reference" })
end

function M.entry(command)
  for _, entry in ipairs(M.list) do
    if entry.command == command or entry.user == command then
      return entry
    end
  end
  return nil
end

return M
