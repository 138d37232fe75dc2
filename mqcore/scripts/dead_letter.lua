-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = DLQ stream of the topic
-- KEYS[4] = payload key for the letter's own copy of an out-of-line payload (new, unique)
-- KEYS[5] = payload index set of the topic
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = entry id
-- ARGV[4] = topic
-- ARGV[5] = partition index (the real one; Java always writes 0)
-- ARGV[6] = failedAt (ISO-8601)
-- ARGV[7] = error message ('' = keep)
-- ARGV[8] = error type ('' = keep)
-- ARGV[9] = 'given' when ARGV[12..] carry the entry's field/value pairs, else 'read'; with
--           '-kryo' appended, the letter is written as Java's DeadLetterCodec writes it
--           through Redisson's Kryo codec (names and values Kryo-encoded)
-- ARGV[10] = payload key prefix of the partition (KeySpace.payload_prefix)
-- ARGV[11] = '1' to XDEL the entry once no other group needs it (ack-delete policy immediate
--            or all-groups-ack) and unlink its payload key, '2' to XDEL it and leave the key
--            (java-kryo: a Java service's retries share it), '0' to keep the entry
-- ARGV[12..] = entry field/value pairs (only with 'given')
-- An out-of-line payload (headers x-payload-hash-ref naming a key under ARGV[10]) is COPYed to
-- KEYS[4] and the letter names the copy: each reference owns its key. A gone payload key is
-- not copied; the letter then carries x-payload-missing.
-- Returns {1, dlq id}, {2} when the entry no longer exists (acked, nothing added),
-- {0} when it is not pending (nothing done), or {-1} when the epoch is stale.
--#include fence
if stale_fence(KEYS[2], KEYS[#KEYS], ARGV[2]) then
  return {-1}
end
--#include headers
--#include payloads
--#include ids
--#include floor
local flat
local mode, kryo_mode = string.match(ARGV[9], '^(%a+)(.*)$')
if mode == 'given' then
  flat = {}
  for i = 12, #ARGV do
    flat[#flat + 1] = ARGV[i]
  end
else
  local found = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])
  if #found == 0 then
    flat = nil
  else
    flat = found[1][2]
  end
end
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]) == 0 then
  return {0}
end
if flat == nil then
  return {2}
end
local f = {}
for i = 1, #flat, 2 do
  f[flat[i]] = flat[i + 1]
end
local headers = read_headers(f['headers'])
headers['partitionId'] = ARGV[5]
if f['key'] and f['key'] ~= '' then
  headers['key'] = f['key']
end
if ARGV[7] ~= '' then
  headers['x-runtime-error-message'] = ARGV[7]
end
if ARGV[8] ~= '' then
  headers['x-runtime-error-type'] = ARGV[8]
end
copy_payload(headers, f['payload'], entry_payload_ref(flat, ARGV[10]), KEYS[4], KEYS[5])
-- the entry itself goes only after its payload was copied
if ARGV[11] ~= '0' and deletable(KEYS[1], ARGV[3], ARGV[1]) then
  delete_entry(KEYS[1], ARGV[3], ARGV[11] == '1' and ARGV[10] or '', KEYS[5])
end
--#include kryo
if kryo_mode == '-kryo' then
  local id = redis.call('XADD', KEYS[3], '*',
    kstr('originalTopic'), kstr(ARGV[4]),
    kstr('payload'), kstr(f['payload'] or ''),
    kstr('timestamp'), kstr(f['timestamp'] or ARGV[6]),
    kstr('failedAt'), kstr(ARGV[6]),
    kstr('retryCount'), kint(f['retryCount'] or '0'),
    kstr('maxRetries'), kint(f['maxRetries'] or '3'),
    kstr('partitionId'), kint(ARGV[5]),
    kstr('headers'), kmap(headers),
    kstr('originalMessageId'), kstr(ARGV[3]))
  return {1, id}
end
local id = redis.call('XADD', KEYS[3], '*',
  'originalTopic', ARGV[4],
  'payload', f['payload'] or '',
  'timestamp', f['timestamp'] or ARGV[6],
  'failedAt', ARGV[6],
  'retryCount', f['retryCount'] or '0',
  'maxRetries', f['maxRetries'] or '3',
  'partitionId', ARGV[5],
  'headers', cjson.encode(headers),
  'originalMessageId', ARGV[3])
return {1, id}
