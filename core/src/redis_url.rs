//! Redis URLs, parsed and checked in one place: one server (`redis://`,
//! `rediss://`, `unix://`), a Sentinel-managed master
//! (`redis+sentinel://`, `rediss+sentinel://`) or a Cluster
//! (`redis+cluster://`, `rediss+cluster://`); and redacted for logs and
//! the dashboard. The settings check a URL here; the connection
//! layer builds on what is parsed here.

use crate::error::{Error, Result};

/// Checks `url`; the error names `redis_url` and the URL (redacted).
pub(crate) fn check(url: &str) -> Result<()> {
    if SentinelUrl::parse(url)?.is_none() && ClusterUrl::parse(url)?.is_none() {
        redis::Client::open(url).map_err(|e| Error::config("redis_url", redact_url(url), e))?;
    }
    Ok(())
}

/// Query parameters that carry a secret (the `unix://` form's password,
/// the sentinels' own credentials).
const SECRET_PARAMS: [&str; 4] = ["pass", "password", "sentinel_password", "sentinel_pass"];

/// `url` with every secret replaced by `***`, whatever its form: the
/// password of the userinfo (`redis://user:secret@host`,
/// `redis+cluster://user:secret@a:1,b:2`), and `pass`/`password`/
/// `sentinel_password` query parameters (`unix:///run/redis.sock?pass=...`).
/// Logs, errors and `Debug` output show this.
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut redacted = match userinfo_parts(base) {
        // No scheme: it may still be `user:password@host`; show none of it.
        ("", Some(_), rest) => format!("***@{rest}"),
        (scheme, Some(creds), rest) => match creds.split_once(':') {
            Some((user, _)) => format!("{scheme}{user}:***@{rest}"),
            None => format!("{scheme}***@{rest}"),
        },
        (_, None, _) => base.to_string(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if SECRET_PARAMS.contains(&key.to_ascii_lowercase().as_str()) => format!("{key}=***"),
                _ => pair.to_string(),
            })
            .collect();
        redacted.push('?');
        redacted.push_str(&pairs.join("&"));
    }
    redacted
}

/// `base` (a URL without its query) as `scheme://` (or nothing), the
/// userinfo before the last `@` (if any), and what follows it.
fn userinfo_parts(base: &str) -> (&str, Option<&str>, &str) {
    let (scheme, rest) = match base.find("://") {
        Some(end) => base.split_at(end + 3),
        None => ("", base),
    };
    match rest.rfind('@') {
        Some(at) => (scheme, Some(&rest[..at]), &rest[at + 1..]),
        None => (scheme, None, rest),
    }
}

/// Where `url` points, with no credential at all (not even a user name)
/// and no query but the `db`: what the dashboard's footer shows.
pub(crate) fn display_target(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (scheme, _, rest) = userinfo_parts(base);
    let target = format!("{scheme}{rest}");
    match query.split('&').find_map(|pair| pair.strip_prefix("db=")) {
        Some(db) => format!("{target} db {db}"),
        None => target,
    }
}

/// A Redis URL kept in settings: its `Debug` form is redacted, so a
/// logged `Config` shows no password.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl(pub String);

impl std::fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", redact_url(&self.0))
    }
}

/// `user:password@rest` → (`"user:password@"`, `rest`), for the multi-host
/// URL schemes (sentinel, cluster) the redis crate does not parse.
fn split_userinfo(rest: &str) -> (String, &str) {
    match rest.rfind('@') {
        Some(at) => (format!("{}@", &rest[..at]), &rest[at + 1..]),
        None => (String::new(), rest),
    }
}

/// The scheme of a multi-host URL (`redis+sentinel://`, `rediss+cluster://`
/// ...): whether its connections use TLS, and what follows the scheme.
fn strip_scheme<'a>(url: &'a str, kind: &str) -> Option<(bool, &'a str)> {
    if let Some(rest) = url.strip_prefix(&format!("redis+{kind}://")) {
        Some((false, rest))
    } else {
        url.strip_prefix(&format!("rediss+{kind}://")).map(|rest| (true, rest))
    }
}

fn scheme(tls: bool) -> &'static str {
    if tls {
        "rediss"
    } else {
        "redis"
    }
}

/// A parsed `redis+sentinel://` or `rediss+sentinel://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SentinelUrl {
    /// `host:port` of each sentinel.
    pub sentinels: Vec<String>,
    /// The master's name the sentinels monitor.
    pub service: String,
    /// The database on the data nodes.
    pub db: i64,
    /// `user:password@` for the data nodes, or empty.
    pub userinfo: String,
    /// `user:password@` for the sentinels themselves (`sentinel_username`,
    /// `sentinel_password` query parameters), or empty.
    pub sentinel_userinfo: String,
    /// TLS to sentinels and data nodes alike (`rediss+sentinel://`).
    pub tls: bool,
}

impl SentinelUrl {
    /// `None` when `url` is not a sentinel URL; an error naming it when it
    /// is one but malformed.
    pub fn parse(url: &str) -> Result<Option<SentinelUrl>> {
        let Some((tls, rest)) = strip_scheme(url, "sentinel") else {
            return Ok(None);
        };
        let bad = |reason: &str| Error::config("redis_url", redact_url(url), reason);
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (mut sentinel_user, mut sentinel_password) = ("", "");
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sentinel_username", value)) => sentinel_user = value,
                Some(("sentinel_password", value)) => sentinel_password = value,
                _ => {
                    return Err(bad(
                        "takes only the query parameters sentinel_username and sentinel_password",
                    ))
                }
            }
        }
        let sentinel_userinfo = match (sentinel_user, sentinel_password) {
            ("", "") => String::new(),
            (user, password) => format!("{user}:{password}@"),
        };
        let (userinfo, rest) = split_userinfo(rest);
        let mut parts = rest.splitn(3, '/');
        let hosts = parts.next().unwrap_or("");
        let service = parts.next().unwrap_or("").to_string();
        let db = match parts.next() {
            None | Some("") => 0,
            Some(db) => db
                .parse()
                .map_err(|_| bad("the database after the service must be a number"))?,
        };
        let sentinels: Vec<String> = hosts
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(String::from)
            .collect();
        if sentinels.is_empty() {
            return Err(bad(
                "names no sentinel (redis+sentinel://host:port[,host:port...]/service)",
            ));
        }
        for host in &sentinels {
            let port = host.rsplit_once(':').map(|(_, p)| p);
            if port.is_none_or(|p| p.parse::<u16>().is_err()) {
                return Err(bad("every sentinel needs host:port"));
            }
        }
        if service.is_empty() {
            return Err(bad("names no service (the master name the sentinels monitor)"));
        }
        let url = SentinelUrl {
            sentinels,
            service,
            db,
            userinfo,
            sentinel_userinfo,
            tls,
        };
        for sentinel in &url.sentinels {
            redis::Client::open(url.sentinel_url(sentinel)).map_err(|e| bad(&e.to_string()))?;
            redis::Client::open(url.node_url(sentinel)).map_err(|e| bad(&e.to_string()))?;
        }
        Ok(Some(url))
    }

    /// The URL of the data node at `address`, with this URL's credentials and db.
    pub fn node_url(&self, address: &str) -> String {
        format!("{}://{}{address}/{}", scheme(self.tls), self.userinfo, self.db)
    }

    /// The URL of the sentinel at `address`, with the sentinels' credentials.
    pub fn sentinel_url(&self, address: &str) -> String {
        format!("{}://{}{address}/", scheme(self.tls), self.sentinel_userinfo)
    }
}

/// A parsed `redis+cluster://` or `rediss+cluster://` URL: the seed nodes' URLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClusterUrl {
    pub nodes: Vec<String>,
}

impl ClusterUrl {
    /// `None` when `url` is not a cluster URL; an error naming it when it
    /// is one but malformed.
    pub fn parse(url: &str) -> Result<Option<ClusterUrl>> {
        let Some((tls, rest)) = strip_scheme(url, "cluster") else {
            return Ok(None);
        };
        let bad = |reason: &str| Error::config("redis_url", redact_url(url), reason);
        if rest.contains('?') {
            return Err(bad("takes no query parameters"));
        }
        let (userinfo, rest) = split_userinfo(rest);
        let hosts = rest.trim_end_matches('/');
        let mut nodes = Vec::new();
        for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            if host.rsplit_once(':').is_none_or(|(_, p)| p.parse::<u16>().is_err()) {
                return Err(bad(
                    "every node needs host:port (redis+cluster://host:port[,host:port...])",
                ));
            }
            let node = format!("{}://{userinfo}{host}", scheme(tls));
            // Each seed must be a URL the client takes; its error, like
            // every other here, shows the URL redacted.
            redis::Client::open(node.as_str()).map_err(|e| bad(&e.to_string()))?;
            nodes.push(node);
        }
        if nodes.is_empty() {
            return Err(bad("names no node (redis+cluster://host:port[,host:port...])"));
        }
        Ok(Some(ClusterUrl { nodes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact_url("redis://u:pw@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact_url("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redact_url("redis://h:1"), "redis://h:1");
        assert_eq!(redact_url("redis://u@h"), "redis://***@h");
        assert_eq!(
            redact_url("unix:///run/redis.sock?db=2&pass=s3cret"),
            "unix:///run/redis.sock?db=2&pass=***"
        );
        assert_eq!(
            redact_url("redis+unix:///r.sock?password=s3cret"),
            "redis+unix:///r.sock?password=***"
        );
        assert_eq!(
            redact_url("redis+cluster://u:s3cret@a:1,b:2/"),
            "redis+cluster://u:***@a:1,b:2/"
        );
        assert_eq!(
            redact_url("rediss+sentinel://:s3cret@a:1,b:2/mymaster/0?sentinel_password=s3cret2"),
            "rediss+sentinel://:***@a:1,b:2/mymaster/0?sentinel_password=***"
        );
        assert_eq!(redact_url("u:s3cret@h:1"), "***@h:1");
    }

    #[test]
    fn the_footer_target_has_no_credential() {
        assert_eq!(display_target("redis://u:pw@h:1/3"), "redis://h:1/3");
        assert_eq!(display_target("unix:///r.sock?pass=pw&db=2"), "unix:///r.sock db 2");
        assert_eq!(
            display_target("redis+sentinel://:pw@a:1,b:2/m/0"),
            "redis+sentinel://a:1,b:2/m/0"
        );
        assert_eq!(
            format!("{:?}", RedisUrl("redis://u:pw@h".into())),
            "\"redis://u:***@h\""
        );
    }

    #[test]
    fn sentinel_urls_parse_and_bad_ones_are_named() {
        let url = SentinelUrl::parse("redis+sentinel://u:p@a:1,b:2/mymaster/3")
            .unwrap()
            .unwrap();
        assert_eq!(url.sentinels, vec!["a:1", "b:2"]);
        assert_eq!((url.service.as_str(), url.db), ("mymaster", 3));
        assert_eq!(url.node_url("10.0.0.1:6380"), "redis://u:p@10.0.0.1:6380/3");
        assert_eq!(SentinelUrl::parse("redis://a:1/0").unwrap(), None);
        assert_eq!(url.sentinel_url("a:1"), "redis://a:1/");
        let tls = SentinelUrl::parse("rediss+sentinel://:p@a:1/m?sentinel_username=s&sentinel_password=q")
            .unwrap()
            .unwrap();
        assert_eq!(tls.node_url("n:2"), "rediss://:p@n:2/0");
        assert_eq!(tls.sentinel_url("a:1"), "rediss://s:q@a:1/");
        assert!(SentinelUrl::parse("redis+sentinel://a:1/m?password=x").is_err());
        for bad in [
            "redis+sentinel://a:1",
            "redis+sentinel:///svc",
            "redis+sentinel://a/svc",
            "redis+sentinel://a:1/svc/x",
        ] {
            let err = SentinelUrl::parse(bad).unwrap_err().to_string();
            assert!(err.contains("redis_url"), "{bad}: {err}");
        }
    }

    #[test]
    fn cluster_urls_parse_and_bad_ones_are_refused() {
        let url = ClusterUrl::parse("redis+cluster://u:p@a:1,b:2/").unwrap().unwrap();
        assert_eq!(url.nodes, vec!["redis://u:p@a:1", "redis://u:p@b:2"]);
        assert_eq!(ClusterUrl::parse("redis://a:1").unwrap(), None);
        let tls = ClusterUrl::parse("rediss+cluster://a:1").unwrap().unwrap();
        assert_eq!(tls.nodes, vec!["rediss://a:1"]);
        assert!(ClusterUrl::parse("redis+cluster://a").is_err());
        assert!(ClusterUrl::parse("redis+cluster://").is_err());
    }
}
