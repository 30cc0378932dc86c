--- The hunks of `:TunaChanges` (tunacode://changes, the session's diffs): `]x` / `[x` go to
--- the next / previous hunk, `ga` accepts the hunk under the cursor (it stays; the cursor
--- moves on), `gr` rejects it: its lines go back to what they were in the file (the buffer of
--- the file, written when it held no unsaved edits of yours; refused, with a notice, when the
--- file no longer has the hunk's lines). The changed files also fill the quickfix list
--- (`:copen`), each at its first hunk.

local K = {}

local ns = vim.api.nvim_create_namespace('tunacode.hunks')

--- The quickfix items of a `tunacode.changes` result: each file at its first changed line.
---@param result table {files: [{path, status, diff}]}
---@param root string
---@return table[]
function K.quickfix_items(result, root)
  local items = {}
  for _, file in ipairs(type(result.files) == 'table' and result.files or {}) do
    local diff = type(file.diff) == 'string' and file.diff or ''
    local header = diff:match('\n(@@[^\n]*@@)') or diff:match('^(@@[^\n]*@@)')
    local lnum = header and tonumber(header:match('%+(%d+)')) or 1
    local path = tostring(file.path)
    table.insert(items, {
      filename = path:sub(1, 1) == '/' and path or vim.fs.joinpath(root, path),
      lnum = math.max(lnum, 1),
      text = ('%s%s'):format(file.status or 'modified', header and (' ' .. header) or ''),
    })
  end
  return items
end

--- The hunk under the cursor of the changes buffer: its file, header row and old/new lines.
---@param buf integer
---@param row integer 1-based cursor row
---@return table?
function K.at(buf, row)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local start
  for r = row, 1, -1 do
    if lines[r]:match('^@@ ') then
      start = r
      break
    elseif lines[r]:match('^diff %-%-tunacode ') then
      return nil
    end
  end
  if not start then
    return nil
  end
  local path
  for r = start, 1, -1 do
    path = lines[r]:match('^diff %-%-tunacode (.-) %(%w+%)$')
    if path then
      break
    end
  end
  local new_start, new_count = lines[start]:match('^@@ %-%d+,?%d* %+(%d+),?(%d*) @@')
  if not (path and new_start) then
    return nil
  end
  local old, new = {}, {}
  for r = start + 1, #lines do
    local line = lines[r]
    if line:match('^@@ ') or line:match('^diff %-%-tunacode ') then
      break
    end
    local mark, text = line:sub(1, 1), line:sub(2)
    if mark == ' ' or mark == '-' then
      table.insert(old, text)
    end
    if mark == ' ' or mark == '+' then
      table.insert(new, text)
    end
  end
  return { path = path, row = start, new_start = tonumber(new_start), new_count = tonumber(new_count) or 1,
    old = old, new = new }
end

--- Move to the next (1) or previous (-1) hunk.
---@param direction integer
function K.jump(direction)
  vim.fn.search('^@@ ', direction > 0 and 'W' or 'bW')
end

local function mark(buf, row, text, group)
  vim.api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { virt_text = { { text, group } }, virt_text_pos = 'eol' })
end

--- ga: keep the hunk under the cursor and go to the next one.
---@param buf integer
function K.accept(buf)
  local hunk = K.at(buf, vim.api.nvim_win_get_cursor(0)[1])
  if not hunk then
    return
  end
  mark(buf, hunk.row, 'accepted', 'DiagnosticOk')
  vim.api.nvim_win_set_cursor(0, { hunk.row, 0 })
  K.jump(1)
end

--- gr: put the hunk's old lines back in its file (through the file's buffer).
---@param buf integer
---@param root string
---@return boolean rejected
function K.reject(buf, root)
  local hunk = K.at(buf, vim.api.nvim_win_get_cursor(0)[1])
  if not hunk then
    vim.notify('TunaCode: no hunk under the cursor', vim.log.levels.WARN)
    return false
  end
  local file = hunk.path:sub(1, 1) == '/' and hunk.path or vim.fs.joinpath(root, hunk.path)
  local target = vim.fn.bufadd(file)
  vim.fn.bufload(target)
  local first = #hunk.new == 0 and hunk.new_start or hunk.new_start - 1 -- an empty side names the line before
  local now = vim.api.nvim_buf_get_lines(target, first, first + #hunk.new, false)
  if not vim.deep_equal(now, hunk.new) then
    vim.notify(('TunaCode: %s no longer has this hunk\'s lines; nothing rejected'):format(hunk.path), vim.log.levels.WARN)
    return false
  end
  local unsaved = vim.bo[target].modified
  vim.api.nvim_buf_set_lines(target, first, first + #hunk.new, false, hunk.old)
  if not unsaved then
    vim.api.nvim_buf_call(target, function()
      vim.cmd('silent noautocmd write')
    end)
  end
  mark(buf, hunk.row, unsaved and 'rejected (in the buffer, unsaved)' or 'rejected', 'DiagnosticWarn')
  return true
end

--- The maps of the changes buffer.
---@param buf integer
---@param root string
function K.attach(buf, root)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, desc = 'TunaCode: ' .. desc })
  end
  map(']x', function()
    K.jump(1)
  end, 'next hunk')
  map('[x', function()
    K.jump(-1)
  end, 'previous hunk')
  map('ga', function()
    K.accept(buf)
  end, 'accept the hunk')
  map('gr', function()
    K.reject(buf, root)
  end, 'reject the hunk (its lines go back in the file)')
end

return K
