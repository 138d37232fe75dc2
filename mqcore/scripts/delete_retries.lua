-- Delete retry items of one topic (an operator's delete), atomically per call.
-- KEYS[1] = retry zset of the topic
-- KEYS[2..n] = retry item hashes to delete (members of KEYS[1])
-- An item goes only while it is still a member of the zset (ZREM, then DEL of its
-- hash), so a repeated call, or one racing the retry mover, deletes nothing twice and
-- never touches a hash that is not in the set.
-- Returns the number of items deleted.
local deleted = 0
for k = 2, #KEYS do
  if redis.call('ZREM', KEYS[1], KEYS[k]) == 1 then
    redis.call('DEL', KEYS[k])
    deleted = deleted + 1
  end
end
return deleted
