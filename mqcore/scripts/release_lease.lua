-- KEYS[1] = lease key
-- KEYS[2] = fencing epoch key of the same (topic, group, partition)
-- ARGV[1] = consumer name
-- ARGV[2] = epoch the caller holds
-- Returns 1 when released, 0 when the caller did not hold it (nothing changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
