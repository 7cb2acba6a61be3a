//! A periodic entry built from a host's values (`cogworker.periodic(...)`,
//! `mgr.register(...)`): checked once, here, for every language, with
//! errors that name the field (`periodic.cron`, `periodic.args`, ...).

use super::HostValue;
use crate::error::{Error, Result};
use crate::periodic::Periodic;
use serde_json::{Map, Value};

/// The options an entry takes besides its cron expression and class, each
/// with the field its errors name.
const OPTIONS: [(&str, &str); 5] = [
    ("args", "periodic.args"),
    ("queue", "periodic.queue"),
    ("unique", "periodic.unique"),
    ("tz", "periodic.tz"),
    ("retry", "periodic.retry"),
];

/// What an entry takes from its handler's declared push options when the
/// registration does not give it: where its jobs go and how they retry, as
/// a push of the handler would. Decided here for every host (Ruby's took
/// only the queue, so a class declared `retry: false` was retried when
/// the ticker pushed it, and the same entry had another id than Python's).
const FROM_HANDLER: [&str; 2] = ["queue", "retry"];

/// The entry pushing `class` on every slot of `cron`, with `options`
/// (`args`, `queue`, `unique`, `tz`, `retry`; a null one is not given)
/// and, for those not given, the handler's `declared` push options (its
/// `queue` and `retry`; the others a handler declares are not an entry's).
pub fn periodic_entry(
    cron: &str,
    class: &str,
    options: &[(String, HostValue)],
    declared: &[(String, HostValue)],
) -> Result<Periodic> {
    let given = |name: &str| options.iter().any(|(n, v)| n == name && *v != HostValue::Null);
    let inherited = declared
        .iter()
        .filter(|(name, _)| FROM_HANDLER.contains(&name.as_str()) && !given(name))
        .cloned();
    let options: Vec<(String, HostValue)> = options
        .iter()
        .filter(|(name, _)| !FROM_HANDLER.contains(&name.as_str()) || given(name))
        .cloned()
        .chain(inherited)
        .collect();
    let mut map = Map::new();
    map.insert("cron".into(), Value::String(cron.to_string()));
    map.insert("class".into(), Value::String(class.to_string()));
    for (name, value) in &options {
        let Some(&(_, field)) = OPTIONS.iter().find(|(known, _)| known == name) else {
            let known: Vec<&str> = OPTIONS.iter().map(|(option, _)| *option).collect();
            return Err(Error::config(
                "periodic",
                name,
                format!("unknown option (known: {})", known.join(", ")),
            ));
        };
        if *value == HostValue::Null {
            continue;
        }
        let json = value
            .to_json(field)
            .map_err(|e| Error::config(field, value, e.to_string()))?;
        map.insert(name.clone(), json);
    }
    Periodic::from_map(&map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_takes_its_handlers_queue_and_retry_unless_given() {
        let declared = [
            ("queue".to_string(), text("declared")),
            ("retry".to_string(), HostValue::Bool(false)),
            ("timeout".to_string(), HostValue::Float(5.0)),
        ];
        let entry = periodic_entry("0 0 * * *", "A", &[("queue".into(), HostValue::Null)], &declared).unwrap();
        assert_eq!(entry.describe()["queue"], "declared");
        assert_eq!(entry.describe()["retry"], false);
        let given = [
            ("queue".to_string(), text("given")),
            ("retry".to_string(), HostValue::Int(3)),
        ];
        let entry = periodic_entry("0 0 * * *", "A", &given, &declared).unwrap();
        assert_eq!(
            (entry.describe()["queue"].clone(), entry.describe()["retry"].clone()),
            ("given".into(), 3.into())
        );
    }

    fn text(s: &str) -> HostValue {
        HostValue::Text(s.into())
    }

    #[test]
    fn an_entry_from_host_values_names_the_field_it_refuses() {
        let entry = periodic_entry(
            "0 9 * * 1-5",
            "Reports.Daily",
            &[("queue".into(), text("reports")), ("tz".into(), HostValue::Null)],
            &[],
        )
        .unwrap();
        assert_eq!((entry.class(), entry.queue_name()), ("Reports.Daily", "reports"));
        let other = HostValue::Other {
            type_name: "object".into(),
            shown: "<object>".into(),
        };
        let cases = [
            ("61 * * * *", vec![], "periodic.cron"),
            (
                "* * * * *",
                vec![("tz".to_string(), text("Mars/Olympus"))],
                "periodic.tz",
            ),
            (
                "* * * * *",
                vec![("args".to_string(), HostValue::List(vec![other]))],
                "periodic.args",
            ),
            (
                "* * * * *",
                vec![("unique".to_string(), text("forever"))],
                "periodic.unique",
            ),
            ("* * * * *", vec![("every".to_string(), text("day"))], "periodic"),
        ];
        for (cron, options, field) in cases {
            let error = periodic_entry(cron, "A", &options, &[]).unwrap_err();
            assert!(matches!(error, Error::Config { .. }), "{error}");
            assert_eq!(error.field(), Some(field), "{error}");
        }
    }
}
