-- Delete retry items of one topic (an operator's delete), atomically per call.
-- KEYS[1] = retry zset of the topic
-- KEYS[2..n] = retry item hashes to delete (members of KEYS[1])
-- ARGV[1] = payload key prefix of the topic's partitions (KeySpace.payload_topic_prefix;
--           '' = unlink none: on java-kryo a Java service's items share the entry's key)
-- ARGV[2] = payload index set of the topic
-- An item goes only while it is still a member of the zset (ZREM, then DEL of its
-- hash), so a repeated call, or one racing the retry mover, deletes nothing twice and
-- never touches a hash that is not in the set. The payload key an item owns (its
-- x-payload-hash-ref under ARGV[1]) goes with it.
-- Returns the number of items deleted.
--#include headers
--#include payloads
local deleted = 0
for k = 2, #KEYS do
  if redis.call('ZREM', KEYS[1], KEYS[k]) == 1 then
    local text = redis.pcall('HGET', KEYS[k], 'headers') -- a member that is no hash: none
    if type(text) == 'string' then
      unlink_payload(entry_payload_ref({'headers', text}, ARGV[1], true), ARGV[2])
    end
    redis.call('DEL', KEYS[k])
    deleted = deleted + 1
  end
end
return deleted
