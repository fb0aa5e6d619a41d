//! Typed reads from a JSON configuration object, with messages naming the key.

use std::format;
use std::string::String;
use std::vec::Vec;

use serde_json::{Map, Value};

use crate::graph::GraphError;

/// A JSON object from configuration `format`.
#[derive(Clone, Copy)]
pub(super) struct Object<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) format: &'static str,
}

/// Parses `text` (at most [`super::MAX_CONFIG_BYTES`]) as JSON.
pub(super) fn parse_any(format: &'static str, text: &str) -> Result<Value, GraphError> {
    super::check_size(format, text.len())?;
    serde_json::from_str(text)
        .map_err(|e| GraphError::import(format, format!("not valid JSON: {e}")))
}

/// Parses `text` (at most [`super::MAX_CONFIG_BYTES`]) as a JSON object.
pub(super) fn parse(format: &'static str, text: &str) -> Result<Value, GraphError> {
    let value = parse_any(format, text)?;
    if !value.is_object() {
        return Err(GraphError::import(
            format,
            "the configuration is not a JSON object",
        ));
    }
    Ok(value)
}

impl<'a> Object<'a> {
    pub(super) fn new(format: &'static str, value: &'a Value) -> Result<Self, GraphError> {
        let map = value
            .as_object()
            .ok_or_else(|| GraphError::import(format, "expected a JSON object"))?;
        Ok(Object { map, format })
    }

    pub(super) fn error(&self, message: String) -> GraphError {
        GraphError::import(self.format, message)
    }

    fn wrong(&self, key: &str, expected: &str) -> GraphError {
        self.error(format!("`{key}` must be {expected}, not {}", self.map[key]))
    }

    /// The value of `key`, if present and not `null`.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Whether `key` is present as `null` (which [`Object::get`] treats as absent).
    pub(super) fn is_null(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(Value::is_null)
    }

    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, GraphError> {
        self.get(key)
            .map(|v| v.as_bool().ok_or_else(|| self.wrong(key, "true or false")))
            .transpose()
    }

    pub(super) fn f64(&self, key: &str) -> Result<Option<f64>, GraphError> {
        self.get(key)
            .map(|v| v.as_f64().ok_or_else(|| self.wrong(key, "a number")))
            .transpose()
    }

    pub(super) fn int(&self, key: &str) -> Result<Option<i64>, GraphError> {
        self.get(key)
            .map(|v| v.as_i64().ok_or_else(|| self.wrong(key, "an integer")))
            .transpose()
    }

    pub(super) fn str(&self, key: &str) -> Result<Option<&'a str>, GraphError> {
        self.get(key)
            .map(|v| v.as_str().ok_or_else(|| self.wrong(key, "a string")))
            .transpose()
    }

    /// A number or a list of numbers, as f32.
    pub(super) fn floats(&self, key: &str) -> Result<Option<Vec<f32>>, GraphError> {
        Ok(self
            .doubles(key)?
            .map(|l| l.into_iter().map(|x| x as f32).collect()))
    }

    /// A number or a list of numbers, as f64 (as Python holds them).
    pub(super) fn doubles(&self, key: &str) -> Result<Option<Vec<f64>>, GraphError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let list = match v {
            Value::Array(items) => items.iter().map(Value::as_f64).collect::<Option<Vec<_>>>(),
            v => v.as_f64().map(|x| std::vec![x]),
        };
        list.map(Some)
            .ok_or_else(|| self.wrong(key, "a number or a list of numbers"))
    }

    /// A list of non-negative integers that fit in u32.
    pub(super) fn sizes(&self, key: &str) -> Result<Option<Vec<u32>>, GraphError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        v.as_array()
            .and_then(|items| {
                items
                    .iter()
                    .map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
                    .collect::<Option<Vec<_>>>()
            })
            .map(Some)
            .ok_or_else(|| self.wrong(key, "a list of sizes"))
    }
}

/// A positive size that fits in u32.
pub(super) fn size(format: &'static str, what: &str, v: i64) -> Result<u32, GraphError> {
    u32::try_from(v).ok().filter(|&s| s > 0).ok_or_else(|| {
        GraphError::import(format, format!("{what} must be a positive size, not {v}"))
    })
}
