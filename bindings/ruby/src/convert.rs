//! Ruby values to the core's `HostValue`, type for type; what is allowed
//! where is the core's to decide. And JSON values to Ruby's, as
//! `JSON.parse` makes them (a job's arguments).

use crate::errors::to_ruby;
use cogworker::host::{HostValue, MAX_NESTING};
use magnus::{value::ReprValue, Error, Float, Integer, RArray, RHash, RString, Ruby, Symbol, Value};

pub fn value(ruby: &Ruby, v: Value) -> HostValue {
    nested_value(ruby, v, 0)
}

/// `v` inside `depth` Arrays and Hashes: past the core's limit it is not
/// descended into (an Array that contains itself would never end).
fn nested_value(ruby: &Ruby, v: Value, depth: usize) -> HostValue {
    let container = RArray::from_value(v).is_some() || RHash::from_value(v).is_some();
    if container && depth >= MAX_NESTING {
        HostValue::TooDeep
    } else if v.is_nil() {
        HostValue::Null
    } else if v.is_kind_of(ruby.class_true_class()) || v.is_kind_of(ruby.class_false_class()) {
        HostValue::Bool(v.to_bool())
    } else if let Some(n) = Integer::from_value(v) {
        n.to_i64()
            .map_or_else(|_| HostValue::BigInt(v.to_string()), HostValue::Int)
    } else if let Some(f) = Float::from_value(v) {
        HostValue::Float(f.to_f64())
    } else if let Some(s) = RString::from_value(v) {
        // Transcoded to UTF-8 from its own encoding where it is text in it.
        s.to_string()
            .map_or_else(|_| HostValue::InvalidText(v.inspect()), HostValue::Text)
    } else if let Some(array) = RArray::from_value(v) {
        HostValue::List(
            array
                .into_iter()
                .map(|item| nested_value(ruby, item, depth + 1))
                .collect(),
        )
    } else if let Some(hash) = RHash::from_value(v) {
        let mut pairs = Vec::new();
        let _ = hash.foreach(|key: Value, item: Value| {
            pairs.push((nested_value(ruby, key, depth + 1), nested_value(ruby, item, depth + 1)));
            Ok(magnus::r_hash::ForEach::Continue)
        });
        HostValue::Map(pairs)
    } else {
        time(ruby, v).unwrap_or_else(|| HostValue::Other {
            type_name: v.class().inspect(),
            shown: v.inspect(),
        })
    }
}

/// A `Time` (or anything that is one: `ActiveSupport::TimeWithZone`) as a
/// point in time, an `ActiveSupport::Duration` as a length of time. (Only
/// values of no plainer type come here.)
fn time(ruby: &Ruby, v: Value) -> Option<HostValue> {
    if v.is_kind_of(ruby.class_time()) {
        let epoch_seconds: f64 = v.funcall("to_f", ()).ok()?;
        return Some(HostValue::Time {
            epoch_seconds,
            shown: v.inspect(),
        });
    }
    let duration: Value = ruby
        .eval("defined?(ActiveSupport::Duration) && ActiveSupport::Duration")
        .ok()?;
    if !duration.to_bool() || !v.funcall::<_, _, bool>("is_a?", (duration,)).ok()? {
        return None;
    }
    let seconds: f64 = v.funcall("to_f", ()).ok()?;
    Some(HostValue::Duration {
        seconds,
        shown: v.inspect(),
    })
}

/// `v` as `JSON.parse` would give it: Hash with String keys (in order),
/// Array, String (UTF-8), Integer of any size, Float, true, false, nil.
/// (Each value goes straight into its parent, which the stack holds, so GC
/// never sees one unreachable.)
pub fn from_json(ruby: &Ruby, v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => ruby.qnil().as_value(),
        J::Bool(b) => {
            if *b {
                ruby.qtrue().as_value()
            } else {
                ruby.qfalse().as_value()
            }
        }
        J::Number(n) => number(ruby, n),
        J::String(s) => ruby.str_new(s).as_value(),
        J::Array(items) => array_from_json(ruby, items),
        J::Object(map) => {
            let hash = ruby.hash_new();
            for (key, item) in map {
                let _ = hash.aset(ruby.str_new(key), from_json(ruby, item));
            }
            hash.as_value()
        }
    }
}

/// `items` as a Ruby Array of what [`from_json`] makes of each.
pub fn array_from_json(ruby: &Ruby, items: &[serde_json::Value]) -> Value {
    let array = ruby.ary_new_capa(items.len());
    for item in items {
        let _ = array.push(from_json(ruby, item));
    }
    array.as_value()
}

/// A JSON number as its text says: Integer (of any size) without a
/// fraction or exponent, else Float.
fn number(ruby: &Ruby, n: &serde_json::Number) -> Value {
    if let Some(i) = n.as_i64() {
        return ruby.integer_from_i64(i).as_value();
    }
    let text = n.to_string();
    if text.contains(['.', 'e', 'E']) {
        let f = text.parse::<f64>().unwrap_or(f64::NAN);
        return ruby.float_from_f64(f).as_value();
    }
    // Past 64 bits: Ruby parses the digits (a Bignum).
    ruby.str_new(&text)
        .funcall("to_i", ())
        .unwrap_or_else(|_| ruby.qnil().as_value())
}

/// A setting or push option: a Symbol is its name as text.
pub fn option(ruby: &Ruby, v: Value) -> HostValue {
    match Symbol::from_value(v).and_then(|s| s.name().ok()) {
        Some(name) => HostValue::Text(name.into_owned()),
        None => value(ruby, v),
    }
}

/// Each item of an Array.
pub fn values(ruby: &Ruby, array: RArray) -> Vec<HostValue> {
    array.into_iter().map(|v| value(ruby, v)).collect()
}

/// Each `name => value` of a Hash handed to `apply` (nil values skipped).
pub fn each_option(
    ruby: &Ruby,
    hash: RHash,
    mut apply: impl FnMut(&str, HostValue) -> cogworker::Result<()>,
) -> Result<(), Error> {
    hash.foreach(|name: Value, v: Value| {
        if !v.is_nil() {
            let name: String = name.funcall("to_s", ())?;
            apply(&name, option(ruby, v)).map_err(|e| to_ruby(ruby, e))?;
        }
        Ok(magnus::r_hash::ForEach::Continue)
    })
}

/// What a retry hook said: an exception it raised (returned to say so) as
/// `Raised`, anything else as the core reads a value (seconds, a
/// `Duration`, nil for the default).
pub fn retry_hint(ruby: &Ruby, v: Value) -> cogworker::host::RetryHint {
    if v.is_kind_of(ruby.exception_exception()) {
        return cogworker::host::RetryHint::Raised(v.inspect());
    }
    // Any Numeric is seconds (a Rational, a BigDecimal), as Sidekiq reads
    // `sidekiq_retry_in`'s answer.
    let plain = value(ruby, v);
    if matches!(plain, HostValue::Other { .. }) && v.is_kind_of(ruby.class_numeric()) {
        if let Ok(seconds) = v.funcall::<_, _, f64>("to_f", ()) {
            return cogworker::host::RetryHint::Seconds(seconds);
        }
    }
    plain.into()
}
