# frozen_string_literal: true

# Writes a Makefile that builds the extension with cargo, offline, from the
# crates this gem carries (ext/cogworker/crates, vendored dependencies in
# ext/cogworker/vendor), in the `dist` profile (release code, no debug
# info, symbols stripped), and installs it as cogworker/cogworker_ext.
require 'rbconfig'

here = __dir__
abort 'cogworker: cargo (Rust) is required to build this gem' unless system('cargo --version', out: File::NULL)
abort "cogworker: #{here}/crates is missing: build the gem with scripts/build-gem" unless File.directory?("#{here}/crates")

dlext = RbConfig::CONFIG['DLEXT']
lib = RbConfig::CONFIG['host_os'] =~ /darwin/ ? 'libcogworker_ext.dylib' : 'libcogworker_ext.so'
# RubyGems points sitearchdir at its staging directory (through a siteconf
# it loads before this file); `ruby extconf.rb` by hand uses Ruby's own.
sitearchdir = RbConfig::MAKEFILE_CONFIG['sitearchdir']
File.write('Makefile', <<~MAKE)
  sitearchdir = #{sitearchdir}
  CRATES = #{here}/crates
  TARGET = $(CURDIR)/target
  all:
  \tcd "$(CRATES)" && CARGO_TARGET_DIR="$(TARGET)" cargo build --profile dist --offline --locked -p cogworker-ruby
  \tcp "$(TARGET)/dist/#{lib}" cogworker_ext.#{dlext}
  install: all
  \tmkdir -p "$(sitearchdir)/cogworker"
  \tcp cogworker_ext.#{dlext} "$(sitearchdir)/cogworker/cogworker_ext.#{dlext}"
  clean:
  \trm -rf "$(TARGET)" cogworker_ext.#{dlext}
MAKE
