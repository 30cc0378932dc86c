--- `tunacode/saveDocuments {uris}` -> `{saved}`: the server applied the agent's edit to open
--- documents through workspace/applyEdit and asks the editor to save them, so the file on
--- disk is what the buffer shows (no stale buffer, no W12 against the user's own edit).
--- Each listed buffer that is loaded is written silently, without autocommands (a
--- formatter on BufWritePre must not change the agent's edit behind its back); a URI with no
--- loaded buffer is left out of `saved`.

local S = {}

-- by URI, not vim.fn.bufnr(name), which reads the name as a pattern
local loaded_buffer = require('tunacode.diagnostics').loaded_buffer

---@param uris string[]
---@return string[] saved
function S.save(uris)
  local saved = {}
  for _, uri in ipairs(uris) do
    local buf = type(uri) == 'string' and loaded_buffer(uri)
    if buf then
      -- write!: the file may have changed on disk since it was read; the buffer is newer
      local ok = pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('silent noautocmd write!')
      end)
      if ok and not vim.bo[buf].modified then
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
