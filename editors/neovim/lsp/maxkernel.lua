-- Neovim 0.11+: the configuration `vim.lsp.enable("maxkernel")` starts when the plugin is on the
-- runtimepath and setup() was not called: the plugin's defaults (server from $MAXKERNEL_LSP,
-- PATH or this checkout's build; Python files; the usual root markers). setup(opts) replaces it.
return require("maxkernel.client").lsp_config()
