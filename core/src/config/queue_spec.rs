//! The queues a worker works: `name` or `name,weight`, each checked.

use crate::error::{Error, Result};

/// A queue to work, with its weight (a queue of weight 3 is tried first
/// three times as often as one of weight 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSpec {
    /// The queue's name.
    pub name: String,
    /// How often it comes first, relative to the others (1 or more).
    pub weight: u32,
}

impl QueueSpec {
    /// Parses `name` or `name,weight` (the CLI's `-q` syntax).
    pub fn parse(spec: &str) -> Result<Self> {
        let (name, weight) = match spec.rsplit_once(',') {
            Some((name, weight)) => {
                let weight: u32 = weight
                    .trim()
                    .parse()
                    .map_err(|_| Error::config("queues", format!("{spec:?}"), "weight must be a whole number >= 1"))?;
                (name.trim(), weight)
            }
            None => (spec.trim(), 1),
        };
        validate_queue_name(name).map_err(|reason| Error::config("queues", format!("{spec:?}"), reason))?;
        if weight == 0 {
            return Err(Error::config(
                "queues",
                format!("{spec:?}"),
                "weight must be a whole number >= 1",
            ));
        }
        Ok(QueueSpec {
            name: name.to_string(),
            weight,
        })
    }
}

pub(crate) fn validate_queue_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        Err("queue name must not be empty")
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Err("queue name must not contain whitespace or control characters")
    } else {
        Ok(())
    }
}

pub(super) fn parse_queue_list<S: AsRef<str>>(specs: &[S]) -> Result<Vec<QueueSpec>> {
    if specs.is_empty() {
        return Err(Error::config("queues", "[]", "at least one queue is required"));
    }
    let mut queues: Vec<QueueSpec> = Vec::new();
    for spec in specs {
        let q = QueueSpec::parse(spec.as_ref())?;
        if queues.iter().any(|have| have.name == q.name) {
            return Err(Error::config("queues", format!("{:?}", q.name), "listed twice"));
        }
        queues.push(q);
    }
    Ok(queues)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_specs_parse_weights_and_reject_bad_ones() {
        assert_eq!(
            QueueSpec::parse("critical,3").unwrap(),
            QueueSpec {
                name: "critical".into(),
                weight: 3
            }
        );
        assert_eq!(QueueSpec::parse("low").unwrap().weight, 1);
        let err = QueueSpec::parse("low,zero").unwrap_err().to_string();
        assert!(err.contains("queues") && err.contains("low,zero"), "{err}");
        assert!(QueueSpec::parse(",2").is_err());
        assert!(QueueSpec::parse("a,0").is_err());
    }
}
