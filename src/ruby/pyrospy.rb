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
#   Thread.main[:__pyrospy_sets__]        Array: id -> String "key US value
#                                         RS key US value..." (US = \x1f,
#                                         RS = \x1e); append-only, so an id
#                                         means the same for good; 0 is the
#                                         empty set
module Pyrospy
  US = "\x1f"
  RS = "\x1e"
  MAX_SETS = 8192     # distinct tag sets kept; past it new ones are ignored
  MAX_VALUE = 1024    # characters kept of a value (pyrospy cuts there too)

  @sets = [""].freeze.dup
  @ids = { "" => 0 }
  @parsed = [{}.freeze]
  @merged = {}
  @nmerged = 0
  @lock = Mutex.new
  Thread.main[:__pyrospy_sets__] = @sets

  class << self
    # Tag what the block runs; wrappers nest (the inner one adds keys and
    # wins on the same key) and restore the tags before them on the way
    # out, exceptions included.
    def tag_wrapper(tags)
      t = Thread.current
      old = t[:__pyrospy_tags__] || 0
      new = merged(old, tags) || merge(old, tags)
      t[:__pyrospy_tags__] = new
      begin
        yield
      ensure
        t[:__pyrospy_tags__] = old
      end
    end

    # The process-wide tags (a wrapper's tags win over them).
    def tags
      @parsed[Thread.main[:__pyrospy_process__] || 0].dup
    end

    def tags=(tags)
      id = set_of(clean(tags))
      Thread.main[:__pyrospy_process__] = id if id
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
      old = t[:__pyrospy_tags__] || 0
      new = set_of(@parsed[old].merge(clean(tags)))
      return nil unless new
      t[:__pyrospy_tags__] = new
      [t, old, new]
    end

    # Back to the tags before _enter; should they have changed since (a
    # wrapper left open), the keys are taken out of those there now, if
    # they are still _enter's.
    def _leave(entered, keys)
      t, old, new = entered
      now = t[:__pyrospy_tags__] || 0
      return t[:__pyrospy_tags__] = old if now == new
      tags = @parsed[now]
      return unless tags[keys.first] == @parsed[new][keys.first]
      t[:__pyrospy_tags__] = set_of(tags.reject { |k, _| keys.include?(k) }) || 0
    end

    private

    def clean(tags)
      tags.to_h.each_with_object({}) { |(k, v), h| h[k.to_s] = v.to_s[0, MAX_VALUE] }
    end

    # The id of hash `tags` (String keys and values), or nil past MAX_SETS.
    def set_of(tags)
      s = tags.sort.map { |k, v| k + US + v }.join(RS)
      @lock.synchronize do
        id = @ids[s]
        return id if id
        return nil if @sets.size >= MAX_SETS
        id = @sets.size
        @parsed << tags.dup.freeze
        @sets << s.dup.freeze
        @ids[s.dup.freeze] = id
      end
    end

    # Set old updated with tags, from a tree of earlier answers:
    # @merged[old][key][value]...[nil] (hashing the Hash itself costs more
    # than the rest of a wrapper).
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
      @lock.synchronize do
        if @nmerged < 4 * MAX_SETS
          node = (@merged[old] ||= {})
          tags.each_pair do |k, v|
            node = (node[k.frozen? ? k : k.dup.freeze] ||= {})
            node = (node[v.frozen? ? v : v.dup.freeze] ||= {})
          end
          @nmerged += 1 unless node.key?(nil)
          node[nil] = new
        end
      end
      new
    end
  end
end
