-- Mark a planned batch failed (unless it already completed).
-- KEYS[1] = checkpoint record hash, KEYS[2] = checkpoint index zset, KEYS[3] = checkpoint meta hash
-- ARGV[1] = batch id, ARGV[2] = run id, ARGV[3] = now (epoch ms), ARGV[4] = failure reason
-- ARGV[5] = pipeline
-- Returns 1 when recorded, 0 when the batch had completed already.
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'completed' then
  return 0
end
if status == 'in_progress' or status == 'restored' then
  redis.call('HINCRBY', KEYS[3], 'in_progress', -1)
end
if not status then
  redis.call('HSET', KEYS[1], 'pipeline', ARGV[5], 'batch_id', ARGV[1], 'trigger_at_ms', ARGV[3],
    'sink_committed', '0', 'acked', '0', 'records', '0', 'restored', '0')
  redis.call('ZADD', KEYS[2], tonumber(ARGV[1]), ARGV[1])
  redis.call('HINCRBY', KEYS[3], 'triggered', 1)
end
if status ~= 'failed' then
  redis.call('HINCRBY', KEYS[3], 'failed', 1)
end
redis.call('HSET', KEYS[1], 'status', 'failed', 'run_id', ARGV[2], 'failed_at_ms', ARGV[3],
  'failure_reason', ARGV[4])
redis.call('HSET', KEYS[3], 'last_failed_id', ARGV[1], 'last_failed_at_ms', ARGV[3],
  'last_failure_reason', ARGV[4])
return 1
