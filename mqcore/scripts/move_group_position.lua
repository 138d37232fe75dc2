-- Move a consumer group on several partitions of one topic (they share its hash tag), all or
-- none, each with an exact ENTRIESREAD (operator position moves), and lower each partition's
-- commit frontier to the group's new floor (a rewind must not let Java trim what the group
-- will read again).
-- KEYS[2i-1] = partition stream i, KEYS[2i] = its commit frontier hash
-- ARGV[1] = group, ARGV[2] = frontier mode: 'plain' | 'kryo' | '' (leave it alone)
-- then 5 arguments per partition i, from ARGV[3 + 5(i-1)]:
--   mode: 'latest' | 'earliest' | 'head' | 'tail'
--   target id (head, tail), entries counted by Python:
--     head: entries with id <= target; tail: entries with id > target
--   anchor counted against: head: first entry id ('' when empty); tail: last-generated-id
--   head: max-deleted-entry-id; tail: stream length, both as seen when counting
-- Every partition is checked first; nothing is written unless every check holds.
-- Returns {'moved', then per partition: target id, entries-read set, entries-added,
--          previous last-delivered-id, previous entries-read or ''},
-- {'changed', i...} (the partitions whose anchor moved: recount them) or
-- {'nogroup', i...} (the group or the stream is gone there).
--#include ids
--#include kryo
--#include frontier
local group, front_mode = ARGV[1], ARGV[2]
local n = #KEYS / 2
local SINCE = 1000 -- entries appended since the count, read at most per call
local since_left = SINCE
local plans, changed, missing = {}, {}, {}

local function group_row(stream)
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local name, last, read
    for j = 1, #g, 2 do
      if g[j] == 'name' then name = g[j + 1] end
      if g[j] == 'last-delivered-id' then last = g[j + 1] end
      if g[j] == 'entries-read' then read = g[j + 1] end
    end
    if name == group then return last, read or '' end
  end
  return nil
end

local function check(i)
  local stream, at = KEYS[2 * i - 1], 3 + 5 * (i - 1)
  if redis.call('EXISTS', stream) == 0 then return 'nogroup' end
  local previous, previous_read = group_row(stream)
  if not previous then return 'nogroup' end
  local info = redis.call('XINFO', 'STREAM', stream)
  local added, last_id, length, first, deleted
  for j = 1, #info, 2 do
    local k, v = info[j], info[j + 1]
    if k == 'entries-added' then added = v end
    if k == 'last-generated-id' then last_id = v end
    if k == 'length' then length = v end
    if k == 'max-deleted-entry-id' then deleted = v end
    if k == 'first-entry' then first = v and v[1] or '' end
  end
  local mode, target, read = ARGV[at], nil, nil
  local counted, anchor, extra = tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4]
  if mode == 'latest' then
    target, read = last_id, added
  elseif mode == 'earliest' then
    target, read = '0-0', added - length
  elseif mode == 'head' then
    if first ~= anchor or deleted ~= extra then return 'changed' end
    target, read = ARGV[at + 1], added - length + counted
  elseif mode == 'tail' then
    -- entries added since the count are after the target too: count them (bounded)
    local since = 0
    if last_id ~= anchor then
      since = #redis.call('XRANGE', stream, '(' .. anchor, '+', 'COUNT', since_left + 1)
      if since > since_left then return 'changed' end
      since_left = since_left - since
    end
    if length ~= tonumber(extra) + since then return 'changed' end
    target, read = ARGV[at + 1], added - counted - since
  else
    return redis.error_reply('ERR unknown mode ' .. mode)
  end
  plans[i] = {target, read, added, previous, previous_read}
  return 'ok'
end

for i = 1, n do
  local status = check(i)
  if type(status) == 'table' then return status end
  if status == 'changed' then changed[#changed + 1] = i end
  if status == 'nogroup' then missing[#missing + 1] = i end
end
if #missing > 0 then return {'nogroup', unpack(missing)} end
if #changed > 0 then return {'changed', unpack(changed)} end

local out = {'moved'}
for i = 1, n do
  local stream, plan = KEYS[2 * i - 1], plans[i]
  redis.call('XGROUP', 'SETID', stream, group, plan[1], 'ENTRIESREAD', plan[2])
  -- the group's new floor: its lowest pending entry, else its new last-delivered id
  local floor_id = plan[1]
  local low = redis.call('XPENDING', stream, group)[2]
  if low and id_less(low, floor_id) then floor_id = low end
  lower_frontier(KEYS[2 * i], front_mode, floor_id)
  for _, v in ipairs(plan) do out[#out + 1] = v end
end
return out
