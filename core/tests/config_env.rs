//! `Config::from_env`: COGWORKER_REDIS_URL wins over REDIS_URL; a bad URL
//! is refused with the setting named. (Its own binary: it sets env vars,
//! one test at a time.)

use cogworker::{Config, DEFAULT_REDIS_URL};
use std::sync::Mutex;

/// The environment is the process's: the tests that set it take turns.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

#[test]
fn redis_url_comes_from_the_environment() {
    let _turn = ENVIRONMENT.lock().unwrap_or_else(|p| p.into_inner());
    std::env::remove_var("COGWORKER_REDIS_URL");
    std::env::remove_var("REDIS_URL");
    assert_eq!(Config::from_env().unwrap().redis_url(), DEFAULT_REDIS_URL);

    std::env::set_var("REDIS_URL", "redis://10.0.0.9:6390/2");
    assert_eq!(Config::from_env().unwrap().redis_url(), "redis://10.0.0.9:6390/2");

    std::env::set_var("COGWORKER_REDIS_URL", "rediss://user:secret@cache:6380/1");
    let config = Config::from_env().unwrap();
    assert_eq!(config.redis_url(), "rediss://user:secret@cache:6380/1");
    assert_eq!(config.redis_url_redacted(), "rediss://user:***@cache:6380/1");

    std::env::set_var("COGWORKER_REDIS_URL", "http://nope");
    let err = Config::from_env().unwrap_err().to_string();
    assert!(err.contains("redis_url") && err.contains("http://nope"), "{err}");
}

/// Secrets kept off the command line (where `ps` shows them to every user
/// of the machine): a file named by `COGWORKER_REDIS_URL_FILE` holds the
/// URL, one named by `COGWORKER_WEB_AUTH_FILE` the dashboard's `user:password`.
#[test]
fn secrets_come_from_files_the_environment_names() {
    let _turn = ENVIRONMENT.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!("cogworker-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url_file = dir.join("redis_url");
    std::fs::write(&url_file, "redis://:s3cret@127.0.0.1:6399/3\n").unwrap();
    std::env::set_var("COGWORKER_REDIS_URL", "redis://127.0.0.1:1/0");
    std::env::set_var("COGWORKER_REDIS_URL_FILE", &url_file);
    assert_eq!(
        Config::from_env().unwrap().redis_url(),
        "redis://:s3cret@127.0.0.1:6399/3",
        "the file wins"
    );
    std::env::set_var("COGWORKER_REDIS_URL_FILE", dir.join("missing"));
    let err = Config::from_env().unwrap_err();
    assert_eq!(err.field(), Some("redis_url"), "{err}");
    assert!(err.to_string().contains("COGWORKER_REDIS_URL_FILE"), "{err}");
    std::env::remove_var("COGWORKER_REDIS_URL_FILE");
    std::env::remove_var("COGWORKER_REDIS_URL");

    #[cfg(feature = "web")]
    {
        use cogworker::web::{WebArgs, WebOptions};
        let auth_file = dir.join("web_auth");
        std::fs::write(&auth_file, "admin:hunter2\n").unwrap();
        std::env::set_var("COGWORKER_WEB_AUTH_FILE", &auth_file);
        let options = WebOptions::from_cli(&WebArgs::default()).unwrap();
        assert!(format!("{options:?}").contains("admin:***"), "{options:?}");
        std::env::remove_var("COGWORKER_WEB_AUTH_FILE");
    }
    assert!(cogworker::host::secret_on_command_line("--redis-url", "redis://:pw@h:1/0").is_some());
    assert!(cogworker::host::secret_on_command_line("--redis-url", "redis://h:1/0").is_none());
    assert!(cogworker::host::secret_on_command_line("--auth", "u:p").is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}
