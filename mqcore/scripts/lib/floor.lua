-- The retention floor: nothing a consumer group still needs is deleted.
--#include ids
-- true when no group of `stream` but `self_group` still needs entry `id`: for each other
-- group the id is at or below its last-delivered id and not in its PEL (XPENDING of one id
-- is O(log n)); the single-entry delete rule of the ack-delete policies
local function deletable(stream, id, self_group)
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local name, last = nil, nil
    for j = 1, #g, 2 do
      if g[j] == 'name' then name = g[j + 1] end
      if g[j] == 'last-delivered-id' then last = g[j + 1] end
    end
    if name ~= self_group then
      if last == nil or id_less(last, id) then return false end
      if #redis.call('XPENDING', stream, name, id, id, 1) > 0 then return false end
    end
  end
  return true
end
