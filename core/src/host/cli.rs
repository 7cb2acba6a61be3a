//! What both command lines (Python's and Ruby's `cogworker`) decide the
//! same way.

/// The exit status of a command given something it cannot use: a bad flag
/// or setting, an app that cannot be loaded (a failure of the work itself,
/// such as an unreachable Redis, is 1).
pub const EXIT_USAGE: i32 = 2;

/// The worker command's logging flags, the same in both CLIs: `(long,
/// short, help)`.
pub const LOGGING_FLAGS: [(&str, Option<&str>, &str); 2] = [
    ("--json-logs", None, "log JSON lines (the engine's and the app's)"),
    (
        "--verbose",
        Some("-v"),
        "debug logging (COGWORKER_LOG=debug unless it is set)",
    ),
];

/// Sets up a command line's log lines: JSON or text, and with `verbose`
/// the engine's debug lines: `COGWORKER_LOG=debug` unless it is set, in
/// the environment, so the children of `-p N` log alike.
pub fn init_cli_logging(json: bool, verbose: bool) {
    if verbose && std::env::var_os("COGWORKER_LOG").is_none() {
        // Set at the command's start, before the engine starts a thread.
        std::env::set_var("COGWORKER_LOG", "debug");
    }
    crate::logging::init(json);
}

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

/// A flag of `cogworker web`, `cogworker metrics` or an admin command
/// (the worker's are [`super::flags`]'s): each CLI builds its parser from
/// these, keeping every use of a flag, and hands what was given back to
/// the core, which reads it ([`command_connection`], `web_args`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandFlag {
    /// `--host`, `--port`, ...
    pub long: &'static str,
    /// What its value is called in `--help` (`HOST`); `None`: a switch,
    /// given or not.
    pub metavar: Option<&'static str>,
    /// One line for `--help`.
    pub help: String,
}

/// The flags of `command`: the connection's for every command, and the
/// server's for `web` and `metrics`.
pub fn command_flags(command: &str) -> Vec<CommandFlag> {
    let mut flags = vec![
        flag(
            "--redis-url",
            Some("URL"),
            "Redis (default: COGWORKER_REDIS_URL_FILE, COGWORKER_REDIS_URL, REDIS_URL, then redis://127.0.0.1:6379/0)"
                .into(),
        ),
        flag("--namespace", Some("NS"), "key prefix (default cogworker)".into()),
    ];
    flags.extend(server_flags(command));
    flags
}

fn flag(long: &'static str, metavar: Option<&'static str>, help: String) -> CommandFlag {
    CommandFlag { long, metavar, help }
}

/// Without the dashboard, `web` and `metrics` have no server to serve.
#[cfg(not(feature = "web"))]
fn server_flags(_command: &str) -> Vec<CommandFlag> {
    Vec::new()
}

/// `web`'s and `metrics`'s own flags (none for another command).
#[cfg(feature = "web")]
fn server_flags(command: &str) -> Vec<CommandFlag> {
    use crate::web::{METRICS_PORT, WEB_HOST, WEB_PORT};
    let port = match command {
        "web" => WEB_PORT,
        "metrics" => METRICS_PORT,
        _ => return Vec::new(),
    };
    vec![
        flag("--host", Some("HOST"), format!("address to bind (default {WEB_HOST})")),
        flag("--port", Some("PORT"), format!("port (default {port})")),
        flag(
            "--auth",
            Some("USER:PASSWORD"),
            "require basic auth (or COGWORKER_WEB_AUTH_FILE, COGWORKER_WEB_AUTH)".into(),
        ),
        flag(
            "--allowed-host",
            Some("HOST[:PORT]"),
            "a Host name to serve besides localhost (a proxy's, a DNS name); repeatable (or COGWORKER_WEB_ALLOWED_HOSTS, comma-separated)".into(),
        ),
        flag(
            "--insecure-no-auth",
            None,
            "serve on a non-loopback --host without --auth (refused otherwise)".into(),
        ),
    ]
}

/// The flags given to `command`, each with its texts (one per use; a
/// switch given: `["true"]`), checked against [`command_flags`].
pub struct GivenFlags<'a> {
    given: &'a [(String, Vec<String>)],
}

impl<'a> GivenFlags<'a> {
    /// `given` to `command`; an unknown flag is refused, naming it.
    pub fn new(command: &'a str, given: &'a [(String, Vec<String>)]) -> crate::error::Result<Self> {
        let flags = command_flags(command);
        if let Some((unknown, _)) = given.iter().find(|(long, _)| !flags.iter().any(|f| f.long == long)) {
            return Err(crate::error::Error::invalid_argument(
                "flag",
                unknown,
                format!("cogworker {command} has no such flag"),
            ));
        }
        Ok(GivenFlags { given })
    }

    /// Every text given for `long`.
    pub fn all(&self, long: &str) -> Vec<String> {
        self.given
            .iter()
            .filter(|(given, _)| given == long)
            .flat_map(|(_, texts)| texts.iter().cloned())
            .collect()
    }

    /// The last text given for `long`, if it was.
    pub fn last(&self, long: &str) -> Option<String> {
        self.all(long).pop()
    }

    /// Logs [`secret_on_command_line`]'s warning for each flag given.
    pub fn warn_secrets(&self) {
        for (long, texts) in self.given {
            for text in texts {
                warn_secret_on_command_line(long, text);
            }
        }
    }
}

/// The Redis URL and namespace `--redis-url` and `--namespace` give to
/// `command` (`None`: the configuration's); the flags are checked and a
/// secret among them warned of (see [`secret_on_command_line`]).
pub fn command_connection(
    command: &str,
    given: &[(String, Vec<String>)],
) -> crate::error::Result<(Option<String>, Option<String>)> {
    let flags = GivenFlags::new(command, given)?;
    flags.warn_secrets();
    Ok((flags.last("--redis-url"), flags.last("--namespace")))
}

/// What the flags `given` to `command` (`web` or `metrics`) say for the
/// server, each with its texts (see [`command_flags`]); a flag the command
/// does not have, or a port that is not one, is refused, naming it.
#[cfg(feature = "web")]
pub fn web_args(command: &str, given: &[(String, Vec<String>)]) -> crate::error::Result<crate::web::WebArgs> {
    let flags = GivenFlags::new(command, given)?;
    let port = flags
        .last("--port")
        .map(|text| {
            text.trim()
                .parse::<u16>()
                .map_err(|_| crate::error::Error::config("--port", &text, "must be a port number, 0 to 65535"))
        })
        .transpose()?;
    Ok(crate::web::WebArgs {
        host: flags.last("--host"),
        port,
        auth: flags.last("--auth"),
        allowed_hosts: flags.all("--allowed-host"),
        insecure_no_auth: flags.last("--insecure-no-auth").is_some(),
        metrics_only: command == "metrics",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(f, v)| (f.to_string(), vec![v.to_string()]))
            .collect()
    }

    #[test]
    #[cfg(feature = "web")]
    fn web_and_metrics_have_the_server_flags_and_the_admin_commands_only_the_connections() {
        let longs = |command| command_flags(command).into_iter().map(|f| f.long).collect::<Vec<_>>();
        assert_eq!(longs("stats"), ["--redis-url", "--namespace"]);
        assert!(longs("web").contains(&"--allowed-host"));
        let port = |command| {
            command_flags(command)
                .into_iter()
                .find(|f| f.long == "--port")
                .map(|f| f.help)
        };
        assert_eq!(port("metrics").as_deref(), Some("port (default 9191)"));
        assert_eq!(port("web").as_deref(), Some("port (default 7890)"));
    }

    #[test]
    fn a_connection_is_read_from_the_flags_and_an_unknown_flag_is_refused() {
        let read = command_connection("stats", &given(&[("--namespace", "app"), ("--namespace", "other")])).unwrap();
        assert_eq!(read, (None, Some("other".to_string())));
        let refused = command_connection("stats", &given(&[("--port", "1")]))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--port"), "{refused}");
    }
}
