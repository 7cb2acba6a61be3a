//! Redis Cluster: `redis+cluster://[user:password@]host:port[,host:port...]`.
//! Every multi-key script and MULTI of cogworker touches keys of one
//! namespace, so a hash-tagged namespace (`{cogworker}`) puts them all in
//! one slot and they run unchanged; any other namespace is refused at
//! start, before a cross-slot error could strand a job halfway.

use crate::error::{Error, Result};

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
    fn a_cluster_namespace_needs_a_hash_tag() {
        assert!(check_namespace("{cogworker}").is_ok());
        assert!(check_namespace("app:{jobs}:x").is_ok());
        for bad in ["cogworker", "{}", "{open", "close}"] {
            let err = check_namespace(bad).unwrap_err();
            assert_eq!(err.field(), Some("namespace"), "{bad}");
        }
    }
}
