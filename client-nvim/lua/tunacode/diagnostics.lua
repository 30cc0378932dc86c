--- Diagnostics for the agent, as LSP diagnostics (vim.lsp.diagnostic.from):
--- - the `tunacode/diagnostics {uris}` request -> `{items: [{uri, diagnostics}]}` (advertised as
---   `experimental.tunacode.diagnostics`): what Neovim knows of each loaded file, from every
---   source (other language servers, linters);
--- - `diagnostic` context items for the lines a question is about (`:'<,'>TunaAsk`).

local D = {}

--- At most this many diagnostic context items go with one question.
D.max_context = 20

---@param uri string
---@return integer? buf
function D.loaded_buffer(uri)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.uri_from_bufnr(buf) == uri then
      return buf
    end
  end
  return nil
end

---@param diagnostics vim.Diagnostic[]
---@return lsp.Diagnostic[]
local function to_lsp(diagnostics)
  local items = vim.lsp.diagnostic.from(diagnostics)
  for _, item in ipairs(items) do
    local range = item.range
    if range and range.start and range['end'].line == nil then
      range['end'] = vim.deepcopy(range.start)
    end
    if item.tags and #item.tags == 0 then
      item.tags = nil -- an empty table would go out as []: fine, but say nothing instead
    end
  end
  return items
end

---@param uris string[]
---@return table[] items
function D.collect(uris)
  local items = {}
  for _, uri in ipairs(uris) do
    local buf = type(uri) == 'string' and D.loaded_buffer(uri)
    if buf then
      table.insert(items, { uri = uri, diagnostics = to_lsp(vim.diagnostic.get(buf)) })
    end
  end
  return items
end

--- The `tunacode/diagnostics` request handler.
function D.handler(_, params, _)
  local uris = type(params) == 'table' and type(params.uris) == 'table' and params.uris or {}
  return { items = D.collect(uris) }
end

--- Context items for the diagnostics on lines line1..line2 (1-based) of a buffer.
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return table[]
function D.context(buf, line1, line2)
  local inside = vim.tbl_filter(function(d)
    return d.lnum >= line1 - 1 and d.lnum <= line2 - 1
  end, vim.diagnostic.get(buf))
  table.sort(inside, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  local uri = vim.uri_from_bufnr(buf)
  local items = {}
  for _, d in ipairs(to_lsp(vim.list_slice(inside, 1, D.max_context))) do
    table.insert(items, {
      type = 'diagnostic', uri = uri, range = d.range, message = d.message,
      severity = d.severity, source = d.source, code = d.code,
    })
  end
  return items
end

return D
