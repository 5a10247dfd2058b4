//! Structural validation of candidate documents.

use std::ops::Range;

use evolution_patch::{appendix_region_bounds, slow_update_region_bounds};
use evolution_types::{JsonMap, Profile};

/// Lowest allowed ratio of candidate length to original length.
pub const MIN_LENGTH_RATIO: f64 = 0.3;
/// Highest allowed ratio of candidate length to original length.
pub const MAX_LENGTH_RATIO: f64 = 2.0;
/// The frontmatter fields a skill candidate must keep unchanged.
pub const FROZEN_FRONTMATTER_FIELDS: [&str; 3] = ["name", "description", "task_type"];

/// The outcome of a validation: every failed check, readable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValidationReport {
    /// One sentence per failed check; empty when the candidate passed.
    pub errors: Vec<String>,
}

impl ValidationReport {
    /// True when no check failed.
    pub fn passed(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Validates a skill candidate against its original.
///
/// Checks, all of them run: the YAML frontmatter (a `---` block at the very
/// start) parses and its `name`, `description` and `task_type` equal the
/// original's; the length without the appendix and slow-update regions is
/// within [0.3, 2.0] of the original's; code fences are closed.
pub fn validate_skill(original: &str, evolved: &str) -> ValidationReport {
    let mut errors = Vec::new();
    let before = parse_frontmatter(original);
    let after = parse_frontmatter(evolved);
    if before.is_some() && after.is_none() {
        errors.push(
            "frontmatter: the candidate's `---` block is missing or not valid YAML".to_owned(),
        );
    }
    if before.is_none() && after.is_some() {
        errors.push(
            "frontmatter: the candidate adds a `---` block the original does not have".to_owned(),
        );
    }
    if let (Some(before), Some(after)) = (&before, &after) {
        for field in FROZEN_FRONTMATTER_FIELDS {
            if before.get(field) != after.get(field) {
                errors.push(format!(
                    "frontmatter: field `{field}` changed from {} to {}",
                    show(before.get(field)),
                    show(after.get(field))
                ));
            }
        }
    }
    check_length(original, evolved, "", &mut errors);
    check_code_fences(evolved, "", &mut errors);
    ValidationReport { errors }
}

/// Validates a system-prompt candidate: each of the profile's frozen `##`
/// sections byte-equal to the original's, length ratio, closed code fences.
pub fn validate_system(original: &str, evolved: &str, profile: &Profile) -> ValidationReport {
    let mut errors = Vec::new();
    for title in &profile.frozen_system_sections {
        check_section(original, evolved, title, "", &mut errors);
    }
    check_length(original, evolved, "", &mut errors);
    check_code_fences(evolved, "", &mut errors);
    ValidationReport { errors }
}

/// Validates a tool's extract/verify pair: the output-format section of
/// each byte-equal to the original's, and the length ratio per file. Code
/// fences are not checked (tool prompts often show an open fence as the
/// start of the expected output).
pub fn validate_tool(
    original_extract: &str,
    evolved_extract: &str,
    original_verify: &str,
    evolved_verify: &str,
    profile: &Profile,
) -> ValidationReport {
    let mut errors = Vec::new();
    let title = &profile.tool_output_format_section;
    for (label, original, evolved) in [
        ("extract: ", original_extract, evolved_extract),
        ("verify: ", original_verify, evolved_verify),
    ] {
        check_section(original, evolved, title, label, &mut errors);
        check_length(original, evolved, label, &mut errors);
    }
    ValidationReport { errors }
}

/// The frontmatter mapping, when the document opens with a `---` line, a
/// later `---` line closes the block, and the YAML between is a mapping.
pub(crate) fn parse_frontmatter(text: &str) -> Option<JsonMap> {
    let block = frontmatter_range(text)?;
    let yaml = text.get(block.clone())?;
    let inner = yaml.strip_prefix("---")?.trim_start_matches(['\r', '\n']);
    let inner = inner.rsplit_once("---").map_or(inner, |(body, _)| body);
    match serde_saphyr::from_str_with_options::<serde_json::Value>(inner, frontmatter_options()) {
        Ok(serde_json::Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Parser limits sized for a frontmatter block (a few fields), so that an
/// adversarial block — an alias bomb, deep nesting — fails fast instead of
/// costing seconds: the library's defaults are meant for large configs.
fn frontmatter_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: 20_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_nodes: 10_000,
            max_depth: 32,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 10_000,
            max_replay_stack_depth: 16,
        },
    }
}

/// Byte range of the frontmatter block, both `---` lines included (the
/// closing line's break excluded).
pub(crate) fn frontmatter_range(text: &str) -> Option<Range<usize>> {
    let first_break = text.find('\n')?;
    if text.get(..first_break)?.trim_end_matches('\r') != "---" {
        return None;
    }
    let mut offset = first_break.saturating_add(1);
    for line in text.get(offset..)?.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if bare == "---" {
            return Some(0..offset.saturating_add(bare.len()));
        }
        offset = offset.saturating_add(line.len());
    }
    None
}

fn show(value: Option<&serde_json::Value>) -> String {
    value.map_or_else(|| "(absent)".to_owned(), |v| v.to_string())
}

/// The `## title` section: from its heading line to the next heading of
/// level one or two, or the end. `None` when there is no such heading.
pub(crate) fn extract_section<'a>(text: &'a str, title: &str) -> Option<&'a str> {
    let mut start = None;
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        match start {
            None => {
                if let Some(rest) = bare.strip_prefix("## ")
                    && rest.trim() == title
                {
                    start = Some(offset);
                }
            }
            Some(from) => {
                if bare.starts_with("## ") || bare.starts_with("# ") || bare == "#" || bare == "##"
                {
                    return text.get(from..offset);
                }
            }
        }
        offset = offset.saturating_add(line.len());
    }
    start.and_then(|from| text.get(from..))
}

fn check_section(
    original: &str,
    evolved: &str,
    title: &str,
    label: &str,
    errors: &mut Vec<String>,
) {
    match (
        extract_section(original, title),
        extract_section(evolved, title),
    ) {
        (Some(_), None) => errors.push(format!("{label}frozen section `## {title}` was removed")),
        (Some(a), Some(b)) if a.trim_end() != b.trim_end() => {
            errors.push(format!("{label}frozen section `## {title}` was changed"));
        }
        (None, Some(_)) => errors.push(format!("{label}frozen section `## {title}` was added")),
        _ => {}
    }
}

/// The document without its appendix region (tolerant: malformed or absent
/// markers leave it as it is) and without its slow-update region (strict: a
/// malformed slow-update region is an error, the reference implementation's deliberate asymmetry).
pub(crate) fn strip_protected_regions(text: &str) -> Result<String, String> {
    let without_appendix = match appendix_region_bounds(text) {
        Ok(Some(range)) => cut(text, range),
        Ok(None) | Err(_) => text.to_owned(),
    };
    match slow_update_region_bounds(&without_appendix) {
        Ok(Some(range)) => Ok(cut(&without_appendix, range)),
        Ok(None) => Ok(without_appendix),
        Err(error) => Err(error.to_string()),
    }
}

fn cut(text: &str, range: Range<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    out.push_str(text.get(..range.start).unwrap_or(""));
    out.push_str(text.get(range.end..).unwrap_or(""));
    out
}

fn check_length(original: &str, evolved: &str, label: &str, errors: &mut Vec<String>) {
    let (before, after) = match (
        strip_protected_regions(original),
        strip_protected_regions(evolved),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => {
            errors.push(format!(
                "{label}length: the original's slow-update region is malformed: {e}"
            ));
            return;
        }
        (_, Err(e)) => {
            errors.push(format!(
                "{label}length: the candidate's slow-update region is malformed: {e}"
            ));
            return;
        }
    };
    let before = before.trim().chars().count();
    let after = after.trim().chars().count();
    if before == 0 {
        // Nothing to compare against; an empty original has no length to protect.
        return;
    }
    let ratio = after as f64 / before as f64;
    if !(MIN_LENGTH_RATIO..=MAX_LENGTH_RATIO).contains(&ratio) {
        errors.push(format!(
            "{label}length: the candidate has {after} characters for the original's {before} \
             (ratio {ratio:.2}, allowed {MIN_LENGTH_RATIO:.1}–{MAX_LENGTH_RATIO:.1}), appendix and slow-update regions excluded"
        ));
    }
}

fn check_code_fences(evolved: &str, label: &str, errors: &mut Vec<String>) {
    let fences = evolved
        .lines()
        .filter(|line| line.trim_start().starts_with("```"))
        .count();
    if fences % 2 != 0 {
        errors.push(format!(
            "{label}code fences: {fences} fence lines (```), so one code block is not closed"
        ));
    }
}

/// The example texts of a prompt's reply format: every string value (not key) of the
/// ```` ```json ```` blocks of `template`, such as `"the new text (empty for delete)"`.
///
/// A model that copies one of them into an edit has echoed the format instead of answering
/// it. The list is read from the template the request was made with, so that it follows the
/// template (an override file included) instead of a copy that could drift from it.
pub fn prompt_example_texts(template: &str) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("```json") {
        let block = rest.get(start.saturating_add(7)..).unwrap_or("");
        let end = block.find("```").unwrap_or(block.len());
        for text in json_string_values(block.get(..end).unwrap_or("")) {
            if !words(&text).is_empty() && !texts.contains(&text) {
                texts.push(text);
            }
        }
        rest = block.get(end.saturating_add(3)..).unwrap_or("");
    }
    texts
}

/// The string values of a JSON-like text: each double-quoted string not followed by `:`.
/// Lenient by design: an example block need not be valid JSON.
fn json_string_values(block: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut chars = block.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut text = String::new();
        let mut escaped = false;
        for c in chars.by_ref() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => break,
                _ => {
                    escaped = false;
                    text.push(c);
                }
            }
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek() != Some(&':') {
            values.push(text);
        }
    }
    values
}

/// Lower-case words of `text` (letters, digits and `_`), the rest dropped.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `field` repeats `example`: the same words; the first three or more of
/// its words, cut off (a truncated copy); all of a four-word-or-longer example
/// inside it; or a four-word-or-longer example with one word changed (`empty for
/// append` for `empty for delete`).
fn echoes(field: &[String], example: &[String]) -> bool {
    if field.is_empty() || example.is_empty() {
        return false;
    }
    if field == example {
        return true;
    }
    if field.len() >= 3 && example.starts_with(field) {
        return true;
    }
    if example.len() >= 4 && field.windows(example.len()).any(|w| w == example) {
        return true;
    }
    example.len() >= 4
        && field.len() == example.len()
        && field.iter().zip(example).filter(|(a, b)| a != b).count() == 1
}

/// Why `edit` is a copy of the reply format rather than an edit, or `None`: its `content`,
/// `reason` or `why` repeats one of `examples` (from [`prompt_example_texts`]). The
/// sentence names the field and the example text it repeats.
pub fn placeholder_echo(edit: &evolution_types::Edit, examples: &[String]) -> Option<String> {
    let reason = ["reason", "why"]
        .iter()
        .find_map(|k| edit.extra.get(*k).and_then(serde_json::Value::as_str))
        .map(|r| ("reason", r));
    let fields = std::iter::once(("content", edit.content.as_str())).chain(reason);
    for (name, text) in fields {
        let field = words(text);
        if let Some(example) = examples.iter().find(|e| echoes(&field, &words(e))) {
            let shown: String = example.chars().take(80).collect();
            return Some(format!(
                "{} edit dropped: its {name} repeats the prompt's example text {shown:?} \
                 instead of saying something about the skill",
                edit.op
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_aliases_parse_but_an_alias_bomb_does_not() {
        let small = "---\nname: &n a\ndescription: *n\ntask_type: t\n---\nbody";
        let parsed = parse_frontmatter(small);
        assert_eq!(
            parsed.and_then(|m| m.get("description").cloned()),
            Some(serde_json::json!("a"))
        );
        let mut bomb = String::from("---\nname: a\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!(
                "l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
            ));
        }
        bomb.push_str("---\nbody");
        assert_eq!(parse_frontmatter(&bomb), None);
    }

    #[test]
    fn sections_end_at_the_next_level_one_or_two_heading() {
        let text = "a\n## X\nx1\n### sub\nx2\n## Y\ny\n# Z\nz";
        assert_eq!(extract_section(text, "X"), Some("## X\nx1\n### sub\nx2\n"));
        assert_eq!(extract_section(text, "Y"), Some("## Y\ny\n"));
        assert_eq!(extract_section(text, "Z"), None);
        assert_eq!(extract_section("## X", "X"), Some("## X"));
    }

    #[test]
    fn example_texts_are_the_string_values_of_the_json_blocks() {
        let template = "Reply:\n```json\n{\"edits\": [{\"op\": \"append\", \"content\": \"the \\\"new\\\" text\"}], \"n\": 2}\n```\nand ```json\n[\"more\"]\n```";
        assert_eq!(
            prompt_example_texts(template),
            ["append", "the \"new\" text", "more"]
        );
        assert!(prompt_example_texts("no block").is_empty());
    }

    #[test]
    fn a_copy_of_the_example_with_a_word_changed_is_an_echo() {
        let example = words("the new text (empty for delete)");
        assert!(echoes(&words("the new text (empty for append)"), &example));
        assert!(!echoes(
            &words("the new rule for refunds, always"),
            &example
        ));
        let reason = words("which failure this prevents, in one sentence");
        assert!(echoes(
            &words("which failure this prevents, in one word"),
            &reason
        ));
        // A reason that only begins as the example does is the model's own.
        assert!(!echoes(
            &words("which failure this prevents: t1 listed none"),
            &reason
        ));
        // Short examples are left alone: one word changed is a different text.
        assert!(!echoes(&words("append"), &words("delete")));
    }
}
