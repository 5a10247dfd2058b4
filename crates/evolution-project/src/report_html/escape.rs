//! Text from a run made safe for HTML: every field an LLM, an agent or a
//! file wrote goes through [`text`] before it reaches the page.

use crate::render::terminal_safe;

/// `raw` as HTML text (element content or a quoted attribute value): the
/// control characters and bidirectional overrides shown as visible escapes
/// (as on the terminal: `\x1b`, `\u{202e}`), then `&`, `<`, `>`, `"` and `'`
/// replaced by character references. Newlines and tabs stay.
pub(super) fn text(raw: &str) -> String {
    let visible = terminal_safe(raw);
    let mut out = String::with_capacity(visible.len().saturating_add(16));
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn markup_and_controls_come_out_inert() {
        assert_eq!(
            text("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            text("\"><img src=x onerror='a'>"),
            "&quot;&gt;&lt;img src=x onerror=&#39;a&#39;&gt;"
        );
        assert_eq!(text("a\u{1b}[31mb\0c"), "a\\x1b[31mb\\x00c");
        assert_eq!(text("x\u{202e}y\u{2066}z"), "x\\u{202e}y\\u{2066}z");
        assert_eq!(text("a & b\n\tc"), "a &amp; b\n\tc");
    }
}
