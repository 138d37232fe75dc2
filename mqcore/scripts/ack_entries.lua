-- KEYS[1] = partition stream
-- KEYS[2] = fencing epoch key of (topic, group, partition)
-- KEYS[3] = commit frontier hash of the partition
-- ARGV[1] = consumer group
-- ARGV[2] = expected epoch, or epoch|owner (the lease key is then the last KEY);
--           '' = unfenced (operator action)
-- ARGV[3] = '1' to XDEL the acked entries (ack-delete policy immediate), else '0'
-- ARGV[4] = commit frontier encoding: 'plain', 'kryo', or '' to leave it alone
-- ARGV[5..] = entry ids
-- Returns the number of entries acked, or -1 when the epoch is stale (nothing done).
-- fencing: ARGV[2] is '<epoch>' or '<epoch>|<owner>'; with an owner, the lease key (the last
-- KEY) must be free or still ours: a take-over by a writer that does not raise the epoch
-- (Java takes the lease with SETNX) fences us as well
if ARGV[2] ~= '' then
  local epoch, owner = string.match(ARGV[2], '^(%d+)|(.+)$')
  if redis.call('GET', KEYS[2]) ~= (epoch or ARGV[2]) then
    return -1
  end
  if owner then
    local holder = redis.call('GET', KEYS[#KEYS])
    if holder and holder ~= owner then
      return -1
    end
  end
end
if #ARGV < 5 then
  return 0
end
local acked = 0
for i = 5, #ARGV, 500 do
  local last = math.min(i + 499, #ARGV)
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, i, last))
  if ARGV[3] == '1' then
    redis.call('XDEL', KEYS[1], unpack(ARGV, i, last))
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
if acked > 0 then
  raise_frontier(KEYS[1], KEYS[3], ARGV[1], ARGV[4], {unpack(ARGV, 5, #ARGV)})
end
return acked
