//! Region parsing and the appendix / slow-update writers.

use evolution_patch::{
    APPENDIX_END, APPENDIX_HEADING, APPENDIX_MAX_CHARS, APPENDIX_START, PatchError, RegionError,
    SLOW_UPDATE_END, SLOW_UPDATE_HEADING, SLOW_UPDATE_MAX_CHARS, SLOW_UPDATE_START,
    append_to_appendix, appendix_region_bounds, extract_appendix_notes, replace_appendix_notes,
    replace_slow_update, slow_update_inner, slow_update_region_bounds,
};

/// Asserts the error of `appendix_region_bounds(text)`: its marker and line.
fn check_appendix_error(text: &str, marker: &str, line: usize) {
    let err = appendix_region_bounds(text).unwrap_err();
    assert_eq!(
        (err.marker(), err.line()),
        (marker, line),
        "{text:?}: {err}"
    );
    assert!(err.to_string().contains(marker));
    assert!(err.to_string().contains(&format!("line {line}")));
}

#[test]
fn strict_parsing_names_marker_and_line() {
    let (s, e) = (APPENDIX_START, APPENDIX_END);
    check_appendix_error(&format!("a\n{s}\nb"), s, 2);
    check_appendix_error(&format!("a\nb\n{e}"), e, 3);
    check_appendix_error(&format!("{s}\n{s}\n{e}"), s, 2);
    check_appendix_error(&format!("{s}\n{e}\n\n{e}"), e, 4);
    check_appendix_error(&format!("x\n{e}\n{s}"), e, 2);
    check_appendix_error(&format!("{s}{e}{s}{e}"), s, 1);
}

#[test]
fn error_variants_are_typed() {
    assert!(matches!(
        slow_update_region_bounds(SLOW_UPDATE_START),
        Err(RegionError::Unpaired { partner, .. }) if partner == SLOW_UPDATE_END
    ));
    assert!(matches!(
        slow_update_region_bounds(&format!("{SLOW_UPDATE_END}{SLOW_UPDATE_START}")),
        Err(RegionError::Reversed { .. })
    ));
    assert!(matches!(
        slow_update_region_bounds(&format!(
            "{SLOW_UPDATE_START}{SLOW_UPDATE_START}{SLOW_UPDATE_END}"
        )),
        Err(RegionError::Duplicated { .. })
    ));
}

#[test]
fn regions_are_independent_when_parsed_alone() {
    let text =
        format!("{SLOW_UPDATE_START}\ng\n{SLOW_UPDATE_END}\n{APPENDIX_START}\n{APPENDIX_END}\n");
    let m = slow_update_region_bounds(&text).unwrap().unwrap();
    let a = appendix_region_bounds(&text).unwrap().unwrap();
    assert!(m.end <= a.start);
    assert_eq!(
        &text[m],
        format!("{SLOW_UPDATE_START}\ng\n{SLOW_UPDATE_END}")
    );
}

#[test]
fn slow_update_layout_and_round_trip() {
    let once = replace_slow_update("# Skill\n\nbody\n", "  first guidance\nsecond line  ").unwrap();
    assert_eq!(
        once,
        format!(
            "# Skill\n\nbody\n\n{SLOW_UPDATE_START}\n{SLOW_UPDATE_HEADING}\nfirst guidance\nsecond line\n{SLOW_UPDATE_END}\n"
        )
    );
    assert_eq!(
        slow_update_inner(&once),
        Ok(Some("first guidance\nsecond line"))
    );
    let twice = replace_slow_update(&once, "new").unwrap();
    assert_eq!(twice.matches(SLOW_UPDATE_START).count(), 1);
    assert_eq!(slow_update_inner(&twice), Ok(Some("new")));
    let cleared = replace_slow_update(&twice, "   ").unwrap();
    assert!(cleared.contains(&format!(
        "{SLOW_UPDATE_START}\n{SLOW_UPDATE_HEADING}\n{SLOW_UPDATE_END}"
    )));
    assert_eq!(slow_update_inner(&cleared), Ok(Some("")));
    assert_eq!(slow_update_inner("no region"), Ok(None));
}

#[test]
fn slow_update_written_by_skillopt_reads_whole() {
    // SkillOpt writes the guidance between the markers without our heading.
    let text = format!(
        "body\n\n{SLOW_UPDATE_START}\n## Long-Term Guidance (Epoch 1)\n- keep\n{SLOW_UPDATE_END}\n"
    );
    assert_eq!(
        slow_update_inner(&text),
        Ok(Some("## Long-Term Guidance (Epoch 1)\n- keep"))
    );
}

#[test]
fn slow_update_guards() {
    for marker in [
        APPENDIX_START,
        APPENDIX_END,
        SLOW_UPDATE_START,
        SLOW_UPDATE_END,
    ] {
        let err = replace_slow_update("c", &format!("ok\nevil {marker}")).unwrap_err();
        assert_eq!(
            err,
            PatchError::MarkerInText {
                what: "guidance",
                marker,
                line: 2
            }
        );
    }
    let long = "x".repeat(SLOW_UPDATE_MAX_CHARS + 1);
    assert!(matches!(
        replace_slow_update("c", &long),
        Err(PatchError::TooLong { chars, max: SLOW_UPDATE_MAX_CHARS, .. }) if chars == SLOW_UPDATE_MAX_CHARS + 1
    ));
    let at_limit = "語".repeat(SLOW_UPDATE_MAX_CHARS);
    assert!(replace_slow_update("c", &at_limit).is_ok());
    let broken = format!("c\n{SLOW_UPDATE_START}\n");
    assert!(matches!(
        replace_slow_update(&broken, "g"),
        Err(PatchError::Region(RegionError::Unpaired { line: 2, .. }))
    ));
}

#[test]
fn appendix_is_written_in_skillopt_layout() {
    let out =
        append_to_appendix("# Skill\nbody", &["check units", "  cite\n the  source "]).unwrap();
    assert_eq!(
        out,
        format!(
            "# Skill\nbody\n\n{APPENDIX_START}\n{APPENDIX_HEADING}\n- check units\n- cite the source\n{APPENDIX_END}\n"
        )
    );
    assert_eq!(
        extract_appendix_notes(&out).unwrap(),
        vec!["check units", "cite the source"]
    );
}

#[test]
fn appendix_merges_and_dedupes() {
    let first = append_to_appendix("body", &["Check units."]).unwrap();
    let second = append_to_appendix(&first, &["check  units", "new note", ""]).unwrap();
    assert_eq!(
        extract_appendix_notes(&second).unwrap(),
        vec!["Check units.", "new note"]
    );
    assert_eq!(second.matches(APPENDIX_START).count(), 1);
    // Nothing new: the document is returned unchanged.
    assert_eq!(append_to_appendix(&second, &["NEW NOTE"]).unwrap(), second);
    assert_eq!(append_to_appendix::<&str>("body", &[]).unwrap(), "body");
}

#[test]
fn appendix_reads_skillopt_bullets() {
    let text = format!(
        "x\n{APPENDIX_START}\n{APPENDIX_HEADING}\n- a\n*b\n-c\n\nloose line\n{APPENDIX_END}\n"
    );
    assert_eq!(
        extract_appendix_notes(&text).unwrap(),
        vec!["a", "b", "c", "loose line"]
    );
    assert_eq!(
        extract_appendix_notes("no region").unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn replace_appendix_notes_cases() {
    let text = format!("head\n{APPENDIX_START}\n- old\n{APPENDIX_END}\ntail");
    assert_eq!(
        replace_appendix_notes::<&str>(&text, &[]).unwrap(),
        "head\ntail"
    );
    let replaced = replace_appendix_notes(&text, &["n1", "n2"]).unwrap();
    assert_eq!(
        replaced,
        format!("head\n{APPENDIX_START}\n{APPENDIX_HEADING}\n- n1\n- n2\n{APPENDIX_END}\ntail")
    );
    assert_eq!(
        replace_appendix_notes::<&str>("plain", &[]).unwrap(),
        "plain"
    );
    assert_eq!(
        replace_appendix_notes(&text, &["  ", ""]).unwrap(),
        "head\ntail"
    );
}

#[test]
fn appendix_guards() {
    let err = append_to_appendix("c", &[format!("a {APPENDIX_END}")]).unwrap_err();
    assert_eq!(
        err,
        PatchError::MarkerInText {
            what: "appendix note",
            marker: APPENDIX_END,
            line: 1
        }
    );
    let many: Vec<String> = (0..200).map(|i| format!("note number {i}")).collect();
    assert!(matches!(
        replace_appendix_notes("c", &many),
        Err(PatchError::TooLong {
            max: APPENDIX_MAX_CHARS,
            ..
        })
    ));
    let interleaved =
        format!("{APPENDIX_START}\n{SLOW_UPDATE_START}\n{APPENDIX_END}\n{SLOW_UPDATE_END}\n");
    assert!(matches!(
        append_to_appendix(&interleaved, &["n"]),
        Err(PatchError::Region(RegionError::Interleaved { line: 2, .. }))
    ));
    assert!(matches!(
        replace_slow_update(&interleaved, "g"),
        Err(PatchError::Region(RegionError::Interleaved { .. }))
    ));
}

#[test]
fn crlf_documents_get_crlf_regions() {
    let doc = "# Skill\r\nbody\r\n";
    let out = replace_slow_update(doc, "line one\nline two").unwrap();
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
    assert_eq!(slow_update_inner(&out), Ok(Some("line one\r\nline two")));
    let out = append_to_appendix(&out, &["n"]).unwrap();
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
    assert_eq!(extract_appendix_notes(&out).unwrap(), vec!["n"]);
}
