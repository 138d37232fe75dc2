-- KEYS[1] = lease key
-- KEYS[2] = fencing epoch key of the same (topic, group, partition)
-- KEYS[3] = released marker: the epoch given up cleanly, for ARGV[3] ms
-- ARGV[1] = consumer name
-- ARGV[2] = epoch the caller holds
-- ARGV[3] = how long the marker lives (the lease TTL, ms)
-- Returns 1 when released, 0 when the caller did not hold it (nothing changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
return 1
