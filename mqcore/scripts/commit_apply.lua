-- Apply one group of a journaled commit's chunks (commit_seal.lua): HINCRBY each staged
-- field into its output, delete the chunks and move the journal on, in one step, so a
-- group is applied exactly once whatever crashes between the calls.
-- KEYS[1] = commit journal hash, KEYS[2 .. 1+O] = output hashes, KEYS[2+O ..] = the chunks
-- (fields "<output index>|<field>" -> increment)
-- ARGV[1] = batch id, ARGV[2] = group index (from 0), ARGV[3] = O
-- Returns 1 when applied, 0 when the journal is past this group already, -1 when the journal
-- does not hold this batch or waits for an earlier group (nothing written then).
local state = redis.call('HMGET', KEYS[1], 'batch', 'next')
if state[1] ~= ARGV[1] then return -1 end
local group, nxt = tonumber(ARGV[2]), tonumber(state[2])
if group < nxt then return 0 end
if group > nxt then return -1 end
local o = tonumber(ARGV[3])
for k = 2 + o, #KEYS do
  local staged = redis.call('HGETALL', KEYS[k])
  for j = 1, #staged, 2 do
    local sep = string.find(staged[j], '|', 1, true)
    if sep then
      local idx = tonumber(string.sub(staged[j], 1, sep - 1))
      redis.call('HINCRBY', KEYS[1 + idx], string.sub(staged[j], sep + 1), staged[j + 1])
    end
  end
  redis.call('UNLINK', KEYS[k])
end
redis.call('HSET', KEYS[1], 'next', group + 1)
return 1
