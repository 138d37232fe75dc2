-- KEYS[1..n] = time series keys of the console store (opsdash:ts:<cluster>:<tier>:<metric>:<entity>)
-- ARGV[1..n] = one packed point for the key at the same index (uint32 seconds + float32 value,
--   8 bytes, for gauges; uint32 seconds + float64, 12 bytes, for *_total counters)
-- APPENDs ARGV[i] to KEYS[i]; returns the new byte length of every key in KEYS order
-- (the caller rewrites keys that outgrew their retention).
local lengths = {}
for i = 1, #KEYS do
  lengths[i] = redis.call('APPEND', KEYS[i], ARGV[i])
end
return lengths
