//! Two-stage diagnosis (WIP).
mod json;
pub use crate::json::{
    JsonError, extract_json_from_response, parse_fenced_block, parse_json_object,
    parse_outermost_braces, repair_json_object, strip_think_blocks,
};
