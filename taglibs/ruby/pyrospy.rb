# SPDX-License-Identifier: MIT
#
# Tags for pyrospy, the out-of-process profiler.
#
#   require "pyrospy"
#
#   Pyrospy.tag_wrapper({"route" => "/cart"}) { handle }  # these samples carry route=/cart
#   Pyrospy.tags = {"region" => "eu"}                     # process-wide, every thread
#
# Nothing runs in the background: pyrospy reads the marks from this
# process's memory while it samples it.  Without pyrospy watching, a
# wrapper costs a few fiber-local variable writes and does nothing else.
#
# What pyrospy reads (keep in step with src/rbreader.c):
#
#   Thread.current[:__pyrospy_tags__]     Integer: the id of the tag set in
#                                         force on this thread (fiber)
#   Thread.main[:__pyrospy_process__]     Integer: the process-wide set
#   Thread.main[:__pyrospy_sets__]        Array: slot -> String "key US value
#                                         RS key US value..." (US = \x1f,
#                                         RS = \x1e); slot 0 is the empty set
#   Thread.main[:__pyrospy_gens__]        Array: slot -> the id of the set
#                                         there now
#
# An id is gen * MAX_SETS + slot: a slot's place is reused, with the next
# generation, by a set made when MAX_SETS exist, and an id never comes
# back.  The set of an id is the String of its slot as long as the slot
# still has that id: the id is written to gens before the String to sets,
# so a reader reading sets, then gens, knows.  (An older layout, which
# pyrospy still reads, had no gens and ids below 8192 that meant the same
# for good; ids here start at 8192, which an older pyrospy ignores.)
#
# At most MAX_SETS tag sets exist at once.  A set is held by the fibers
# under it (its wrappers and open spans) and by the process-wide tags; one
# no longer held stays (a wrapper entered again finds it) until a new set
# needs its place, the oldest first.  So a program never runs out of sets
# unless MAX_SETS are in use at the same time; past that, new ones are
# ignored (samples keep the tags around them, never wrong ones).
module Pyrospy
  US = "\x1f"
  RS = "\x1e"
  MAX_SETS = 8192     # tag sets at once; past it new ones are ignored
  MAX_VALUE = 1024    # characters kept of a value (pyrospy cuts there too)

  @sets = [""]
  @gens = [0]
  @ids = { "" => 0 }            # String -> id, of the sets there are
  @parsed = { 0 => {}.freeze }  # id -> Hash
  @refs = Hash.new(0)           # id -> holders
  @idle = {}                    # ids without holders, oldest first
  @merged = {}
  @nmerged = 0
  @lock = Mutex.new
  Thread.main[:__pyrospy_sets__] = @sets
  Thread.main[:__pyrospy_gens__] = @gens

  class << self
    # Tag what the block runs; wrappers nest (the inner one adds keys and
    # wins on the same key) and restore the tags before them on the way
    # out, exceptions included.
    def tag_wrapper(tags)
      t = Thread.current
      old = t[:__pyrospy_tags__] || 0
      # the fiber's hold on old passes to this frame until the ensure
      new = @lock.synchronize do
        id = merged(old, tags)
        id = merge(old, tags) unless id && live?(id)
        hold(id)
        id
      end
      t[:__pyrospy_tags__] = new
      begin
        yield
      ensure
        @lock.synchronize do
          now = t[:__pyrospy_tags__] || 0
          t[:__pyrospy_tags__] = old
          release(now)
        end
      end
    end

    # The process-wide tags (a wrapper's tags win over them).
    def tags
      @lock.synchronize { @parsed[Thread.main[:__pyrospy_process__] || 0].dup }
    end

    def tags=(tags)
      tags = clean(tags)
      @lock.synchronize do
        id = set_of(tags)
        return unless id

        hold(id)
        m = Thread.main
        now = m[:__pyrospy_process__] || 0
        m[:__pyrospy_process__] = id
        release(now)
      end
    end

    def add_tags(tags)
      self.tags = self.tags.merge(clean(tags))
    end

    def remove_tags(*keys)
      t = self.tags
      keys.each { |k| t.delete(k.to_s) }
      self.tags = t
    end

    # For pyroscope/otel.rb: the current fiber's tags plus tags (String
    # keys and values) until _leave, which is handed what this returns
    # (nil: no room for another set, nothing changed).
    def _enter(tags)
      t = Thread.current
      tags = clean(tags)
      key, value = tags.first
      @lock.synchronize do
        old = t[:__pyrospy_tags__] || 0
        new = set_of(@parsed[old].merge(tags))
        return nil unless new

        # the fiber's hold on old passes to what this returns
        hold(new)
        t[:__pyrospy_tags__] = new
        [t, old, new, value, key]
      end
    end

    # Back to the tags before _enter; should they have changed since (a
    # wrapper left open), the keys are taken out of those there now, if
    # they are still _enter's.
    def _leave(entered, keys)
      t, old, new, value, key = entered
      @lock.synchronize do
        now = t[:__pyrospy_tags__] || 0
        if now == new
          t[:__pyrospy_tags__] = old
          release(new)
          return
        end
        release(old)
        tags = @parsed[now]
        return unless tags && tags[key] == value

        id = set_of(tags.reject { |k, _| keys.include?(k) }) || 0
        hold(id)
        t[:__pyrospy_tags__] = id
        release(now)
      end
    end

    private

    def clean(tags)
      tags.to_h.each_with_object({}) { |(k, v), h| h[k.to_s] = v.to_s[0, MAX_VALUE] }
    end

    def live?(id)
      id.zero? || @gens[id % MAX_SETS] == id
    end

    # Holders of a set come and go under @lock.
    def hold(id)
      return if id.zero?

      @idle.delete(id) if @refs[id].zero?
      @refs[id] += 1
    end

    def release(id)
      return if id.zero? || !@refs.key?(id)

      if (@refs[id] -= 1).zero?
        @refs.delete(id)
        @idle[id] = true
      end
    end

    # The id of hash `tags` (String keys and values), or nil when MAX_SETS
    # are held (under @lock; the caller holds it before letting go: a new
    # set is not in @idle until its last holder lets it go).
    def set_of(tags)
      s = tags.sort.map { |k, v| k + US + v }.join(RS)
      id = @ids[s]
      return id if id

      if @sets.size < MAX_SETS
        slot = @sets.size
        id = MAX_SETS + slot
        @sets << s.dup.freeze
        @gens << id
      else
        old, = @idle.shift
        return nil unless old

        slot = old % MAX_SETS
        @ids.delete(@sets[slot])
        @parsed.delete(old)
        id = old + MAX_SETS
        @gens[slot] = id      # first the id, then the String (see above)
        @sets[slot] = s.dup.freeze
      end
      @ids[@sets[slot]] = id
      @parsed[id] = tags.dup.freeze
      id
    end

    # Set old updated with tags, from a tree of earlier answers:
    # @merged[old][key][value]...[nil] (hashing the Hash itself costs more
    # than the rest of a wrapper).  An answer may be of a set reclaimed
    # since: the caller checks.
    def merged(old, tags)
      node = @merged[old]
      if tags.size == 1         # the common case, without a block
        k, v = tags.first
        node = node && node[k]
        node = node && node[v]
        return node && node[nil]
      end
      tags.each_pair do |k, v|
        node = node && node[k]
        node = node && node[v]
      end
      node && node[nil]
    end

    def merge(old, tags)
      new = set_of(@parsed[old].merge(clean(tags))) || old
      if @nmerged >= 4 * MAX_SETS
        @merged.clear         # some name reclaimed sets: start over
        @nmerged = 0
      end
      node = (@merged[old] ||= {})
      tags.each_pair do |k, v|
        node = (node[k.frozen? ? k : k.dup.freeze] ||= {})
        node = (node[v.frozen? ? v : v.dup.freeze] ||= {})
      end
      @nmerged += 1 unless node.key?(nil)
      node[nil] = new
      new
    end
  end
end
