//! Text from Redis or from a pusher made safe to print: a jid, a class or a
//! queue name cannot forge a log line, move a terminal's cursor, recolour
//! it or reorder what it shows.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Bidirectional overrides and isolates: they reorder the text after them.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with control characters (newlines, ESC and the other C0/C1
/// codes) and bidirectional controls shown as `\u{..}` escapes; borrowed
/// as it is when it has none (most text: a log line per job passes here).
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// [`shown`], but line breaks and tabs kept: a backtrace's lines.
pub(crate) fn shown_lines(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let escape = |c: char| (c.is_control() || is_bidi_control(c)) && !keep(c);
    if !text.chars().any(escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if escape(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_shown_not_sent() {
        assert_eq!(shown("mail"), "mail");
        assert_eq!(
            shown("q\u{1b}[2J\u{1b}]0;pwned\u{7}"),
            "q\\u{1b}[2J\\u{1b}]0;pwned\\u{7}"
        );
        assert_eq!(shown("a\u{9b}31m\u{202e}b\nc"), "a\\u{9b}31m\\u{202e}b\\u{a}c");
        assert_eq!(shown("ünïcode ✓"), "ünïcode ✓");
        assert_eq!(
            shown_lines("Traceback\n\tat x\u{1b}[2J\r"),
            "Traceback\n\tat x\\u{1b}[2J\\u{d}"
        );
        assert!(
            matches!(shown("plain ✓"), Cow::Borrowed("plain ✓")),
            "no copy without escapes"
        );
        assert_eq!(shown("a\u{2066}"), "a\\u{2066}");
    }
}
