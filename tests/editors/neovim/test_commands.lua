-- Code lenses from the real server, and :MaxKernelTest running an examples/ kernel on the local
-- host with real JAX: progress in the statusline, then the MK200 verdict diagnostic. Commands the
-- server does not know, and a file without a task, fail with the server's message shown.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

-- examples/softmax_rows.py plus an in-file task (docs/tasks.md): the reference, inputs, and
-- `candidate` (the infile form's entry point) naming the example's kernel wrapper.
local TASK = {
  "",
  "",
  "def reference(x):",
  "    return jax.nn.softmax(x, axis=-1)",
  "",
  "",
  "def make_inputs(key):",
  "    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)",
  "",
  "",
  "candidate = softmax",
}

local function line_of(bufnr, needle)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if line:find(needle, 1, true) then
      return i
    end
  end
  H.fail("no line with %q", needle)
end

local function reply_of(command, bufnr)
  local reply
  require("maxkernel").execute(command, bufnr, function(err, result)
    reply = { err = err, result = result }
  end)
  return H.wait(15000, function()
    return reply
  end, "the reply to " .. command)
end

H.run("commands", function()
  local notes = H.capture_notify()
  H.setup()
  local path = H.copy("examples/softmax_rows.py", "softmax_rows.py", TASK)
  local bufnr = H.open(path)
  local client = require("maxkernel").client(bufnr)

  -- Lenses: one per command, all carrying the kernel's argument.
  local lenses = require("maxkernel.commands").lenses(client, bufnr)
  local titles = vim.tbl_map(function(l)
    return l.command.command
  end, lenses)
  table.sort(titles)
  H.eq({ "maxkernel.graphSearch", "maxkernel.optimizeAuto", "maxkernel.optimizeStepByStep", "maxkernel.profile", "maxkernel.test" },
    titles, "lens commands")
  H.eq("softmax_kernel", lenses[1].command.arguments[1].name, "lens kernel name")
  -- Displayed too: the lens cache is filled, and inlay hints are on where Neovim has them.
  H.wait(10000, function()
    local shown = vim.lsp.codelens.enable and vim.lsp.codelens.get({ bufnr = bufnr }) or vim.lsp.codelens.get(bufnr)
    return #shown == #lenses
  end, "the code lenses to be displayed")
  if vim.lsp.inlay_hint then
    H.check(vim.lsp.inlay_hint.is_enabled({ bufnr = bufnr }), "inlay hints are off")
  end

  -- :MaxKernelTest with the cursor inside the function that holds the pallas_call.
  vim.api.nvim_win_set_cursor(0, { line_of(bufnr, "grid="), 8 })
  H.eq("", require("maxkernel").statusline(), "statusline before the run")
  vim.cmd("MaxKernelTest")
  H.wait(15000, function()
    return H.find(notes, function(n)
      return n.msg:find("maxkernel.test started on softmax_kernel", 1, true)
    end)
  end, "the started reply")
  H.wait(30000, function()
    return require("maxkernel").statusline():find("Test softmax_kernel", 1, true)
  end, "the statusline to show the running test")

  local verdict = H.wait(120000, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == "MK200" then
        return d
      end
    end
  end, "the MK200 test verdict")
  H.log("verdict: %s", verdict.message)
  H.check(verdict.message:find("Test passed on local", 1, true), "verdict: %s", verdict.message)
  H.eq(vim.diagnostic.severity.INFO, verdict.severity, "verdict severity")
  H.eq(line_of(bufnr, "pl.pallas_call(") - 1, verdict.lnum, "verdict line")
  H.wait(5000, function()
    return require("maxkernel").statusline() == ""
  end, "the statusline to clear after the run")
  H.check(H.find(notes, function(n)
    return n.msg:find("Test passed", 1, true)
  end), "the end of the progress was not shown")

  -- A command the server does not know: its error is shown, nothing throws.
  local reply = reply_of("maxkernel.noSuchCommand", bufnr)
  H.check(reply.err, "unknown command answered %s", vim.inspect(reply.result))
  H.check(H.find(notes, function(n)
    return n.level == vim.log.levels.ERROR and n.msg:find(reply.err.message, 1, true)
  end), "the server's error %q was not shown", reply.err.message)

  -- Every other command answers (result, or an error the user sees); none throws in the plugin,
  -- and none answers the old "unavailable" placeholder (the server implements them all).
  -- (Step-by-step sessions ask questions and open the plan: test_hitl*.lua drive those.)
  for _, command in ipairs({ "maxkernel.optimizeAuto", "maxkernel.graphSearch",
    "maxkernel.applyBestVariant", "maxkernel.openReport" }) do
    reply = reply_of(command, bufnr)
    if reply.err then
      H.check(H.find(notes, function(n)
        return n.msg:find(reply.err.message, 1, true)
      end), "%s: the server's error %q was not shown", command, reply.err.message)
    else
      H.check(reply.result.status ~= "unavailable", "%s answered 'unavailable': %s", command, vim.inspect(reply.result))
    end
  end

  -- Sessions: the server implements maxkernel/sessions; an error (MethodNotFound too) fails.
  local sessions
  require("maxkernel").sessions(bufnr, function(err, result)
    sessions = { err = err, result = result }
  end)
  sessions = H.wait(15000, function()
    return sessions
  end, "the maxkernel/sessions reply")
  H.check(not sessions.err, "maxkernel/sessions failed: %s", vim.inspect(sessions.err))
  H.check(type(sessions.result) == "table" and type(sessions.result.sessions) == "table",
    "maxkernel/sessions answered %s", vim.inspect(sessions.result))

  -- The example without a task: the server refuses, and says why.
  local bare = H.open(H.repo .. "/examples/softmax_rows.py")
  vim.api.nvim_win_set_cursor(0, { line_of(bare, "grid="), 0 })
  reply = reply_of("maxkernel.test", bare)
  H.check(reply.err and reply.err.message:find("no task for softmax_rows.py", 1, true),
    "a file without a task answered %s", vim.inspect(reply))
  H.check(H.find(notes, function(n)
    return n.level == vim.log.levels.ERROR and n.msg:find("no task for softmax_rows.py", 1, true)
  end), "the no-task error was not shown")
end)
