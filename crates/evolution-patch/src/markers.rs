//! Marker literals and the strict region parsers.

use std::ops::Range;

use memchr::memmem;

use crate::text::line_of;

/// Opens the execution-notes appendix (SkillOpt's literal).
pub const APPENDIX_START: &str = "<!-- APPENDIX_START -->";
/// Closes the execution-notes appendix.
pub const APPENDIX_END: &str = "<!-- APPENDIX_END -->";
/// Opens the slow-update (long-term guidance) region; SkillOpt's slow-update literal.
pub const SLOW_UPDATE_START: &str = "<!-- SLOW_UPDATE_START -->";
/// Closes the slow-update (long-term guidance) region.
pub const SLOW_UPDATE_END: &str = "<!-- SLOW_UPDATE_END -->";
/// The heading line written as the first line inside the appendix (SkillOpt's).
pub const APPENDIX_HEADING: &str = "## Execution Notes Appendix";
/// The heading line written as the first line inside the slow-update region.
pub const SLOW_UPDATE_HEADING: &str = "## Long-Term Guidance";
/// Most characters the rendered appendix notes may take.
pub const APPENDIX_MAX_CHARS: usize = 2000;
/// Most characters a slow-update guidance may take.
pub const SLOW_UPDATE_MAX_CHARS: usize = 2000;

/// All four marker literals, in a fixed order.
pub(crate) const MARKERS: [&str; 4] = [
    APPENDIX_START,
    APPENDIX_END,
    SLOW_UPDATE_START,
    SLOW_UPDATE_END,
];

/// Length of the longest marker literal.
pub(crate) const MAX_MARKER_LEN: usize = 26;

/// Why a document's markers do not delimit exactly one region.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegionError {
    /// A start or end marker without its partner.
    #[error("marker `{marker}` on line {line} has no matching `{partner}`")]
    Unpaired {
        /// The marker found.
        marker: &'static str,
        /// Its 1-based line.
        line: usize,
        /// The marker that is missing.
        partner: &'static str,
    },
    /// A marker that occurs more than once.
    #[error("marker `{marker}` occurs again on line {line}")]
    Duplicated {
        /// The repeated marker.
        marker: &'static str,
        /// 1-based line of its second occurrence.
        line: usize,
    },
    /// The end marker stands before the start marker.
    #[error("end marker `{marker}` on line {line} comes before its start marker")]
    Reversed {
        /// The end marker.
        marker: &'static str,
        /// Its 1-based line.
        line: usize,
    },
    /// A region starts inside the other region.
    #[error("marker `{marker}` on line {line} lies inside the other protected region")]
    Interleaved {
        /// The start marker of the region that begins inside the other one.
        marker: &'static str,
        /// Its 1-based line.
        line: usize,
    },
}

impl RegionError {
    /// The marker the error is about.
    pub fn marker(&self) -> &'static str {
        match self {
            RegionError::Unpaired { marker, .. }
            | RegionError::Duplicated { marker, .. }
            | RegionError::Reversed { marker, .. }
            | RegionError::Interleaved { marker, .. } => marker,
        }
    }

    /// The 1-based line of that marker.
    pub fn line(&self) -> usize {
        match self {
            RegionError::Unpaired { line, .. }
            | RegionError::Duplicated { line, .. }
            | RegionError::Reversed { line, .. }
            | RegionError::Interleaved { line, .. } => *line,
        }
    }
}

/// Byte range of the appendix region, markers included.
///
/// Both markers absent is `Ok(None)`; a single, duplicated or reversed marker
/// is an error naming the marker and its line.
pub fn appendix_region_bounds(text: &str) -> Result<Option<Range<usize>>, RegionError> {
    region_bounds(text, APPENDIX_START, APPENDIX_END)
}

/// Byte range of the slow-update region, markers included.
///
/// Strict in the same way as [`appendix_region_bounds`].
pub fn slow_update_region_bounds(text: &str) -> Result<Option<Range<usize>>, RegionError> {
    region_bounds(text, SLOW_UPDATE_START, SLOW_UPDATE_END)
}

fn region_bounds(
    text: &str,
    start: &'static str,
    end: &'static str,
) -> Result<Option<Range<usize>>, RegionError> {
    let bytes = text.as_bytes();
    let mut starts = memmem::find_iter(bytes, start.as_bytes());
    let mut ends = memmem::find_iter(bytes, end.as_bytes());
    let (first_start, second_start) = (starts.next(), starts.next());
    let (first_end, second_end) = (ends.next(), ends.next());
    let duplicate = [(second_start, start), (second_end, end)]
        .into_iter()
        .filter_map(|(pos, marker)| pos.map(|pos| (pos, marker)))
        .min_by_key(|(pos, _)| *pos);
    if let Some((pos, marker)) = duplicate {
        return Err(RegionError::Duplicated {
            marker,
            line: line_of(text, pos),
        });
    }
    match (first_start, first_end) {
        (None, None) => Ok(None),
        (Some(pos), None) => Err(RegionError::Unpaired {
            marker: start,
            line: line_of(text, pos),
            partner: end,
        }),
        (None, Some(pos)) => Err(RegionError::Unpaired {
            marker: end,
            line: line_of(text, pos),
            partner: start,
        }),
        (Some(s), Some(e)) if e < s => Err(RegionError::Reversed {
            marker: end,
            line: line_of(text, e),
        }),
        (Some(s), Some(e)) => Ok(Some(s..e.saturating_add(end.len()))),
    }
}

/// The byte ranges of the appendix and the slow-update region, if present.
pub(crate) type Regions = (Option<Range<usize>>, Option<Range<usize>>);

/// Both regions, strictly parsed, and checked not to overlap.
pub(crate) fn both_regions(text: &str) -> Result<Regions, RegionError> {
    let appendix = appendix_region_bounds(text)?;
    let slow_update = slow_update_region_bounds(text)?;
    if let (Some(a), Some(m)) = (&appendix, &slow_update)
        && a.start < m.end
        && m.start < a.end
    {
        let (marker, pos) = if a.start > m.start {
            (APPENDIX_START, a.start)
        } else {
            (SLOW_UPDATE_START, m.start)
        };
        return Err(RegionError::Interleaved {
            marker,
            line: line_of(text, pos),
        });
    }
    Ok((appendix, slow_update))
}

/// The first marker literal `text` contains, with its 1-based line.
pub(crate) fn first_marker_in(text: &str) -> Option<(&'static str, usize)> {
    // Every marker starts with `<`.
    memchr::memchr(b'<', text.as_bytes())?;
    MARKERS
        .iter()
        .filter_map(|marker| memmem::find(text.as_bytes(), marker.as_bytes()).map(|p| (p, *marker)))
        .min_by_key(|(pos, _)| *pos)
        .map(|(pos, marker)| (marker, line_of(text, pos)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_marker_len_is_the_longest_literal() {
        assert_eq!(MARKERS.iter().map(|m| m.len()).max(), Some(MAX_MARKER_LEN));
    }

    #[test]
    fn interleaved_regions_are_rejected() {
        let text =
            format!("{APPENDIX_START}\n{SLOW_UPDATE_START}\n{APPENDIX_END}\n{SLOW_UPDATE_END}");
        let err = both_regions(&text).unwrap_err();
        assert_eq!(err.marker(), SLOW_UPDATE_START);
        assert_eq!(err.line(), 2);
    }

    #[test]
    fn first_marker_reports_earliest() {
        let text = format!("x\ny {SLOW_UPDATE_END} {APPENDIX_START}");
        assert_eq!(first_marker_in(&text), Some((SLOW_UPDATE_END, 2)));
        assert_eq!(first_marker_in("plain"), None);
    }
}
