//! Finds I/O modules named in Rust sources: `std::fs`, `std::net`, `std::process`, `tokio::fs`
//! (and `tokio::net`, `tokio::process`), including grouped imports (`use std::{fs, io}`),
//! deeper paths (`std::os::unix::net`) and glob imports of `std`/`tokio`.
//!
//! The source is tokenized with proc-macro2, so comments, doc comments and string literals never
//! count, and a mention inside a macro invocation still does. It is a name check, not a type
//! check: an alias made elsewhere (`use std as s; s::fs`) is not followed.

use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Modules whose use makes a crate do I/O.
const FORBIDDEN_MODULES: [&str; 3] = ["fs", "net", "process"];

/// One forbidden path found in a source file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Hit {
    /// 1-based line of the forbidden segment (or of the glob).
    pub(crate) line: usize,
    /// The path as written up to the forbidden segment, e.g. `std::fs` or `std::*`.
    pub(crate) path: String,
}

/// Scans one Rust source file; `Err` carries the tokenizer's message when it is not valid Rust.
pub(crate) fn scan(source: &str) -> Result<Vec<Hit>, String> {
    let stream = tokenize(source)?;
    let mut hits = Vec::new();
    scan_stream(stream, &mut hits);
    hits.sort();
    hits.dedup();
    Ok(hits)
}

/// The tokens of a Rust source file (a byte-order mark and a shebang line skipped, line
/// numbers kept); `Err` carries the tokenizer's message when it is not valid Rust.
pub(crate) fn tokenize(source: &str) -> Result<TokenStream, String> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    // A shebang line is not a token; blank it out but keep the line count.
    let owned;
    let source = if source.starts_with("#!") && !source.starts_with("#![") {
        let end = source.find('\n').unwrap_or(source.len());
        owned = format!("{}{}", " ".repeat(end), &source[end..]);
        owned.as_str()
    } else {
        source
    };
    TokenStream::from_str(source).map_err(|err| err.to_string())
}

fn scan_stream(stream: TokenStream, hits: &mut Vec<Hit>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                if (name == "std" || name == "tokio") && is_path_sep(&tokens, i + 1) {
                    scan_path(&tokens, i + 3, &[name], hits);
                }
            }
            TokenTree::Group(group) => scan_stream(group.stream(), hits),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

/// True when `tokens[at..]` starts with `::`.
fn is_path_sep(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

/// Follows the path that continues at `tokens[at]` after `prefix::`.
fn scan_path(tokens: &[TokenTree], at: usize, prefix: &[String], hits: &mut Vec<Hit>) {
    match tokens.get(at) {
        Some(TokenTree::Ident(ident)) => {
            let segment = ident.to_string();
            let mut path = prefix.to_vec();
            path.push(segment.clone());
            if FORBIDDEN_MODULES.contains(&segment.as_str()) {
                hits.push(Hit {
                    line: ident.span().start().line,
                    path: path.join("::"),
                });
            } else if is_path_sep(tokens, at + 1) {
                scan_path(tokens, at + 3, &path, hits);
            }
        }
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            for element in inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')) {
                scan_path(element, 0, prefix, hits);
            }
        }
        Some(TokenTree::Punct(punct)) if punct.as_char() == '*' && glob_reaches_io(prefix) => {
            hits.push(Hit {
                line: punct.span().start().line,
                path: format!("{}::*", prefix.join("::")),
            });
        }
        _ => {}
    }
}

/// A glob import brings a forbidden module into scope when it is taken from the crate root
/// (`std::*`, `tokio::*`) or from a platform module of std (`std::os::unix::*`).
fn glob_reaches_io(prefix: &[String]) -> bool {
    match prefix {
        [_root] => true,
        [std, os, _platform] => std == "std" && os == "os",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{Hit, scan};

    fn check(source: &str, expect: &[(usize, &str)]) {
        let hits = scan(source).expect("fixture source parses");
        let expect: Vec<Hit> = expect
            .iter()
            .map(|&(line, path)| Hit {
                line,
                path: path.to_owned(),
            })
            .collect();
        assert_eq!(hits, expect, "source:\n{source}");
    }

    #[test]
    fn plain_paths() {
        check("use std::fs;", &[(1, "std::fs")]);
        check("use std::fs::File;", &[(1, "std::fs")]);
        check(
            "fn f() { let _ = std::net::TcpStream::connect(\"x\"); }",
            &[(1, "std::net")],
        );
        check("fn f() { ::std::process::exit(1) }", &[(1, "std::process")]);
        check(
            "async fn f() { tokio::fs::read(\"x\").await; }",
            &[(1, "tokio::fs")],
        );
        check(
            "use std::os::unix::net::UnixStream;",
            &[(1, "std::os::unix::net")],
        );
    }

    #[test]
    fn grouped_imports() {
        check("use std::{fs, io};", &[(1, "std::fs")]);
        check("use std::{io, fs::File};", &[(1, "std::fs")]);
        check(
            "use std::{\n    collections::HashMap,\n    process::{Command, Stdio},\n};",
            &[(3, "std::process")],
        );
        check("use std::{io::{self, Read}, net};", &[(1, "std::net")]);
        check("use tokio::{sync::Mutex, fs};", &[(1, "tokio::fs")]);
    }

    #[test]
    fn glob_imports_of_io_roots() {
        check("use std::*;", &[(1, "std::*")]);
        check("use std::os::unix::*;", &[(1, "std::os::unix::*")]);
        check("use std::collections::*;", &[]);
    }

    #[test]
    fn mentions_inside_macros_count() {
        check(
            "fn f() {\n    let _ = format!(\"{:?}\", std::fs::metadata(\"x\"));\n}",
            &[(2, "std::fs")],
        );
    }

    #[test]
    fn comments_strings_and_harmless_paths_do_not_count() {
        check(
            "//! This crate never touches std::fs.\n\
             // use std::fs;\n\
             /* std::net::TcpStream */\n\
             /// Unlike `std::process::Command`, this is pure.\n\
             pub fn f() -> &'static str { \"std::fs::read\" }\n\
             use std::{io, sync::Arc};\n\
             use tokio::sync::Mutex;\n\
             fn g(fs: u8) -> u8 { fs }\n\
             const R: &str = r#\"tokio::fs\"#;",
            &[],
        );
    }

    #[test]
    fn invalid_source_is_an_error() {
        assert!(scan("fn f() { \"unterminated }").is_err());
    }
}
