-- XADD one partition entry whose payload is stored out of line, atomically.
-- KEYS[1] = partition stream
-- KEYS[2] = payload key (string)
-- KEYS[3] = topic payload index set
-- ARGV[1] = payload value
-- ARGV[2] = payload TTL in ms (0: none)
-- ARGV[3] = 1 to refuse a missing stream (NOMKSTREAM), 0 to create it
-- ARGV[4..] = entry field/value pairs
-- Returns the new entry id, or false when the stream is missing and ARGV[3] = 1.
-- No MAXLEN: the producer never trims (length bounds are the housekeeper's, floor-bound).
local args = {KEYS[1]}
if ARGV[3] == '1' then
  table.insert(args, 'NOMKSTREAM')
end
table.insert(args, '*')
for i = 4, #ARGV do
  table.insert(args, ARGV[i])
end
local id = redis.call('XADD', unpack(args))
if not id then
  return false
end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
else
  redis.call('SET', KEYS[2], ARGV[1])
end
redis.call('SADD', KEYS[3], KEYS[2])
return id
