-- setup() validation: unknown keys and wrong types give one clear vim.notify error and start
-- nothing; valid options reach the server (the hover names the target they set), and a value
-- only the server can judge comes back as the server's message.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

local function rejected(notes, opts, want)
  local before = #notes
  local ok, result = pcall(require("maxkernel").setup, opts)
  H.check(ok, "setup(%s) threw: %s", vim.inspect(opts), tostring(result))
  H.eq(false, result, "setup(" .. vim.inspect(opts) .. ") result")
  H.eq(before + 1, #notes, "notifications for " .. vim.inspect(opts))
  local note = notes[#notes]
  H.eq(vim.log.levels.ERROR, note.level, "level")
  for _, text in ipairs(want) do
    H.check(note.msg:find(text, 1, true), "setup(%s): %q lacks %q", vim.inspect(opts), note.msg, text)
  end
end

local function hover_text(bufnr, line)
  local client = require("maxkernel").client(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = line, character = 16 },
  }
  local response = require("maxkernel.compat").request_sync(client, "textDocument/hover", params, 5000, bufnr)
  H.check(response and response.result, "no hover: %s", vim.inspect(response))
  return response.result.contents.value
end

H.run("setup", function()
  local notes = H.capture_notify()
  rejected(notes, "python", { "maxkernel.setup:", "takes a table of options, got string" })
  rejected(notes, { bogus = 1 }, { "unknown option 'bogus'", "known: autotune_configs, budget, budgets, cmd" })
  rejected(notes, { target = 5 }, { "option 'target' must be a TPU generation name", "got 5" })
  rejected(notes, { cmd = "maxkernel-lsp" }, { "option 'cmd' must be a list of strings" })
  rejected(notes, { hosts = { "v5e" } }, { "option 'hosts' must be a list of host tables" })
  rejected(notes, { lower_on_save = "no" }, { "option 'lower_on_save' must be true or false" })
  rejected(notes, { llm = { model = 3 } }, { "option 'llm.model' must be a string, got number" })
  rejected(notes, { llm = { modle = "x" } }, { "unknown option 'llm.modle'", "known: base_url, fixture, model, provider" })
  rejected(notes, { budgets = { max_usd = "10" } }, { "option 'budgets.max_usd' must be a number, got string" })
  rejected(notes, { budget = { max_usd = 10 } }, { "unknown option 'budget.max_usd'", "known: max_cost_usd" })
  -- Keys the server never read are not options any more.
  rejected(notes, { llm = { api_key_env = "KEY" } }, { "unknown option 'llm.api_key_env'" })
  rejected(notes, { filetypes = {} }, { "option 'filetypes' must be a list of filetype names" })
  -- Every problem at once, in one message.
  rejected(notes, { bogus = 1, target = 5 }, { "unknown option 'bogus'", "option 'target'" })
  H.eq(0, vim.fn.exists("#maxkernel#FileType"), "autocmds after failed setups")
  H.eq(nil, require("maxkernel").config, "config after failed setups")

  -- Valid options: the client starts and the server uses them.
  H.setup({
    target = "v5p",
    host = "local",
    hosts = {},
    lower_on_save = false,
    llm = { provider = "openai", model = "gpt-test" },
    budget = { max_cost_usd = 5, max_iterations = 20, max_wall_seconds = 1800, target_speedup = 1.5 },
    autotune_configs = 0,
    filetypes = { "python" },
    inlay_hints = true,
    codelens = true,
  })
  local errors_before = #notes
  local path = H.repo .. "/tests/corpus/bad/mk007_vmem_4096_f32.py"
  local bufnr = H.open(path)
  local call_line
  for i, line in ipairs(vim.fn.readfile(path)) do
    if line:find("pl.pallas_call(", 1, true) then
      call_line = i - 1
    end
  end
  H.wait(10000, function()
    return hover_text(bufnr, call_line):find("target v5p", 1, true)
  end, "the hover to name target v5p")
  H.eq(errors_before, #notes, "notifications after a valid setup")

  -- A target name only the server knows is wrong: the server says so, the plugin shows it.
  vim.cmd("bwipeout!")
  H.check(require("maxkernel").setup({ cmd = { H.server }, target = "v99" }), "setup with target v99")
  H.open(H.repo .. "/tests/corpus/good/" .. vim.fn.readdir(H.repo .. "/tests/corpus/good")[1])
  H.wait(10000, function()
    return H.find(notes, function(n)
      return n.msg:find("unknown TPU generation 'v99'", 1, true)
    end)
  end, "the server's message about target v99")
end)
