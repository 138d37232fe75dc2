-- Out-of-line payload keys an entry owns (needs headers). mqcore.payloads.check_payload_ref is
-- the same rule in Python: a reference (header x-payload-hash-ref) is followed only when it
-- names a payload key under `prefix` (KeySpace.payload_prefix of the entry's own partition);
-- with `any_partition` (a dead-letter stream: `prefix` ends in ':p:') under any partition of
-- the topic.
local function entry_payload_ref(fields, prefix, any_partition)
  if prefix == nil or prefix == '' then return nil end
  for j = 1, #fields, 2 do
    if fields[j] == 'headers' then
      local ref = read_headers(fields[j + 1])['x-payload-hash-ref']
      if type(ref) ~= 'string' or string.sub(ref, 1, #prefix) ~= prefix then return nil end
      local rest = string.sub(ref, #prefix + 1)
      if any_partition then rest = string.match(rest, '^%d+:(.*)$') or '' end
      if #rest == 0 or #rest > 100 or not string.match(rest, '^[%w_-]+$') then return nil end
      return ref
    end
  end
  return nil
end
-- delete a payload key and its member of the topic's payload index; returns keys deleted
local function unlink_payload(ref, index_key)
  if not ref then return 0 end
  redis.call('SREM', index_key, ref)
  return redis.call('UNLINK', ref)
end
-- delete entry `id` of `stream` with the payload key it owns under `prefix` ('' or nil: the
-- key stays, a Java service may share it); returns entries deleted (0: already gone)
local function delete_entry(stream, id, prefix, index_key)
  local found = redis.call('XRANGE', stream, id, id)[1]
  if not found then return 0 end
  unlink_payload(entry_payload_ref(found[2], prefix), index_key)
  return redis.call('XDEL', stream, id)
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
