-- Ack under Java's ack-delete policy all-groups-ack: ack, record the group in each entry's
-- ack set, and XDEL the entry once every live group has acked it.
-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = commit frontier hash of the partition
-- KEYS[4 .. 3+k] = lease keys (this partition) of the groups named in ARGV[6 .. 5+k]
-- KEYS[4+k ..] = the ack set of each entry id in ARGV[6+k ..], in the same order
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = ack set TTL in seconds (Java's acksetTtlSec)
-- ARGV[4] = k, how many lease keys follow
-- ARGV[5] = commit frontier encoding: 'plain', 'kryo', or '' to leave it alone
-- Returns {acked, deleted}, or {-1, 0} when the epoch is stale (nothing done).
-- A live group is on the stream and holds a lease on this partition, as in Java; a group on
-- the stream whose lease key the caller did not pass counts as live (never delete for it).
-- fencing: ARGV[2] is '<epoch>' or '<epoch>|<owner>'; with an owner, the lease key (the last
-- KEY) must be free or still ours: a take-over by a writer that does not raise the epoch
-- (Java takes the lease with SETNX) fences us as well
if ARGV[2] ~= '' then
  local epoch, owner = string.match(ARGV[2], '^(%d+)|(.+)$')
  if redis.call('GET', KEYS[2]) ~= (epoch or ARGV[2]) then
    return {-1, 0}
  end
  if owner then
    local holder = redis.call('GET', KEYS[#KEYS])
    if holder and holder ~= owner then
      return {-1, 0}
    end
  end
end
local k = tonumber(ARGV[4])
local lease_of = {}
for i = 1, k do lease_of[ARGV[5 + i]] = KEYS[3 + i] end
local live = {}
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local name = nil
  for j = 1, #g, 2 do
    if g[j] == 'name' then name = g[j + 1] end
  end
  local lease = lease_of[name]
  if lease == nil or redis.call('EXISTS', lease) == 1 then
    live[#live + 1] = name
  end
end
local acked, deleted = 0, 0
local first = 6 + k
local acked_ids = {}
for i = first, #ARGV do
  local id = ARGV[i]
  local set = KEYS[4 + k + (i - first)]
  if redis.call('XACK', KEYS[1], ARGV[1], id) == 1 then
    acked = acked + 1
    acked_ids[#acked_ids + 1] = id
    redis.call('SADD', set, ARGV[1])
    redis.call('EXPIRE', set, ARGV[3])
    local all = #live > 0
    for _, name in ipairs(live) do
      if redis.call('SISMEMBER', set, name) == 0 then
        all = false
        break
      end
    end
    if all then
      redis.call('XDEL', KEYS[1], id)
      redis.call('DEL', set)
      deleted = deleted + 1
    end
  end
end
-- commit frontier (ARGV mode 'plain' or 'kryo'; '' leaves it alone): how far the group acked,
-- never past its lowest pending entry (its last delivered id when nothing is pending), as
-- Java's housekeeper reads it (HGETALL, trims below the lowest frontier of the leased groups). 'kryo' writes field and value as
-- Redisson's Kryo codec does (a string of ASCII: byte 3, the text, the last byte + 128).
local function id_less(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then return false end
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  if am ~= bm then return am < bm end
  return as < bs
end
local function kryo_str(s)
  if #s > 1 and #s < 64 then
    return '\3' .. string.sub(s, 1, -2) .. string.char(string.byte(s, -1) + 128)
  end
  local n = #s + 1
  if n < 64 then return '\3' .. string.char(n + 128) .. s end
  local head = string.char(n % 64 + 192)
  n = math.floor(n / 64)
  while n > 0 do
    local low = n % 128
    n = math.floor(n / 128)
    if n > 0 then low = low + 128 end
    head = head .. string.char(low)
  end
  return '\3' .. head .. s
end
local function kryo_unstr(v)
  if not v then return nil end
  if string.byte(v, 1) ~= 3 then return v end
  local b = string.byte(v, 2)
  if b and b < 128 then
    return string.sub(v, 2, -2) .. string.char(string.byte(v, -1) - 128)
  end
  local at = 3
  if b and b >= 192 then
    repeat
      local c = string.byte(v, at)
      at = at + 1
    until not c or c < 128
  end
  return string.sub(v, at)
end
local function raise_frontier(stream, frontier, group, mode, ids)
  if mode == '' or #ids == 0 then return end
  -- every entry below the lowest pending one is acked; with nothing pending, every entry
  -- up to the last delivered one is
  local target = redis.call('XPENDING', stream, group)[2]
  local low = target
  if not target then
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
      for j = 1, #g, 2 do
        if g[j] == 'name' and g[j + 1] == group then
          for m = 1, #g, 2 do
            if g[m] == 'last-delivered-id' then target = g[m + 1] end
          end
        end
      end
    end
  end
  if not target or target == '0-0' then return end
  local field = group
  if mode == 'kryo' then field = kryo_str(group) end
  local current = kryo_unstr(redis.call('HGET', frontier, field))
  local lowered = current and low and id_less(low, current)
  if not current or id_less(current, target) or lowered then
    local value = target
    if mode == 'kryo' then value = kryo_str(target) end
    redis.call('HSET', frontier, field, value)
  end
end
raise_frontier(KEYS[1], KEYS[3], ARGV[1], ARGV[5], acked_ids)
return {acked, deleted}
