-- KEYS[1] = lease key
-- KEYS[2] = fencing epoch key of the same (topic, group, partition)
-- ARGV[1] = consumer name
-- ARGV[2] = lease TTL in ms
-- ARGV[3] = epoch the caller holds
-- Returns 1 when renewed, 0 when the caller no longer holds the lease (nothing changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[3] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
