-- Delete dead letters of one topic with the out-of-line payload key each owns, atomically
-- per call (an operator's delete or purge: mqcore.letter_payloads).
-- KEYS[1] = DLQ stream of the topic
-- KEYS[2] = payload index set of the topic
-- ARGV[2k-1], ARGV[2k] = letter id k, the payload key it owns ('' for none; the caller read it
--   from the letter and checked it names a payload key of the topic)
-- A payload key goes only with its letter (XDEL answered 1), so a repeated call unlinks
-- nothing twice.
-- Returns the number of letters deleted.
local deleted = 0
for k = 1, #ARGV, 2 do
  if redis.call('XDEL', KEYS[1], ARGV[k]) == 1 then
    deleted = deleted + 1
    if ARGV[k + 1] ~= '' then
      redis.call('UNLINK', ARGV[k + 1])
      redis.call('SREM', KEYS[2], ARGV[k + 1])
    end
  end
end
return deleted
