--- The chat input and what a prompt names.
---
--- `:TunaChat` opens the answer buffer with an input buffer (`tunacode://input`) below it:
--- type any number of lines, then `<CR>` in normal mode or `<C-s>` (normal or insert mode)
--- sends them as one prompt and empties the input. In a prompt (there or in :TunaAsk)
--- `#buffer` sends the file buffer you came from as a `file` context item, `#selection` its
--- last visual selection as a `selection` item, and `@path` a file of the workspace as a
--- `file` item (an `@word` that names no file stays plain text); the words stay in the prompt. Completion: `@` completes file names, `/` the
--- prompt commands, `#` the two names (the input's omnifunc, <C-x><C-o>; :TunaAsk's <Tab>).

local C = {}

local INPUT = 'tunacode://input'

C.source_buf = nil ---@type integer? the file buffer the user came from

--- A file buffer: a real file, not the answer, the input or a scratch buffer.
---@param buf integer?
---@return boolean
local function file_buffer(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == ''
    and vim.api.nvim_buf_get_name(buf) ~= ''
end

--- The file buffer `#buffer` and `#selection` mean: the current one, else the one the user was
--- in when the input opened, else the alternate window's.
---@return integer?
function C.source()
  local current = vim.api.nvim_get_current_buf()
  if file_buffer(current) then
    return current
  end
  if file_buffer(C.source_buf) then
    return C.source_buf
  end
  local alt = vim.fn.winnr('#') > 0 and vim.fn.winbufnr(vim.fn.winnr('#')) or -1
  return file_buffer(alt) and alt or nil
end

--- The context items a prompt names (`#buffer`, `#selection`, `@path`).
---@param prompt string
---@param range_context fun(buf: integer, line1: integer, line2: integer): table[]
---@return table[] items
---@return string[] problems what a named item could not be (no buffer, no selection)
function C.context(prompt, range_context)
  local items, problems = {}, {}
  local padded = ' ' .. prompt .. ' '
  local buf = C.source()
  if padded:find('%s#buffer%f[%s%p]') then
    if buf then
      table.insert(items, { type = 'file', uri = vim.uri_from_bufnr(buf) })
    else
      table.insert(problems, '#buffer: no file buffer')
    end
  end
  if padded:find('%s#selection%f[%s%p]') then
    local first = buf and vim.api.nvim_buf_get_mark(buf, '<')[1] or 0
    local last = buf and vim.api.nvim_buf_get_mark(buf, '>')[1] or 0
    if buf and first > 0 and last >= first then
      table.insert(items, range_context(buf, first, last)[1])
    else
      table.insert(problems, '#selection: no selection')
    end
  end
  for path in padded:gmatch('%s@([^%s]+)') do
    path = path:gsub('[,.;:!?)]+$', '')
    local file = vim.fn.fnamemodify(path, ':p')
    if vim.fn.filereadable(file) == 1 then -- else plain text (`@property`, a handle)
      table.insert(items, { type = 'file', uri = vim.uri_from_fname(file) })
    end
  end
  return items, problems
end

--- Completion of the word being typed: `@file`, `/command`, `#buffer` / `#selection`.
---@param word string the word before the cursor
---@param commands table[] the prompt commands ({name})
---@return string[]
function C.complete(word, commands)
  local found = {}
  local sigil, rest = word:sub(1, 1), word:sub(2)
  if sigil == '@' then
    for _, file in ipairs(vim.fn.getcompletion(rest, 'file')) do
      table.insert(found, '@' .. file)
    end
  elseif sigil == '/' then
    for _, c in ipairs(commands) do
      if type(c.name) == 'string' and c.name:lower():sub(1, #rest) == rest:lower() then
        table.insert(found, '/' .. c.name)
      end
    end
    table.sort(found)
  elseif sigil == '#' then
    for _, name in ipairs({ '#buffer', '#selection' }) do
      if name:sub(1, #word) == word then
        table.insert(found, name)
      end
    end
  end
  return found
end

--- The input buffer's omnifunc (see :h complete-functions).
function C.omnifunc(findstart, base)
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  if findstart == 1 then
    local start = col
    while start > 0 and not line:sub(start, start):match('%s') do
      start = start - 1
    end
    return start
  end
  return C.complete(base, require('tunacode').prompt_commands())
end

--- Send the input buffer's text as one prompt and empty it.
---@param buf integer
function C.send(buf)
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
  if text == '' then
    return
  end
  local tunacode = require('tunacode')
  if tunacode.state.busy then
    vim.notify('TunaCode: a request is running; your text stays here', vim.log.levels.WARN)
    return
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  tunacode.ask(text)
end

---@return integer buf
function C.input()
  local buf = vim.fn.bufnr(INPUT)
  if buf ~= -1 then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, INPUT)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].omnifunc = "v:lua.require'tunacode.chat'.omnifunc"
  local function send()
    C.send(buf)
  end
  vim.keymap.set('n', '<CR>', send, { buffer = buf, desc = 'TunaCode: send the input' })
  vim.keymap.set({ 'n', 'i' }, '<C-s>', send, { buffer = buf, desc = 'TunaCode: send the input' })
  return buf
end

--- :TunaChat: the answer buffer and, below it, the input (focused).
function C.open()
  local current = vim.api.nvim_get_current_buf()
  if file_buffer(current) then
    C.source_buf = current
  end
  local view = require('tunacode.view')
  view.show()
  local buf = C.input()
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.api.nvim_set_current_win(vim.fn.bufwinid(view.buffer()))
    vim.cmd('belowright 6split')
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
end

return C
