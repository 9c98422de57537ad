-- window/showMessageRequest answered through a replaced vim.ui.select / vim.ui.input: once sent
-- by the real server (its test method relays any server-to-client request and reports the
-- answer it got back), once by calling the client's handler directly.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

local ACTIONS = {
  { title = "Approve" },
  { title = "Give feedback", feedback = true },
  { title = "Retry" },
}

-- The user's next answers; each prompt takes one. Answers are given later on the event loop,
-- the way a real picker answers.
local selections, inputs, prompts = {}, {}, {}
vim.ui.select = function(items, opts, on_choice)
  local pick = table.remove(selections, 1)
  prompts[#prompts + 1] = { prompt = opts.prompt, titles = vim.tbl_map(opts.format_item, items), kind = opts.kind }
  vim.defer_fn(function()
    on_choice(pick and items[pick] or nil, pick)
  end, 10)
end
vim.ui.input = function(opts, on_confirm)
  local text = table.remove(inputs, 1)
  prompts[#prompts + 1] = { prompt = opts.prompt }
  vim.defer_fn(function()
    on_confirm(text)
  end, 10)
end

local function via_server(client, bufnr)
  local reply
  local params = {
    method = "window/showMessageRequest",
    params = { type = 3, message = "Plan for softmax_kernel is ready", actions = ACTIONS },
    timeoutMs = 10000,
  }
  require("maxkernel.compat").request(client, "maxkernel/test/clientRequest", params, function(err, result)
    reply = { err = err, result = result }
  end, bufnr)
  reply = H.wait(15000, function()
    return reply
  end, "the server's report of the client's answer")
  H.check(not reply.err, "clientRequest failed: %s", vim.inspect(reply.err))
  H.check(not reply.result.error, "the client answered an error: %s", vim.inspect(reply.result.error))
  return reply.result.result
end

H.run("hitl", function()
  H.setup({ cmd = { H.server, "--enable-test-methods" } })
  local bufnr = H.open(H.copy("examples/softmax_rows.py"))
  local client = require("maxkernel").client(bufnr)

  -- A plain choice travels back to the server unchanged.
  selections = { 3 }
  H.eq({ title = "Retry" }, via_server(client, bufnr), "answer to Retry")
  H.eq("MaxKernel: Plan for softmax_kernel is ready", prompts[1].prompt, "select prompt")
  H.eq({ "Approve", "Give feedback", "Retry" }, prompts[1].titles, "select items")

  -- A feedback action asks for text and carries it back.
  selections, inputs = { 2 }, { "use 512-row blocks" }
  H.eq({ title = "Give feedback", feedback = "use 512-row blocks" }, via_server(client, bufnr), "answer to feedback")
  H.eq("Give feedback: ", prompts[3].prompt, "input prompt")

  -- Dismissing the picker answers null.
  selections = {}
  local dismissed = via_server(client, bufnr)
  H.check(dismissed == nil or dismissed == vim.NIL, "dismissed answered %s", vim.inspect(dismissed))

  -- The handler called directly (outside the RPC coroutine: it waits on the event loop).
  local handler = require("maxkernel.hitl").show_message_request
  selections = { 1 }
  H.eq({ title = "Approve" }, handler(nil, { type = 3, message = "direct", actions = ACTIONS }, { client_id = client.id }), "direct answer")
  selections, inputs = { 2 }, { nil }
  local cancelled = handler(nil, { type = 3, message = "direct", actions = ACTIONS }, { client_id = client.id })
  H.eq(vim.NIL, cancelled, "feedback dismissed")
end)
