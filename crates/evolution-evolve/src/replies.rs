//! The readers of the replies this crate asks for, one per request tag: the other half of
//! [`reply_schema`](crate::reply_schema).
//!
//! Every LLM reply the crate uses goes through one of these readers, and a reply a reader
//! refuses is an [`UnreadableReply`] naming the request's tag, so that a reply that could
//! not be read is never mistaken for one that proposed nothing. A reader checks the shape
//! only; what the caller then does with a readable reply (apply the edits, keep a
//! consolidation only when it is shorter, refuse a rewrite longer than the original) is
//! the caller's policy and reported as such.
//!
//! ```
//! use evolution_evolve::replies::{Reply, read_reply};
//! let reply = read_reply("evolve.rank", r#"{"ranking": [2, 0]}"#).unwrap();
//! assert!(matches!(reply, Reply::Rank(_)));
//! let error = read_reply("evolve.skill", r#"{"edits": "none"}"#).unwrap_err();
//! assert_eq!(error.to_string(), "unreadable `evolve.skill` reply: `edits` must be a list of edit objects");
//! ```

use evolution_types::{Edit, JsonMap};
use serde_json::Value;

use crate::json::parse_llm_json;

/// A reply its reader could not read: the request's tag and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable `{tag}` reply: {why}")]
pub struct UnreadableReply {
    /// The tag of the request the reply answers (`evolve.skill`, …).
    pub tag: String,
    /// What was wrong with it.
    pub why: String,
}

impl UnreadableReply {
    /// An unreadable reply to a request tagged `tag`.
    pub fn new(tag: impl Into<String>, why: impl Into<String>) -> Self {
        UnreadableReply {
            tag: tag.into(),
            why: why.into(),
        }
    }
}

/// The reply to an `evolve.skill` or `evolve.system` request.
#[derive(Debug, Clone, PartialEq)]
pub struct EditsReply {
    /// Free-form suggestions (`suggestions`, optional; anything but a list is ignored).
    pub suggestions: Vec<Value>,
    /// The proposed edits (`edits`, required; empty means "nothing to change").
    pub edits: Vec<Edit>,
}

/// The reply to an `evolve.tool` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEditsReply {
    /// Free-form suggestions, as in [`EditsReply`].
    pub suggestions: Vec<Value>,
    /// Edits of the extract prompt (`extract_edits`).
    pub extract_edits: Vec<Edit>,
    /// Edits of the verify prompt (`verify_edits`); at least one of the two lists is given.
    pub verify_edits: Vec<Edit>,
}

/// The reply to an `evolve.rank` request: the ranking as given (the caller keeps the
/// integers within range, see [`select_top_edits`](crate::rank::select_top_edits)).
#[derive(Debug, Clone, PartialEq)]
pub struct RankReply {
    /// `ranking`, most important first.
    pub ranking: Vec<Value>,
}

/// The reply to an `evolve.consolidate` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsolidateReply {
    /// `notes`, trimmed.
    pub notes: Vec<String>,
}

/// The reply to an `evolve.rewrite` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewriteReply {
    /// `rewritten`: the whole new document.
    pub rewritten: String,
}

/// A readable reply to one of this crate's requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `evolve.skill`, `evolve.system`.
    Edits(EditsReply),
    /// `evolve.tool`.
    ToolEdits(ToolEditsReply),
    /// `evolve.rank`.
    Rank(RankReply),
    /// `evolve.consolidate`.
    Consolidate(ConsolidateReply),
    /// `evolve.rewrite`.
    Rewrite(RewriteReply),
}

/// Reads `text` as the reply to a request tagged `tag`, with the reader the crate uses for
/// that tag; a tag without a reader is unreadable too.
///
/// # Errors
/// [`UnreadableReply`] with the tag and the reason.
pub fn read_reply(tag: &str, text: &str) -> Result<Reply, UnreadableReply> {
    match tag {
        "evolve.skill" | "evolve.system" => EditsReply::read(tag, text).map(Reply::Edits),
        "evolve.tool" => ToolEditsReply::read(tag, text).map(Reply::ToolEdits),
        "evolve.rank" => RankReply::read(tag, text).map(Reply::Rank),
        "evolve.consolidate" => ConsolidateReply::read(tag, text).map(Reply::Consolidate),
        "evolve.rewrite" => RewriteReply::read(tag, text).map(Reply::Rewrite),
        _ => Err(UnreadableReply::new(
            tag,
            "this crate makes no request with that tag",
        )),
    }
}

/// The JSON object of a reply, read by [`parse_llm_json`].
fn object(tag: &str, text: &str) -> Result<JsonMap, UnreadableReply> {
    parse_llm_json(text).ok_or_else(|| UnreadableReply::new(tag, "the reply is not a JSON object"))
}

fn suggestions(map: &JsonMap) -> Vec<Value> {
    match map.get("suggestions") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// Reads `key` as a list of edits; `Ok(None)` when the key is absent.
fn edits_at(tag: &str, map: &JsonMap, key: &str) -> Result<Option<Vec<Edit>>, UnreadableReply> {
    let Some(value) = map.get(key) else {
        return Ok(None);
    };
    let Value::Array(items) = value else {
        return Err(UnreadableReply::new(
            tag,
            format!("`{key}` must be a list of edit objects"),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value::<Edit>(item.clone()).map_err(|error| {
                UnreadableReply::new(
                    tag,
                    format!(
                        "`{key}` item {} is not an edit object ({error})",
                        i.saturating_add(1)
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

impl EditsReply {
    /// Reads the reply to `tag` (`evolve.skill`, `evolve.system`): an object with an
    /// `edits` list of edit objects.
    ///
    /// # Errors
    /// [`UnreadableReply`] when it is not one.
    pub fn read(tag: &str, text: &str) -> Result<Self, UnreadableReply> {
        let map = object(tag, text)?;
        let edits = edits_at(tag, &map, "edits")?
            .ok_or_else(|| UnreadableReply::new(tag, "the reply has no `edits` list"))?;
        Ok(EditsReply {
            suggestions: suggestions(&map),
            edits,
        })
    }
}

impl ToolEditsReply {
    /// Reads the reply to `tag` (`evolve.tool`): an object with `extract_edits`,
    /// `verify_edits` or both, each a list of edit objects.
    ///
    /// # Errors
    /// [`UnreadableReply`] when it is not one.
    pub fn read(tag: &str, text: &str) -> Result<Self, UnreadableReply> {
        let map = object(tag, text)?;
        let extract = edits_at(tag, &map, "extract_edits")?;
        let verify = edits_at(tag, &map, "verify_edits")?;
        if extract.is_none() && verify.is_none() {
            return Err(UnreadableReply::new(
                tag,
                "the reply has neither `extract_edits` nor `verify_edits`",
            ));
        }
        Ok(ToolEditsReply {
            suggestions: suggestions(&map),
            extract_edits: extract.unwrap_or_default(),
            verify_edits: verify.unwrap_or_default(),
        })
    }
}

impl RankReply {
    /// Reads the reply to `tag` (`evolve.rank`): an object with a `ranking` list.
    ///
    /// # Errors
    /// [`UnreadableReply`] when it is not one.
    pub fn read(tag: &str, text: &str) -> Result<Self, UnreadableReply> {
        match object(tag, text)?.remove("ranking") {
            Some(Value::Array(ranking)) => Ok(RankReply { ranking }),
            _ => Err(UnreadableReply::new(tag, "the reply has no `ranking` list")),
        }
    }
}

impl ConsolidateReply {
    /// Reads the reply to `tag` (`evolve.consolidate`): an object with a `notes` list of
    /// strings.
    ///
    /// # Errors
    /// [`UnreadableReply`] when it is not one.
    pub fn read(tag: &str, text: &str) -> Result<Self, UnreadableReply> {
        let Some(Value::Array(items)) = object(tag, text)?.remove("notes") else {
            return Err(UnreadableReply::new(tag, "the reply has no `notes` list"));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(note) => Ok(note.trim().to_owned()),
                _ => Err(UnreadableReply::new(
                    tag,
                    format!("`notes` item {} is not a string", i.saturating_add(1)),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|notes| ConsolidateReply { notes })
    }
}

impl RewriteReply {
    /// Reads the reply to `tag` (`evolve.rewrite`): an object whose `rewritten` is a string.
    ///
    /// # Errors
    /// [`UnreadableReply`] when it is not one.
    pub fn read(tag: &str, text: &str) -> Result<Self, UnreadableReply> {
        match object(tag, text)?.remove("rewritten") {
            Some(Value::String(rewritten)) => Ok(RewriteReply { rewritten }),
            Some(_) => Err(UnreadableReply::new(tag, "`rewritten` is not a string")),
            None => Err(UnreadableReply::new(
                tag,
                "the reply has no `rewritten` key",
            )),
        }
    }
}
