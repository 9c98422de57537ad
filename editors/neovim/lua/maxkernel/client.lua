-- Starts the maxkernel-lsp client the way each Neovim version allows and wires its handlers:
-- 0.11+ vim.lsp.config + vim.lsp.enable, 0.8+ vim.lsp.start, 0.7 start_client + buf_attach_client.
local compat = require("maxkernel.compat")
local config_mod = require("maxkernel.config")
local edits = require("maxkernel.edits")
local hitl = require("maxkernel.hitl")
local progress = require("maxkernel.progress")

local M = {}

M.name = "maxkernel"

local clients_by_root = {} -- 0.7 only: root folder -> client id
local augroup = nil

-- The plugin's own folder (editors/neovim), from this file's path.
local function plugin_root()
  local source = debug.getinfo(1, "S").source:gsub("^@", "")
  return vim.fn.fnamemodify(source, ":p:h:h:h")
end

-- The server command: setup's `cmd`, else $MAXKERNEL_LSP, else maxkernel-lsp on PATH, else the
-- binary a build of this repository left in build/bin (or build-main/bin).
function M.resolve_cmd(config)
  if config.cmd then
    return config.cmd
  end
  local env = vim.env.MAXKERNEL_LSP
  if env and env ~= "" then
    return { env }
  end
  local on_path = vim.fn.exepath("maxkernel-lsp")
  if on_path ~= "" then
    return { on_path }
  end
  -- build/ of the tests, or build-main/ that scripts/demo.sh builds.
  for _, dir in ipairs({ "build", "build-main" }) do
    local built = plugin_root() .. "/../../" .. dir .. "/bin/maxkernel-lsp"
    if vim.fn.executable(built) == 1 then
      return { vim.fn.fnamemodify(built, ":p") }
    end
  end
  return { "maxkernel-lsp" }
end

-- 0.12+ keeps lenses current itself once enabled (vim.lsp.codelens.enable).
local lens_auto = vim.lsp.codelens.enable ~= nil

local function refresh_codelens(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if lens_auto then
    vim.lsp.codelens.enable(true, { bufnr = bufnr })
  elseif compat.has_010 then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  elseif bufnr == vim.api.nvim_get_current_buf() then
    vim.lsp.codelens.refresh()
  end
end

local function attached_buffers(client)
  local buffers = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      for _, c in ipairs(compat.clients(bufnr, M.name)) do
        if c.id == client.id then
          buffers[#buffers + 1] = bufnr
        end
      end
    end
  end
  return buffers
end

local level_of_message_type = {
  [1] = vim.log.levels.ERROR,
  [2] = vim.log.levels.WARN,
  [3] = vim.log.levels.INFO,
  [4] = vim.log.levels.DEBUG,
}

local function handlers(config)
  local default_progress = vim.lsp.handlers["$/progress"]
  local list = {
    ["window/showMessageRequest"] = hitl.show_message_request,
    ["workspace/applyEdit"] = edits.apply_edit,
    ["window/showMessage"] = function(_, result)
      if result and result.message then
        vim.notify(result.message, level_of_message_type[result.type] or vim.log.levels.INFO)
      end
      return vim.NIL
    end,
    ["$/progress"] = function(err, result, ctx, handler_config)
      if default_progress then
        pcall(default_progress, err, result, ctx, handler_config)
      end
      if result then
        progress.handle(result.token, result.value)
        if type(result.value) == "table" and result.value.kind == "end" then
          local client = vim.lsp.get_client_by_id(ctx.client_id)
          if client and config.codelens and not lens_auto then
            for _, bufnr in ipairs(attached_buffers(client)) do
              refresh_codelens(bufnr)
            end
          end
          if result.value.message and result.value.message ~= "" then
            vim.notify(result.value.message, vim.log.levels.INFO)
          end
        end
      end
      vim.cmd("redrawstatus")
    end,
    -- Before 0.12 the lens cache is refreshed by hand; 0.12's own handler does it.
    ["workspace/codeLens/refresh"] = not lens_auto and function(_, _, ctx)
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if client and config.codelens then
        vim.schedule(function()
          for _, bufnr in ipairs(attached_buffers(client)) do
            refresh_codelens(bufnr)
          end
        end)
      end
      return vim.NIL
    end or nil,
  }
  return list
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.window = caps.window or {}
  caps.window.showMessage = { messageActionItem = { additionalPropertiesSupport = true } }
  caps.workspace = caps.workspace or {}
  caps.workspace.configuration = true
  caps.workspace.codeLens = { refreshSupport = true }
  -- Neovim applies versioned edits (documentChanges) on 0.7 too but does not say so; the server
  -- sends its proposals (a written kernel, a HITL candidate) only to a client that does.
  -- Annotations that need confirmation are asked about (maxkernel.edits).
  caps.workspace.workspaceEdit = vim.tbl_extend("force", caps.workspace.workspaceEdit or {}, {
    documentChanges = true,
    changeAnnotationSupport = { groupsOnLabel = false },
  })
  return caps
end

local function on_attach(config)
  return function(client, bufnr)
    if config.inlay_hints and compat.has_010 and vim.lsp.inlay_hint then
      pcall(vim.lsp.inlay_hint.enable, true, { bufnr = bufnr })
    end
    if config.codelens and lens_auto then
      refresh_codelens(bufnr)
    elseif config.codelens then
      vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
        group = augroup,
        buffer = bufnr,
        callback = function(args)
          refresh_codelens(args.buf)
        end,
      })
      refresh_codelens(bufnr)
    end
    if config.on_attach then
      config.on_attach(client, bufnr)
    end
  end
end

-- The client configuration shared by every start path.
local function client_config(config, root_dir)
  local settings = config_mod.server_settings(config)
  return {
    name = M.name,
    cmd = M.resolve_cmd(config),
    root_dir = root_dir,
    settings = { maxkernel = settings },
    init_options = settings,
    handlers = handlers(config),
    capabilities = capabilities(),
    on_attach = on_attach(config),
  }
end

local function root_for(bufnr, config)
  local file = vim.api.nvim_buf_get_name(bufnr)
  if file == "" then
    return (vim.uv or vim.loop).cwd()
  end
  return compat.find_root(file, config.root_markers) or vim.fn.fnamemodify(file, ":p:h")
end

-- Attaches (starting when needed) the client to one buffer; 0.8-0.10 and 0.7.
local function attach(bufnr, config)
  if vim.bo[bufnr].buftype ~= "" then
    return
  end
  local root = root_for(bufnr, config)
  if compat.has_08 then
    vim.lsp.start(client_config(config, root), { bufnr = bufnr })
    return
  end
  local id = clients_by_root[root]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(client_config(config, root))
    if not id then
      vim.notify("MaxKernel: could not start " .. table.concat(M.resolve_cmd(config), " "), vim.log.levels.ERROR)
      return
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

local function all_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ name = M.name })
  end
  return vim.tbl_filter(function(c)
    return c.name == M.name
  end, vim.lsp.get_active_clients())
end

-- A second setup(): running clients with the same command get the new settings (the server pulls
-- them on didChangeConfiguration); a different command means a fresh server.
local function update_running(config)
  local cmd = M.resolve_cmd(config)
  for _, client in ipairs(all_clients()) do
    if vim.deep_equal(client.config.cmd, cmd) then
      local settings = { maxkernel = config_mod.server_settings(config) }
      client.config.settings = settings -- read by 0.7's workspace/configuration handler
      client.settings = settings -- and by 0.10's
      compat.notify(client, "workspace/didChangeConfiguration", { settings = settings })
    else
      vim.lsp.stop_client(client.id)
      clients_by_root = {}
    end
  end
end

-- The configuration vim.lsp.config takes (0.11+): the client's, found by filetype and root
-- markers. With no `config`, the defaults: what lsp/maxkernel.lua gives `vim.lsp.enable`.
function M.lsp_config(config)
  config = config or config_mod.resolve({})
  local c = client_config(config, nil)
  c.root_dir = nil
  c.root_markers = config.root_markers
  c.filetypes = config.filetypes
  return c
end

function M.start(config)
  update_running(config)
  augroup = vim.api.nvim_create_augroup("maxkernel", { clear = true })
  if compat.has_011 then
    vim.lsp.config(M.name, M.lsp_config(config))
    vim.lsp.enable(M.name)
    return
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = augroup,
    pattern = config.filetypes,
    callback = function(args)
      attach(args.buf, config)
    end,
  })
  -- Buffers opened before setup() ran.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(config.filetypes, vim.bo[bufnr].filetype) then
      attach(bufnr, config)
    end
  end
end

-- The client attached to `bufnr` (0 = current), or nil.
function M.get(bufnr)
  return compat.clients(bufnr or 0, M.name)[1]
end

return M
