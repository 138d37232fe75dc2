-- Ack entries of one group, under an ack-delete policy, and raise its commit frontier.
-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = commit frontier hash of the partition
-- KEYS[4] = the topic's payload index set
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = '1' to delete acked entries no other group needs (ack-delete policies immediate
--           and all-groups-ack), else '0'
-- ARGV[4] = commit frontier encoding: 'plain', 'kryo', or '' to leave it alone
-- ARGV[5] = payload prefix of the partition: a deleted entry's payload key under it is
--           unlinked ('' = unlink none: a Java service shares the payload keys)
-- ARGV[6..] = entry ids
-- Returns the number of entries acked, or -1 when the epoch is stale (nothing done).
-- An acked entry is deleted only when no other group on the stream still needs it (not yet
-- delivered to it, or in its PEL): every group counts, leased or not (lib/floor.lua).
--#include fence
if stale_fence(KEYS[2], KEYS[#KEYS], ARGV[2]) then
  return -1
end
if #ARGV < 6 then
  return 0
end
--#include ids
--#include kryo
--#include headers
--#include floor
--#include payloads
--#include frontier
local stream, group = KEYS[1], ARGV[1]
local acked_ids = {}
for i = 6, #ARGV do
  if redis.call('XACK', stream, group, ARGV[i]) == 1 then acked_ids[#acked_ids + 1] = ARGV[i] end
end
if ARGV[3] == '1' and #acked_ids > 0 then
  local groups = stream_groups(stream)
  for _, id in ipairs(acked_ids) do
    if deletable(stream, id, group, groups) then delete_entry(stream, id, ARGV[5], KEYS[4]) end
  end
end
if #acked_ids > 0 then
  raise_frontier(stream, KEYS[3], group, ARGV[4], acked_ids)
end
return #acked_ids
