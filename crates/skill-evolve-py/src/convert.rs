//! Python values to and from JSON values, so that the kernel's serde types are the one
//! definition of every dict the module takes or returns.
//!
//! Only what JSON can hold converts: `None`, `bool`, `int` (within 64 bits), finite `float`,
//! `str`, lists and tuples, and dicts with `str` keys. Nesting is capped, so a
//! self-referencing list or a deeply nested reply fails with a message instead of
//! exhausting the stack.

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted from Python (serde_json's own parser stops at 128 too).
const MAX_DEPTH: usize = 128;

/// The JSON value of a Python object, or a `TypeError` naming what cannot convert.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json_at(obj, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyTypeError::new_err(format!(
            "value nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // `bool` is a subclass of `int`: it is checked first.
    if let Ok(flag) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(n) = obj.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = obj.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(PyTypeError::new_err("integer out of the 64-bit range"));
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        let value = float.value();
        return Number::from_f64(value).map(Value::Number).ok_or_else(|| {
            PyTypeError::new_err(format!("{value} has no JSON form (NaN or infinite)"))
        });
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return Ok(Value::String(text.to_cow()?.into_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, value) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "dict keys must be str, got {}",
                    type_name(&key)
                )));
            };
            map.insert(key.to_cow()?.into_owned(), to_json_at(&value, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list
            .iter()
            .map(|item| to_json_at(&item, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple
            .iter()
            .map(|item| to_json_at(&item, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    Err(PyTypeError::new_err(format!(
        "{} has no JSON form (expected None, bool, int, float, str, list, tuple or dict)",
        type_name(obj)
    )))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |name| name.to_string())
}

/// The Python object of a JSON value: dicts keep the key order, integers stay `int`.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::Null => Ok(py.None().into_bound(py)),
        Value::Bool(flag) => flag.into_bound_py_any(py),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_bound_py_any(py)
            } else if let Some(u) = n.as_u64() {
                u.into_bound_py_any(py)
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)
            }
        }
        Value::String(text) => text.into_bound_py_any(py),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            Ok(list.into_any())
        }
        Value::Object(map) => Ok(dict_of(py, map)?.into_any()),
    }
}

/// A Python dict of a JSON object.
pub(crate) fn dict_of<'py>(
    py: Python<'py>,
    map: &Map<String, Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, item) in map {
        dict.set_item(key, to_python(py, item)?)?;
    }
    Ok(dict)
}

/// A kernel value from a Python object through its serde form; `what` names the value in
/// the error, which `error` turns into the caller's exception type.
pub(crate) fn from_python<T: DeserializeOwned>(
    obj: &Bound<'_, PyAny>,
    what: &str,
    error: impl FnOnce(String) -> PyErr,
) -> PyResult<T> {
    let value = to_json(obj)?;
    serde_json::from_value(value).map_err(|err| error(format!("{what}: {err}")))
}

/// The Python form of a kernel value, through its serde form.
pub(crate) fn into_python<'py, T: Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value)
        .map_err(|err| PyTypeError::new_err(format!("cannot convert a result: {err}")))?;
    to_python(py, &json)
}
