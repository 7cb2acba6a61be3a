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

/// The entry pushing `class` on every slot of `cron`, with `options`
/// (`args`, `queue`, `unique`, `tz`, `retry`; a null one is not given).
pub fn periodic_entry(cron: &str, class: &str, options: &[(String, HostValue)]) -> Result<Periodic> {
    let mut map = Map::new();
    map.insert("cron".into(), Value::String(cron.to_string()));
    map.insert("class".into(), Value::String(class.to_string()));
    for (name, value) in options {
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

    fn text(s: &str) -> HostValue {
        HostValue::Text(s.into())
    }

    #[test]
    fn an_entry_from_host_values_names_the_field_it_refuses() {
        let entry = periodic_entry(
            "0 9 * * 1-5",
            "Reports.Daily",
            &[("queue".into(), text("reports")), ("tz".into(), HostValue::Null)],
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
            let error = periodic_entry(cron, "A", &options).unwrap_err();
            assert!(matches!(error, Error::Config { .. }), "{error}");
            assert_eq!(error.field(), Some(field), "{error}");
        }
    }
}
