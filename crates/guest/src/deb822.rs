//! Debian control-file text (deb822 stanzas, as in `Packages`, `Sources`
//! and `Release`) and Debian version ordering.

use std::cmp::Ordering;

/// A field of a stanza; continuation lines are joined with newlines.
pub fn field(text: &str, name: &str) -> Option<String> {
    let mut lines = text.lines();
    let prefix = format!("{name}:");
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix(&prefix) {
            let mut value = rest.trim().to_string();
            for cont in lines.by_ref() {
                if cont.starts_with(' ') || cont.starts_with('\t') {
                    if !value.is_empty() {
                        value.push('\n');
                    }
                    value.push_str(cont.trim());
                } else {
                    break;
                }
            }
            return Some(value);
        }
        if line.is_empty() {
            break;
        }
    }
    None
}

/// The stanzas of an index whose `Package` field is `name`.
pub fn stanzas_of<'a>(index: &'a str, name: &str) -> Vec<&'a str> {
    let wanted = format!("Package: {name}");
    index
        .split("\n\n")
        .filter(|s| s.lines().any(|l| l == wanted))
        .collect()
}

/// The stanza of `name` with the highest version, if any.
pub fn newest<'a>(index: &'a str, name: &str) -> Option<&'a str> {
    stanzas_of(index, name).into_iter().max_by(|a, b| {
        compare_versions(
            &field(a, "Version").unwrap_or_default(),
            &field(b, "Version").unwrap_or_default(),
        )
    })
}

/// Debian's version order (`[epoch:]upstream[-revision]`, `~` before everything).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn split(v: &str) -> (u64, &str, &str) {
        let (epoch, rest) = match v.split_once(':') {
            Some((e, r)) if e.chars().all(|c| c.is_ascii_digit()) => (e.parse().unwrap_or(0), r),
            _ => (0, v),
        };
        match rest.rsplit_once('-') {
            Some((u, r)) => (epoch, u, r),
            None => (epoch, rest, ""),
        }
    }
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| compare_part(ua, ub))
        .then_with(|| compare_part(ra, rb))
}

fn order(c: Option<u8>) -> i32 {
    match c {
        Some(b'~') => -1,
        None => 0,
        Some(c) if c.is_ascii_alphabetic() => c as i32,
        Some(c) => c as i32 + 256,
    }
}

fn compare_part(mut a: &str, mut b: &str) -> Ordering {
    while !a.is_empty() || !b.is_empty() {
        // non-digit prefixes, compared character by character
        let na = a.find(|c: char| c.is_ascii_digit()).unwrap_or(a.len());
        let nb = b.find(|c: char| c.is_ascii_digit()).unwrap_or(b.len());
        let (pa, pb) = (a[..na].as_bytes(), b[..nb].as_bytes());
        for i in 0..pa.len().max(pb.len()) {
            let o = order(pa.get(i).copied()).cmp(&order(pb.get(i).copied()));
            if o != Ordering::Equal {
                return o;
            }
        }
        a = &a[na..];
        b = &b[nb..];
        // digit runs, compared as numbers
        let da = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
        let db = b.find(|c: char| !c.is_ascii_digit()).unwrap_or(b.len());
        let (xa, xb) = (
            a[..da].trim_start_matches('0'),
            b[..db].trim_start_matches('0'),
        );
        let o = xa.len().cmp(&xb.len()).then_with(|| xa.cmp(xb));
        if o != Ordering::Equal {
            return o;
        }
        a = &a[da..];
        b = &b[db..];
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stanza_fields_with_continuations() {
        let s = "Package: busybox\nVersion: 1:1.35.0-4\nChecksums-Sha256:\n abc 10 a.dsc\n def 20 b.tar.xz\nFormat: 3.0\n";
        assert_eq!(field(s, "Version").unwrap(), "1:1.35.0-4");
        assert_eq!(
            field(s, "Checksums-Sha256").unwrap(),
            "abc 10 a.dsc\ndef 20 b.tar.xz"
        );
        assert!(field(s, "Depends").is_none());
    }

    #[test]
    fn debian_version_order() {
        use Ordering::*;
        for (a, b, o) in [
            ("6.12.107-1", "6.12.111-1", Less),
            ("6.12.107-1", "6.12.107-1", Equal),
            ("1:1.0", "2.0", Greater),
            ("1.0~rc1-1", "1.0-1", Less),
            ("1.0-1", "1.0-1+deb12u1", Less),
            ("6.1.192-2", "6.1.192-10", Less),
            ("1.0a", "1.0", Greater),
        ] {
            assert_eq!(compare_versions(a, b), o, "{a} vs {b}");
        }
        let index = "Package: k\nVersion: 6.12.107-1\n\nPackage: k\nVersion: 6.12.113-1\n\nPackage: j\nVersion: 9\n";
        assert_eq!(
            field(newest(index, "k").unwrap(), "Version").unwrap(),
            "6.12.113-1"
        );
        assert!(newest(index, "missing").is_none());
    }
}
