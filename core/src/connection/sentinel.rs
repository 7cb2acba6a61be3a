//! Redis Sentinel: `redis+sentinel://[user:password@]host:port[,host:port...]/service[/db]`.
//! The sentinels are asked which node is the master of `service`; the
//! connection layer follows it when it changes (see `connection.rs`).

use crate::error::{Error, Result};
use std::time::Duration;

/// How long one sentinel may take to answer before the next is asked.
const SENTINEL_TIMEOUT: Duration = Duration::from_secs(1);

/// A parsed `redis+sentinel://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SentinelUrl {
    /// `host:port` of each sentinel.
    pub sentinels: Vec<String>,
    pub service: String,
    pub db: i64,
    /// `user:password@` for the data nodes, or empty.
    pub userinfo: String,
}

pub(crate) const SCHEME: &str = "redis+sentinel://";

impl SentinelUrl {
    /// `None` when `url` is not a sentinel URL; an error naming it when it
    /// is one but malformed.
    pub fn parse(url: &str) -> Result<Option<SentinelUrl>> {
        let Some(rest) = url.strip_prefix(SCHEME) else {
            return Ok(None);
        };
        let bad = |reason: &str| Error::config("redis_url", crate::config::redact_url(url), reason);
        let (userinfo, rest) = super::split_userinfo(rest);
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

    /// Asks the sentinels in turn for the master's `host:port`.
    pub async fn find_master(&self) -> std::result::Result<String, String> {
        let mut errors = Vec::new();
        for sentinel in &self.sentinels {
            match self.ask(sentinel).await {
                Ok(address) => return Ok(address),
                Err(e) => errors.push(format!("{sentinel}: {e}")),
            }
        }
        Err(errors.join("; "))
    }

    async fn ask(&self, sentinel: &str) -> std::result::Result<String, String> {
        let client = redis::Client::open(format!("redis://{sentinel}/")).map_err(|e| e.to_string())?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(SENTINEL_TIMEOUT))
            .set_response_timeout(Some(SENTINEL_TIMEOUT));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| e.to_string())?;
        let reply: Option<(String, String)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&self.service)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let (host, port) = reply.ok_or_else(|| format!("does not know a master named {:?}", self.service))?;
        Ok(format!("{host}:{port}"))
    }

    /// The URL of the data node at `address`, with this URL's credentials and db.
    pub fn node_url(&self, address: &str) -> String {
        format!("redis://{}{address}/{}", self.userinfo, self.db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
