--- Files changed on disk during a request (a shell command rewrote them): no W12 question.
---
--- While a request of this Neovim runs (and for the :checktime that follows its end) a
--- `FileChangedShell` autocmd answers Neovim's question itself, so the answer never stops to
--- wait for a key: an unmodified buffer is reloaded; a buffer with the user's unsaved edits
--- keeps them, and a one-line notice (and a note in the answer buffer) says that the file
--- changed under it and how to choose (`:e!` takes the file, `:w` keeps yours). Outside a
--- request Neovim asks as usual.

local F = {}

local GROUP = 'tunacode_filechanged'

---@param message string
local function tell(message)
  -- inside FileChangedShell no other buffer may change: the notice comes right after
  vim.schedule(function()
    require('tunacode.view').line('[note] ' .. message)
    local text = 'TunaCode: ' .. message
    vim.notify(require('tunacode').one_line(text) or text, vim.log.levels.WARN) -- one line: no prompt
  end)
end

--- The FileChangedShell handler: sets v:fcs_choice for the buffer `buf` of `file`.
---@param buf integer
---@param file string
function F.on_changed(buf, file)
  local reason = vim.v.fcs_reason
  local name = vim.fn.fnamemodify(file, ':~:.')
  if reason == 'conflict' then
    vim.v.fcs_choice = ''
    tell(('%s changed on disk while its buffer has your unsaved edits: your text is kept (:e! loads the file, :w writes yours over it)')
      :format(name))
  elseif reason == 'deleted' then
    vim.v.fcs_choice = ''
    tell(('%s was deleted on disk; its buffer keeps the text'):format(name))
  elseif vim.bo[buf].modified then
    vim.v.fcs_choice = '' -- a mode or time change of a modified buffer: nothing to load
  else
    vim.v.fcs_choice = 'reload'
  end
end

--- A request starts: Neovim's question is answered by F.on_changed until F.finish.
function F.begin()
  local group = vim.api.nvim_create_augroup(GROUP, { clear = true })
  vim.api.nvim_create_autocmd('FileChangedShell', {
    group = group,
    desc = 'TunaCode: a file changed on disk during a request: reload, or keep unsaved edits (no W12)',
    callback = function(ev)
      F.on_changed(ev.buf, ev.match)
    end,
  })
end

--- The request answered: check the files once more (after any :checktime already scheduled),
--- then Neovim asks as usual again.
function F.finish()
  vim.schedule(function()
    pcall(vim.cmd.checktime)
    pcall(vim.api.nvim_del_augroup_by_name, GROUP)
  end)
end

return F
