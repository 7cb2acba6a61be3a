# frozen_string_literal: true

require_relative 'lib/cogworker/version'

Gem::Specification.new do |s|
  s.name = 'cogworker'
  s.version = Cogworker::VERSION
  s.summary = 'Background jobs on Redis that are never lost (Ruby layer over the cogworker Rust engine)'
  s.description = 'A Sidekiq-like job system whose engine is one Rust core shared with Python and Rust; ' \
                  'jobs cross languages through one Redis layout.'
  s.authors = ['cogworker']
  s.license = 'MIT'
  s.required_ruby_version = '>= 3.1'
  s.bindir = 'exe'
  s.executables = ['cogworker']
  s.extensions = ['ext/cogworker/extconf.rb']
  # The Rust sources travel with the gem (the crates and `cargo vendor`
  # output under ext/cogworker/), so `gem install` builds offline. Vendored
  # crates keep dot-files (.cargo-checksum.json) that cargo verifies.
  s.files = Dir.glob(%w[lib/**/*.rb exe/* ext/**/* README.md], File::FNM_DOTMATCH)
               .reject { |f| File.directory?(f) || f.start_with?('ext/cogworker/target/') || f.end_with?('.so') }
  s.require_paths = ['lib']
  s.metadata['rubygems_mfa_required'] = 'true'
end
