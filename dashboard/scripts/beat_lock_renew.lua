-- KEYS[1] = the beat leader lock of the console store (opsdash:beat-leader)
-- ARGV[1] = the token of the beat that holds it
-- ARGV[2] = the lock's TTL in ms
-- Renews the lock only while the caller holds it (GET and PEXPIRE at once: a lock that
-- expired and was taken by another beat is not renewed). Returns 1 renewed, 0 not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
