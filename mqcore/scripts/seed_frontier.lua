-- A pipeline group's commit frontier on one partition, as the group stands now: its lowest
-- pending id, else its last-delivered id (what its commits moved it to), '0-0' when the group
-- is not on the stream yet (it needs every entry). Written when a pipeline takes the
-- partition's lease (mqcore/lease_keeper.py): Java's housekeeper trims below the lowest
-- frontier of the leased groups, so the pipeline counts from its first lease, not only from
-- its first commit (checkpoints: commit_batch.lua writes it on every commit).
-- KEYS[1] = partition stream, KEYS[2] = its commit frontier hash
-- ARGV[1] = group, ARGV[2] = commit frontier encoding: 'plain' or 'kryo'
-- Returns the id written, or false when the stream does not exist (nothing written).
--#include ids
--#include kryo
--#include floor
--#include frontier
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local id = '0-0'
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local name, last
  for j = 1, #g, 2 do
    if g[j] == 'name' then name = g[j + 1] end
    if g[j] == 'last-delivered-id' then last = g[j + 1] end
  end
  if name == ARGV[1] then
    id = redis.call('XPENDING', KEYS[1], ARGV[1])[2] or last
  end
end
set_frontier(KEYS[1], KEYS[2], ARGV[1], id, ARGV[2])
return id
