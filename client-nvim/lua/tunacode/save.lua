--- The agent's edits of open buffers:
--- - `workspace/applyEdit` (the server edits a document the client has open): applied as
---   Neovim applies it (vim.lsp.util.apply_workspace_edit; one undo step), without the
---   built-in handler's `Workspace edit TunaCode` print; each buffer that was unmodified
---   before the edit is remembered as the agent's to save;
--- - `tunacode/saveDocuments {uris}` -> `{saved}`: the server asks to save the documents it
---   edited, so the file on disk is what the buffer shows (no stale buffer, no W12). Each
---   listed buffer is written silently and without autocommands (a formatter on BufWritePre
---   must not change the agent's edit behind its back), but only a buffer the agent edited
---   while it held no unsaved change of the user's: the user's own unsaved edits are never
---   written behind their back, whatever the server asks. Others are left out of `saved`.

local S = {}

-- by URI, not vim.fn.bufnr(name), which reads the name as a pattern
local loaded_buffer = require('tunacode.diagnostics').loaded_buffer

--- Buffers the agent's applyEdit changed while they had no unsaved change of the user's
--- (until they are written or unloaded).
---@type table<integer, true>
S.agent_edited = {}

local group = vim.api.nvim_create_augroup('tunacode_save', { clear = true })
vim.api.nvim_create_autocmd({ 'BufWritePost', 'BufUnload' }, {
  group = group,
  desc = "TunaCode: a written or unloaded buffer is no longer the agent's to save",
  callback = function(ev)
    S.agent_edited[ev.buf] = nil
  end,
})

---@param edit table lsp.WorkspaceEdit
---@return string[] uris of the documents it edits
local function edited_uris(edit)
  local uris = {}
  for _, change in ipairs(type(edit.documentChanges) == 'table' and edit.documentChanges or {}) do
    if type(change) == 'table' and change.kind == nil and type(change.textDocument) == 'table' then
      if change.textDocument.version == vim.NIL then
        change.textDocument.version = nil -- `null` is valid LSP; Neovim 0.11 would compare it to a number
      end
      table.insert(uris, change.textDocument.uri)
    end
  end
  for uri in pairs(type(edit.changes) == 'table' and edit.changes or {}) do
    table.insert(uris, uri)
  end
  return uris
end

--- The `workspace/applyEdit` request handler of the TunaCode client.
function S.apply_edit(_, params, ctx)
  if type(params) ~= 'table' or type(params.edit) ~= 'table' then
    return { applied = false, failureReason = 'workspace/applyEdit without an edit' }
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local clean = {} ---@type table<string, boolean>
  for _, uri in ipairs(edited_uris(params.edit)) do
    local buf = type(uri) == 'string' and loaded_buffer(uri)
    clean[uri] = not (buf and vim.bo[buf].modified)
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, client and client.offset_encoding or 'utf-16')
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end
  for uri, was_clean in pairs(clean) do
    local buf = loaded_buffer(uri)
    if buf and was_clean then
      S.agent_edited[buf] = true
    end
  end
  return { applied = true }
end

---@param uris string[]
---@return string[] saved
function S.save(uris)
  local saved = {}
  for _, uri in ipairs(uris) do
    local buf = type(uri) == 'string' and loaded_buffer(uri)
    if buf and S.agent_edited[buf] then
      -- write!: the file may have changed on disk since it was read; the buffer is newer
      local ok = pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('silent noautocmd write!')
      end)
      if ok and not vim.bo[buf].modified then
        S.agent_edited[buf] = nil
        table.insert(saved, uri)
      end
    end
  end
  return saved
end

--- The `tunacode/saveDocuments` request handler.
function S.handler(_, params, _)
  local uris = type(params) == 'table' and type(params.uris) == 'table' and params.uris or {}
  return { saved = S.save(uris) }
end

return S
