-- KEYS[1] = lease key (value = owning consumer name, Java-readable)
-- KEYS[2] = fencing epoch key of the same (topic, group, partition)
-- ARGV[1] = consumer name
-- ARGV[2] = lease TTL in ms
-- Returns {1, epoch, ttl_ms} when taken now (epoch incremented), {2, epoch, ttl_ms} when
-- already held by ARGV[1] (TTL refreshed, epoch unchanged), {0, owner, pttl} when held by another.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local epoch = redis.call('INCR', KEYS[2])
  return {1, epoch, tonumber(ARGV[2])}
end
local owner = redis.call('GET', KEYS[1])
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local epoch = tonumber(redis.call('GET', KEYS[2]) or '0')
  if epoch == 0 then
    epoch = redis.call('INCR', KEYS[2])
  end
  return {2, epoch, tonumber(ARGV[2])}
end
return {0, owner or '', redis.call('PTTL', KEYS[1])}
