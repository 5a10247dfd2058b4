//! How the fourth held-out set (see [`crate::fourth`]) makes its values and places its cases:
//! as written, or as a tool shows them (Read output, a Bash or Write tool's JSON input, shell
//! history, Grep output, a diff, a message's JSON).

use serde_json::json;

use crate::secrets::{Case, HEX, Rng, case};

pub(crate) fn uuid(rng: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-{}{}-{}",
        rng.from(HEX, 8),
        rng.from(HEX, 4),
        rng.from(HEX, 3),
        rng.pick(&["8", "9", "a", "b"]),
        rng.from(HEX, 3),
        rng.from(HEX, 12)
    )
}

pub(crate) fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next() as u8).collect()
}

/// A password a shell accepts unquoted.
pub(crate) fn shell_safe(p: &str) -> String {
    p.replace(
        [
            '"', '\'', '`', '\\', '$', '!', '<', '>', '&', '|', ';', ' ', '(', ')', '*', '?', '#',
            '~', '{', '}', '[', ']', ',',
        ],
        "Z",
    )
}

/// A password that fits in a quoted string of code or an XML attribute.
pub(crate) fn quote_safe(p: &str) -> String {
    p.replace(['"', '\'', '\\', '<', '>', '&', '$', '`'], "Q")
}

/// How a text reaches the transcript.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A command line.
    Command,
    /// A file's content.
    File,
    /// A line of code.
    Code,
    /// What a person wrote.
    Prose,
}

pub(crate) fn read_lines(text: &str, from: usize) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| format!("{:>6}\u{2192}{line}", from + i))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The case in the place `round` selects for its kind: as written, then as a tool shows it.
pub(crate) fn placed(
    family: &'static str,
    kind: Kind,
    round: usize,
    text: String,
    secret: &str,
    n: usize,
) -> Case {
    let json_case = |place: &'static str, value: serde_json::Value| Case {
        family,
        place,
        text: String::new(),
        json: Some(value),
        secret: secret.to_owned(),
    };
    match (kind, round % 3) {
        (_, 0) => case(family, "as written", text, secret),
        (Kind::Command, 1) => json_case(
            "bash tool input",
            json!({"command": text, "description": "Run the step"}),
        ),
        (Kind::Command, _) => case(family, "shell history", format!("  {n}  {text}"), secret),
        (Kind::File, 1) => case(family, "read output", read_lines(&text, n), secret),
        (Kind::File, _) => json_case(
            "write tool input",
            json!({"file_path": format!("/srv/app/conf/{family}.conf"), "content": text}),
        ),
        (Kind::Code, 1) => {
            let grep = text
                .lines()
                .enumerate()
                .map(|(i, l)| format!("src/settings.py:{}:{l}", n + i))
                .collect::<Vec<_>>()
                .join("\n");
            case(family, "grep output", grep, secret)
        }
        (Kind::Code, _) => {
            let diff = text
                .lines()
                .map(|l| format!("+{l}"))
                .collect::<Vec<_>>()
                .join("\n");
            case(
                family,
                "diff",
                format!("@@ -{n},3 +{n},4 @@\n context line\n{diff}\n"),
                secret,
            )
        }
        (Kind::Prose, 1) => json_case(
            "message json",
            json!({"role": "user", "content": [{"type": "text", "text": text}]}),
        ),
        (Kind::Prose, _) => case(
            family,
            "quoted in a reply",
            format!("> {text}\n\nNoted."),
            secret,
        ),
    }
}
