//! What both command lines (Python's and Ruby's `cogworker`) decide the
//! same way.

/// The warning for a secret given as a command-line flag, where `ps` shows
/// it to every user of the machine: `--auth` always, `--redis-url` when
/// the URL carries a password. `None` when there is nothing to warn of.
pub fn secret_on_command_line(flag: &str, value: &str) -> Option<String> {
    let (carries_secret, instead) = match flag {
        "--auth" => (
            true,
            "COGWORKER_WEB_AUTH_FILE (a file holding user:password) or COGWORKER_WEB_AUTH",
        ),
        "--redis-url" => (
            crate::redis_url::redact_url(value) != value,
            "COGWORKER_REDIS_URL_FILE (a file holding the URL) or COGWORKER_REDIS_URL",
        ),
        _ => (false, ""),
    };
    carries_secret.then(|| {
        format!("{flag} puts a password on the command line, where any user of this machine can read it (ps); pass it in {instead}")
    })
}

/// Logs [`secret_on_command_line`]'s warning, if there is one.
pub fn warn_secret_on_command_line(flag: &str, value: &str) {
    if let Some(warning) = secret_on_command_line(flag, value) {
        tracing::warn!("{warning}");
    }
}
