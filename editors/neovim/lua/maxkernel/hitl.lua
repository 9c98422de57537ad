-- window/showMessageRequest answered through vim.ui.select (and vim.ui.input for feedback).
-- An action the server marks with `"feedback": true` asks for text; the answer is the action
-- with `feedback` set to that text. Dismissing a prompt answers null.
local M = {}

-- Runs `ask(done)` and returns what `done` was called with (also used by maxkernel.edits). Inside a coroutine (0.10+ runs
-- server requests in one) it yields so a truly asynchronous vim.ui.select works; on 0.7 it
-- waits on the event loop instead.
function M.await(ask, timeout_ms)
  local co = coroutine.running()
  local is_main = co == nil or (select(2, coroutine.running()) == true)
  if co and not is_main then
    local finished, answer, resumed = false, nil, false
    ask(function(value)
      finished, answer = true, value
      if resumed then
        vim.schedule(function()
          coroutine.resume(co)
        end)
      end
    end)
    if not finished then
      resumed = true
      coroutine.yield()
    end
    return answer
  end
  local finished, answer = false, nil
  ask(function(value)
    finished, answer = true, value
  end)
  vim.wait(timeout_ms, function()
    return finished
  end, 50)
  return answer
end

local function title_of(action)
  return (tostring(action.title):gsub("\r?\n", " "))
end

-- The handler: (err, result, ctx, config) -> MessageActionItem or vim.NIL.
function M.show_message_request(_, result, _, _)
  local actions = (result and result.actions) or {}
  if #actions == 0 then
    vim.notify("MaxKernel: " .. tostring(result and result.message or ""), vim.log.levels.INFO)
    return vim.NIL
  end
  local wait_ms = 10 * 60 * 1000
  local choice = M.await(function(done)
    vim.ui.select(actions, {
      prompt = "MaxKernel: " .. tostring(result.message or ""),
      format_item = title_of,
      kind = "maxkernel.hitl",
    }, function(item)
      done(item)
    end)
  end, wait_ms)
  if choice == nil then
    return vim.NIL
  end
  if choice.feedback == true then
    local text = M.await(function(done)
      vim.ui.input({ prompt = title_of(choice) .. ": " }, function(input)
        done(input)
      end)
    end, wait_ms)
    if text == nil then
      return vim.NIL
    end
    local answer = vim.deepcopy(choice)
    answer.feedback = text
    return answer
  end
  return choice
end

return M
