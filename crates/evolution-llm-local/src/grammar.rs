//! JSON Schema → GBNF grammar, for constrained decoding with llama.cpp.
//!
//! The conversion is sound rather than complete: every document the grammar admits is valid
//! under the schema, but some valid documents are not admitted (properties come in the
//! schema's order, no extra properties, at most one leading optional property chain).
//! Keywords that cannot be honoured are rejected with [`SchemaError`] instead of ignored.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A JSON Schema the grammar builder cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema uses a keyword this builder does not support.
    #[error("JSON schema keyword `{keyword}` at `{at}` is not supported for constrained decoding")]
    Unsupported {
        /// The keyword.
        keyword: String,
        /// Where in the schema (a JSON pointer).
        at: String,
    },
    /// The schema is malformed.
    #[error("invalid JSON schema at `{at}`: {reason}")]
    Invalid {
        /// Where in the schema (a JSON pointer).
        at: String,
        /// What is wrong.
        reason: String,
    },
}

/// Largest repetition bound llama.cpp's grammar parser honours (larger maxima become unbounded).
const MAX_BOUND: u64 = 2000;

/// Shared rules: whitespace, strings, numbers and a generic JSON value.
const BASE_RULES: &str = r#"ws ::= [ ]?
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
string ::= "\"" char* "\""
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
"#;

/// Keywords that only annotate a schema and never constrain the document.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "additionalProperties",
];

/// The grammar for "any JSON object" (JSON mode without a schema).
pub(crate) fn json_object_grammar() -> String {
    format!("root ::= object\n{BASE_RULES}")
}

/// The grammar admitting documents valid under `schema`.
pub(crate) fn schema_grammar(schema: &Value) -> Result<String, SchemaError> {
    let mut builder = Builder { rules: Vec::new() };
    let root = builder.expr(schema, "")?;
    let mut out = format!("root ::= {root}\n");
    for (name, body) in &builder.rules {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{name} ::= {body}");
    }
    out.push_str(BASE_RULES);
    Ok(out)
}

struct Builder {
    rules: Vec<(String, String)>,
}

impl Builder {
    /// Adds a rule and returns its name.
    fn rule(&mut self, body: String) -> String {
        let name = format!("r{}", self.rules.len());
        self.rules.push((name.clone(), body));
        name
    }

    /// A GBNF expression admitting documents valid under `schema` (found at `at`).
    fn expr(&mut self, schema: &Value, at: &str) -> Result<String, SchemaError> {
        let map = match schema {
            Value::Bool(true) => return Ok("value".to_owned()),
            Value::Object(map) => map,
            _ => {
                return Err(SchemaError::Invalid {
                    at: at.to_owned(),
                    reason: "a schema must be an object or `true`".to_owned(),
                });
            }
        };
        for key in map.keys() {
            let known = ANNOTATIONS.contains(&key.as_str())
                || matches!(
                    key.as_str(),
                    "type"
                        | "enum"
                        | "const"
                        | "properties"
                        | "required"
                        | "items"
                        | "minItems"
                        | "maxItems"
                        | "minLength"
                        | "maxLength"
                        | "anyOf"
                        | "oneOf"
                );
            if !known {
                return Err(SchemaError::Unsupported {
                    keyword: key.clone(),
                    at: at.to_owned(),
                });
            }
        }
        if let Some(value) = map.get("const") {
            return Ok(literal(value));
        }
        if let Some(values) = map.get("enum") {
            let Value::Array(values) = values else {
                return Err(invalid(at, "`enum` must be an array"));
            };
            if values.is_empty() {
                return Err(invalid(at, "`enum` must not be empty"));
            }
            let alts: Vec<String> = values.iter().map(literal).collect();
            return Ok(format!("({})", alts.join(" | ")));
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(options) = map.get(keyword) {
                let Value::Array(options) = options else {
                    return Err(invalid(at, &format!("`{keyword}` must be an array")));
                };
                if options.is_empty() {
                    return Err(invalid(at, &format!("`{keyword}` must not be empty")));
                }
                let mut alts = Vec::with_capacity(options.len());
                for (i, option) in options.iter().enumerate() {
                    alts.push(self.expr(option, &format!("{at}/{keyword}/{i}"))?);
                }
                return Ok(format!("({})", alts.join(" | ")));
            }
        }
        match map.get("type") {
            None => Ok("value".to_owned()),
            Some(Value::String(ty)) => self.typed(ty, map, at),
            Some(Value::Array(types)) if !types.is_empty() => {
                let mut alts = Vec::with_capacity(types.len());
                for ty in types {
                    let Value::String(ty) = ty else {
                        return Err(invalid(at, "`type` entries must be strings"));
                    };
                    alts.push(self.typed(ty, map, at)?);
                }
                Ok(format!("({})", alts.join(" | ")))
            }
            Some(_) => Err(invalid(at, "`type` must be a string or a non-empty array")),
        }
    }

    fn typed(
        &mut self,
        ty: &str,
        map: &Map<String, Value>,
        at: &str,
    ) -> Result<String, SchemaError> {
        match ty {
            "object" => self.object(map, at),
            "array" => self.array(map, at),
            // A bounded string gets a rule of its own, so that a repetition of it (an array's
            // items) refers to one symbol instead of copying the bounded expansion; llama.cpp
            // rejects grammars whose copies grow too large.
            "string" => {
                let expr = string_expr(map, at)?;
                Ok(if expr == "string" {
                    expr
                } else {
                    self.rule(expr)
                })
            }
            "integer" => Ok("integer".to_owned()),
            "number" => Ok("number".to_owned()),
            "boolean" => Ok("boolean".to_owned()),
            "null" => Ok("null".to_owned()),
            other => Err(invalid(at, &format!("unknown type `{other}`"))),
        }
    }

    fn object(&mut self, map: &Map<String, Value>, at: &str) -> Result<String, SchemaError> {
        let Some(properties) = map.get("properties") else {
            return Ok("object".to_owned());
        };
        let Value::Object(properties) = properties else {
            return Err(invalid(at, "`properties` must be an object"));
        };
        let required: Vec<&str> = match map.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(invalid(at, "`required` must be an array")),
        };
        for name in &required {
            if !properties.contains_key(*name) {
                return Err(invalid(
                    at,
                    &format!("required property `{name}` is not in `properties`"),
                ));
            }
        }
        let mut members = Vec::with_capacity(properties.len());
        for (name, schema) in properties {
            let value = self.expr(schema, &format!("{at}/properties/{name}"))?;
            let member = format!(
                "{} ws \":\" ws {value}",
                literal(&Value::String(name.clone()))
            );
            members.push((required.contains(&name.as_str()), member));
        }
        let body = match members.iter().position(|(req, _)| *req) {
            // Optional members before the first required one carry a trailing comma, the rest a
            // leading one.
            Some(first) => {
                let mut parts = Vec::with_capacity(members.len());
                for (i, (req, member)) in members.iter().enumerate() {
                    let part = match (i.cmp(&first), req) {
                        (std::cmp::Ordering::Less, _) => format!("({member} ws \",\" ws)?"),
                        (std::cmp::Ordering::Equal, _) => member.clone(),
                        (std::cmp::Ordering::Greater, true) => format!("ws \",\" ws {member}"),
                        (std::cmp::Ordering::Greater, false) => {
                            format!("(ws \",\" ws {member})?")
                        }
                    };
                    parts.push(part);
                }
                parts.join(" ")
            }
            // No required member: a chain where each member needs the one before it.
            None => {
                let mut chain = String::new();
                for (_, member) in members.iter().rev() {
                    chain = if chain.is_empty() {
                        member.clone()
                    } else {
                        format!("{member} (ws \",\" ws {chain})?")
                    };
                }
                if chain.is_empty() {
                    chain
                } else {
                    format!("({chain})?")
                }
            }
        };
        Ok(self.rule(format!("\"{{\" ws {body} ws \"}}\"")))
    }

    fn array(&mut self, map: &Map<String, Value>, at: &str) -> Result<String, SchemaError> {
        let item = match map.get("items") {
            None => "value".to_owned(),
            Some(items) => self.expr(items, &format!("{at}/items"))?,
        };
        let min = count(map, "minItems", at)?.unwrap_or(0);
        let max = count(map, "maxItems", at)?;
        if max.is_some_and(|max| max < min) {
            return Err(invalid(at, "`maxItems` is below `minItems`"));
        }
        let more = |min_more: u64| match max {
            Some(max) => format!("{{{min_more},{}}}", max.saturating_sub(1)),
            None => format!("{{{min_more},}}"),
        };
        let body = if max == Some(0) {
            String::new()
        } else if min == 0 {
            format!("({item} (ws \",\" ws {item}){})?", more(0))
        } else {
            format!("{item} (ws \",\" ws {item}){}", more(min.saturating_sub(1)))
        };
        Ok(self.rule(format!("\"[\" ws {body} ws \"]\"")))
    }
}

fn string_expr(map: &Map<String, Value>, at: &str) -> Result<String, SchemaError> {
    let min = count(map, "minLength", at)?;
    let max = count(map, "maxLength", at)?;
    Ok(match (min, max) {
        (None, None) => "string".to_owned(),
        (min, max) => {
            let min = min.unwrap_or(0);
            if max.is_some_and(|max| max < min) {
                return Err(invalid(at, "`maxLength` is below `minLength`"));
            }
            let max = max.map(|m| m.to_string()).unwrap_or_default();
            format!("\"\\\"\" char{{{min},{max}}} \"\\\"\"")
        }
    })
}

fn count(map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<u64>, SchemaError> {
    let Some(value) = map.get(key) else {
        return Ok(None);
    };
    let n = value
        .as_u64()
        .ok_or_else(|| invalid(at, &format!("`{key}` must be a non-negative integer")))?;
    if n > MAX_BOUND {
        return Err(SchemaError::Unsupported {
            keyword: format!("{key} above {MAX_BOUND}"),
            at: at.to_owned(),
        });
    }
    Ok(Some(n))
}

fn invalid(at: &str, reason: &str) -> SchemaError {
    SchemaError::Invalid {
        at: at.to_owned(),
        reason: reason.to_owned(),
    }
}

/// A GBNF string literal matching exactly the JSON serialisation of `value`.
fn literal(value: &Value) -> String {
    let json = value.to_string();
    let mut out = String::with_capacity(json.len() + 2);
    out.push('"');
    for c in json.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_members_follow_required_and_optional() {
        let g = schema_grammar(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "boolean"}},
            "required": ["b"]
        }))
        .unwrap();
        assert!(g.starts_with("root ::= r0\n"), "{g}");
        assert!(g.contains(r#"r0 ::= "{" ws ("\"a\"" ws ":" ws string ws "," ws)? "\"b\"" ws ":" ws integer (ws "," ws "\"c\"" ws ":" ws boolean)? ws "}""#), "{g}");
    }

    #[test]
    fn enums_and_bounded_arrays() {
        let g = schema_grammar(&json!({
            "type": "array", "items": {"enum": ["x", 1]}, "minItems": 1, "maxItems": 3
        }))
        .unwrap();
        assert!(
            g.contains(r#"r0 ::= "[" ws ("\"x\"" | "1") (ws "," ws ("\"x\"" | "1")){0,2} ws "]""#),
            "{g}"
        );
    }

    #[test]
    fn unsupported_and_invalid_keywords_are_errors() {
        assert_eq!(
            schema_grammar(&json!({"type": "string", "pattern": "a+"})),
            Err(SchemaError::Unsupported {
                keyword: "pattern".into(),
                at: String::new()
            })
        );
        assert!(matches!(
            schema_grammar(&json!({"type": "object", "properties": {"a": 3}})),
            Err(SchemaError::Invalid { at, .. }) if at == "/properties/a"
        ));
        assert!(matches!(
            schema_grammar(&json!({"type": "string", "maxLength": 5000})),
            Err(SchemaError::Unsupported { keyword, .. }) if keyword == "maxLength above 2000"
        ));
        assert!(matches!(
            schema_grammar(&json!({"type": "array", "minItems": 2, "maxItems": 1})),
            Err(SchemaError::Invalid { .. })
        ));
    }

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        assert_eq!(literal(&json!("a\"b\\")), r#""\"a\\\"b\\\\\"""#);
    }
}
