-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = retry zset of the topic
-- KEYS[4] = retry item hash (new, unique)
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced
-- ARGV[3] = entry id being retried
-- ARGV[4] = due time (epoch ms)
-- ARGV[5] = 'direct' to XADD back to the partition now (short delay), 'zset' to schedule
-- ARGV[6..] = field/value pairs (retry item hash, or the partition entry when direct)
-- Returns {1, item-or-new-id}, {0} when the entry is not pending (nothing written),
-- or {-1} when the epoch is stale (nothing written).
-- fencing: ARGV[2] is '<epoch>' or '<epoch>|<owner>'; with an owner, the lease key (the last
-- KEY) must be free or still ours: a take-over by a writer that does not raise the epoch
-- (Java takes the lease with SETNX) fences us as well
if ARGV[2] ~= '' then
  local epoch, owner = string.match(ARGV[2], '^(%d+)|(.+)$')
  if redis.call('GET', KEYS[2]) ~= (epoch or ARGV[2]) then
    return {-1}
  end
  if owner then
    local holder = redis.call('GET', KEYS[#KEYS])
    if holder and holder ~= owner then
      return {-1}
    end
  end
end
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) == 0 then
  return {0}
end
if ARGV[5] == 'direct' then
  local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 6, #ARGV))
  return {1, id}
end
redis.call('HSET', KEYS[4], unpack(ARGV, 6, #ARGV))
redis.call('ZADD', KEYS[3], ARGV[4], KEYS[4])
return {1, KEYS[4]}
