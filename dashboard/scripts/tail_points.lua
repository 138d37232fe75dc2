-- KEYS[1..n] = raw time series keys of the console store (opsdash:ts:<cluster>:raw:<metric>:<entity>)
-- ARGV[1..n] = for the key at the same index, minus the number of bytes wanted from its end
--   (a whole number of points: -(points x point size))
-- Returns the last bytes of every key in KEYS order: an empty string for a missing key
-- or one that is not a string (the caller then skips that series).
local tails = {}
for i = 1, #KEYS do
  local tail = redis.pcall('GETRANGE', KEYS[i], ARGV[i], -1)
  if type(tail) ~= 'string' then
    tail = ''
  end
  tails[i] = tail
end
return tails
