--- The statusline component: `require('tunacode').statusline()`, e.g.
--- `TunaCode: bash | 12.3k tok | $0.0123 | ctx 45%`. Fed by every `tunacode/event` of this
--- Neovim's requests: the state (running, the tool that runs, approval, the last stop
--- reason), the tokens and cost of the current or last request, the context meter from
--- `turn_end.contextTokens / contextWindow` when the server sends them, and `allowed: bash`
--- while tools are allowed for the whole session (approve.session_allows). Empty until the
--- first event or allow.

local S = {}

S.state = nil ---@type string?
S.tokens = 0
S.cost = 0
S.context = nil ---@type {tokens: number, window: number}?

function S.reset()
  S.state, S.tokens, S.cost, S.context = nil, 0, 0, nil
end

---@param usage table?
local function add(usage)
  if type(usage) ~= 'table' then
    return
  end
  S.tokens = S.tokens + (tonumber(usage.totalTokens) or 0)
  S.cost = S.cost + (tonumber(usage.cost) or 0)
end

---@param event table a tunacode/event
function S.event(event)
  local kind = event.type
  if kind == 'request_start' then
    S.state, S.tokens, S.cost = 'running', 0, 0
  elseif kind == 'tool_call' then
    S.state = event.name
  elseif kind == 'tool_call_update' then
    S.state = event.status == 'awaiting_approval' and 'approval: ' .. tostring(event.name) or 'running'
  elseif kind == 'turn_end' then
    add(event.usage)
    local tokens, window = tonumber(event.contextTokens), tonumber(event.contextWindow)
    if tokens and window and window > 0 then
      S.context = { tokens = tokens, window = window }
    end
  elseif kind == 'compaction' then
    if S.context and tonumber(event.after) then
      S.context.tokens = tonumber(event.after)
    end
  elseif kind == 'request_end' then
    S.state = event.stopReason or 'done'
    if type(event.usage) == 'table' then -- the request's total replaces the sum of its turns
      S.tokens, S.cost = 0, 0
      add(event.usage)
    end
  end
end

---@param n number
---@return string
local function short(n)
  if n >= 1e6 then
    return ('%.1fM'):format(n / 1e6)
  elseif n >= 1e3 then
    return ('%.1fk'):format(n / 1e3)
  end
  return tostring(math.floor(n))
end

---@return string
function S.render()
  local allows = require('tunacode.approve').session_allows
  if not S.state then
    return #allows > 0 and ('TunaCode | allowed: ' .. table.concat(allows, ', ')) or ''
  end
  local parts = { 'TunaCode: ' .. S.state }
  if S.tokens > 0 then
    table.insert(parts, short(S.tokens) .. ' tok')
  end
  if S.cost > 0 then
    table.insert(parts, ('$%.4f'):format(S.cost))
  end
  if S.context then
    table.insert(parts, ('ctx %d%%'):format(math.floor(100 * S.context.tokens / S.context.window + 0.5)))
  end
  if #allows > 0 then -- a session-wide allow is in force: the server asks no more for these
    table.insert(parts, 'allowed: ' .. table.concat(allows, ', '))
  end
  return table.concat(parts, ' | ')
end

return S
