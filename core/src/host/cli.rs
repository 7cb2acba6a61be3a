//! What both command lines (Python's and Ruby's `cogworker`) decide the
//! same way.

/// The exit status of a command given something it cannot use: a bad flag
/// or setting, an app that cannot be loaded (a failure of the work itself,
/// such as an unreachable Redis, is 1).
pub const EXIT_USAGE: i32 = 2;

/// The one line a worker command prints (then exits [`EXIT_USAGE`]) when
/// the app it was told to load cannot be found: `app` as given, `why` as
/// the host's error says it. Python printed a line of its own and exited
/// 2, Ruby a `LoadError` backtrace and exited 1.
pub fn app_not_loaded(app: &str, why: &str) -> String {
    format!("cogworker: cannot load {app}: {why}")
}

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
