//! The bounds every session reader keeps to, whatever a file holds: how deep its JSON nests,
//! how many values it holds, how long one string is and how many bytes one session reads.
//!
//! A session's [`Budget`] parses each document it reads ([`Budget::parse`]) and charges it
//! against the session's totals. A document over a bound is not built further: parsing stops
//! at the bound, so memory stays proportional to the bound, not to the file, and the bound
//! crossed is remembered ([`Budget::exceeded`]) so the reader skips the whole session with that
//! reason ([`Exceeded`]). No value this crate builds nests deeper than [`Limits::max_depth`],
//! so the recursive walks over it (redaction, capping, serializing, dropping) stay shallow.

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The bounds of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of arrays and objects in one document (under serde_json's own 128).
    pub max_depth: usize,
    /// Most JSON values (scalars, arrays, objects, and the keys of objects) in one document.
    pub max_document_values: usize,
    /// Most JSON values read over the whole session.
    pub max_session_values: usize,
    /// Longest string (or object key), in bytes.
    pub max_string_bytes: usize,
    /// Most bytes read for one session (every line, row or file of it).
    pub max_session_bytes: usize,
}

/// Deepest nesting by default: real sessions nest a few dozen levels at most.
pub const DEFAULT_MAX_DEPTH: usize = 100;
/// Most values in one document by default: parsing stops there, so a document of tiny values
/// costs at most a few tens of megabytes.
pub const DEFAULT_MAX_DOCUMENT_VALUES: usize = 250_000;
/// Most values in one session by default.
pub const DEFAULT_MAX_SESSION_VALUES: usize = 8_000_000;
/// Longest string by default: 16 MiB.
pub const DEFAULT_MAX_STRING_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes of one session by default: 256 MiB.
pub const DEFAULT_MAX_SESSION_BYTES: usize = 256 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: DEFAULT_MAX_DEPTH,
            max_document_values: DEFAULT_MAX_DOCUMENT_VALUES,
            max_session_values: DEFAULT_MAX_SESSION_VALUES,
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
            max_session_bytes: DEFAULT_MAX_SESSION_BYTES,
        }
    }
}

/// The bound a session crossed: it is skipped for this reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Exceeded {
    /// JSON nested deeper than the limit.
    #[error("JSON nested deeper than {limit} levels")]
    Depth {
        /// The limit.
        limit: usize,
    },
    /// One document holds more values than the limit.
    #[error("one document holds more than {limit} JSON values")]
    DocumentValues {
        /// The limit.
        limit: usize,
    },
    /// The session holds more values than the limit.
    #[error("the session holds more than {limit} JSON values")]
    SessionValues {
        /// The limit.
        limit: usize,
    },
    /// A string longer than the limit.
    #[error("a string of more than {limit} bytes")]
    StringBytes {
        /// The limit.
        limit: usize,
    },
    /// The session is larger than the limit.
    #[error("the session is larger than {limit} bytes")]
    SessionBytes {
        /// The limit.
        limit: usize,
    },
}

/// Why a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not JSON (serde_json's message).
    #[error("invalid JSON: {0}")]
    Invalid(String),
    /// Over a bound: the session is to be skipped.
    #[error("{0}")]
    Limit(Exceeded),
}

/// Why a session was not read: its data is not what the reader knows, or it crossed a bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    /// Not the format the reader reads.
    #[error("{0}")]
    Malformed(String),
    /// Over a bound.
    #[error("{0}")]
    Limit(Exceeded),
}

impl From<Exceeded> for SkipReason {
    fn from(why: Exceeded) -> Self {
        SkipReason::Limit(why)
    }
}

/// What one session has read so far, against its [`Limits`].
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// The bounds.
    pub limits: Limits,
    bytes: usize,
    values: usize,
    exceeded: Option<Exceeded>,
}

impl Budget {
    /// A fresh budget with `limits`.
    pub fn new(limits: Limits) -> Self {
        Budget {
            limits,
            ..Budget::default()
        }
    }

    /// The first bound crossed, if any: once set, the session is to be skipped.
    pub fn exceeded(&self) -> Option<Exceeded> {
        self.exceeded
    }

    /// Records a crossed bound (the first one is kept) and returns it.
    pub fn exceed(&mut self, why: Exceeded) -> Exceeded {
        *self.exceeded.get_or_insert(why)
    }

    /// Charges `bytes` read to the session.
    ///
    /// # Errors
    /// [`Exceeded::SessionBytes`] when the session grows past its limit (remembered).
    pub fn charge_bytes(&mut self, bytes: usize) -> Result<(), Exceeded> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.max_session_bytes {
            return Err(self.exceed(Exceeded::SessionBytes {
                limit: self.limits.max_session_bytes,
            }));
        }
        Ok(())
    }

    /// Parses one document of the session (its bytes charged too), building no more than the
    /// limits allow.
    ///
    /// # Errors
    /// [`ParseError::Invalid`] for text that is not JSON; [`ParseError::Limit`] for a document
    /// over a bound (remembered, so the session is skipped).
    pub fn parse(&mut self, text: &str) -> Result<Value, ParseError> {
        self.charge_bytes(text.len()).map_err(ParseError::Limit)?;
        self.parse_counted(text)
    }

    /// Parses `text` counting its values only (its bytes were charged as part of another).
    fn parse_counted(&mut self, text: &str) -> Result<Value, ParseError> {
        if let Some(why) = self.exceeded {
            return Err(ParseError::Limit(why));
        }
        let mut count = Count {
            limits: self.limits,
            document: 0,
            session_before: self.values,
            exceeded: None,
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = Seed {
            count: &mut count,
            depth: 0,
        }
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value));
        self.values = self.values.saturating_add(count.document);
        match (parsed, count.exceeded) {
            (_, Some(why)) => Err(ParseError::Limit(self.exceed(why))),
            (Ok(value), None) => Ok(value),
            (Err(e), None) => Err(ParseError::Invalid(e.to_string())),
        }
    }

    /// Parses a string of a document already read that may hold JSON as text (its bytes were
    /// charged with that document): the value, or `None` when it is not JSON. A bound crossed
    /// is remembered (the session is skipped) and gives `None` too.
    pub fn parse_embedded(&mut self, text: &str) -> Option<Value> {
        self.parse_counted(text).ok()
    }
}

/// The counts of the document being parsed.
struct Count {
    limits: Limits,
    document: usize,
    session_before: usize,
    exceeded: Option<Exceeded>,
}

impl Count {
    fn one<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.document = self.document.saturating_add(1);
        if self.document > self.limits.max_document_values {
            return Err(self.stop(Exceeded::DocumentValues {
                limit: self.limits.max_document_values,
            }));
        }
        if self.session_before.saturating_add(self.document) > self.limits.max_session_values {
            return Err(self.stop(Exceeded::SessionValues {
                limit: self.limits.max_session_values,
            }));
        }
        Ok(())
    }

    fn string<E: serde::de::Error>(&mut self, s: &str) -> Result<(), E> {
        if s.len() > self.limits.max_string_bytes {
            return Err(self.stop(Exceeded::StringBytes {
                limit: self.limits.max_string_bytes,
            }));
        }
        Ok(())
    }

    fn stop<E: serde::de::Error>(&mut self, why: Exceeded) -> E {
        self.exceeded.get_or_insert(why);
        E::custom(why)
    }
}

/// Builds a [`Value`] while counting; `depth` is the nesting of the value it builds.
struct Seed<'a> {
    count: &'a mut Count,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.count.one()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.count.one()?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.count.one()?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.count.one()?;
        Ok(Value::from(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.count.one()?;
        self.count.string(v)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.count.one()?;
        self.count.string(&v)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.count.one()?;
        Ok(Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.count.one()?;
        let depth = self.nested()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed {
            count: &mut *self.count,
            depth,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        self.count.one()?;
        let depth = self.nested()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // A key costs what a string value costs.
            self.count.one::<A::Error>()?;
            self.count.string::<A::Error>(&key)?;
            let value = map.next_value_seed(Seed {
                count: &mut *self.count,
                depth,
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

impl Seed<'_> {
    /// The depth of the values inside the array or object being built.
    fn nested<E: serde::de::Error>(&mut self) -> Result<usize, E> {
        let depth = self.depth.saturating_add(1);
        if depth > self.count.limits.max_depth {
            return Err(self.count.stop(Exceeded::Depth {
                limit: self.count.limits.max_depth,
            }));
        }
        Ok(depth)
    }
}

/// How deep `value` nests (a scalar is 0, `[]` is 1), walked without recursion.
pub fn depth_of(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => continue,
        };
        let inner = depth.saturating_add(1);
        deepest = deepest.max(inner);
        stack.extend(children.map(|c| (c, inner)));
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits {
            max_depth: 4,
            max_document_values: 15,
            max_session_values: 25,
            max_string_bytes: 8,
            max_session_bytes: 200,
        }
    }

    #[test]
    fn documents_within_bounds_parse_as_serde_json_does() {
        let mut budget = Budget::new(small());
        let text = r#"{"a":[1,-2,3.5],"b":{"c":null,"d":true}}"#;
        let value = budget.parse(text).unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(depth_of(&value), 2);
        assert_eq!(budget.exceeded(), None);
        assert!(matches!(budget.parse("{oops"), Err(ParseError::Invalid(_))));
        assert!(matches!(budget.parse("1 2"), Err(ParseError::Invalid(_))));
        assert_eq!(budget.exceeded(), None);
    }

    #[test]
    fn each_bound_has_its_reason_and_is_remembered() {
        let cases = [
            ("[[[[[1]]]]]", Exceeded::Depth { limit: 4 }),
            (
                "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]",
                Exceeded::DocumentValues { limit: 15 },
            ),
            // Keys count as values.
            (
                r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}"#,
                Exceeded::DocumentValues { limit: 15 },
            ),
            (r#"["123456789"]"#, Exceeded::StringBytes { limit: 8 }),
            (r#"{"123456789":1}"#, Exceeded::StringBytes { limit: 8 }),
        ];
        for (text, why) in cases {
            let mut budget = Budget::new(small());
            assert_eq!(budget.parse(text), Err(ParseError::Limit(why)), "{text}");
            assert_eq!(budget.exceeded(), Some(why));
            assert_eq!(budget.parse("1"), Err(ParseError::Limit(why)));
        }
        let mut budget = Budget::new(small());
        for _ in 0..3 {
            budget.parse("[1,2,3,4,5,6,7]").unwrap();
        }
        assert_eq!(
            budget.parse("[1,2,3,4,5,6,7]"),
            Err(ParseError::Limit(Exceeded::SessionValues { limit: 25 }))
        );
        let long = format!("[{}]", "1,".repeat(60).trim_end_matches(','));
        let mut budget = Budget::new(Limits {
            max_document_values: 1000,
            max_session_values: 1000,
            ..small()
        });
        budget.parse(&long).unwrap();
        assert_eq!(
            budget.parse(&long),
            Err(ParseError::Limit(Exceeded::SessionBytes { limit: 200 }))
        );
    }

    #[test]
    fn a_deep_document_is_refused_without_overflowing_the_stack() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let mut budget = Budget::default();
        assert_eq!(
            budget.parse(&deep),
            Err(ParseError::Limit(Exceeded::Depth {
                limit: DEFAULT_MAX_DEPTH
            }))
        );
    }

    #[test]
    fn a_huge_array_stops_at_the_bound() {
        let wide = format!("[{}0]", "0,".repeat(2_000_000));
        let mut budget = Budget::default();
        assert_eq!(
            budget.parse(&wide),
            Err(ParseError::Limit(Exceeded::DocumentValues {
                limit: DEFAULT_MAX_DOCUMENT_VALUES
            }))
        );
    }
}
