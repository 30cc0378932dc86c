--- The answer buffer: one scratch buffer (`tunacode://answer`) that requests stream into.
---
--- Text deltas are appended at the end as they arrive; each tool call gets one line (the
--- server's `title`) that is rewritten in place when the call ends (an extmark keeps its
--- place). A finished bash call gets its exit code (the update's `exitCode`) on that line
--- and its output below it, in a bounded ```output block that folds (zc / zo; the window's
--- foldexpr is V.foldexpr). The model's thinking is a ```thinking block that folds, closed,
--- once the model moves on (zo opens it). A resumed session is the server's events of its requests
--- (`tunacode.session.get {events: true}`) rendered by the same V.event: no stored message
--- is read here.

local V = {}

local NAME = 'tunacode://answer'
local ns = vim.api.nvim_create_namespace('tunacode')
local ns_output = vim.api.nvim_create_namespace('tunacode.output')
local ns_plan = vim.api.nvim_create_namespace('tunacode.plan')
local plan_mark = nil ---@type integer? the current request's plan section
local thinking_row = nil ---@type integer? the open ```thinking block's first line (0-based)

--- At most this many lines of a command's output are shown (the server sends a preview).
V.output_lines = 20

V.buf = nil ---@type integer?
local tool_marks = {} ---@type table<string, {mark: integer, label: string}>

---@return integer
function V.buffer()
  if V.buf and vim.api.nvim_buf_is_valid(V.buf) then
    return V.buf
  end
  local buf = vim.fn.bufnr(NAME)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, NAME)
    -- output blocks fold in any window that shows the buffer, however it was opened
    vim.api.nvim_create_autocmd('BufWinEnter', {
      buffer = buf,
      callback = function()
        V.set_folding(0)
      end,
    })
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  V.buf = buf
  return buf
end

--- Show the buffer in a split at the bottom, unless a window shows it already.
function V.show()
  local buf = V.buffer()
  if vim.fn.bufwinid(buf) == -1 then
    local current = vim.api.nvim_get_current_win()
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
    V.set_folding(0) -- BufWinEnter does not fire inside an autocommand; set it here too
    vim.api.nvim_set_current_win(current)
  end
end

--- Output blocks fold in this window; they start open.
---@param win integer
function V.set_folding(win)
  vim.wo[win][0].foldmethod = 'expr'
  vim.wo[win][0].foldexpr = "v:lua.require'tunacode.view'.foldexpr(v:lnum)"
  vim.wo[win][0].foldlevel = 99
end

--- Fold level of a line of the answer buffer: an output block (from its ```output line to
--- the closing fence that its extmark names) is a fold; the agent's own code blocks are not.
---@param lnum integer 1-based
---@return string
function V.foldexpr(lnum)
  local buf = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1] or ''
  if line == '```output' or line == '```thinking' then
    return '>1'
  elseif line == '```' then
    local marks = vim.api.nvim_buf_get_extmarks(buf, ns_output, { lnum - 1, 0 }, { lnum - 1, -1 },
      { details = true, overlap = true })
    for _, mark in ipairs(marks) do
      if mark[4].end_row == lnum - 1 then
        return '<1'
      end
    end
  end
  return '='
end

---@return string[]
function V.lines()
  return vim.api.nvim_buf_get_lines(V.buffer(), 0, -1, false)
end

--- The windows of `buf` whose cursor is on its last line: they follow the stream; a window
--- whose cursor is elsewhere (reading back) stays where it is.
local function followers(buf)
  local last = vim.api.nvim_buf_line_count(buf)
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_cursor(win)[1] >= last
  end, vim.fn.win_findbuf(buf))
end

local function follow(buf, wins)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(wins) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

--- Append text at the very end; newlines in it start new lines.
---@param text string
function V.append(text)
  if text == '' then
    return
  end
  local buf = V.buffer()
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ''
  local wins = followers(buf)
  vim.api.nvim_buf_set_text(buf, last, #line, last, #line, vim.split(text, '\n', { plain = true }))
  follow(buf, wins)
end

local function at_line_start()
  local lines = V.lines()
  return lines[#lines] == ''
end

--- Append a whole line (after ending a started one); the next text starts below it.
---@param text string
---@return integer row of the line (0-based)
function V.line(text)
  if not at_line_start() then
    V.append('\n')
  end
  local row = vim.api.nvim_buf_line_count(V.buffer()) - 1
  V.append(text .. '\n')
  return row
end

local function is_empty()
  local lines = V.lines()
  return #lines == 1 and lines[1] == ''
end

---@param prompt string
function V.start_request(prompt)
  if not is_empty() then
    V.line('')
  end
  for _, text in ipairs(vim.split(vim.trim(prompt), '\n', { plain = true })) do
    V.line('> ' .. text)
  end
  V.line('')
  tool_marks = {}
  plan_mark = nil
  thinking_row = nil
end

local PLAN_BOXES = { completed = '[x]', in_progress = '[>]', pending = '[ ]' }

--- The lines of a plan: a checklist; the step in progress shows its activeForm.
---@param items table[]
---@return string[]
function V.plan_lines(items)
  local lines = { 'Plan:' }
  for _, item in ipairs(items or {}) do
    local text = item.content or ''
    if item.status == 'in_progress' and type(item.activeForm) == 'string' and item.activeForm ~= '' then
      text = item.activeForm
    end
    table.insert(lines, ('- %s %s'):format(PLAN_BOXES[item.status] or '[ ]', text))
  end
  return lines
end

--- Show a `plan` event: the request's first plan is added at the end, later ones replace it.
---@param items table[]
function V.plan(items)
  local buf = V.buffer()
  local lines = V.plan_lines(items)
  local mark = plan_mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns_plan, plan_mark, { details = true })
  if mark and mark[1] then
    local first, last = mark[1], mark[3].end_row
    vim.api.nvim_buf_set_lines(buf, first, last + 1, false, lines)
    vim.api.nvim_buf_set_extmark(buf, ns_plan, first, 0, { id = plan_mark, end_row = first + #lines - 1 })
    return
  end
  local row = V.line(lines[1])
  for i = 2, #lines do
    V.line(lines[i])
  end
  plan_mark = vim.api.nvim_buf_set_extmark(buf, ns_plan, row, 0, { end_row = row + #lines - 1, right_gravity = false })
end

local function tool_outcome(event)
  if event.status == 'awaiting_approval' then
    return 'waiting for approval'
  elseif event.status == 'in_progress' then
    return 'running'
  elseif event.status == 'completed' then
    return ('completed in %d ms'):format(tonumber(event.durationMs) or 0)
  elseif event.reason == 'denied' or event.reason == 'policy' then
    return event.reason == 'denied' and 'denied' or 'refused'
  elseif event.status == 'failed' then
    local first = vim.split(vim.trim(tostring(event.result or 'error')), '\n', { plain = true })[1]
    return 'failed: ' .. first:sub(1, 120)
  elseif event.status == 'cancelled' and event.reason == 'timeout' then
    return 'cancelled (timed out)'
  end
  return event.status
end

--- A command's result preview -> its output lines (bounded), and whether the preview was cut.
---@param result string
---@return string[] lines, boolean cut
function V.command_output(result)
  local text = tostring(result or '')
  local cut = false
  if text:sub(-3) == '…' then
    cut = true
    text = text:sub(1, -4)
  end
  local lines = vim.split(vim.trim(text) ~= '' and text or '', '\n', { plain = true, trimempty = true })
  if #lines > V.output_lines then
    local more = #lines - V.output_lines
    lines = vim.list_slice(lines, 1, V.output_lines)
    table.insert(lines, ('… %d more line%s'):format(more, more == 1 and '' or 's'))
  elseif cut then
    table.insert(lines, '… (cut)')
  end
  for i, line in ipairs(lines) do
    if line:sub(1, 3) == '```' then
      lines[i] = ' ' .. line -- a fence in the output must not end the block
    end
  end
  return lines, cut
end

--- Put a command's output block below its tool line.
---@param row integer the tool line (0-based)
---@param lines string[]
local function output_block(row, lines)
  if #lines == 0 then
    return
  end
  local buf = V.buffer()
  local block = { '```output' }
  vim.list_extend(block, lines)
  table.insert(block, '```')
  vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, block)
  vim.api.nvim_buf_set_extmark(buf, ns_output, row + 1, 0, { end_row = row + #block, end_col = 0 })
end

local function set_line(row, text)
  local buf = V.buffer()
  local old = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  vim.api.nvim_buf_set_text(buf, row, 0, row, #old, { text })
end

--- End the open ```thinking block (the model moved on): it folds, closed, in every window.
local function close_thinking()
  local row = thinking_row
  thinking_row = nil
  local buf = V.buffer()
  if not at_line_start() then
    V.append('\n')
  end
  local last = V.line('```')
  vim.api.nvim_buf_set_extmark(buf, ns_output, row, 0, { end_row = last, end_col = 0 })
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_call(win, function()
      if vim.wo.foldmethod == 'expr' then
        vim.cmd(('silent! %dfoldclose'):format(row + 1))
      end
    end)
  end
end

--- Render one `tunacode/event` of the request being shown.
---@param event table
function V.event(event)
  local kind = event.type
  if kind == 'thinking_delta' then -- the model's thinking: a block that folds once it ends
    if not thinking_row then
      thinking_row = V.line('```thinking')
    end
    V.append(event.text or '')
    return
  elseif thinking_row then
    close_thinking()
  end
  if kind == 'text_delta' then
    V.append(event.text or '')
  elseif kind == 'tool_call' then
    -- the server's title (`Run npm test`); a server before v3: the name and its one-line summary
    local label = type(event.title) == 'string' and event.title ~= '' and ('[tool] ' .. event.title)
      or ('[tool] %s %s'):format(event.name, type(event.summary) == 'string' and event.summary or '')
    local row = V.line(vim.trim(label))
    -- left gravity: rewriting the line keeps the mark on it
    local mark = vim.api.nvim_buf_set_extmark(V.buffer(), ns, row, 0, { right_gravity = false })
    tool_marks[event.toolCallId] = { mark = mark, label = vim.trim(label) }
  elseif kind == 'tool_call_update' then
    local entry = tool_marks[event.toolCallId]
    if not entry then
      return
    end
    local row = vim.api.nvim_buf_get_extmark_by_id(V.buffer(), ns, entry.mark, {})[1]
    if not row then
      return
    end
    local final = event.status == 'completed' or event.status == 'failed'
    local lines = {}
    local exit_code = type(event.exitCode) == 'number' and event.exitCode or nil
    if exit_code and final and event.result then
      lines = V.command_output(event.result)
    end
    if exit_code or (event.status == 'completed' and #lines > 0) then
      local code = exit_code and ('exit code %d'):format(exit_code) or event.status
      set_line(row, ('%s: %s in %d ms'):format(entry.label, code, tonumber(event.durationMs) or 0))
      output_block(row, lines)
    else
      set_line(row, entry.label .. ': ' .. tool_outcome(event))
    end
  elseif kind == 'notice' then
    V.line('[note] ' .. (event.message or ''))
  elseif kind == 'plan' then
    V.plan(event.items)
  elseif kind == 'compaction' then
    V.line(('[compacted] the conversation: ~%s -> ~%s tokens'):format(tostring(event.before), tostring(event.after)))
  end
end

---@param result table RequestResult
function V.finish(result)
  local tail = ('-- %s  (session %s)'):format(result.stopReason, result.sessionId)
  if result.error and result.error.message then
    tail = tail .. ': ' .. result.error.message
  end
  V.line('')
  V.line(tail)
end

--- Show `tunacode.changes` in the scratch buffer tunacode://changes (filetype diff).
---@param result table {files: [{path, status, diff}], truncated}
---@return integer buf
function V.changes(result)
  local buf = vim.fn.bufnr('tunacode://changes')
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, 'tunacode://changes')
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  local lines = {}
  for _, file in ipairs(result.files or {}) do
    table.insert(lines, ('diff --tunacode %s (%s)'):format(file.path, file.status or 'modified'))
    vim.list_extend(lines, vim.split((file.diff or ''):gsub('\n$', ''), '\n', { plain = true }))
  end
  if #lines == 0 then
    lines = { '# no changes in this session' }
  end
  if result.truncated then
    table.insert(lines, '# … more changes were cut by the server')
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'diff'
  return buf
end

---@param message string
function V.error(message)
  V.line('-- error: ' .. message)
end

--- Show a stored session: the server's events of each of its requests, rendered as live.
---@param session table
---@param events table[] `tunacode.session.get {events: true}`'s events
function V.transcript(session, events)
  local buf = V.buffer()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  V.line(('# %s  (session %s)'):format(session.title ~= '' and session.title or 'untitled', session.sessionId))
  for _, event in ipairs(events) do
    if type(event) == 'table' and event.type == 'request_start' then
      V.start_request(tostring(event.prompt or ''))
    elseif type(event) == 'table' then
      V.event(event)
      if event.type == 'request_end' then
        V.line('')
        V.line('-- ' .. tostring(event.stopReason))
      end
    end
  end
end

return V
