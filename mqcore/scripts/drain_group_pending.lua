-- Acknowledge the oldest pending entries of a group on one partition, a bounded number: the
-- step of a forced group delete before its XGROUP DESTROY (which is O(pending entries)).
-- KEYS[1] = the partition's stream
-- ARGV[1] = the group
-- ARGV[2] = the most entries to acknowledge
-- Returns how many were acknowledged: 0 when none is pending, or no such stream or group
-- (a repeated step does nothing more).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local rows = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', tonumber(ARGV[2]))
if rows.err or #rows == 0 then return 0 end
local ids = {}
for i, row in ipairs(rows) do ids[i] = row[1] end
return redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
