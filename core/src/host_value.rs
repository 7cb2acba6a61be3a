//! A value as a host language hands it over, mapped type for type by the
//! binding with no judgement of its own: job arguments, settings, push
//! options, API arguments. What is allowed where, and the error that names
//! the place and the value, are decided here, once for every language.

use crate::error::{Error, Result};
use serde_json::{Map, Number, Value};

/// A host language's value.
#[derive(Clone, Debug, PartialEq)]
pub enum HostValue {
    /// `None` / `nil`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A whole number that fits 64 bits.
    Int(i64),
    /// A larger whole number, as its decimal digits.
    BigInt(String),
    /// A number with a fraction (maybe NaN or infinite).
    Float(f64),
    /// Text (Ruby symbols arrive as text for settings and options).
    Text(String),
    /// Text that is not valid Unicode (a lone surrogate, bytes that are not
    /// text in their encoding), shown with the bad parts replaced.
    InvalidText(String),
    /// A list (Python list or tuple, Ruby Array).
    List(Vec<HostValue>),
    /// A map (Python dict, Ruby Hash), keys in order.
    Map(Vec<(HostValue, HostValue)>),
    /// Lists and maps went on nesting past [`MAX_NESTING`](crate::job::MAX_NESTING): a binding stops
    /// converting there (a value that contains itself never ends).
    TooDeep,
    /// A point in time (Python `datetime`, Ruby `Time`), as epoch seconds;
    /// where a time is wanted (`at`), it is one; elsewhere it is not JSON.
    Time {
        /// Seconds since the epoch (a naive `datetime` is local time).
        epoch_seconds: f64,
        /// `repr()` / `#inspect`.
        shown: String,
    },
    /// A length of time (Python `timedelta`, `ActiveSupport::Duration`),
    /// in seconds; where seconds are wanted (`delay`), it is taken as them.
    Duration {
        /// Its length in seconds.
        seconds: f64,
        /// `repr()` / `#inspect`.
        shown: String,
    },
    /// A value of any other type: its type's name and how the host shows it.
    Other {
        /// `object`, `Set`, `Symbol`, ...
        type_name: String,
        /// `repr()` / `#inspect`.
        shown: String,
    },
}

impl std::fmt::Display for HostValue {
    /// As the user wrote it, near enough: `"ten"`, `10`, `1.5`, `["a", 2]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |f: &mut std::fmt::Formatter<'_>, items: Vec<String>, open: &str, close: &str| {
            write!(f, "{open}{}{close}", items.join(", "))
        };
        match self {
            HostValue::Null => write!(f, "null"),
            HostValue::Bool(b) => write!(f, "{b}"),
            HostValue::Int(n) => write!(f, "{n}"),
            HostValue::BigInt(digits) => write!(f, "{digits}"),
            HostValue::Float(x) => write!(f, "{x:?}"),
            HostValue::Text(s) | HostValue::InvalidText(s) => write!(f, "{s:?}"),
            HostValue::Other { shown, .. } | HostValue::Time { shown, .. } | HostValue::Duration { shown, .. } => {
                write!(f, "{shown}")
            }
            HostValue::TooDeep => write!(f, "…"),
            HostValue::List(items) => list(f, items.iter().map(ToString::to_string).collect(), "[", "]"),
            HostValue::Map(pairs) => list(f, pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect(), "{", "}"),
        }
    }
}

/// What job arguments and other JSON data may hold.
const JSON_TYPES: &str = "strings, whole numbers, finite floats, booleans, null (None, nil), \
                          lists and maps with string keys";

impl HostValue {
    /// As JSON, or an error naming where (`path`, e.g. `args[1].key`) the
    /// first value JSON cannot hold is. A value nested past [`MAX_NESTING`](crate::job::MAX_NESTING)
    /// is named by `path` itself (its own path would be 100 steps long).
    pub fn to_json(&self, path: &str) -> Result<Value> {
        self.json_within(path, path)
    }

    fn json_within(&self, path: &str, root: &str) -> Result<Value> {
        let bad = |reason: String| Error::invalid_argument(path, self, reason);
        Ok(match self {
            HostValue::Null => Value::Null,
            HostValue::Bool(b) => Value::Bool(*b),
            HostValue::Int(n) => Value::from(*n),
            HostValue::BigInt(digits) => {
                Value::Number(digits.parse::<Number>().map_err(|_| bad("not a number".into()))?)
            }
            HostValue::Float(x) => {
                Value::Number(Number::from_f64(*x).ok_or_else(|| bad("NaN and infinities are not JSON".into()))?)
            }
            HostValue::Text(s) => Value::String(s.clone()),
            HostValue::InvalidText(_) => return Err(bad("text that is not valid Unicode is not JSON".into())),
            HostValue::List(items) => {
                let items = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| item.json_within(&format!("{path}[{i}]"), root));
                Value::Array(items.collect::<Result<_>>()?)
            }
            HostValue::Map(pairs) => {
                let mut object = Map::new();
                for (key, value) in pairs {
                    let HostValue::Text(key) = key else {
                        return Err(bad(format!("map keys must be strings, not {}", key.type_name())));
                    };
                    object.insert(key.clone(), value.json_within(&format!("{path}.{key}"), root)?);
                }
                Value::Object(object)
            }
            HostValue::Other { .. } | HostValue::Time { .. } | HostValue::Duration { .. } => {
                return Err(bad(format!("a {} is not JSON data ({JSON_TYPES})", self.type_name())))
            }
            HostValue::TooDeep => return Err(Error::invalid_argument(root, self, crate::job::too_deep())),
        })
    }

    /// Each value of a list as JSON, named `{name}[0]`, `{name}[1]`, ...
    pub fn json_list(values: &[HostValue], name: &str) -> Result<Vec<Value>> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| v.to_json(&format!("{name}[{i}]")))
            .collect()
    }

    /// Seconds, from a number or a length of time (`delay`, `unique_for`).
    pub fn as_seconds(&self) -> Option<f64> {
        match self {
            HostValue::Int(n) => Some(*n as f64),
            HostValue::Float(x) => Some(*x),
            HostValue::Duration { seconds, .. } => Some(*seconds),
            _ => None,
        }
    }

    /// Epoch seconds, from a number or a point in time (`at`).
    pub fn as_epoch_seconds(&self) -> Option<f64> {
        match self {
            HostValue::Int(n) => Some(*n as f64),
            HostValue::Float(x) => Some(*x),
            HostValue::Time { epoch_seconds, .. } => Some(*epoch_seconds),
            _ => None,
        }
    }

    fn type_name(&self) -> &str {
        match self {
            HostValue::Null => "null",
            HostValue::Bool(_) => "boolean",
            HostValue::Int(_) | HostValue::BigInt(_) => "whole number",
            HostValue::Float(_) => "float",
            HostValue::Text(_) | HostValue::InvalidText(_) => "string",
            HostValue::List(_) | HostValue::TooDeep => "list",
            HostValue::Map(_) => "map",
            HostValue::Time { .. } => "time",
            HostValue::Duration { .. } => "duration",
            HostValue::Other { type_name, .. } => type_name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(s: &str) -> HostValue {
        HostValue::Text(s.into())
    }

    #[test]
    fn json_data_converts_and_big_integers_stay_exact() {
        let value = HostValue::List(vec![
            HostValue::Null,
            HostValue::BigInt("1180591620717411303424".into()),
            HostValue::Map(vec![(text("k"), HostValue::Float(1.5))]),
        ]);
        let json = value.to_json("args").unwrap();
        assert_eq!(json.to_string(), r#"[null,1180591620717411303424,{"k":1.5}]"#);
        assert_eq!(HostValue::Bool(true).to_json("x").unwrap(), json!(true));
    }

    #[test]
    fn what_json_cannot_hold_is_named_where_it_is() {
        let other = HostValue::Other {
            type_name: "Object".into(),
            shown: "#<Object>".into(),
        };
        for (value, field) in [
            (HostValue::List(vec![text("ok"), other]), "args[1]"),
            (HostValue::Map(vec![(text("k"), HostValue::Float(f64::NAN))]), "args.k"),
            (HostValue::Map(vec![(HostValue::Int(1), text("v"))]), "args"),
            (HostValue::InvalidText("a\u{fffd}".into()), "args"),
        ] {
            let err = value.to_json("args").unwrap_err();
            assert_eq!(err.field(), Some(field), "{err}");
        }
    }

    #[test]
    fn a_value_nested_past_the_limit_is_named_by_its_root() {
        let deep = (0..3).fold(HostValue::TooDeep, |inner, _| HostValue::List(vec![inner]));
        let err = HostValue::Map(vec![(text("k"), deep)]).to_json("result").unwrap_err();
        assert_eq!(err.field(), Some("result"));
        assert!(err.to_string().contains("deeper than 100 levels"), "{err}");
    }
}
