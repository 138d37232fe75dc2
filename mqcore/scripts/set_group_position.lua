-- Move a pipeline's consumer group on one partition (idempotent; Redis Cluster path,
-- where the partition is in another slot than the pipeline's checkpoint keys).
-- KEYS[1] = partition stream, KEYS[2] = its commit frontier hash
-- ARGV[1] = group, ARGV[2] = id the group has consumed up to (inclusive)
-- ARGV[3] = commit frontier encoding: 'plain' (the default) or 'kryo', '' to leave it alone
-- Returns 1 when moved, 0 when the stream does not exist.
--#include position
--#include ids
--#include kryo
--#include floor
--#include frontier
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
set_position(KEYS[1], ARGV[1], ARGV[2], 250)
set_frontier(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3] or 'plain')
return 1
