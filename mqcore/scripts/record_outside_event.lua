-- KEYS[1] = the outside-console event stream
-- ARGV[1] = the event's token (one per event: a write sent again finds it and adds nothing)
-- ARGV[2] = the stream's bound (MAXLEN ~)
-- ARGV[3] = how many of the newest entries are searched for the token
-- ARGV[4..] = field, value pairs of the event
-- Returns the id of the new entry, or of the entry already written with this token.
local recent = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ARGV[3])
for _, entry in ipairs(recent) do
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'token' and fields[i + 1] == ARGV[1] then
      return entry[1]
    end
  end
end
return redis.call(
  'XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'token', ARGV[1], unpack(ARGV, 4)
)
