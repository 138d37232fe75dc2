-- Replay dead letters back onto a topic, idempotently (one call = up to REPLAY_BATCH letters,
-- 50: about 2 ms of Redis).
-- KEYS[1] = DLQ stream of the source topic
-- KEYS[2] = replay records hash of the source topic (dlq id -> JSON list of records)
-- KEYS[3] = meta hash of the target topic (partitionCount)
-- KEYS[4] = payload index set of the target topic
-- KEYS[5..] = partition streams 0..P-1 of the target topic (P = #KEYS - 4)
-- ARGV[1] = now (epoch ms)
-- ARGV[2] = now (ISO-8601), the new entry's timestamp
-- ARGV[3] = who replays (free text, recorded)
-- ARGV[4] = '1' to replay letters already replayed (force), else '0'
-- ARGV[5] = target topic name (written in the entry's topic field)
-- ARGV[6] = fixed target partition, or '-1' to route (see below)
-- ARGV[7] = '1' for a dry run (nothing written), else '0'
-- ARGV[8] = JSON object: DLQ id -> the fields of a letter Java wrote through Redisson's Kryo
--           codec, decoded by the caller in the plain layout ('{}' when none)
-- ARGV[9] = payload key prefix of the source topic's partitions (KeySpace.payload_topic_prefix):
--           the out-of-line payload a letter owns is named by x-payload-hash-ref under it
-- ARGV[10] = payload key prefix of the target topic's partitions (the same, of the target)
-- ARGV[11] = a fresh token (uuid hex) naming this call's new payload keys
-- ARGV[12..] = DLQ ids (validated by the caller), each optionally pinned: 'id=partition'
-- A replayed letter's out-of-line payload is COPYed to a new key under the target
-- partition's prefix (ARGV[10] .. partition .. ':'), which the new entry owns; the letter keeps
-- its own key. A gone payload key is not copied; the entry then carries x-payload-missing.
-- Routing when ARGV[6] is -1: the pinned partition; else headers.partitionId (else the
-- top-level partitionId, which Java always writes as 0) if it is < P; else, when the
-- letter has a key, nothing is written and {id, 'route', key, -1} is returned: the
-- caller computes the key's partition (in Python, with Java's key hash) and
-- sends the id again pinned; else partition 0.
-- Returns {'stale', P} when the caller's P is not the topic's partition count (nothing
-- written), else one {dlq id, status, new id, partition} per id; status is one of
-- replayed, forced, already-replayed, missing, would-replay, route (new id = the key),
-- java-kryo (a letter Java wrote through Redisson's Kryo codec, whose decoded fields the caller
-- did not give in ARGV[8]: nothing is written and it is not marked replayed; the caller
-- decodes it and sends it again).
local P = #KEYS - 4
local count = tonumber(redis.call('HGET', KEYS[3], 'partitionCount') or '')
if count == nil or count < 1 or count ~= math.floor(count) then
  count = 1
end
if count ~= P then
  return {'stale', count}
end

local function route(f, headers, pinned)
  local fixed = tonumber(ARGV[6])
  if fixed >= 0 then
    return fixed
  end
  if pinned ~= nil then
    return pinned
  end
  local pid = tonumber(headers['partitionId'] or '')
  if pid == nil then
    pid = tonumber(f['partitionId'] or '')
  end
  if pid ~= nil and pid >= 0 and pid < P and pid == math.floor(pid) then
    if pid == 0 then pid = 0 end -- a header of '-0' would be written back as '-0'
    return pid
  end
  local key = f['key'] or headers['key']
  if key ~= nil and key ~= '' then
    return nil, key
  end
  return 0
end

local given = cjson.decode(ARGV[8])
--#include headers
--#include payloads
local out = {}
for a = 12, #ARGV do
  local dlq_id, pinned = string.match(ARGV[a], '^([^=]+)=?(%d*)$')
  pinned = tonumber(pinned)
  local found = redis.call('XRANGE', KEYS[1], dlq_id, dlq_id)
  if #found == 0 then
    out[#out + 1] = {dlq_id, 'missing', '', -1}
  else
    local prior = redis.call('HGET', KEYS[2], dlq_id)
    local records = {}
    if prior then
      local ok, decoded = pcall(cjson.decode, prior)
      if ok and type(decoded) == 'table' then
        records = decoded
      end
    end
    if #records > 0 and ARGV[4] ~= '1' then
      local last = records[#records]
      out[#out + 1] = {dlq_id, 'already-replayed', tostring(last['new_id'] or ''),
        tonumber(last['partition']) or -1}
    else
      local flat = found[1][2]
      local f = {}
      local kryo = false
      for i = 1, #flat, 2 do
        f[flat[i]] = flat[i + 1]
        if string.byte(flat[i], 1) == 3 then kryo = true end
      end
      if kryo and type(given[dlq_id]) == 'table' then
        f, kryo = given[dlq_id], false
      end
      local headers = read_headers(f['headers'])
      local pid, key = route(f, headers, pinned)
      if kryo then
        out[#out + 1] = {dlq_id, 'java-kryo', '', -1}
      elseif pid == nil or pid >= P then
        out[#out + 1] = {dlq_id, 'route', key or '', -1}
      elseif ARGV[7] == '1' then
        out[#out + 1] = {dlq_id, 'would-replay', '', pid}
      else
        if headers['x-original-message-id'] == nil and f['originalMessageId'] then
          headers['x-original-message-id'] = f['originalMessageId']
        end
        headers['x-replayed-from-dlq'] = dlq_id
        headers['x-replay-seq'] = tostring(#records + 1)
        headers['partitionId'] = tostring(pid)
        copy_payload(headers, f['payload'], entry_payload_ref({'headers', f['headers']}, ARGV[9], true),
          ARGV[10] .. pid .. ':' .. ARGV[11] .. '-' .. a, KEYS[4])
        local entry = {
          'payload', f['payload'] or '',
          'timestamp', ARGV[2],
          'retryCount', '0',
          'maxRetries', f['maxRetries'] or '3',
          'topic', ARGV[5],
          'partitionId', tostring(pid),
          'headers', cjson.encode(headers),
        }
        local key = f['key'] or headers['key']
        if key ~= nil and key ~= '' then
          entry[#entry + 1] = 'key'
          entry[#entry + 1] = key
        end
        local new_id = redis.call('XADD', KEYS[5 + pid], '*', unpack(entry))
        local status = 'replayed'
        if #records > 0 then
          status = 'forced'
        end
        records[#records + 1] = {dlq_id = dlq_id, new_id = new_id, topic = ARGV[5], partition = pid,
          at_ms = ARGV[1], by = ARGV[3], forced = (#records > 0)}
        redis.call('HSET', KEYS[2], dlq_id, cjson.encode(records))
        out[#out + 1] = {dlq_id, status, new_id, pid}
      end
    end
  end
end
return out
