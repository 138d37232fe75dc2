-- KEYS[1..n] = time series keys of the console store (opsdash:ts:<cluster>:<tier>:<metric>:<entity>)
-- ARGV[1] = n packed points of ARGV[2] bytes each, one per key in KEYS order (uint32 seconds +
--   float32 value, 8 bytes, for gauges; uint32 seconds + float64, 12 bytes, for *_total counters)
-- ARGV[3] = a length in bytes
-- ARGV[4] = "1": also report the keys this call creates
-- APPENDs the i-th point to KEYS[i]; returns {i, new byte length, ...} of the keys whose new
-- length reached ARGV[3] (the caller rewrites keys that outgrew their retention) and, with
-- ARGV[4], of the keys this call created (their length is one point: the caller indexes
-- their series).
local points, size, floor = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local created = ARGV[4] == '1' and size or -1
local near = {}
local at = 1
for i = 1, #KEYS do
  local n = redis.call('APPEND', KEYS[i], string.sub(points, at, at + size - 1))
  if n >= floor or n == created then
    near[#near + 1] = i
    near[#near + 1] = n
  end
  at = at + size
end
return near
