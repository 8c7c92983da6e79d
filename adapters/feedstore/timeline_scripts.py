"""The Lua scripts of the timelines. Every key of one call belongs to one owner (one
``{owner id}`` hash tag, so one Redis Cluster slot); a call may take many owners on a
standalone Redis, one on a cluster (adapters.feedstore groups them)."""

from __future__ import annotations

from adapters.feedstore.resp import Script

# KEYS: live timelines; ARGV: maxlen, ttl, then score/member pairs.
# The fast path of Timelines.add: adds the entries to each timeline that exists, trims
# it to maxlen real entries (rank 0 is the sentinel; a no-op while it holds fewer) and
# refreshes its TTL (EXPIRE doubles as the existence test: three calls per timeline).
# Returns the 1-based indexes of the KEYS that do not exist.
_ADD_TO_LIVE = Script("""
local ttl = tonumber(ARGV[2])
local trim = -(tonumber(ARGV[1]) + 1)
local missing = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if redis.call('EXPIRE', key, ttl) == 1 then
    redis.call('ZADD', key, unpack(ARGV, 3))
    redis.call('ZREMRANGEBYRANK', key, 1, trim)
  else
    missing[#missing + 1] = i
  end
end
return missing
""")

# KEYS: pairs (timeline, its :build key); ARGV: maxlen, ttl, then score/member pairs.
# Adds the entries to whichever of the pair exists (the live key first), trims to
# maxlen real entries (rank 0 is the sentinel) and refreshes the TTL of a live key.
# Returns how many timelines were written.
_ADD_IF_EXISTS = Script("""
local ttl = tonumber(ARGV[2])
local trim = -(tonumber(ARGV[1]) + 1)
local written = 0
for i = 1, #KEYS, 2 do
  local key = KEYS[i]
  local live = redis.call('EXPIRE', key, ttl) == 1
  if live or redis.call('EXISTS', KEYS[i + 1]) == 1 then
    if not live then key = KEYS[i + 1] end
    redis.call('ZADD', key, unpack(ARGV, 3))
    redis.call('ZREMRANGEBYRANK', key, 1, trim)
    written = written + 1
  end
end
return written
""")

# KEYS: timeline, :build key, lock key, :gone key; ARGV: lock token, maxlen, ttl,
# score/member pairs. Finishes a rebuild: adds the entries read from PostgreSQL to the
# :build key (which may already hold entries that writers added meanwhile), except those
# removed while the rebuild ran (the :gone set: the load may have read them before their
# removal), trims, swaps it in, releases the lock.
_FINISH_REBUILD = Script("""
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local maxlen = tonumber(ARGV[2])
local gone = redis.call('EXISTS', KEYS[4]) == 1
local batch = {}
for i = 4, #ARGV, 2 do
  if not gone or redis.call('SISMEMBER', KEYS[4], ARGV[i + 1]) == 0 then
    batch[#batch + 1] = ARGV[i]
    batch[#batch + 1] = ARGV[i + 1]
  end
  if #batch >= 1000 then
    redis.call('ZADD', KEYS[2], unpack(batch))
    batch = {}
  end
end
if #batch > 0 then redis.call('ZADD', KEYS[2], unpack(batch)) end
redis.call('DEL', KEYS[4])
if redis.call('ZCARD', KEYS[2]) > maxlen + 1 then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 1, -(maxlen + 1))
end
redis.call('RENAME', KEYS[2], KEYS[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return 1
""")

# KEYS: :build key, :gone key. Starts a rebuild: a fresh :build key holding the
# sentinel (writers add to it from now on), for a minute at most.
_START_REBUILD = Script("""
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZADD', KEYS[1], 0, '')
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
""")

# KEYS: lock key; ARGV: token. Releases the lock if it is still ours.
_RELEASE = Script("""
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
""")

# KEYS: triples (timeline, its :build key, its :gone key); ARGV: members.
# Removes the members from each timeline and from a rebuild in progress; there it also
# records them in :gone, so the rebuild's load (possibly read before the removal) does
# not bring them back. Returns how many entries were removed from the timelines.
_REMOVE = Script("""
local removed = 0
for i = 1, #KEYS, 3 do
  removed = removed + redis.call('ZREM', KEYS[i], unpack(ARGV))
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then
    redis.call('ZREM', KEYS[i + 1], unpack(ARGV))
    redis.call('SADD', KEYS[i + 2], unpack(ARGV))
    redis.call('PEXPIRE', KEYS[i + 2], 120000)
  end
end
return removed
""")
