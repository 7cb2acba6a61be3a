//! Python values to the core's `HostValue`, type for type; what is allowed
//! where is the core's to decide.

use cogworker::host::{HostValue, MAX_NESTING};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

pub fn value(v: &Bound<'_, PyAny>) -> HostValue {
    nested_value(v, 0)
}

/// `v` inside `depth` lists and maps: past the core's limit it is not
/// descended into (a list that contains itself would never end).
fn nested_value(v: &Bound<'_, PyAny>, depth: usize) -> HostValue {
    let inner = |v: &Bound<'_, PyAny>| nested_value(v, depth + 1);
    let items = |v: &Bound<'_, PyAny>| v.try_iter().map(|it| it.flatten().map(|i| inner(&i)).collect());
    let container = v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyDict>();
    if container && depth >= MAX_NESTING {
        HostValue::TooDeep
    } else if v.is_none() {
        HostValue::Null
    } else if let Ok(b) = v.cast::<PyBool>() {
        HostValue::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        v.extract()
            .map_or_else(|_| HostValue::BigInt(v.to_string()), HostValue::Int)
    } else if let Ok(f) = v.cast::<PyFloat>() {
        HostValue::Float(f.value())
    } else if let Ok(s) = v.cast::<PyString>() {
        s.to_cow().map_or_else(
            |_| HostValue::InvalidText(s.to_string_lossy().into()),
            |s| HostValue::Text(s.into()),
        )
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        items(v).map_or_else(|_| other(v), HostValue::List)
    } else if let Ok(dict) = v.cast::<PyDict>() {
        HostValue::Map(dict.iter().map(|(k, v)| (inner(&k), inner(&v))).collect())
    } else {
        time(v).unwrap_or_else(|| other(v))
    }
}

/// A `datetime` as a point in time (a naive one is local time, as
/// `timestamp()` takes it), a `timedelta` as a length of time. (Looked up
/// by class, as the limited API has no datetime types: only values of no
/// plainer type come here.)
fn time(v: &Bound<'_, PyAny>) -> Option<HostValue> {
    let py = v.py();
    let datetime = py.import("datetime").ok()?;
    let shown = || v.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    if v.is_instance(&datetime.getattr("datetime").ok()?).ok()? {
        let epoch_seconds = v.call_method0("timestamp").ok()?.extract().ok()?;
        Some(HostValue::Time {
            epoch_seconds,
            shown: shown(),
        })
    } else if v.is_instance(&datetime.getattr("timedelta").ok()?).ok()? {
        let seconds = v.call_method0("total_seconds").ok()?.extract().ok()?;
        Some(HostValue::Duration {
            seconds,
            shown: shown(),
        })
    } else {
        None
    }
}

fn other(v: &Bound<'_, PyAny>) -> HostValue {
    HostValue::Other {
        type_name: v.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string()),
        shown: v.repr().map_or_else(|_| "?".into(), |r| r.to_string()),
    }
}

/// Keyword arguments (`**options`) as named host values.
pub fn named(options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, HostValue)>> {
    options
        .into_iter()
        .flatten()
        .map(|(k, v)| Ok((k.extract()?, value(&v))))
        .collect()
}

/// Each item of an iterable.
pub fn values(iterable: &Bound<'_, PyAny>) -> PyResult<Vec<HostValue>> {
    iterable.try_iter()?.map(|item| Ok(value(&item?))).collect()
}

/// A JSON value as Python objects (dict, list, str, int, float, bool, None).
pub fn to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::IntoPyObjectExt;
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_bound_py_any(py)?,
            (None, Some(u)) => u.into_bound_py_any(py)?,
            // A whole number past 64 bits (kept exact by arbitrary_precision).
            _ if !n.to_string().contains(['.', 'e', 'E']) => py.get_type::<PyInt>().call1((n.to_string(),))?,
            _ => n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?,
        },
        Value::String(s) => s.into_bound_py_any(py)?,
        Value::Array(items) => list_to_py(py, items)?,
        Value::Object(map) => map_to_py(py, map)?,
    })
}

/// A JSON object as a dict.
pub fn map_to_py<'py>(
    py: Python<'py>,
    map: &serde_json::Map<String, serde_json::Value>,
) -> PyResult<Bound<'py, PyAny>> {
    let dict = PyDict::new(py);
    for (key, item) in map {
        dict.set_item(key, to_py(py, item)?)?;
    }
    Ok(dict.into_any())
}

/// A list of JSON values as a list.
pub fn list_to_py<'py>(py: Python<'py>, items: &[serde_json::Value]) -> PyResult<Bound<'py, PyAny>> {
    let list = PyList::empty(py);
    for item in items {
        list.append(to_py(py, item)?)?;
    }
    Ok(list.into_any())
}

/// What a retry hook said: an exception it raised (returned to say so) as
/// `Raised`, anything else as the core reads a value (seconds, a
/// `timedelta`, None for the default).
pub fn retry_hint(v: &Bound<'_, PyAny>) -> cogworker::host::RetryHint {
    if v.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        return cogworker::host::RetryHint::Raised(v.repr().map_or_else(|_| "?".into(), |r| r.to_string()));
    }
    value(v).into()
}
