# SPDX-License-Identifier: MIT
#
# Code written for the Pyroscope Ruby gem, run under pyrospy.
#
# pyrospy exec puts this file ahead of the real gem, so that an app
# instrumented with Pyroscope.configure and Pyroscope.tag_wrapper is
# profiled from outside, unchanged.  configure keeps the tags and ignores
# everything else (server address, sample rate, ...): pyrospy's own options
# decide those.
require "pyrospy"

module Pyroscope
  # Accepts every setting the gem knows, keeps only tags.
  class Config
    attr_accessor :tags

    def method_missing(name, *args)
      name.to_s.end_with?("=") ? args.first : nil
    end

    def respond_to_missing?(_name, _all = false)
      true
    end
  end

  class << self
    def configure
      c = Config.new
      yield c if block_given?
      Pyrospy.add_tags(c.tags) if c.tags
      c
    end

    def tag_wrapper(tags, &block)
      Pyrospy.tag_wrapper(tags, &block)
    end

    def tag(tags)
      Pyrospy.add_tags(tags)
    end

    def remove_tags(*keys)
      Pyrospy.remove_tags(*keys)
    end

    def shutdown; end
  end
end
