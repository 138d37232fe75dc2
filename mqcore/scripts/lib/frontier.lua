-- commit frontier (mode 'plain' or 'kryo'; '' leaves it alone): how far the group acked,
-- never past its lowest pending entry (its last delivered id when nothing is pending), as
-- Java's housekeeper reads it (HGETALL, trims below the lowest frontier of the leased groups).
-- Every value written is capped at the partition's retention floor (lib/floor.lua), so
-- Java's XTRIM MINID at a frontier we wrote never passes any group's floor.
-- Needs ids, kryo and floor.

-- write `group`'s frontier as `id` (a pipeline commit: everything up to it is done), capped
-- at the retention floor of `stream` like every frontier written, in the mode's encoding; in
-- 'kryo' mode a plain field of the group (what mqcore wrote before it knew the encoding) is
-- dropped: one field Java's codec cannot read makes its housekeeper skip the partition's
-- frontier trim. Needs ids, kryo and floor.
local function set_frontier(stream, frontier, group, id, mode)
  local floor = partition_floor(stream)
  if floor and id_less(floor, id) then id = floor end
  if mode == 'kryo' then
    redis.call('HDEL', frontier, group)
    redis.call('HSET', frontier, kstr(group), kstr(id))
  elseif mode == 'plain' then
    redis.call('HSET', frontier, group, id)
  end
end

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
  local floor = partition_floor(stream)
  if floor and id_less(floor, target) then target = floor end
  local field = group
  if mode == 'kryo' then field = kstr(group) end
  local current = kunstr(redis.call('HGET', frontier, field))
  local lowered = current and low and id_less(low, current)
  local above_floor = current and floor and id_less(floor, current)
  if not current or id_less(current, target) or lowered or above_floor then
    set_frontier(stream, frontier, group, target, mode)
  end
end
