"""The timelines' Lua scripts; an owner's keys share its ``{owner id}`` slot.

The sentinel (member ``""``) scores ``-(2 * run + whole)``
(domain.feed.timelines.entries). A timeline not whole is exact from its oldest entry
up: adds leave older entries out, and drop it if empty. A cutting trim unsets whole.
"""

from __future__ import annotations

from adapters.resp import Script

# add(key, args): adds pairs args[3..] to the existing timeline (not below its floor if
# not whole), trims to args[1]; false if dropped (no sentinel, or not whole and empty).
_ADD = """
local function add(key, args)
  local head = redis.call('ZRANGE', key, 0, 1, 'WITHSCORES')
  if head[1] ~= '' then redis.call('DEL', key) return false end
  local sentinel = tonumber(head[2])
  local whole = (-sentinel) % 2 == 1
  if whole then
    redis.call('ZADD', key, unpack(args, 3))
  else
    if #head < 4 then redis.call('DEL', key) return false end
    local floor = tonumber(head[4])
    local batch = {}
    for i = 3, #args, 2 do
      if tonumber(args[i]) >= floor then
        batch[#batch + 1] = args[i]
        batch[#batch + 1] = args[i + 1]
      end
      if #batch >= 1000 then
        redis.call('ZADD', key, unpack(batch))
        batch = {}
      end
    end
    if #batch > 0 then redis.call('ZADD', key, unpack(batch)) end
  end
  local cut = redis.call('ZREMRANGEBYRANK', key, 1, -(tonumber(args[1]) + 1))
  if cut > 0 and whole then redis.call('ZADD', key, sentinel + 1, '') end
  return true
end
"""

# The run stamp of this server run: 52 bits of its run_id (exact in a double).
_RUN = """
local function run_stamp()
  local id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  return tonumber(string.sub(id, 1, 13), 16)
end
"""

# KEYS: live timelines; ARGV: maxlen, ttl, pairs. Adds to each that exists (EXPIRE is
# the existence test); returns the 1-based indexes of the KEYS missing (or dropped).
_ADD_TO_LIVE = Script(
    _ADD
    + """
local ttl = tonumber(ARGV[2])
local missing = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if redis.call('EXPIRE', key, ttl) == 0 or not add(key, ARGV) then
    missing[#missing + 1] = i
  end
end
return missing
"""
)

# KEYS: (timeline, :build) pairs; ARGV as _ADD_TO_LIVE. Adds to the live key, else the
# :build key. Returns how many timelines were written.
_ADD_IF_EXISTS = Script(
    _ADD
    + """
local ttl = tonumber(ARGV[2])
local written = 0
for i = 1, #KEYS, 2 do
  local key = KEYS[i]
  local live = redis.call('EXPIRE', key, ttl) == 1
  if live or redis.call('EXISTS', KEYS[i + 1]) == 1 then
    if not live then key = KEYS[i + 1] end
    if add(key, ARGV) then written = written + 1 end
  end
end
return written
"""
)

# KEYS: timeline, :build, lock, :gone; ARGV: token, maxlen, ttl, pairs. Adds the load to
# :build except members in :gone (removed meanwhile); a full load unsets whole and drops
# writes below its floor. Trims, renames over the timeline, releases the lock.
_FINISH_REBUILD = Script("""
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if head[1] ~= '' then return 0 end
local sentinel = tonumber(head[2])
local maxlen = tonumber(ARGV[2])
local gone = redis.call('EXISTS', KEYS[4]) == 1
local batch = {}
local loaded = 0
local floor, floor_arg = nil, nil
for i = 4, #ARGV, 2 do
  loaded = loaded + 1
  local score = tonumber(ARGV[i])
  if floor == nil or score < floor then floor, floor_arg = score, ARGV[i] end
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
local whole = (-sentinel) % 2 == 1
if loaded >= maxlen then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '(0', '(' .. floor_arg)
  whole = false
end
if redis.call('ZREMRANGEBYRANK', KEYS[2], 1, -(maxlen + 1)) > 0 then whole = false end
if not whole and (-sentinel) % 2 == 1 then redis.call('ZADD', KEYS[2], sentinel + 1, '') end
redis.call('RENAME', KEYS[2], KEYS[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return 1
""")

# KEYS: timeline, :build, :gone. Drops the timeline so writers add to a fresh :build
# (this run's whole sentinel, one minute TTL) until the rebuild finishes.
_START_REBUILD = Script(
    _RUN
    + """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZADD', KEYS[2], -(2 * run_stamp() + 1), '')
redis.call('PEXPIRE', KEYS[2], 60000)
return 1
"""
)

# KEYS: timelines; ARGV: ttl. Creates missing ones empty and whole; returns the count.
_CREATE_EMPTY = Script(
    _RUN
    + """
local sentinel = -(2 * run_stamp() + 1)
local created = 0
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('ZADD', KEYS[i], sentinel, '')
    redis.call('EXPIRE', KEYS[i], tonumber(ARGV[1]))
    created = created + 1
  end
end
return created
"""
)

# KEYS: lock key; ARGV: token. Releases the lock if it is still ours.
_RELEASE = Script("""
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
""")

# KEYS: (timeline, :build, :gone) triples; ARGV: members. Removes them, and during a
# rebuild records them in :gone so its load cannot bring them back. Returns the count.
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
