-- doc/maxkernel.txt is valid help: :helptags accepts it (no duplicate or missing tags), every
-- user command the plugin defines has a tag, and :help finds the pages.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

H.run("doc", function()
  -- A copy, so that :helptags does not write a tags file into the repository.
  local doc = H.tmp .. "/plugin/doc"
  vim.fn.mkdir(doc, "p")
  vim.fn.writefile(vim.fn.readfile(H.repo .. "/editors/neovim/doc/maxkernel.txt"), doc .. "/maxkernel.txt")
  vim.cmd("helptags " .. vim.fn.fnameescape(doc))
  local errors = vim.v.errmsg
  H.eq("", errors, "helptags errors")
  local tags = {}
  for _, line in ipairs(vim.fn.readfile(doc .. "/tags")) do
    tags[line:match("^[^\t]+")] = true
  end
  for _, entry in ipairs(require("maxkernel.commands").list) do
    H.check(tags[":" .. entry.user], "no help tag for :%s", entry.user)
  end
  for _, tag in ipairs({ "maxkernel.txt", ":MaxKernelSessions", ":MaxKernelWriteKernel", "maxkernel-edits", "maxkernel-hitl", "maxkernel-statusline",
    "maxkernel.setup()", "maxkernel-health", "maxkernel-option-llm" }) do
    H.check(tags[tag], "no help tag %s", tag)
  end
  vim.opt.runtimepath:prepend(H.tmp .. "/plugin")
  -- Debian's Neovim 0.12 packages ship no vimdoc parser, which help's ftplugin starts: there the
  -- jump is checked without the FileType autocommands.
  local has_parser = true
  if vim.fn.has("nvim-0.11") == 1 then
    local ok, added = pcall(vim.treesitter.language.add, "vimdoc")
    has_parser = ok and added == true
  end
  vim.cmd((has_parser and "" or "noautocmd ") .. "help maxkernel-hitl")
  H.check(vim.api.nvim_get_current_line():find("maxkernel-hitl", 1, true), "help jumped to %q", vim.api.nvim_get_current_line())
end)
