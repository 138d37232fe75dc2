-- Out-of-line payload keys (x-payload-hash-ref): each entry, retry item and dead letter owns
-- the payload key it names, and nobody else names it (mqcore.payloads). Needs headers.
-- The reference of a field map (name -> value, or XRANGE's flat list), only when it names a
-- payload key under `prefix` (the rest [A-Za-z0-9_-]{1,100}, as mqcore.payloads reads it);
-- `prefix` ending in ':p:' (KeySpace.payload_topic_prefix) accepts any partition's key.
local function entry_payload_ref(fields, prefix)
  local text = fields['headers']
  if text == nil and fields[1] ~= nil then
    for i = 1, #fields, 2 do
      if fields[i] == 'headers' then text = fields[i + 1] end
    end
  end
  local ref = read_headers(text)['x-payload-hash-ref']
  if type(ref) ~= 'string' or string.sub(ref, 1, #prefix) ~= prefix then return nil end
  local rest = string.sub(ref, #prefix + 1)
  if string.sub(prefix, -3) == ':p:' then
    rest = string.match(rest, '^%d+:(.*)$') or ''
  end
  if #rest < 1 or #rest > 100 or string.find(rest, '[^A-Za-z0-9_%-]') then return nil end
  return ref
end
-- delete a payload key a reference owned, and its member of the topic's payload index set
local function unlink_payload(ref, index_key)
  if ref == nil then return end
  redis.call('UNLINK', ref)
  redis.call('SREM', index_key, ref)
end
-- the headers (a table, changed in place) of a new owner of the payload `ref` names: COPY it
-- to the fresh key `dst` (in the index set `index_key`) and point the headers at `dst`; a gone
-- key is not copied and the headers say so (x-payload-missing); no ref, or a payload held
-- inline (`payload` non-empty and the storage type not 'hash', Java's rule): nothing done.
-- Returns true when a copy was made.
local function copy_payload(headers, payload, ref, dst, index_key)
  if ref == nil then return false end
  if payload ~= nil and payload ~= '' and headers['x-payload-storage-type'] ~= 'hash' then
    return false
  end
  if redis.call('COPY', ref, dst) == 1 then
    redis.call('SADD', index_key, dst)
    headers['x-payload-hash-ref'] = dst
    return true
  end
  headers['x-payload-missing'] = 'true'
  headers['x-payload-missing-ref'] = ref
  return false
end
