--- Approvals in a floating window: the handler of the server->client request
--- `tunacode/approve` (sent instead of window/showMessageRequest because the client
--- advertises `experimental.tunacode.approve`).
---
--- Typing never answers an approval: the float opens without focus in the bottom-right corner
--- (insert mode and the cursor stay where they were) and shows the summary as its title and the
--- full detail (the command, the diff with filetype=diff, or the JSON arguments). It is
--- answered with deliberate two-key normal-mode maps, set only while a question is pending:
--- g1 = Allow, g2 = Allow for session, g3 = Deny (`:TunaApprove allow|session|deny` too).
--- In the float (if the user enters it) q / <Esc> only close it: closing never answers;
--- `:TunaApprove` shows it again. Session-wide allows given here are listed by
--- `A.session_allows` (the tool names: the server allows the whole tool for the session; shown
--- by the statusline component and :TunaAllows); `A.on_allow` is called after each new one. One float at a time; later requests wait in a
--- queue. The handler runs in the coroutine Neovim gives server requests and yields until the
--- user answers. When the server gives up on the question ($/cancelRequest, or the tool call
--- or request ends) the float closes and the late answer is ignored.

local A = {}

local KEYS = { g1 = 'allow', g2 = 'allow_session', g3 = 'deny' }
-- the footer names the keys; on a narrow screen a shorter one that fits whole (never cut)
local FOOTERS = { ' g1 Allow  g2 Allow for session  g3 Deny ', ' g1 allow g2 session g3 deny ', ' g1/g2/g3 ' }
local FOOTER = FOOTERS[1]

--- The longest footer that fits a float `width` columns wide.
---@param width integer
---@return string
function A.footer(width)
  for _, footer in ipairs(FOOTERS) do
    if vim.fn.strdisplaywidth(footer) <= width then
      return footer
    end
  end
  return FOOTERS[#FOOTERS]
end
A.DECISIONS = { allow = 'allow', session = 'allow_session', deny = 'deny' }
local FILETYPES = { diff = 'diff', command = 'sh', arguments = 'json' }

---@class tunacode.Approval
---@field params table the tunacode/approve params
---@field resolve fun(decision: string)
---@field win integer?
---@field buf integer?
---@field done boolean?

---@type tunacode.Approval[]
A.queue = {}
---@type tunacode.Approval?
A.current = nil
---@type string[] the tools allowed for the session through this float (tool names, in order)
A.session_allows = {}
---@type fun(tool: string)? called when a tool is newly allowed for the session
A.on_allow = nil

local function set_keys(on)
  for key, decision in pairs(KEYS) do
    if on then
      vim.keymap.set('n', key, function()
        A.answer(decision)
      end, { desc = 'TunaCode approval: ' .. decision })
    else
      pcall(vim.keymap.del, 'n', key)
    end
  end
end

--- The lines of the float: the detail, whole, and a note when the server cut a diff.
---@param params table
---@return string[]
function A.lines(params)
  local detail = type(params.detail) == 'string' and params.detail or ''
  local lines = vim.split(detail:gsub('\n$', ''), '\n', { plain = true })
  if params.truncated then
    table.insert(lines, '… (the diff was cut by the server)')
  end
  if params.tool == 'bash' then -- a command may rewrite a file whose buffer holds unsaved edits
    local unsaved = {}
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      local name = vim.api.nvim_buf_get_name(buf)
      if vim.bo[buf].buflisted and vim.bo[buf].modified and vim.bo[buf].buftype == '' and name ~= '' then
        table.insert(unsaved, vim.fn.fnamemodify(name, ':~:.'))
      end
    end
    if #unsaved > 0 then
      table.insert(lines, '')
      table.insert(lines, '# unsaved changes in: ' .. table.concat(unsaved, ', '))
    end
  end
  return lines
end

local show_next

--- Close the float of an approval (if shown) and answer it once.
---@param approval tunacode.Approval
---@param decision string
local function finish(approval, decision)
  if approval.done then
    return
  end
  approval.done = true
  local win = approval.win
  approval.win = nil
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_close(win, true)
  end
  if approval.buf and vim.api.nvim_buf_is_valid(approval.buf) then
    vim.api.nvim_buf_delete(approval.buf, { force = true })
  end
  if A.current == approval then
    A.current = nil
  end
  A.queue = vim.tbl_filter(function(other)
    return other ~= approval
  end, A.queue)
  if #A.queue == 0 then
    set_keys(false)
  end
  local tool = approval.params.tool
  if decision == 'allow_session' and type(tool) == 'string' and not vim.tbl_contains(A.session_allows, tool) then
    table.insert(A.session_allows, tool)
    if A.on_allow then
      A.on_allow(tool)
    end
  end
  approval.resolve(decision)
  vim.schedule(show_next)
end

---@param approval tunacode.Approval
local function show(approval)
  local params = approval.params
  local lines = A.lines(params)
  local buf = approval.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].filetype = FILETYPES[params.detailKind] or 'text'
    for key, decision in pairs(KEYS) do
      vim.keymap.set('n', key, function()
        finish(approval, decision)
      end, { buffer = buf, desc = 'TunaCode approval: ' .. decision })
    end
    for _, key in ipairs({ 'q', '<Esc>' }) do -- only close: the question stays pending
      vim.keymap.set('n', key, function()
        A.hide()
      end, { buffer = buf, nowait = true, desc = 'TunaCode: close the approval (not answered)' })
    end
    approval.buf = buf
  end
  local width = math.max(40, vim.fn.strdisplaywidth(FOOTER) + 2)
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width, math.max(12, vim.o.columns - 4))
  local title = ' TunaCode approval: ' .. table.concat(vim.tbl_filter(function(part)
    return type(part) == 'string' and part ~= ''
  end, { params.tool, params.summary }), ' ') .. ' '
  if vim.fn.strdisplaywidth(title) > width then -- the title never widens the float past the screen
    title = vim.fn.strcharpart(title, 0, width - 2) .. '… '
  end
  local height = math.max(1, math.min(#lines, math.floor(vim.o.lines / 2) - 2))
  local win = vim.api.nvim_open_win(buf, false, { -- never focused: typing goes where it went
    relative = 'editor',
    anchor = 'SE',
    width = width,
    height = height,
    row = vim.o.lines - vim.o.cmdheight - 1,
    col = vim.o.columns,
    border = 'rounded',
    style = 'minimal',
    focusable = true,
    title = title,
    title_pos = 'center',
    footer = A.footer(width),
    footer_pos = 'center',
    zindex = 60,
  })
  vim.wo[win].wrap = false
  approval.win = win
  set_keys(true)
  -- closed some other way (:q, :close): the question stays pending (g1/g2/g3, :TunaApprove)
  vim.api.nvim_create_autocmd('WinClosed', {
    pattern = tostring(win),
    once = true,
    callback = function()
      if approval.win == win then
        approval.win = nil
      end
    end,
  })
end

--- Answer the shown (first pending) approval: "allow" | "allow_session" | "deny".
---@param decision string
---@return boolean answered
function A.answer(decision)
  local approval = A.current or A.queue[1]
  if not approval then
    return false
  end
  finish(approval, decision)
  return true
end

--- Close the float of the pending approval without answering it.
function A.hide()
  local approval = A.current
  if approval and approval.win and vim.api.nvim_win_is_valid(approval.win) then
    local win = approval.win
    approval.win = nil
    vim.api.nvim_win_close(win, true)
  end
end

--- Show the pending approval's float again (after q / <Esc> / :close).
---@return boolean pending
function A.reshow()
  local approval = A.current
  if not approval then
    return false
  end
  if not (approval.win and vim.api.nvim_win_is_valid(approval.win)) then
    show(approval)
  end
  return true
end

show_next = function()
  if A.current or #A.queue == 0 then
    return
  end
  A.current = A.queue[1]
  show(A.current)
end

--- Ask the user; calls resolve(decision) once ("allow" | "allow_session" | "deny").
---@param params table
---@param resolve fun(decision: string)
---@return tunacode.Approval
function A.ask(params, resolve)
  local approval = { params = params, resolve = resolve }
  table.insert(A.queue, approval)
  show_next()
  return approval
end

--- The `tunacode/approve` request handler (runs in the server-request coroutine).
---@return table result {decision}
function A.handler(_, params, _)
  local co, is_main = coroutine.running()
  if type(params) ~= 'table' or not co or is_main then
    return { decision = 'deny' }
  end
  A.ask(params, function(decision)
    vim.schedule(function() -- resume after the yield even if answered at once
      coroutine.resume(co, decision)
    end)
  end)
  return { decision = coroutine.yield() }
end

--- Close the pending approvals that match (the server no longer waits for them).
---@param match fun(params: table): boolean
function A.cancel(match)
  for _, approval in ipairs(vim.list_extend({}, A.queue)) do
    if match(approval.params) then
      finish(approval, 'deny')
    end
  end
end

--- `$/cancelRequest` from the server. Neovim does not tell a handler the id of the request
--- it serves, so a cancel closes the one pending approval; with several pending, the
--- events that follow (the tool call ending, request_end) close the right one.
function A.on_cancel_request()
  if #A.queue == 1 then
    finish(A.queue[1], 'deny')
  end
end

--- A `tunacode/event`: a tool call that moved on or a request that ended closes its float.
---@param event table
function A.on_event(event)
  if #A.queue == 0 then
    return
  end
  if event.type == 'request_end' then
    A.cancel(function(params)
      return params.requestId == event.requestId
    end)
  elseif event.type == 'tool_call_update' and event.status ~= 'awaiting_approval' then
    A.cancel(function(params)
      return params.toolCallId == event.toolCallId and params.requestId == event.requestId
    end)
  end
end

return A
