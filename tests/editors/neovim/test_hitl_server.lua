-- The server's real HITL flow: :MaxKernelOptimize starts a step-by-step session, the server asks
-- through window/showMessageRequest after a phase, the answer goes back through vim.ui.select,
-- the session shows up in maxkernel/sessions, and approving the plan moves it on to the next
-- phase, which proposes the candidate as an edit to confirm and ends with a second question (the
-- server's rule-based plan; no LLM needed).
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

local asked = {} -- the server's questions (kind maxkernel.hitl)
local confirmed = {} -- edits the server proposed that needed confirmation (maxkernel.edits)
vim.ui.select = function(items, opts, on_choice)
  if opts.kind == "maxkernel.edit" then
    confirmed[#confirmed + 1] = opts.prompt
    vim.defer_fn(function()
      on_choice("Apply", 1)
    end, 10)
    return
  end
  asked[#asked + 1] = { items = items, opts = opts }
  local pick = 1
  for i, item in ipairs(items) do
    local title = type(item) == "table" and tostring(item.title or "") or tostring(item)
    if title:lower():find("approve") or title:lower():find("accept") then
      pick = i
      break
    end
  end
  vim.defer_fn(function()
    on_choice(items[pick], pick)
  end, 10)
end
vim.ui.input = function(_, on_confirm)
  vim.defer_fn(function()
    on_confirm("looks good")
  end, 10)
end

H.run("hitl (server flow)", function()
  local notes = H.capture_notify()
  H.setup()
  local bufnr = H.open(H.copy("examples/softmax_rows.py"))
  vim.api.nvim_win_set_cursor(0, { 20, 0 })
  local reply
  require("maxkernel").execute("maxkernel.optimizeStepByStep", bufnr, function(err, result)
    reply = { err = err, result = result }
  end)
  reply = H.wait(15000, function()
    return reply
  end, "the reply to maxkernel.optimizeStepByStep")
  H.check(not reply.err, "optimizeStepByStep failed: %s", vim.inspect(reply.err))
  H.eq("started", reply.result.status, "optimizeStepByStep's status")
  local session = reply.result.session
  H.check(type(session) == "string" and session ~= "", "no session id in %s", vim.inspect(reply.result))
  -- The first phase ends with a question to the user.
  H.wait(120000, function()
    return #asked > 0
  end, "the server's first showMessageRequest")
  H.check(asked[1].opts.kind == "maxkernel.hitl", "the question did not come through the HITL handler")
  -- The session can be listed for resuming.
  local function listed()
    local sessions
    require("maxkernel.compat").request(require("maxkernel").client(bufnr), "maxkernel/sessions", vim.empty_dict(), function(err, result)
      sessions = { err = err, result = result }
    end, bufnr)
    sessions = H.wait(15000, function()
      return sessions
    end, "maxkernel/sessions")
    H.check(not sessions.err, "maxkernel/sessions failed: %s", vim.inspect(sessions.err))
    local entry = H.find(sessions.result.sessions or {}, function(s)
      return s.id == session
    end)
    H.check(entry, "session %s not listed: %s", session, vim.inspect(sessions.result))
    return entry
  end
  local first_phase = listed().phase
  -- The first question was answered "Approve": the session moves on to its next phase, which
  -- ends with the next question (a session stuck in its plan would never ask again).
  H.wait(180000, function()
    return #asked >= 2
  end, "the question after the approved plan")
  H.check(asked[2].opts.prompt ~= asked[1].opts.prompt, "the same question was asked twice: %s", tostring(asked[2].opts.prompt))
  -- Implementing the approved plan proposed the candidate as an edit that needs confirmation
  -- (the plugin asked, the user applied it).
  H.check(#confirmed >= 1 and confirmed[1]:find("implement", 1, true), "no confirmable edit from the implement phase: %s",
    vim.inspect(confirmed))
  local moved = listed()
  H.check(moved.phase ~= first_phase, "the session stayed in phase %s after Approve", tostring(first_phase))
  H.check(not H.find(notes, function(n)
    return n.level == vim.log.levels.ERROR
  end), "an error was shown during the session")
end)
