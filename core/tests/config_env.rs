//! `Config::from_env`: COGWORKER_REDIS_URL wins over REDIS_URL; a bad URL
//! is refused with the setting named. (Its own binary: it sets env vars.)

use cogworker::{Config, DEFAULT_REDIS_URL};

#[test]
fn redis_url_comes_from_the_environment() {
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
