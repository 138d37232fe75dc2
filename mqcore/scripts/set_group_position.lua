-- Move a pipeline's consumer group on one partition (idempotent; Redis Cluster path,
-- where the partition is in another slot than the pipeline's checkpoint keys).
-- KEYS[1] = partition stream, KEYS[2] = its commit frontier hash
-- ARGV[1] = group, ARGV[2] = id the group has consumed up to (inclusive)
-- Returns 1 when moved, 0 when the stream does not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
pcall(redis.call, 'XGROUP', 'CREATE', KEYS[1], ARGV[1], '0')
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local added, last
for j = 1, #info, 2 do
  if info[j] == 'entries-added' then added = info[j + 1] end
  if info[j] == 'last-generated-id' then last = info[j + 1] end
end
local read = nil
if ARGV[2] == last then
  read = added
elseif added then
  local after = redis.call('XRANGE', KEYS[1], '(' .. ARGV[2], '+', 'COUNT', 1001)
  if #after <= 1000 then read = added - #after end
end
if read then
  redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2], 'ENTRIESREAD', read)
else
  redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2])
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
