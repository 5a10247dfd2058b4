// Shared by the fuzz targets: bytes 0x01..0x04 in fuzzer strings stand for
// the four marker literals, so that inputs reach the region logic quickly.

use evolution_patch::{APPENDIX_END, APPENDIX_START, SLOW_UPDATE_END, SLOW_UPDATE_START};

pub const MARKERS: [&str; 4] = [
    APPENDIX_START,
    APPENDIX_END,
    SLOW_UPDATE_START,
    SLOW_UPDATE_END,
];

pub fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '\u{1}' => out.push_str(APPENDIX_START),
            '\u{2}' => out.push_str(APPENDIX_END),
            '\u{3}' => out.push_str(SLOW_UPDATE_START),
            '\u{4}' => out.push_str(SLOW_UPDATE_END),
            other => out.push(other),
        }
    }
    out
}

pub fn overlapping_count(hay: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    (0..hay.len())
        .filter(|&i| hay.as_bytes()[i..].starts_with(needle.as_bytes()))
        .count()
}
