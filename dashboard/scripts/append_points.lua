-- KEYS[1..n] = time series keys of the console store (opsdash:ts:<cluster>:<tier>:<metric>:<entity>)
-- ARGV[1..n] = one packed 12-byte point (uint32 seconds, float64 value) for the key at the same index
-- APPENDs ARGV[i] to KEYS[i]; returns the new byte length of every key in KEYS order
-- (the caller rewrites keys that outgrew their retention).
local lengths = {}
for i = 1, #KEYS do
  lengths[i] = redis.call('APPEND', KEYS[i], ARGV[i])
end
return lengths
