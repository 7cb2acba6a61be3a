//! Redis URLs, parsed and checked in one place: one server (`redis://`,
//! `rediss://`, `unix://`), a Sentinel-managed master
//! (`redis+sentinel://`) or a Cluster (`redis+cluster://`); and redacted for
//! logs and the dashboard. The settings check a URL here; the connection
//! layer builds on what is parsed here.

use crate::error::{Error, Result};

/// Checks `url`; the error names `redis_url` and the URL (redacted).
pub(crate) fn check(url: &str) -> Result<()> {
    if SentinelUrl::parse(url)?.is_none() && ClusterUrl::parse(url)?.is_none() {
        redis::Client::open(url).map_err(|e| Error::config("redis_url", redact_url(url), e))?;
    }
    Ok(())
}

/// `redis://user:secret@host` → `redis://user:***@host`.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let creds = &url[scheme_end + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            if creds.contains(':') {
                format!("{}{}:***{}", &url[..scheme_end + 3], user, &url[at..])
            } else {
                format!("{}***{}", &url[..scheme_end + 3], &url[at..])
            }
        }
        _ => url.to_string(),
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

const SENTINEL_SCHEME: &str = "redis+sentinel://";

/// A parsed `redis+sentinel://` URL.
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
}

impl SentinelUrl {
    /// `None` when `url` is not a sentinel URL; an error naming it when it
    /// is one but malformed.
    pub fn parse(url: &str) -> Result<Option<SentinelUrl>> {
        let Some(rest) = url.strip_prefix(SENTINEL_SCHEME) else {
            return Ok(None);
        };
        let bad = |reason: &str| Error::config("redis_url", redact_url(url), reason);
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
        Ok(Some(SentinelUrl {
            sentinels,
            service,
            db,
            userinfo,
        }))
    }

    /// The URL of the data node at `address`, with this URL's credentials and db.
    pub fn node_url(&self, address: &str) -> String {
        format!("redis://{}{address}/{}", self.userinfo, self.db)
    }
}

const CLUSTER_SCHEME: &str = "redis+cluster://";

/// A parsed `redis+cluster://` URL: the seed nodes' URLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClusterUrl {
    pub nodes: Vec<String>,
}

impl ClusterUrl {
    /// `None` when `url` is not a cluster URL; an error naming it when it
    /// is one but malformed.
    pub fn parse(url: &str) -> Result<Option<ClusterUrl>> {
        let Some(rest) = url.strip_prefix(CLUSTER_SCHEME) else {
            return Ok(None);
        };
        let bad = |reason: &str| Error::config("redis_url", redact_url(url), reason);
        let (userinfo, rest) = split_userinfo(rest);
        let hosts = rest.trim_end_matches('/');
        let mut nodes = Vec::new();
        for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            if host.rsplit_once(':').is_none_or(|(_, p)| p.parse::<u16>().is_err()) {
                return Err(bad(
                    "every node needs host:port (redis+cluster://host:port[,host:port...])",
                ));
            }
            nodes.push(format!("redis://{userinfo}{host}"));
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
        assert!(ClusterUrl::parse("redis+cluster://a").is_err());
        assert!(ClusterUrl::parse("redis+cluster://").is_err());
    }
}
