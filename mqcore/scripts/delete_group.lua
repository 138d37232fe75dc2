-- Delete one consumer group from one partition of a topic, refused while it is in use there.
-- KEYS[1] = the partition's stream
-- KEYS[2] = the group's lease on the partition
-- KEYS[3] = its lease-released marker
-- KEYS[4] = the group's consumer heartbeat hash
-- ARGV[1] = the group
-- ARGV[2] = '1' to delete even while the partition is leased or entries are pending
-- ARGV[3] = the most pending entries destroyed with the group (XGROUP DESTROY is O(them))
-- Returns {status, found, leased, pending}: status 1 when the group went from the partition
-- (or was not on it) with its lease keys and the heartbeat hash, 0 when refused (leased or
-- pending, not forced), 2 when forced but more than ARGV[3] entries are pending: the caller
-- acks them in bounded chunks (drain_group_pending.lua) and calls again; found 1 when the
-- group was on the partition, leased 1 when its lease key exists, pending its entries.
-- The check and the delete are one script, so a consumer taking a lease meanwhile is seen.
-- The lease-epoch key stays: a group created again under the name keeps fencing stale writers.
local group = ARGV[1]
local force = ARGV[2] == '1'
local most = tonumber(ARGV[3])
local found, pending = 0, 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local name, count = nil, 0
    for j = 1, #g, 2 do
      if g[j] == 'name' then name = g[j + 1] end
      if g[j] == 'pending' then count = tonumber(g[j + 1]) end
    end
    if name == group then
      found, pending = 1, count
    end
  end
end
local leased = redis.call('EXISTS', KEYS[2])
if (leased > 0 or pending > 0) and not force then
  return {0, found, leased, pending}
end
if pending > most then
  return {2, found, leased, pending}
end
if found == 1 then
  redis.call('XGROUP', 'DESTROY', KEYS[1], group)
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
return {1, found, leased, pending}
