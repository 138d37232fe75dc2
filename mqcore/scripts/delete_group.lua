-- Delete one consumer group from every partition of a topic, refused while it is in use.
-- KEYS[1] = the group's consumer heartbeat hash
-- KEYS[2 + 3*(i)] .. = for each partition i: the stream, the group's lease, its
--                      lease-released marker (three keys a partition)
-- ARGV[1] = the group
-- ARGV[2] = '1' to delete even while a partition is leased or entries are pending
-- Returns {deleted, found, leased, pending}: 1 when the group went (0: refused or absent),
-- the partitions it was on, the partitions leased, its pending entries. The check and the
-- delete are one script, so a consumer taking a lease meanwhile is seen. The lease-epoch
-- keys stay: a group created again under the same name keeps fencing stale writers out.
local group = ARGV[1]
local force = ARGV[2] == '1'
local found, leased, pending = 0, 0, 0
local on = {}
for i = 2, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[i])) do
      local name, count = nil, 0
      for j = 1, #g, 2 do
        if g[j] == 'name' then name = g[j + 1] end
        if g[j] == 'pending' then count = tonumber(g[j + 1]) end
      end
      if name == group then
        found = found + 1
        pending = pending + count
        table.insert(on, i)
      end
    end
  end
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then leased = leased + 1 end
end
if found == 0 or ((leased > 0 or pending > 0) and not force) then
  return {0, found, leased, pending}
end
for _, i in ipairs(on) do
  redis.call('XGROUP', 'DESTROY', KEYS[i], group)
end
for i = 2, #KEYS, 3 do
  redis.call('DEL', KEYS[i + 1], KEYS[i + 2])
end
redis.call('DEL', KEYS[1])
return {1, found, leased, pending}
