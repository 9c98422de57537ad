-- "Write a Pallas kernel for this" through Neovim's own code action picker, against the real
-- server and a real JAX worker: the action is offered on a plain JAX reference (an in-file task
-- with no pallas_call), running it starts the server's background job, and the kernel arrives as
-- one edit that needs confirmation; the plugin asks (vim.ui.select), "Apply" inserts it, the
-- user's lines are all kept and the server puts its Test lens on the new kernel. Then: the action
-- is gone, :MaxKernelWriteKernel on a file with a kernel shows the server's refusal, and a
-- confirmable edit the user discards changes nothing while an unannotated one applies at once.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

local TITLE = "Write a Pallas kernel for this"
local REFERENCE = {
  "import jax",
  "import jax.numpy as jnp",
  "",
  "ROWS, COLS = 256, 512",
  "",
  "",
  "def reference(x, b):",
  "    return jnp.tanh(x * 2.0 + b)",
  "",
  "",
  "def make_inputs(key):",
  "    kx, kb = jax.random.split(key)",
  "    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),",
  "            jax.random.normal(kb, (1, COLS), jnp.float32))",
}

-- The user: every picker is recorded with the buffer's text at that moment; `answer[kind]`
-- picks an item (by its shown text) or nothing. Answers come later on the event loop.
local prompts, answer = {}, {}
local bufnr
vim.ui.select = function(items, opts, on_choice)
  local format = opts.format_item or tostring
  local shown = { kind = opts.kind, prompt = opts.prompt, titles = vim.tbl_map(format, items) }
  if bufnr then
    shown.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  end
  prompts[#prompts + 1] = shown
  H.log("select[%s] %s: %s", tostring(opts.kind), tostring(opts.prompt), table.concat(shown.titles, " | "))
  local pick
  for i, title in ipairs(shown.titles) do
    if title == answer[opts.kind] then
      pick = i
    end
  end
  vim.defer_fn(function()
    on_choice(pick and items[pick] or nil, pick)
  end, 10)
end

local function prompt_of_kind(kind, after)
  for i = (after or 0) + 1, #prompts do
    if prompts[i].kind == kind then
      return prompts[i], i
    end
  end
end

local function lines()
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

local function index_of(list, needle)
  for i, line in ipairs(list) do
    if line:find(needle, 1, true) then
      return i
    end
  end
end

local function actions_at(client, line)
  local pos = { line = line, character = 4 }
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, range = { start = pos, ["end"] = pos },
    context = { diagnostics = {} } }
  local response = require("maxkernel.compat").request_sync(client, "textDocument/codeAction", params, 10000, bufnr)
  H.check(response and not response.err, "textDocument/codeAction failed: %s", vim.inspect(response))
  return vim.tbl_map(function(a)
    return a.title
  end, response.result or {})
end

-- Has the real server send `workspace/applyEdit` with `edit` to this client; returns its answer.
local function server_proposes(client, edit)
  local reply
  local params = { method = "workspace/applyEdit", params = { label = "MaxKernel: test edit", edit = edit }, timeoutMs = 20000 }
  require("maxkernel.compat").request(client, "maxkernel/test/clientRequest", params, function(err, result)
    reply = { err = err, result = result }
  end, bufnr)
  reply = H.wait(25000, function()
    return reply
  end, "the server's report of the client's answer")
  H.check(not reply.err, "clientRequest failed: %s", vim.inspect(reply.err))
  return reply.result.result
end

H.run("write kernel", function()
  local notes = H.capture_notify()
  H.setup({ cmd = { H.server, "--enable-test-methods" } })
  local path = H.tmp .. "/scale_bias.py"
  vim.fn.writefile(REFERENCE, path)
  bufnr = H.open(path)
  local client = require("maxkernel").client(bufnr)
  local caps = client.server_capabilities or client.resolved_capabilities
  H.check(caps.codeActionProvider or caps.code_action, "the server offers no code actions")
  local reference_line = index_of(REFERENCE, "def reference(")

  -- The action through Neovim's picker, with the cursor on the reference.
  vim.api.nvim_win_set_cursor(0, { reference_line, 4 })
  answer.codeaction = TITLE
  answer["maxkernel.edit"] = "Apply"
  vim.lsp.buf.code_action()
  local offered = H.wait(15000, function()
    return prompt_of_kind("codeaction")
  end, "the code action picker")
  H.check(vim.tbl_contains(offered.titles, TITLE), "the picker offers %s", vim.inspect(offered.titles))

  -- The server writes the kernel with a real worker and proposes it; nothing changes before
  -- the user says Apply.
  local confirm = H.wait(150000, function()
    return prompt_of_kind("maxkernel.edit")
  end, "the proposed kernel (a confirmation prompt)")
  H.check(confirm.prompt:find("Pallas kernel for `reference`", 1, true), "confirmation prompt: %s", confirm.prompt)
  H.eq({ "Apply", "Discard" }, confirm.titles, "confirmation choices")
  H.eq(table.concat(REFERENCE, "\n"), confirm.text, "the buffer before the user applied the kernel")
  H.wait(10000, function()
    return index_of(lines(), "pallas_call(")
  end, "the kernel in the buffer")

  local now = lines()
  H.check(index_of(now, "pallas_call(") > index_of(now, "def reference("), "pallas_call( is not after def reference(:\n%s",
    table.concat(now, "\n"))
  -- Only inserted: every line of the reference file is still there, in order.
  local next_line = 1
  for _, line in ipairs(REFERENCE) do
    while next_line <= #now and now[next_line] ~= line do
      next_line = next_line + 1
    end
    H.check(next_line <= #now, "the line %q was lost or moved:\n%s", line, table.concat(now, "\n"))
    next_line = next_line + 1
  end
  H.check(#now > #REFERENCE + 5, "hardly anything was inserted: %d lines", #now)

  -- The server analyses the new kernel: a Test lens after the reference.
  local lens = H.wait(20000, function()
    local lenses = require("maxkernel.commands").lenses(client, bufnr) or {}
    return H.find(lenses, function(l)
      return l.command and l.command.command == "maxkernel.test"
    end)
  end, "a Test lens on the written kernel")
  H.check(lens.range.start.line + 1 > index_of(now, "def reference("), "the Test lens is on line %d", lens.range.start.line + 1)
  H.check(not vim.tbl_contains(actions_at(client, reference_line - 1), TITLE), "the action is still offered on a file with a kernel")

  -- The user command on a file that has a kernel now: the server's refusal is shown.
  vim.cmd("MaxKernelWriteKernel")
  H.wait(15000, function()
    return H.find(notes, function(n)
      return n.level == vim.log.levels.ERROR and n.msg:find("the file already has a pallas_call", 1, true)
    end)
  end, "the server's refusal shown")

  -- A confirmable edit the user discards changes nothing and answers applied = false.
  local before = lines()
  local function proposal(needs_confirmation)
    local at = { line = 0, character = 0 }
    return {
      documentChanges = { {
        textDocument = { uri = vim.uri_from_bufnr(bufnr), version = vim.NIL },
        edits = { { range = { start = at, ["end"] = at }, newText = "# proposed\n", annotationId = "mk" } },
      } },
      changeAnnotations = { mk = { label = "MaxKernel: a test proposal", needsConfirmation = needs_confirmation } },
    }
  end
  answer["maxkernel.edit"] = "Discard"
  local asked_before = #prompts
  local discarded = server_proposes(client, proposal(true))
  H.check(type(discarded) == "table" and discarded.applied == false, "a discarded edit answered %s", vim.inspect(discarded))
  H.check(prompt_of_kind("maxkernel.edit", asked_before), "the discarded edit was not asked about")
  H.eq(before, lines(), "the buffer after a discarded edit")
  -- Without confirmation the edit applies at once, unasked.
  asked_before = #prompts
  local applied = server_proposes(client, proposal(false))
  H.check(type(applied) == "table" and applied.applied == true, "an unannotated edit answered %s", vim.inspect(applied))
  H.check(not prompt_of_kind("maxkernel.edit", asked_before), "an edit that needs no confirmation was asked about")
  H.eq("# proposed", lines()[1], "the first line after the applied edit")
end)
