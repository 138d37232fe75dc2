-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = commit frontier hash of the partition
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = '1' to XDEL the acked entries (ack-delete policy immediate), else '0'
-- ARGV[4] = commit frontier encoding: 'plain', 'kryo', or '' to leave it alone
-- ARGV[5..] = entry ids
-- Returns the number of entries acked, or -1 when the epoch is stale (nothing done).
-- fencing: ARGV[2] is '<epoch>' or '<epoch>|<owner>'; with an owner, the lease key (the last
-- KEY) must be free or still ours: a take-over by a writer that does not raise the epoch
-- (Java takes the lease with SETNX) fences us as well
if ARGV[2] ~= '' then
  local epoch, owner = string.match(ARGV[2], '^(%d+)|(.+)$')
  if redis.call('GET', KEYS[2]) ~= (epoch or ARGV[2]) then
    return -1
  end
  if owner then
    local holder = redis.call('GET', KEYS[#KEYS])
    if holder and holder ~= owner then
      return -1
    end
  end
end
if #ARGV < 5 then
  return 0
end
local acked = 0
for i = 5, #ARGV, 500 do
  local last = math.min(i + 499, #ARGV)
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, i, last))
  if ARGV[3] == '1' then
    redis.call('XDEL', KEYS[1], unpack(ARGV, i, last))
  end
end
--#include ids
--#include kryo
--#include frontier
if acked > 0 then
  raise_frontier(KEYS[1], KEYS[3], ARGV[1], ARGV[4], {unpack(ARGV, 5, #ARGV)})
end
return acked
