-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = retry zset of the topic
-- KEYS[4] = retry item hash (new, unique)
-- KEYS[5] = payload key for the retry's own copy of an out-of-line payload (new, unique)
-- KEYS[6] = payload index set of the topic
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced
-- ARGV[3] = entry id being retried
-- ARGV[4] = due time (epoch ms)
-- ARGV[5] = 'direct' to XADD back to the partition now (short delay), 'zset' to schedule
-- ARGV[6] = payload key prefix of the partition (KeySpace.payload_prefix)
-- ARGV[7] = '1' to XDEL the entry once no other group needs it (ack-delete policy immediate
--           or all-groups-ack) and unlink its payload key, '2' to XDEL it and leave the key
--           (java-kryo: a Java service's retries share it), '0' to keep the entry
-- ARGV[8..] = field/value pairs (retry item hash, or the partition entry when direct)
-- An out-of-line payload (headers x-payload-hash-ref naming a key under ARGV[6]) is COPYed to
-- KEYS[5] and the retry item (or the new entry) names the copy: each reference owns its key.
-- A gone payload key is not copied; the item then carries x-payload-missing.
-- Returns {1, item-or-new-id}, {0} when the entry is not pending (nothing written),
-- or {-1} when the epoch is stale (nothing written).
--#include fence
if stale_fence(KEYS[2], KEYS[#KEYS], ARGV[2]) then
  return {-1}
end
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) == 0 then
  return {0}
end
--#include headers
--#include payloads
--#include ids
--#include floor
local fields = {unpack(ARGV, 8, #ARGV)}
local f = {}
for i = 1, #fields, 2 do
  f[fields[i]] = i + 1
end
local ref = entry_payload_ref(fields, ARGV[6])
if ref and f['headers'] then
  local headers = read_headers(fields[f['headers']])
  local payload = f['payload'] and fields[f['payload']]
  if copy_payload(headers, payload, ref, KEYS[5], KEYS[6]) or headers['x-payload-missing'] then
    fields[f['headers']] = cjson.encode(headers)
  end
end
if ARGV[7] ~= '0' and deletable(KEYS[1], ARGV[3], ARGV[1]) then
  delete_entry(KEYS[1], ARGV[3], ARGV[7] == '1' and ARGV[6] or '', KEYS[6])
end
if ARGV[5] == 'direct' then
  local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
  return {1, id}
end
redis.call('HSET', KEYS[4], unpack(fields))
redis.call('ZADD', KEYS[3], ARGV[4], KEYS[4])
return {1, KEYS[4]}
