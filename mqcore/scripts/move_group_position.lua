-- Move a consumer group on one partition with an exact ENTRIESREAD (operator position moves).
-- KEYS[1] = partition stream
-- ARGV[1] = group, ARGV[2] = mode: 'latest' | 'earliest' | 'head' | 'tail'
-- ARGV[3] = target id (head, tail), ARGV[4] = entries counted by Python:
--   head: entries with id <= target; tail: entries with id > target
-- ARGV[5] = anchor counted against: head: first entry id ('' when empty);
--   tail: last-generated-id
-- ARGV[6] = head: max-deleted-entry-id; tail: stream length, both as seen when counting
-- Returns {'moved', target id, entries-read set, entries-added, previous last-delivered-id,
--          previous entries-read or ''}, {'changed'} when the anchor moved (recount),
-- {'nostream'} or {'nogroup'}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'nostream'}
end
local previous, previous_read
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local name, last, read
  for j = 1, #g, 2 do
    if g[j] == 'name' then name = g[j + 1] end
    if g[j] == 'last-delivered-id' then last = g[j + 1] end
    if g[j] == 'entries-read' then read = g[j + 1] end
  end
  if name == ARGV[1] then
    previous = last
    previous_read = read or ''
  end
end
if not previous then
  return {'nogroup'}
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local added, last_id, length, first, deleted
for j = 1, #info, 2 do
  local k, v = info[j], info[j + 1]
  if k == 'entries-added' then added = v end
  if k == 'last-generated-id' then last_id = v end
  if k == 'length' then length = v end
  if k == 'max-deleted-entry-id' then deleted = v end
  if k == 'first-entry' then first = v and v[1] or '' end
end
local target, read
local mode = ARGV[2]
if mode == 'latest' then
  target, read = last_id, added
elseif mode == 'earliest' then
  target, read = '0-0', added - length
elseif mode == 'head' then
  if first ~= ARGV[5] or deleted ~= ARGV[6] then
    return {'changed'}
  end
  target, read = ARGV[3], added - length + tonumber(ARGV[4])
elseif mode == 'tail' then
  -- entries added since the count are after the target too: count them (bounded)
  local since = 0
  if last_id ~= ARGV[5] then
    since = #redis.call('XRANGE', KEYS[1], '(' .. ARGV[5], '+', 'COUNT', 1001)
    if since > 1000 then
      return {'changed'}
    end
  end
  if length ~= tonumber(ARGV[6]) + since then
    return {'changed'}
  end
  target, read = ARGV[3], added - tonumber(ARGV[4]) - since
else
  return redis.error_reply('ERR unknown mode ' .. mode)
end
redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], target, 'ENTRIESREAD', read)
return {'moved', target, read, added, previous, previous_read}
