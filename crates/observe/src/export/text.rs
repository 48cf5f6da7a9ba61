//! Small formatting helpers shared by the exporters.

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `num/den` as a percentage with one decimal, `-` when `den` is zero.
pub(crate) fn percent(num: u64, den: u64) -> String {
    if den == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", num as f64 * 100.0 / den as f64)
    }
}

/// Text inside a Markdown table cell: no line breaks, no cell separators.
pub(crate) fn md_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text inside XML character data or a quoted attribute.
pub(crate) fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Picoseconds of guest time at `cycle` (exact integer arithmetic).
pub(crate) fn cycles_to_ps(cycle: u64, guest_hz: u64) -> u128 {
    cycle as u128 * 1_000_000_000_000 / guest_hz as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(222825777), "222,825,777");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(1, 0), "-");
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(xml_escape("<a&'\">"), "&lt;a&amp;&apos;&quot;&gt;");
        assert_eq!(cycles_to_ps(3, 1_000_000_000), 3000);
    }
}
