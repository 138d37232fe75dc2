-- Record that a pipeline's batch was planned (in progress), or detect a restore.
-- KEYS[1] = checkpoint record hash of the batch
-- KEYS[2] = checkpoint index zset of the pipeline (score = batch id)
-- KEYS[3] = checkpoint meta hash of the pipeline (counters, latest ids)
-- KEYS[4] = pipelines set
-- KEYS[5] = sink marker hash (sink -> last committed batch id)
-- ARGV[1] = pipeline, ARGV[2] = batch id, ARGV[3] = run id, ARGV[4] = now (epoch ms)
-- ARGV[5] = topic, ARGV[6] = sink, ARGV[7] = group, ARGV[8] = start offsets (JSON)
-- Returns "planned", "restored" (another run planned it and did not commit) or
-- "committed" (the sink already committed it: a replay to skip).
local batch = tonumber(ARGV[2])
local run = ARGV[3]
local now = ARGV[4]
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[3], 'pipeline', ARGV[1], 'topic', ARGV[5], 'sink', ARGV[6], 'group', ARGV[7])
local committed = tonumber(redis.call('HGET', KEYS[5], ARGV[6]) or '-1')
local status = redis.call('HGET', KEYS[1], 'status')
local old_run = redis.call('HGET', KEYS[1], 'run_id')
if committed >= batch then
  if old_run ~= run then
    redis.call('HSET', KEYS[1], 'run_id', run, 'restored', '1', 'restored_from_run', old_run or '',
      'restored_at_ms', now, 'restore_outcome', 'skipped: already committed')
    redis.call('HINCRBY', KEYS[3], 'restored', 1)
    redis.call('HSET', KEYS[3], 'last_restore_id', ARGV[2], 'last_restore_at_ms', now,
      'last_restore_outcome', 'skipped: already committed', 'last_restore_from_run', old_run or '')
  end
  return 'committed'
end
if not status then
  redis.call('HSET', KEYS[1], 'pipeline', ARGV[1], 'topic', ARGV[5], 'sink', ARGV[6],
    'batch_id', ARGV[2], 'status', 'in_progress', 'run_id', run, 'trigger_at_ms', now,
    'planned_at_ms', now, 'start_offsets', ARGV[8], 'sink_committed', '0', 'acked', '0',
    'records', '0', 'restored', '0')
  redis.call('ZADD', KEYS[2], batch, ARGV[2])
  redis.call('HINCRBY', KEYS[3], 'triggered', 1)
  redis.call('HINCRBY', KEYS[3], 'in_progress', 1)
  redis.call('HSET', KEYS[3], 'last_planned_id', ARGV[2])
  return 'planned'
end
if old_run == run then
  return 'planned'
end
if status == 'failed' or status == 'completed' then
  redis.call('HINCRBY', KEYS[3], 'in_progress', 1)
end
redis.call('HSET', KEYS[1], 'status', 'restored', 'run_id', run, 'restored', '1',
  'restored_from_run', old_run or '', 'restored_at_ms', now,
  'restore_outcome', 'replayed: planned but not committed by ' .. (old_run or '?'))
redis.call('HINCRBY', KEYS[3], 'restored', 1)
redis.call('HSET', KEYS[3], 'last_restore_id', ARGV[2], 'last_restore_at_ms', now,
  'last_restore_outcome', 'replayed: planned but not committed', 'last_restore_from_run', old_run or '')
return 'restored'
