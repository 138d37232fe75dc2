-- The retention floor (needs ids). A group's floor is its lowest pending id, or the id right
-- after its last-delivered id when nothing is pending: every entry below it is read and acked
-- by that group. A partition's retention floor is the lowest floor over EVERY group on the
-- stream, leased or not (pipeline groups are real groups too). Prefix deletes (XTRIM MINID,
-- the commit frontier Java trims by) never pass it; a single entry is deleted only when no
-- group still needs it (deletable). mqcore.retention.floor is the same rule in Python.
local function group_fields(info) -- one XINFO GROUPS entry (flat reply or table) as a table
  if info['name'] ~= nil then return info end
  local f = {}
  for j = 1, #info, 2 do f[info[j]] = info[j + 1] end
  return f
end
-- every group on the stream, each as a table of its XINFO GROUPS fields ({} without a stream)
local function stream_groups(stream)
  local out = {}
  if redis.call('EXISTS', stream) == 0 then return out end
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do out[#out + 1] = group_fields(g) end
  return out
end
local function group_floor(stream, info)
  local f = group_fields(info)
  local floor = id_after(f['last-delivered-id'])
  if tonumber(f['pending']) > 0 then
    local low = redis.call('XPENDING', stream, f['name'])[2]
    if low and id_less(low, floor) then floor = low end
  end
  return floor
end
-- the lowest floor of the groups not in the set `ignored` (nil: none ignored): floor id
-- (nil: no such group), the group holding it, and the highest of those floors
local function partition_floor(stream, ignored)
  local floor, holder, furthest = nil, '', nil
  for _, f in ipairs(stream_groups(stream)) do
    if not (ignored and ignored[f['name']]) then
      local g = group_floor(stream, f)
      if floor == nil or id_less(g, floor) then floor, holder = g, f['name'] end
      if furthest == nil or id_less(furthest, g) then furthest = g end
    end
  end
  return floor, holder, furthest
end
-- whether the group still needs entry `id`: not delivered to it yet, or in its PEL
-- (XPENDING with a one-id range and COUNT 1: O(log n))
local function needed_by_group(stream, info, id)
  local f = group_fields(info)
  if id_less(f['last-delivered-id'], id) then return true end
  if tonumber(f['pending']) == 0 then return false end
  return #redis.call('XPENDING', stream, f['name'], id, id, 1) > 0
end
-- whether entry `id` may be deleted: no group still needs it. The caller has just acked it
-- for `self`, which still needs it when it was moved back before the ack (the entry is after
-- its last-delivered id: it reads it again). `groups`: stream_groups(stream), read once for
-- many ids (nil: read now)
local function deletable(stream, id, self, groups)
  for _, f in ipairs(groups or stream_groups(stream)) do
    if f['name'] == self then
      if id_less(f['last-delivered-id'], id) then return false end
    elseif needed_by_group(stream, f, id) then
      return false
    end
  end
  return true
end
