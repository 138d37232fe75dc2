-- KEYS[1] = lease key (value = owning consumer name, Java-readable)
-- KEYS[2] = fencing epoch key of the same (topic, group, partition)
-- KEYS[3] = released marker (release_lease.lua): the epoch its last holder gave up cleanly
-- ARGV[1] = consumer name
-- ARGV[2] = lease TTL in ms
-- Returns {1, epoch, ttl_ms, clean} when taken now (epoch incremented; clean = 1 when the
-- previous holder released it cleanly, so nothing it holds pending is still being worked on), {2, epoch, ttl_ms} when
-- already held by ARGV[1] (TTL refreshed, epoch unchanged), {0, owner, pttl} when held by another,
-- {3, owner, ttl_ms} when held by another without a TTL: Java takes leases with SETNX then
-- EXPIRE, and a holder that died in between would keep the partition for good; it gets
-- ARGV[2] as its TTL (it can still renew it), after which the partition is free.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local epoch = redis.call('INCR', KEYS[2])
  local released = redis.call('GET', KEYS[3])
  redis.call('DEL', KEYS[3])
  local clean = 0
  if released and tonumber(released) == epoch - 1 then clean = 1 end
  return {1, epoch, tonumber(ARGV[2]), clean}
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
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {3, owner or '', tonumber(ARGV[2])}
end
return {0, owner or '', pttl}
