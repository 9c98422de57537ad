-- Defines the :MaxKernel* commands; the client starts only when require("maxkernel").setup() runs.
if vim.g.loaded_maxkernel then
  return
end
vim.g.loaded_maxkernel = true
if vim.fn.has("nvim-0.7") == 0 then
  vim.api.nvim_err_writeln("maxkernel: needs Neovim 0.7 or newer")
  return
end
require("maxkernel.commands").create_user_commands()
