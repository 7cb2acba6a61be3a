//! Redis Cluster: `redis+cluster://[user:password@]host:port[,host:port...]`.
//! Every multi-key script and MULTI of cogworker touches keys of one
//! namespace, so a hash-tagged namespace (`{cogworker}`) puts them all in
//! one slot and they run unchanged; any other namespace is refused at
//! start, before a cross-slot error could strand a job halfway.

use crate::error::{Error, Result};

pub(crate) const SCHEME: &str = "redis+cluster://";

/// A parsed `redis+cluster://` URL: the seed nodes' URLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClusterUrl {
    pub nodes: Vec<String>,
}

impl ClusterUrl {
    /// `None` when `url` is not a cluster URL; an error naming it when it
    /// is one but malformed.
    pub fn parse(url: &str) -> Result<Option<ClusterUrl>> {
        let Some(rest) = url.strip_prefix(SCHEME) else {
            return Ok(None);
        };
        let bad = |reason: &str| Error::config("redis_url", crate::config::redact_url(url), reason);
        let (userinfo, rest) = super::split_userinfo(rest);
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

/// A cluster needs every key in one slot: the namespace must carry a hash
/// tag (`{...}` with something inside).
pub(crate) fn check_namespace(namespace: &str) -> Result<()> {
    let tagged = namespace
        .find('{')
        .and_then(|open| namespace[open + 1..].find('}'))
        .is_some_and(|len| len > 0);
    if tagged {
        Ok(())
    } else {
        Err(Error::config(
            "namespace",
            namespace,
            "Redis Cluster needs a namespace with a hash tag, such as {cogworker}, so that every key \
             lands in one slot (cogworker's multi-key scripts need that)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_and_namespaces() {
        let url = ClusterUrl::parse("redis+cluster://u:p@a:1,b:2/").unwrap().unwrap();
        assert_eq!(url.nodes, vec!["redis://u:p@a:1", "redis://u:p@b:2"]);
        assert_eq!(ClusterUrl::parse("redis://a:1").unwrap(), None);
        assert!(ClusterUrl::parse("redis+cluster://a").is_err());
        assert!(ClusterUrl::parse("redis+cluster://").is_err());
        assert!(check_namespace("{cogworker}").is_ok());
        assert!(check_namespace("app:{jobs}:x").is_ok());
        for bad in ["cogworker", "{}", "{open", "close}"] {
            assert!(
                check_namespace(bad).unwrap_err().to_string().contains("hash tag"),
                "{bad}"
            );
        }
    }
}
