-- workspace/applyEdit. An edit whose change annotation needs confirmation (the server marks its
-- proposals so: a kernel written for a reference, a step-by-step candidate, the best variant) is
-- applied only once the user picks "Apply" in vim.ui.select; "Discard" or a dismissed picker
-- answers applied = false and changes nothing. Other edits go straight to Neovim's own handler.
local hitl = require("maxkernel.hitl")

local M = {}

M.APPLY = "Apply"
M.DISCARD = "Discard"

-- The first annotation of `edit` that needs confirmation, or nil.
local function confirmation_of(edit)
  local annotations = type(edit) == "table" and edit.changeAnnotations
  if type(annotations) ~= "table" then
    return nil
  end
  for _, annotation in pairs(annotations) do
    if type(annotation) == "table" and annotation.needsConfirmation == true then
      return annotation
    end
  end
  return nil
end

local function prompt_of(result, annotation)
  local label = tostring(annotation.label or result.label or "a workspace edit")
  if not label:find("^MaxKernel") then
    label = "MaxKernel: " .. label
  end
  if type(annotation.description) == "string" and annotation.description ~= "" then
    label = label .. " (" .. annotation.description .. ")"
  end
  return (label:gsub("\r?\n", " ")) .. ". Apply it?"
end

-- The handler: (err, ApplyWorkspaceEditParams, ctx, config) -> ApplyWorkspaceEditResult.
function M.apply_edit(err, result, ctx, config)
  local annotation = result and confirmation_of(result.edit)
  if annotation then
    local choice = hitl.await(function(done)
      vim.ui.select({ M.APPLY, M.DISCARD }, { prompt = prompt_of(result, annotation), kind = "maxkernel.edit" }, function(item)
        done(item)
      end)
    end, 10 * 60 * 1000)
    if choice ~= M.APPLY then
      return { applied = false, failureReason = "not applied: the user discarded the edit" }
    end
  end
  return vim.lsp.handlers["workspace/applyEdit"](err, result, ctx, config)
end

return M
