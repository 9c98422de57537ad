-- The statusline function over $/progress, and :MaxKernelCancel stopping a real run on the host
-- (window/workDoneProgress/cancel while the server has no maxkernel.cancelJob).
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

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

H.run("progress", function()
  local mk = require("maxkernel")
  local progress = require("maxkernel.progress")
  -- The statusline shows the newest job, its message and percentage, and how many more run.
  progress.handle("a", { kind = "begin", title = "MaxKernel: Test k1" })
  H.eq("MaxKernel: Test k1", mk.statusline(), "after begin")
  progress.handle("a", { kind = "report", message = "evaluate", percentage = 40 })
  H.eq("MaxKernel: Test k1: evaluate (40%)", mk.statusline(), "after report")
  progress.handle(7, { kind = "begin", title = "MaxKernel: Profile k2" })
  H.eq("MaxKernel: Profile k2 +1", mk.statusline(), "two jobs")
  progress.handle(7, { kind = "end", message = "done" })
  H.eq("MaxKernel: Test k1: evaluate (40%)", mk.statusline(), "after one ends")
  progress.handle("a", { kind = "end" })
  H.eq("", mk.statusline(), "after both end")

  -- Cancel a real test run.
  local notes = H.capture_notify()
  H.setup()
  local bufnr = H.open(H.copy("examples/softmax_rows.py", "softmax_rows.py", TASK))
  vim.api.nvim_win_set_cursor(0, { 20, 0 })
  H.eq(false, require("maxkernel.commands").run(require("maxkernel.commands").entry("maxkernel.cancelJob"), bufnr),
    "cancel with nothing running")
  H.check(H.find(notes, function(n)
    return n.msg:find("no running job for softmax_kernel", 1, true)
  end), "cancel with nothing running said nothing")
  vim.cmd("MaxKernelTest")
  H.wait(15000, function()
    return H.find(notes, function(n)
      return n.msg:find("maxkernel.test started", 1, true)
    end)
  end, "the started reply")
  H.wait(15000, function()
    return mk.statusline():find("Test softmax_kernel", 1, true)
  end, "the run to start")
  vim.cmd("MaxKernelCancel")
  local verdict = H.wait(60000, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == "MK200" then
        return d
      end
    end
  end, "the MK200 diagnostic of the cancelled run")
  -- The run was stopped, not finished: the verdict says it did not run because it was cancelled
  -- (kernel_runs.cpp describe_test), at information severity, never a pass or a failure.
  H.check(verdict.message:find("^Test did not run on local: cancelled"), "verdict: %s", verdict.message)
  H.eq(vim.diagnostic.severity.INFO, verdict.severity, "cancelled verdict severity")
  H.wait(5000, function()
    return mk.statusline() == ""
  end, "the statusline to clear")
end)
