-- Delete a batch's staged chunks (an aborted or already committed batch), unless the commit
-- journal holds that batch: its chunks are then part of a commit under way, which the next
-- commit of the batch finishes (chunks it does not name expire by their TTL).
-- KEYS[1] = commit journal hash, KEYS[2 ..] = stage chunk hashes
-- ARGV[1] = batch id
-- Returns the number of keys deleted.
if redis.call('HGET', KEYS[1], 'batch') == ARGV[1] then return 0 end
local n = 0
for i = 2, #KEYS do
  n = n + redis.call('UNLINK', KEYS[i])
end
return n
