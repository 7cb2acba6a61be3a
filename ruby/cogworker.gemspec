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
  s.homepage = 'https://example.invalid/cogworker'
  s.metadata['source_code_uri'] = 'https://example.invalid/cogworker.git'
  s.metadata['changelog_uri'] = 'https://example.invalid/cogworker/CHANGELOG.md'
  s.metadata['documentation_uri'] = 'https://example.invalid/cogworker/docs'
  s.metadata['bug_tracker_uri'] = 'https://example.invalid/cogworker/issues'
  s.required_ruby_version = '>= 3.1'
  s.bindir = 'exe'
  s.executables = ['cogworker']
  native_abis = ENV.fetch('COGWORKER_NATIVE_GEM', '').split.sort_by { |abi| Gem::Version.new(abi) }
  if native_abis.any?
    # The platform gem (scripts/build-gem): the extension compiled for each
    # of these Ruby minor versions, under lib/cogworker/<major.minor>/; no
    # Rust needed. A Ruby between them that has none is told, when it
    # requires the gem, to install the source gem.
    s.platform = Gem::Platform.local
    newest = Gem::Version.new(native_abis.last).segments
    s.required_ruby_version = [">= #{native_abis.first}", "< #{newest[0]}.#{newest[1] + 1}.dev"]
    s.files = Dir.glob(%w[lib/**/*.rb exe/* README.md] + native_abis.map { |abi| "lib/cogworker/#{abi}/cogworker_ext.so" })
  else
    # The source gem: the Rust sources travel with it (the crates and the
    # `cargo vendor` output under ext/cogworker/), so `gem install` builds
    # offline. Vendored crates keep dot-files (.cargo-checksum.json) that
    # cargo verifies.
    s.extensions = ['ext/cogworker/extconf.rb']
    s.files = Dir.glob(%w[lib/**/*.rb exe/* ext/**/* README.md], File::FNM_DOTMATCH)
                 .reject { |f| File.directory?(f) || f.start_with?('ext/cogworker/target/') || f.end_with?('.so') }
  end
  s.require_paths = ['lib']
  s.metadata['rubygems_mfa_required'] = 'true'
end
