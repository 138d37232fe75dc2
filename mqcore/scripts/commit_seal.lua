-- Open the commit journal of a batch too big for one script (commit_batch.lua inline): the
-- chunks to apply, in order and grouped per commit_apply.lua call, and the final
-- commit_batch.lua call; the chunks lose their TTL (they now hold part of a commit): one
-- PERSIST per chunk, ~0.5 us (4,000 chunks, a 500,000-record batch of distinct keys: ~2 ms).
-- KEYS[1] = sink marker hash, KEYS[2] = commit journal hash, KEYS[3 ..] = the chunk hashes
-- ARGV[1] = sink, ARGV[2] = batch id, ARGV[3] = groups (commit_apply.lua calls)
-- ARGV[4] = plan (JSON [[chunk key, ...] per group]), ARGV[5] = outputs (JSON [key, ...])
-- ARGV[6] = final (JSON {"keys": [...], "args": [...]}: the commit_batch.lua call), ARGV[7] = now
-- ARGV[8] = the chunks' TTL (s), given back when one is found gone
-- Returns {'sealed'}; {'committed'} when the marker covers the batch; {'open', batch id} when
-- the journal holds a commit already (this batch's, sealed by an earlier run, or another's:
-- the caller finishes it first); {'missing', key} when a chunk is gone (expired): nothing
-- is written in these cases.
local committed = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
if committed >= tonumber(ARGV[2]) then return {'committed'} end
local open = redis.call('HGET', KEYS[2], 'batch')
if open then return {'open', open} end
for i = 3, #KEYS do
  -- every chunk is written with a TTL: 0 means it is gone
  if redis.call('PERSIST', KEYS[i]) == 0 then
    for j = 3, i - 1 do
      redis.call('EXPIRE', KEYS[j], ARGV[8])
    end
    return {'missing', KEYS[i]}
  end
end
redis.call('HSET', KEYS[2], 'batch', ARGV[2], 'sink', ARGV[1], 'groups', ARGV[3], 'next', '0',
  'plan', ARGV[4], 'outputs', ARGV[5], 'final', ARGV[6], 'sealed_at_ms', ARGV[7])
return {'sealed'}
