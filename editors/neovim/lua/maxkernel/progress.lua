-- $/progress from the server, kept per token so the statusline can show what runs right now.
local M = {}

local active = {} -- token -> { title, message, percentage }
local order = {} -- tokens in the order they began
local listeners = {}

local function key(token)
  return type(token) == "string" and token or vim.inspect(token)
end

-- Called with (token, value, kind) whenever a report arrives; returns a function that removes it.
function M.on_change(listener)
  listeners[#listeners + 1] = listener
  return function()
    for i, l in ipairs(listeners) do
      if l == listener then
        table.remove(listeners, i)
        return
      end
    end
  end
end

function M.handle(token, value)
  if type(value) ~= "table" then
    return
  end
  local k = key(token)
  if value.kind == "begin" then
    active[k] = { title = value.title or "", message = value.message, percentage = value.percentage }
    order[#order + 1] = k
  elseif value.kind == "report" and active[k] then
    active[k].message = value.message or active[k].message
    active[k].percentage = value.percentage or active[k].percentage
  elseif value.kind == "end" then
    active[k] = nil
    for i, t in ipairs(order) do
      if t == k then
        table.remove(order, i)
        break
      end
    end
  end
  for _, listener in ipairs(listeners) do
    pcall(listener, token, value)
  end
end

function M.is_active(token)
  return active[key(token)] ~= nil
end

function M.active_tokens()
  return vim.deepcopy(order)
end

-- The newest running job, e.g. "MaxKernel: Test softmax_kernel: evaluate (40%) +1".
function M.statusline()
  local newest = order[#order]
  if not newest then
    return ""
  end
  local p = active[newest]
  local text = p.title
  if p.message and p.message ~= "" then
    text = text .. ": " .. p.message
  end
  if p.percentage then
    text = text .. string.format(" (%d%%)", p.percentage)
  end
  if #order > 1 then
    text = text .. string.format(" +%d", #order - 1)
  end
  return text
end

function M.reset()
  active, order = {}, {}
end

return M
