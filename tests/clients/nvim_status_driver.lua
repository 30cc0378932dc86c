-- :TunaStatus and :checkhealth tunacode show the MCP servers' state from the real server's
-- tunacode.status: a ready one with its tool count (the tests' FastMCP demo server), a failed
-- one with its error, one of the workspace's .mcp.json that may not start (its consent
-- question, asked whatever the approval mode, is dismissed).
-- TUNA_MCP_SERVERS is the mcpServers setting as JSON. Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()

H.record_notices(results.notices, true)

local wait = H.wait

-- The built-in window/showMessageRequest handler asks through vim.ui.select: the consent
-- question for the workspace's server is dismissed, as by a user who does not answer.
results.asked = {}
vim.ui.select = function(_, opts, on_choice)
  table.insert(results.asked, opts.prompt)
  on_choice(nil)
end

local function settled(status)
  local states = {}
  for _, server in ipairs(status and status.mcpServers or {}) do
    states[server.name] = server.state
  end
  return states.demo == 'ready' and states.bad == 'failed' and states.repo == 'not_allowed'
end

local function scenario()
  tunacode.setup({
    cmd = { env.TUNA_PYTHON, '-m', 'tunacode_lsp' },
    settings = { model = 'openai-compatible:scripted', baseUrl = env.TUNA_MODEL_URL, approval = 'read-only',
      mcpStartupTimeout = 20, mcpServers = vim.json.decode(env.TUNA_MCP_SERVERS) },
  })
  results.health_stopped = H.checkhealth()
  -- vim.lsp.enable starts the server for a file (no .git: no root marker, no root_dir);
  -- :TunaStatus must use that server, not start a second one for the same folder
  vim.lsp.enable('tunacode')
  vim.cmd('edit calc.py')
  wait(20000, function()
    return #vim.lsp.get_clients({ name = 'tunacode', bufnr = 0 }) == 1
  end, 'vim.lsp.enable to start the server')
  vim.cmd('TunaStatus') -- the servers are still starting
  wait(20000, function()
    return #results.notices > 0
  end, 'the first :TunaStatus')
  results.first = results.notices[1]
  -- what a user does: ask again until the servers settled (bounded)
  local last
  wait(60000, function()
    if last and last.done and settled(last.status) then
      return true
    end
    if last == nil or last.done then
      last = { done = false }
      local this = last
      tunacode.status(function(status)
        this.done, this.status = true, status
      end)
    end
    return false
  end, 'the MCP servers to settle: ' .. vim.inspect(last and last.status and last.status.mcpServers))
  results.shown = results.notices[#results.notices]
  results.health_running = H.checkhealth()
  results.clients = #vim.lsp.get_clients({ name = 'tunacode' })
end

H.run(scenario)
