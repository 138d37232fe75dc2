-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = retry zset of the topic
-- KEYS[4] = retry item hash (new, unique)
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch ('' = unfenced)
-- ARGV[3] = entry id being retried
-- ARGV[4] = due time (epoch ms)
-- ARGV[5] = 'direct' to XADD back to the partition now (short delay), 'zset' to schedule
-- ARGV[6..] = field/value pairs (retry item hash, or the partition entry when direct)
-- Returns {1, item-or-new-id}, {0} when the entry is not pending (nothing written),
-- or {-1} when the epoch is stale (nothing written).
if ARGV[2] ~= '' then
  local current = redis.call('GET', KEYS[2])
  if current ~= ARGV[2] then
    return {-1}
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
