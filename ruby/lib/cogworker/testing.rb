# frozen_string_literal: true

# `require 'cogworker/testing'`: Cogworker::Testing's fake and inline modes
# and Cogworker::Testing::RedisServer. Both use the engine (it validates
# fake pushes and runs the server), so this loads the whole library; the
# parts live in cogworker/testing/.
require_relative '../cogworker'
