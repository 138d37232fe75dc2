-- The next rows of a retry set after a member, read at one instant: where the member stands
-- now (when it has left the set: after every member of a lower score, in the page's order),
-- then up to n rows by rank from there. A walk that reads chunk after chunk by rank would
-- skip members when others before it leave meanwhile (the retry mover); anchored on the
-- last member read, it does not. O(log N + n).
-- KEYS[1] = retry zset
-- ARGV[1] = member, ARGV[2] = its score, ARGV[3] = n, ARGV[4] = '1' descending, else '0'
-- ARGV[5] = now (epoch ms: due means score <= now)
-- Returns {start rank, 1 when the member is still there else 0, ZCARD, due count,
-- {member, score, member, score, ...}}
local desc = ARGV[4] == '1'
local rank
if desc then
  rank = redis.call('ZREVRANK', KEYS[1], ARGV[1])
else
  rank = redis.call('ZRANK', KEYS[1], ARGV[1])
end
local start, there = 0, 0
if rank then
  start, there = rank + 1, 1
elseif desc then
  start = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[2], '+inf')
else
  start = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[2])
end
local stop = start + tonumber(ARGV[3]) - 1
local rows
if desc then
  rows = redis.call('ZRANGE', KEYS[1], start, stop, 'REV', 'WITHSCORES')
else
  rows = redis.call('ZRANGE', KEYS[1], start, stop, 'WITHSCORES')
end
return {start, there, redis.call('ZCARD', KEYS[1]),
  redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[5]), rows}
