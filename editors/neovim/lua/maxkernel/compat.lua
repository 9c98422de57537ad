-- The few LSP calls whose shape changed between Neovim 0.7 and 0.11, behind one name each.
local M = {}

M.has_011 = vim.fn.has("nvim-0.11") == 1
M.has_010 = vim.fn.has("nvim-0.10") == 1
M.has_08 = vim.fn.has("nvim-0.8") == 1

-- Clients attached to a buffer (0 = current) with the given name.
function M.clients(bufnr, name)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local found = {}
  if vim.lsp.get_clients then
    found = vim.lsp.get_clients({ bufnr = bufnr, name = name })
  else
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if client.name == name then
        found[#found + 1] = client
      end
    end
  end
  return found
end

-- 0.11 made request/notify methods (client:request); earlier versions take a plain call.
local function call(client, name, ...)
  if M.has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

function M.request(client, method, params, handler, bufnr)
  return call(client, "request", method, params, handler, bufnr)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  return call(client, "request_sync", method, params, timeout_ms, bufnr)
end

function M.notify(client, method, params)
  return call(client, "notify", method, params)
end

-- Searches upward from `path` for any of `markers`; returns the folder holding it, or nil.
function M.find_root(path, markers)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while dir and dir ~= "" do
    for _, marker in ipairs(markers) do
      if (vim.uv or vim.loop).fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
  return nil
end

return M
