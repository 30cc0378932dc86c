--- Approvals in a floating window: the handler of the server->client request
--- `tunacode/approve` (sent instead of window/showMessageRequest because the client
--- advertises `experimental.tunacode.approve`).
---
--- The float shows the summary as its title and the full detail (the command, the diff with
--- filetype=diff, or the JSON arguments); keys: a = Allow, s = Allow for session,
--- d / q / <Esc> = Deny. One float at a time; later requests wait in a queue. The handler
--- runs in the coroutine Neovim gives server requests and yields until the user answers.
--- When the server gives up on the question ($/cancelRequest, or the tool call or request
--- ends) the float closes and the late answer is ignored.

local A = {}

local KEYS = {
  a = 'allow',
  s = 'allow_session',
  d = 'deny',
  q = 'deny',
  ['<Esc>'] = 'deny',
}
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

--- The lines of the float: the detail, whole, and a note when the server cut a diff.
---@param params table
---@return string[]
function A.lines(params)
  local detail = type(params.detail) == 'string' and params.detail or ''
  local lines = vim.split(detail:gsub('\n$', ''), '\n', { plain = true })
  if params.truncated then
    table.insert(lines, '… (the diff was cut by the server)')
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
  if approval.win and vim.api.nvim_win_is_valid(approval.win) then
    vim.api.nvim_win_close(approval.win, true)
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
  approval.resolve(decision)
  vim.schedule(show_next)
end

---@param approval tunacode.Approval
local function show(approval)
  local params = approval.params
  local lines = A.lines(params)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = FILETYPES[params.detailKind] or 'text'
  local width = 40
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local title = ' TunaCode: ' .. table.concat(vim.tbl_filter(function(part)
    return type(part) == 'string' and part ~= ''
  end, { params.tool, params.summary }), ' ') .. ' '
  width = math.min(math.max(width, vim.fn.strdisplaywidth(title)), vim.o.columns - 6)
  local height = math.max(1, math.min(#lines, vim.o.lines - 8))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = 'rounded',
    style = 'minimal',
    title = title,
    title_pos = 'center',
    footer = ' [a] Allow  [s] Allow for session  [d] Deny ',
    footer_pos = 'center',
  })
  vim.wo[win].wrap = false
  vim.cmd('stopinsert') -- the keys are normal-mode keys
  approval.win, approval.buf = win, buf
  for key, decision in pairs(KEYS) do
    vim.keymap.set('n', key, function()
      finish(approval, decision)
    end, { buffer = buf, nowait = true, desc = 'TunaCode: ' .. decision })
  end
  -- closed some other way (:q, :close): that is Deny (after the close, not inside it)
  vim.api.nvim_create_autocmd('WinClosed', {
    pattern = tostring(win),
    once = true,
    callback = function()
      vim.schedule(function()
        finish(approval, 'deny')
      end)
    end,
  })
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
