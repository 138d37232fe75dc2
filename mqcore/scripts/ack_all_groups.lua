-- Ack under Java's ack-delete policy all-groups-ack: ack, record the group in each entry's
-- ack set, and XDEL the entry once every live group has acked it.
-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = commit frontier hash of the partition
-- KEYS[4 .. 3+k] = lease keys (this partition) of the groups named in ARGV[6 .. 5+k]
-- KEYS[4+k ..] = the ack set of each entry id in ARGV[6+k ..], in the same order
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = ack set TTL in seconds (Java's acksetTtlSec)
-- ARGV[4] = k, how many lease keys follow
-- ARGV[5] = commit frontier encoding: 'plain', 'kryo', or '' to leave it alone
-- Returns {acked, deleted}, or {-1, 0} when the epoch is stale (nothing done).
-- A live group is on the stream and holds a lease on this partition, as in Java; a group on
-- the stream whose lease key the caller did not pass counts as live (never delete for it).
-- fencing: ARGV[2] is '<epoch>' or '<epoch>|<owner>'; with an owner, the lease key (the last
-- KEY) must be free or still ours: a take-over by a writer that does not raise the epoch
-- (Java takes the lease with SETNX) fences us as well
if ARGV[2] ~= '' then
  local epoch, owner = string.match(ARGV[2], '^(%d+)|(.+)$')
  if redis.call('GET', KEYS[2]) ~= (epoch or ARGV[2]) then
    return {-1, 0}
  end
  if owner then
    local holder = redis.call('GET', KEYS[#KEYS])
    if holder and holder ~= owner then
      return {-1, 0}
    end
  end
end
local k = tonumber(ARGV[4])
local lease_of = {}
for i = 1, k do lease_of[ARGV[5 + i]] = KEYS[3 + i] end
local live = {}
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local name = nil
  for j = 1, #g, 2 do
    if g[j] == 'name' then name = g[j + 1] end
  end
  local lease = lease_of[name]
  if lease == nil or redis.call('EXISTS', lease) == 1 then
    live[#live + 1] = name
  end
end
local acked, deleted = 0, 0
local first = 6 + k
local acked_ids = {}
for i = first, #ARGV do
  local id = ARGV[i]
  local set = KEYS[4 + k + (i - first)]
  if redis.call('XACK', KEYS[1], ARGV[1], id) == 1 then
    acked = acked + 1
    acked_ids[#acked_ids + 1] = id
    redis.call('SADD', set, ARGV[1])
    redis.call('EXPIRE', set, ARGV[3])
    local all = #live > 0
    for _, name in ipairs(live) do
      if redis.call('SISMEMBER', set, name) == 0 then
        all = false
        break
      end
    end
    if all then
      redis.call('XDEL', KEYS[1], id)
      redis.call('DEL', set)
      deleted = deleted + 1
    end
  end
end
--#include ids
--#include kryo
--#include frontier
raise_frontier(KEYS[1], KEYS[3], ARGV[1], ARGV[5], acked_ids)
return {acked, deleted}
