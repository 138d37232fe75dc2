-- Move due retry items back onto their partitions (the retry mover), atomically per item.
-- KEYS[1] = retry zset of the topic
-- KEYS[2k], KEYS[2k+1] (k = 1..n) = retry item hash k, target partition stream of item k
-- ARGV[1] = now (epoch ms): only items with score <= now move; '+inf': any score (retry now)
-- ARGV[2] = timestamp for the re-added entries (ISO-8601)
-- ARGV[2+k] = partitionId written for item k, or '' to drop item k (empty topic)
-- ARGV[3+n] = payload key prefix of the topic's partitions (KeySpace.payload_topic_prefix;
--             '' = follow no reference: on java-kryo a Java service's items share keys)
-- ARGV[4+n] = payload index set of the topic
-- ARGV[4+n+k] = payload key prefix of item k's target partition ('' when dropped)
-- ARGV[4+2n+k] = payload index set of item k's target topic ('' when dropped)
-- The payload key an item owns (x-payload-hash-ref under ARGV[3+n]) is handed to the new
-- entry; a key of another partition than the target is renamed under the target's prefix
-- first. A dropped item's payload key is unlinked with it.
-- An item is moved only while it is still in the zset and due, so concurrent
-- movers and a retried call after a timeout re-add every item exactly once.
-- Returns {moved, dropped}. No MAXLEN: the mover never trims (length bounds are the
-- housekeeper's, which never pass a group's floor).
local any = ARGV[1] == '+inf'
local now = any and 0 or tonumber(ARGV[1])
local moved, dropped = 0, 0
local n = (#KEYS - 1) / 2
--#include headers
--#include payloads
local topic_prefix, index = ARGV[3 + n], ARGV[4 + n]
-- the item's payload key handed to the entry written under `prefix` (its headers, re-encoded
-- when the key moves)
local function hand_over(headers_text, ref, prefix, target_index)
  if ref == nil or string.sub(ref, 1, #prefix) == prefix then return headers_text end
  local headers = read_headers(headers_text)
  local moved = prefix .. string.match(ref, '([^:]+)$')
  if redis.call('EXISTS', ref) == 1 then
    redis.call('RENAME', ref, moved)
    redis.call('SREM', index, ref)
    redis.call('SADD', target_index, moved)
    headers['x-payload-hash-ref'] = moved
  else
    headers['x-payload-missing'] = 'true'
    headers['x-payload-missing-ref'] = ref
  end
  return cjson.encode(headers)
end
for k = 1, n do
  local item = KEYS[2 * k]
  local stream = KEYS[2 * k + 1]
  local score = redis.call('ZSCORE', KEYS[1], item)
  if score and (any or tonumber(score) <= now) then
    local f = redis.call('HMGET', item, 'topic', 'payload', 'retryCount', 'maxRetries',
      'key', 'headers', 'originalMessageId')
    local topic = f[1]
    local ref = entry_payload_ref({'headers', f[6]}, topic_prefix, true)
    if not topic or topic == '' or ARGV[2 + k] == '' then
      dropped = dropped + 1
      unlink_payload(ref, index)
    else
      f[6] = hand_over(f[6], ref, ARGV[4 + n + k], ARGV[4 + 2 * n + k])
      local args = {stream}
      for _, v in ipairs({'*', 'timestamp', ARGV[2], 'retryCount', f[3] or '0',
          'maxRetries', f[4] or '0', 'topic', topic, 'partitionId', ARGV[2 + k]}) do
        table.insert(args, v)
      end
      if f[2] then
        table.insert(args, 'payload')
        table.insert(args, f[2])
      end
      -- the optional fields, when set: field name, its place in f
      for _, opt in ipairs({{'key', 5}, {'headers', 6}, {'originalMessageId', 7}}) do
        local v = f[opt[2]]
        if v and v ~= '' then
          table.insert(args, opt[1])
          table.insert(args, v)
        end
      end
      redis.call('XADD', unpack(args))
      moved = moved + 1
    end
    redis.call('ZREM', KEYS[1], item)
    redis.call('DEL', item)
  end
end
return {moved, dropped}
