-- a pipeline group's position: XGROUP SETID with ENTRIESREAD where it can be told cheaply,
-- so that XINFO reports the group's lag exactly. The entries after `id` are counted, at
-- most `bound` of them (each costs Redis the reading of an entry: the count is what keeps
-- a commit short); past the bound, or with bound 0, SETID goes without ENTRIESREAD and Redis
-- reports the lag as unknown (the console then counts it) until the group reaches the end.
-- Returns the entries read while counting.
local function set_position(stream, group, id, bound)
  pcall(redis.call, 'XGROUP', 'CREATE', stream, group, '0')
  local info = redis.call('XINFO', 'STREAM', stream)
  local added, last
  for j = 1, #info, 2 do
    if info[j] == 'entries-added' then added = info[j + 1] end
    if info[j] == 'last-generated-id' then last = info[j + 1] end
  end
  local read, counted = nil, 0
  if id == last then
    read = added
  elseif added and bound > 0 then
    counted = #redis.call('XRANGE', stream, '(' .. id, '+', 'COUNT', bound + 1)
    if counted <= bound then read = added - counted end
  end
  if read then
    redis.call('XGROUP', 'SETID', stream, group, id, 'ENTRIESREAD', read)
  else
    redis.call('XGROUP', 'SETID', stream, group, id)
  end
  return counted
end
