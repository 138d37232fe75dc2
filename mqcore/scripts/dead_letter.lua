-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = DLQ stream of the topic
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = entry id
-- ARGV[4] = topic
-- ARGV[5] = partition index (the real one; Java always writes 0)
-- ARGV[6] = failedAt (ISO-8601)
-- ARGV[7] = error message ('' = keep)
-- ARGV[8] = error type ('' = keep)
-- ARGV[9] = 'given' when ARGV[10..] carry the entry's field/value pairs, else 'read'; with
--           '-kryo' appended, the letter is written as Java's DeadLetterCodec writes it
--           through Redisson's Kryo codec (names and values Kryo-encoded)
-- ARGV[10..] = entry field/value pairs (only with 'given')
-- Returns {1, dlq id}, {2} when the entry no longer exists (acked, nothing added),
-- {0} when it is not pending (nothing done), or {-1} when the epoch is stale.
-- fencing: ARGV[2] is '<epoch>' or '<epoch>|<owner>'; with an owner, the lease key (the last
-- KEY) must be free or still ours: a take-over by a writer that does not raise the epoch
-- (Java takes the lease with SETNX) fences us as well
if ARGV[2] ~= '' then
  local epoch, owner = string.match(ARGV[2], '^(%d+)|(.+)$')
  if redis.call('GET', KEYS[2]) ~= (epoch or ARGV[2]) then
    return {-1}
  end
  if owner then
    local holder = redis.call('GET', KEYS[#KEYS])
    if holder and holder ~= owner then
      return {-1}
    end
  end
end
-- Java's Map.toString() headers, '{k=v, k2=v2}' (mqcore.codec.parse_headers reads them the same)
local function java_map(text)
  local out = {}
  if type(text) ~= 'string' or string.sub(text, 1, 1) ~= '{' or string.sub(text, -1) ~= '}' then
    return out
  end
  local body = string.sub(text, 2, -2)
  local keys = {}
  local pos = 1
  while pos <= #body do
    if pos == 1 or string.sub(body, pos - 2, pos - 1) == ', ' then
      local key = string.match(body, '^([^=,{} ][^=,{}]*)=', pos)
      if key then
        keys[#keys + 1] = {pos, key, pos + #key + 1}
      end
    end
    pos = pos + 1
  end
  if #keys == 0 or keys[1][1] ~= 1 then return out end
  for i, k in ipairs(keys) do
    local stop = #body
    if keys[i + 1] then stop = keys[i + 1][1] - 3 end
    out[k[2]] = string.sub(body, k[3], stop)
  end
  return out
end
local flat
local mode, kryo_mode = string.match(ARGV[9], '^(%a+)(.*)$')
if mode == 'given' then
  flat = {}
  for i = 10, #ARGV do
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
local headers = {}
if f['headers'] then
  local ok, decoded = pcall(cjson.decode, f['headers'])
  if not ok then ok, decoded = true, java_map(f['headers']) end
  if ok and type(decoded) == 'table' then
    -- the one header rule (mqcore.codec.parse_headers; replay_letters.lua has the same
    -- loop): strings as they are, numbers/booleans/objects/arrays as JSON text, null dropped
    for k, v in pairs(decoded) do
      if type(k) == 'string' then
        if type(v) == 'string' then
          headers[k] = v
        elseif type(v) == 'number' or type(v) == 'boolean' or type(v) == 'table' then
          headers[k] = cjson.encode(v)
        end
      end
    end
  end
end
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
-- Redisson's Kryo codec (java-kryo mode), for what Java's DeadLetterCodec reads back
local function kvarint(n)
  local out = ''
  while n >= 128 do
    out = out .. string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  return out .. string.char(n)
end
local function kint(text)
  local n = math.floor(tonumber(text) or 0)
  if n >= 0 then return '\2' .. kvarint(n * 2) end
  return '\2' .. kvarint(-n * 2 - 1)
end
local function kunit(c)
  if c < 128 then return string.char(c) end
  if c < 2048 then return string.char(192 + math.floor(c / 64), 128 + c % 64) end
  return string.char(224 + math.floor(c / 4096), 128 + math.floor(c / 64) % 64, 128 + c % 64)
end
local function kstr(s)
  if #s > 1 and #s < 64 and not string.find(s, '[\128-\255]') then
    return '\3' .. string.sub(s, 1, -2) .. string.char(string.byte(s, -1) + 128)
  end
  -- UTF-8 to UTF-16 units, each written in 1-3 bytes (a supplementary character as two)
  local body, units, i = {}, 0, 1
  while i <= #s do
    local b, cp, len = string.byte(s, i), nil, 1
    if b < 128 then cp = b
    elseif b >= 240 and i + 3 <= #s then
      len = 4
      cp = (b - 240) * 262144 + (string.byte(s, i + 1) - 128) * 4096
        + (string.byte(s, i + 2) - 128) * 64 + string.byte(s, i + 3) - 128
    elseif b >= 224 and i + 2 <= #s then
      len = 3
      cp = (b - 224) * 4096 + (string.byte(s, i + 1) - 128) * 64 + string.byte(s, i + 2) - 128
    elseif b >= 192 and i + 1 <= #s then
      len = 2
      cp = (b - 192) * 64 + string.byte(s, i + 1) - 128
    else cp = 65533 end
    if cp >= 65536 then
      cp = cp - 65536
      body[#body + 1] = kunit(55296 + math.floor(cp / 1024)) .. kunit(56320 + cp % 1024)
      units = units + 2
    else
      body[#body + 1] = kunit(cp)
      units = units + 1
    end
    i = i + len
  end
  local n = units + 1
  local head
  if n < 64 then head = string.char(n + 128)
  else
    head = string.char(n % 64 + 192)
    n = math.floor(n / 64)
    while n > 0 do
      local low = n % 128
      n = math.floor(n / 128)
      if n > 0 then low = low + 128 end
      head = head .. string.char(low)
    end
  end
  return '\3' .. head .. table.concat(body)
end
local function kmap(t)
  local parts, n = {}, 0
  for k, v in pairs(t) do
    parts[#parts + 1] = kstr(k) .. kstr(v)
    n = n + 1
  end
  return '\1\0java.util.HashMa\240' .. kvarint(n + 1) .. table.concat(parts)
end
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
