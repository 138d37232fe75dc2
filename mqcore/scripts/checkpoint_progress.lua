-- Add a StreamingQueryListener's duration breakdown to an existing checkpoint record.
-- KEYS[1] = checkpoint record hash
-- ARGV[1] = durations (JSON), ARGV[2] = trigger time (epoch ms), ARGV[3] = total duration ms
-- Returns 1 when the record exists (and was updated), else 0 (never creates a record).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'durations', ARGV[1], 'trigger_at_ms', ARGV[2], 'duration_ms', ARGV[3])
return 1
