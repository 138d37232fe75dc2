-- commit frontier (mode 'plain' or 'kryo'; '' leaves it alone): how far the group acked,
-- never past its lowest pending entry (its last delivered id when nothing is pending), as
-- Java's housekeeper reads it (HGETALL, trims below the lowest frontier of the leased groups).
-- Needs ids and kryo.
local function raise_frontier(stream, frontier, group, mode, ids)
  if mode == '' or #ids == 0 then return end
  -- every entry below the lowest pending one is acked; with nothing pending, every entry
  -- up to the last delivered one is
  local target = redis.call('XPENDING', stream, group)[2]
  local low = target
  if not target then
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
      for j = 1, #g, 2 do
        if g[j] == 'name' and g[j + 1] == group then
          for m = 1, #g, 2 do
            if g[m] == 'last-delivered-id' then target = g[m + 1] end
          end
        end
      end
    end
  end
  if not target or target == '0-0' then return end
  local field = group
  if mode == 'kryo' then field = kstr(group) end
  local current = kunstr(redis.call('HGET', frontier, field))
  local lowered = current and low and id_less(low, current)
  if not current or id_less(current, target) or lowered then
    local value = target
    if mode == 'kryo' then value = kstr(target) end
    redis.call('HSET', frontier, field, value)
  end
end

-- write `group`'s frontier as `id` (a pipeline commit: everything up to it is done), in the
-- mode's encoding; in 'kryo' mode a plain field of the group (what mqcore wrote before it
-- knew the encoding) is dropped: one field Java's codec cannot read makes its housekeeper
-- skip the partition's frontier trim. Needs kryo.
local function set_frontier(frontier, group, id, mode)
  if mode == 'kryo' then
    redis.call('HDEL', frontier, group)
    redis.call('HSET', frontier, kstr(group), kstr(id))
  elseif mode == 'plain' then
    redis.call('HSET', frontier, group, id)
  end
end
