-- KEYS[1] = the series index of the cluster (a sorted set: metric<US>entity scored by last write)
-- KEYS[2..n] = time series keys of the console store (opsdash:ts:<cluster>:<tier>:<metric>:<entity>)
-- ARGV[1] = n-1 packed points of ARGV[2] bytes each, one per series key in KEYS order (uint32
--   seconds + float32 value, 8 bytes, for gauges; uint32 seconds + float64, 12 bytes, for
--   *_total counters)
-- ARGV[3] = a length in bytes
-- ARGV[4] = "created": also report the keys this call creates; "all": index every series key
--   (score ARGV[5]); anything else: neither
-- ARGV[5] = the index score (epoch ms), with "all"
-- ARGV[6] = with "all", the length of the series keys' name before the metric (the prefix up
--   to and with the tier's ':'): a key's index member is its metric and entity, the ':'
--   between them (a metric holds none) replaced by the unit separator
-- APPENDs the i-th point to KEYS[i+1]; returns {i, new byte length, ...} of the series keys
-- whose new length reached ARGV[3] (the caller rewrites keys that outgrew their retention)
-- and, with "created", of the keys this call created (their length is one point: the
-- caller indexes their series).
local points, size, floor = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local created = ARGV[4] == 'created' and size or -1
local index = ARGV[4] == 'all'
local skip = index and tonumber(ARGV[6]) or 0
local near = {}
local scored = {}
local at = 1
for i = 2, #KEYS do
  local key = KEYS[i]
  local n = redis.call('APPEND', key, string.sub(points, at, at + size - 1))
  if n >= floor or n == created then
    near[#near + 1] = i - 1
    near[#near + 1] = n
  end
  if index then
    local rest = string.sub(key, skip + 1)
    local colon = string.find(rest, ':', 1, true)
    scored[#scored + 1] = ARGV[5]
    scored[#scored + 1] = string.sub(rest, 1, colon - 1) .. '\31' .. string.sub(rest, colon + 1)
  end
  at = at + size
end
if #scored > 0 then
  redis.call('ZADD', KEYS[1], unpack(scored))
end
return near
