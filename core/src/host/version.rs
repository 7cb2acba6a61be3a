//! The version guard: a host package refuses a native module built from
//! another version of cogworker (a stale build left on the load path, a
//! wheel or gem mixed with another's extension), whose protocol may differ
//! from what the package speaks.

/// This engine's version (the crate's, which the Python and Ruby packages
/// share).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `Err` with what to do when the host package of version `host` loaded
/// this native module (found at `path`) of another version.
pub fn check_version(host: &str, path: &str) -> Result<(), String> {
    if host == VERSION {
        return Ok(());
    }
    Err(format!(
        "the cogworker package is version {host} but its native module ({path}) is version {VERSION}: \
         reinstall the package (pip install --force-reinstall cogworker / gem pristine cogworker), \
         or rebuild it from this source tree"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_version_is_accepted_and_the_refusal_says_both() {
        assert!(check_version(VERSION, "x.so").is_ok());
        let refusal = check_version("0.0.1-old", "/site/cogworker/_core.so").unwrap_err();
        assert!(
            refusal.contains("0.0.1-old") && refusal.contains(VERSION) && refusal.contains("/site/cogworker/_core.so")
        );
    }
}
