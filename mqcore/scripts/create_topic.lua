-- Create or grow one topic's partitions and consumer groups (never shrinks).
-- KEYS[1] = topic meta hash (field partitionCount)
-- KEYS[2] = topic partitions set (members: partition stream key names)
-- KEYS[3..] = partition streams p:0 .. p:N-1, N = ARGV[1]
-- ARGV[1] = requested partition count N (>= 1)
-- ARGV[2] = start id for the groups named in ARGV[3..]
-- ARGV[3..] = groups to ensure on every partition
-- Groups already present on any existing partition are created at "0" on the new ones.
-- Returns {partitionCount, groupsCreated}; error "SHRINK <current>" when N < current.
local n = tonumber(ARGV[1])
local current = tonumber(redis.call('HGET', KEYS[1], 'partitionCount') or '')
if current ~= nil and current > n then
  return redis.error_reply('SHRINK ' .. current)
end

local wanted = {}
local order = {}
for i = 3, #ARGV do
  if wanted[ARGV[i]] == nil then
    wanted[ARGV[i]] = ARGV[2]
    table.insert(order, ARGV[i])
  end
end
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local info = redis.call('XINFO', 'GROUPS', KEYS[i])
    for _, g in ipairs(info) do
      for j = 1, #g, 2 do
        if g[j] == 'name' and wanted[g[j + 1]] == nil then
          wanted[g[j + 1]] = '0'
          table.insert(order, g[j + 1])
        end
      end
    end
  end
end

local created = 0
for i = 3, #KEYS do
  redis.call('SADD', KEYS[2], KEYS[i])
  for _, g in ipairs(order) do
    local res = redis.pcall('XGROUP', 'CREATE', KEYS[i], g, wanted[g], 'MKSTREAM')
    if type(res) == 'table' and res.err then
      if not string.find(res.err, 'BUSYGROUP') then
        return redis.error_reply(res.err)
      end
    else
      created = created + 1
    end
  end
end
redis.call('HSET', KEYS[1], 'partitionCount', tostring(n))
return {n, created}
