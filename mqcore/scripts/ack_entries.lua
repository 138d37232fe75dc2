-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch ('' = unfenced, operator action)
-- ARGV[3] = '1' to XDEL the acked entries (ack-delete policy immediate), else '0'
-- ARGV[4..] = entry ids
-- Returns the number of entries acked, or -1 when the epoch is stale (nothing done).
if ARGV[2] ~= '' then
  local current = redis.call('GET', KEYS[2])
  if current ~= ARGV[2] then
    return -1
  end
end
if #ARGV < 4 then
  return 0
end
local acked = 0
for i = 4, #ARGV, 500 do
  local last = math.min(i + 499, #ARGV)
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, i, last))
  if ARGV[3] == '1' then
    redis.call('XDEL', KEYS[1], unpack(ARGV, i, last))
  end
end
return acked
