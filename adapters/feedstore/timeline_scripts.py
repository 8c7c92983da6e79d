"""The Lua scripts of the timelines. Every key of one call belongs to one owner (one
``{owner id}`` hash tag, so one Redis Cluster slot); a call may take many owners on a
standalone Redis, one on a cluster (adapters.feedstore groups them).

The sentinel (member ``""``, rank 0) scores ``-(2 * run + whole)`` (see
domain.feed.timelines.entries): ``run`` stamps the server run that built the timeline,
``whole`` says it holds every post it should, with no lower bound. A timeline that is
not whole is exact from its oldest entry up, so an entry older than that would open a
gap: the add scripts leave such entries out (they stay in PostgreSQL, read past the
window), and drop a timeline that is not whole and holds no entry (it bounds nothing;
rebuilt on read). A trim that cuts entries makes a timeline not whole.
"""

from __future__ import annotations

from adapters.feedstore.resp import Script

# add(key, args): adds the score/member pairs of args (from index 3) to the timeline
# ``key`` (which exists), keeping out those older than the oldest entry of a timeline
# that is not whole; trims it to maxlen (args[1]) real entries. Returns false if the
# timeline was dropped instead (no sentinel, or not whole and empty).
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

# KEYS: live timelines; ARGV: maxlen, ttl, then score/member pairs.
# The fast path of Timelines.add: adds the entries to each timeline that exists, trims
# it and refreshes its TTL (EXPIRE doubles as the existence test).
# Returns the 1-based indexes of the KEYS that do not exist (or were dropped).
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

# KEYS: pairs (timeline, its :build key); ARGV: maxlen, ttl, then score/member pairs.
# Adds the entries to whichever of the pair exists (the live key first), as _ADD_TO_LIVE
# does, and refreshes the TTL of a live key. Returns how many timelines were written.
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

# KEYS: timeline, :build key, lock key, :gone key; ARGV: lock token, maxlen, ttl,
# score/member pairs. Finishes a rebuild: adds the entries read from PostgreSQL to the
# :build key (which may already hold entries that writers added meanwhile), except those
# removed while the rebuild ran (the :gone set: the load may have read them before their
# removal). A load of maxlen entries is exact only from its oldest one up: the timeline
# is then not whole, and what writers added below that is dropped. Trims, swaps it in
# (with the run stamp its start gave it), releases the lock.
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

# KEYS: timeline, :build key, :gone key. Starts a rebuild: drops the timeline (one of
# an earlier server run, or one another rebuild just finished), so that writers add to
# a fresh :build key from now on, holding the sentinel of this server run, whole until
# the load says otherwise, for a minute at most.
_START_REBUILD = Script(
    _RUN
    + """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZADD', KEYS[2], -(2 * run_stamp() + 1), '')
redis.call('PEXPIRE', KEYS[2], 60000)
return 1
"""
)

# KEYS: timelines; ARGV: ttl. Creates each timeline that does not exist, empty and
# whole, stamped with this server run (tests and tools: an owner known to have nothing
# to show). Returns how many were created.
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
