-- editors/neovim/lsp/maxkernel.lua, the configuration `vim.lsp.enable("maxkernel")` finds on the
-- runtimepath (0.11+), with no setup() call: on 0.11+ enabling it alone starts the server on a
-- Python file; on 0.8-0.10 the same table given to vim.lsp.start does; on 0.7 it has the shape.
local H = dofile(vim.env.MAXKERNEL_TEST_DIR .. "/helpers.lua")

H.run("lsp_config", function()
  local config = dofile(H.repo .. "/editors/neovim/lsp/maxkernel.lua")
  H.eq("maxkernel", config.name, "name")
  H.eq({ H.server }, config.cmd, "cmd from $MAXKERNEL_LSP")
  H.eq({ "python" }, config.filetypes, "filetypes")
  H.check(vim.tbl_contains(config.root_markers, "pyproject.toml"), "root markers: %s", vim.inspect(config.root_markers))
  H.check(config.handlers["window/showMessageRequest"], "the HITL handler is in the configuration")
  if vim.fn.has("nvim-0.8") == 0 then
    return
  end
  local bad = H.repo .. "/tests/corpus/bad/mk001_matmul_block_tiling.py"
  if vim.lsp.enable and vim.lsp.config then
    vim.lsp.enable("maxkernel") -- finds lsp/maxkernel.lua on the runtimepath itself
    vim.cmd("edit " .. vim.fn.fnameescape(bad))
  else
    vim.cmd("edit " .. vim.fn.fnameescape(bad))
    config.root_dir = H.repo
    vim.lsp.start(config, { bufnr = vim.api.nvim_get_current_buf() })
  end
  local bufnr = vim.api.nvim_get_current_buf()
  H.wait(15000, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == "MK001" then
        return true
      end
    end
  end, "the MK001 diagnostic from a server started by the lsp/ configuration")
end)
