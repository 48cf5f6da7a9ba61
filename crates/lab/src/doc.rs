//! A small document model the reports are built in, rendered two ways:
//! Markdown, and self-contained HTML with inline SVG charts. Both renderings
//! are deterministic byte for byte.

use std::fmt::Write;

#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Heading(u8, String),
    Para(String),
    Table(Table),
    Chart(Chart),
    /// Preformatted text (console excerpts).
    Pre(String),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Table {
    pub headers: Vec<String>,
    /// Right-aligned columns (numbers).
    pub right: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str], right: &[bool]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            right: right.to_vec(),
            rows: Vec::new(),
        }
    }
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// Horizontal bars: for each category, one bar per series (grouped), or one
/// bar split into the series (stacked).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    pub unit: String,
    pub series: Vec<String>,
    /// (category, value per series)
    pub categories: Vec<(String, Vec<f64>)>,
    pub stacked: bool,
}

pub fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                let _ = writeln!(out, "{} {}\n", "#".repeat(*level as usize), one_line(text));
            }
            Block::Para(text) => {
                let _ = writeln!(out, "{}\n", text.trim_end());
            }
            Block::Table(t) => {
                out.push_str(&md_table(t));
                out.push('\n');
            }
            // The numbers behind every chart are in a table next to it; the
            // drawing itself is in report.html.
            Block::Chart(_) => {}
            Block::Pre(text) => {
                let fence = if text.contains("```") { "~~~~" } else { "```" };
                let _ = writeln!(
                    out,
                    "{fence}text\n{}\n{fence}\n",
                    text.trim_end_matches('\n')
                );
            }
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn md_cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}

fn md_table(t: &Table) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| {} |",
        t.headers
            .iter()
            .map(|h| md_cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let align: Vec<&str> = (0..t.headers.len())
        .map(|i| {
            if t.right.get(i).copied().unwrap_or(false) {
                "--:"
            } else {
                ":--"
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for r in &t.rows {
        let _ = writeln!(
            out,
            "| {} |",
            r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    out
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Inline `code` spans and **bold** in paragraphs, as the Markdown shows them.
fn inline_html(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            for (j, p) in part.split("**").enumerate() {
                if j % 2 == 1 {
                    let _ = write!(out, "<strong>{}</strong>", escape(p));
                } else {
                    out.push_str(&escape(p));
                }
            }
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#1d1d1f;padding:0 1em;line-height:1.45}
h1{font-size:1.7em;border-bottom:2px solid #ddd;padding-bottom:.2em}h2{font-size:1.3em;margin-top:1.8em;border-bottom:1px solid #eee}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}th,td{border:1px solid #d8d8d8;padding:3px 8px;vertical-align:top}
th{background:#f3f3f5;text-align:left}td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fafafa}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88em}
pre{background:#f6f6f8;border:1px solid #e3e3e6;padding:.6em;overflow-x:auto}
td.PASS{background:#e3f6e5!important;color:#14632a;font-weight:600}td.FAIL{background:#fde5e5!important;color:#9b1c1c;font-weight:600}
td.NOT{background:#f1f1f1!important;color:#666;font-weight:600}svg{display:block;margin:.4em 0 1.2em}";

const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

pub fn html(title: &str, blocks: &[Block]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n",
        escape(title)
    );
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                let l = (*level).clamp(1, 6);
                let _ = writeln!(out, "<h{l}>{}</h{l}>", inline_html(&one_line(text)));
            }
            Block::Para(text) => {
                let _ = writeln!(out, "<p>{}</p>", inline_html(text.trim_end()));
            }
            Block::Table(t) => out.push_str(&html_table(t)),
            Block::Chart(c) => out.push_str(&svg_chart(c)),
            Block::Pre(text) => {
                let _ = writeln!(out, "<pre>{}</pre>", escape(text.trim_end_matches('\n')));
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn html_table(t: &Table) -> String {
    let mut out = String::from("<table>\n<tr>");
    for (i, h) in t.headers.iter().enumerate() {
        let class = if t.right.get(i).copied().unwrap_or(false) {
            " class=\"r\""
        } else {
            ""
        };
        let _ = write!(out, "<th{class}>{}</th>", inline_html(h));
    }
    out.push_str("</tr>\n");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = match c.as_str() {
                "PASS" => " class=\"PASS\"",
                "FAIL" => " class=\"FAIL\"",
                "NOT RUN" => " class=\"NOT\"",
                _ if t.right.get(i).copied().unwrap_or(false) => " class=\"r\"",
                _ => "",
            };
            let _ = write!(out, "<td{class}>{}</td>", inline_html(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        crate::report::thousands(v as i64)
    } else {
        let t = format!("{v:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Horizontal bar chart as inline SVG (no scripts, no external resources).
pub fn svg_chart(c: &Chart) -> String {
    const WIDTH: f64 = 1000.0;
    const LABEL_W: f64 = 260.0;
    const VALUE_W: f64 = 130.0;
    const BAR_H: f64 = 16.0;
    const GAP: f64 = 10.0;
    const TOP: f64 = 30.0;
    let plot_w = WIDTH - LABEL_W - VALUE_W;
    let per_cat = if c.stacked { 1 } else { c.series.len().max(1) };
    let cat_h = per_cat as f64 * (BAR_H + 2.0) + GAP;
    let legend_h = 24.0;
    let height = TOP + c.categories.len() as f64 * cat_h + legend_h + 6.0;
    let max = c
        .categories
        .iter()
        .map(|(_, vs)| {
            if c.stacked {
                vs.iter().map(|v| v.max(0.0)).sum()
            } else {
                vs.iter().cloned().fold(0.0, f64::max)
            }
        })
        .fold(0.0, f64::max);
    let scale = if max > 0.0 { plot_w / max } else { 0.0 };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"system-ui,sans-serif\" font-size=\"12\" role=\"img\">"
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&c.title));
    let _ = writeln!(
        out,
        "<text x=\"0\" y=\"16\" font-size=\"14\" font-weight=\"600\">{}</text>",
        escape(&c.title)
    );
    let mut y = TOP;
    for (label, values) in &c.categories {
        let label_y = y + (per_cat as f64 * (BAR_H + 2.0)) / 2.0 + 4.0;
        let shown: String = if label.chars().count() > 38 {
            label.chars().take(36).chain("…".chars()).collect()
        } else {
            label.clone()
        };
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{label_y:.1}\" text-anchor=\"end\"><title>{}</title>{}</text>",
            LABEL_W - 8.0,
            escape(label),
            escape(&shown)
        );
        if c.stacked {
            let mut x = LABEL_W;
            for (i, v) in values.iter().enumerate() {
                let w = v.max(0.0) * scale;
                let name = c.series.get(i).map(String::as_str).unwrap_or("");
                let _ = writeln!(
                    out,
                    "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{BAR_H}\" fill=\"{}\"><title>{}: {} {}</title></rect>",
                    PALETTE[i % PALETTE.len()],
                    escape(name),
                    fmt_value(*v),
                    escape(&c.unit)
                );
                x += w;
            }
            let total: f64 = values.iter().map(|v| v.max(0.0)).sum();
            let _ = writeln!(
                out,
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                x + 6.0,
                y + BAR_H - 3.0,
                fmt_value(total)
            );
            y += BAR_H + 2.0;
        } else {
            for (i, v) in values.iter().enumerate() {
                let w = v.max(0.0) * scale;
                let name = c.series.get(i).map(String::as_str).unwrap_or("");
                let _ = writeln!(
                    out,
                    "<rect x=\"{LABEL_W}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{BAR_H}\" fill=\"{}\"><title>{}: {} {}</title></rect>",
                    PALETTE[i % PALETTE.len()],
                    escape(name),
                    fmt_value(*v),
                    escape(&c.unit)
                );
                let _ = writeln!(
                    out,
                    "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                    LABEL_W + w + 6.0,
                    y + BAR_H - 3.0,
                    fmt_value(*v)
                );
                y += BAR_H + 2.0;
            }
        }
        y += GAP;
    }
    let mut x = LABEL_W;
    for (i, s) in c.series.iter().enumerate() {
        let _ = writeln!(
            out,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>",
            y + 4.0,
            PALETTE[i % PALETTE.len()]
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 16.0,
            y + 14.0,
            escape(s)
        );
        x += 24.0 + 7.0 * s.chars().count() as f64;
    }
    if !c.unit.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#666\">{}</text>",
            WIDTH - 4.0,
            y + 14.0,
            escape(&c.unit)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_html_escape_what_they_must() {
        let mut t = Table::new(&["metric", "A"], &[false, true]);
        t.row(vec!["a|b".into(), "1".into()]);
        t.row(vec!["status".into(), "PASS".into()]);
        let blocks = vec![
            Block::Heading(1, "Study <x>".into()),
            Block::Para("uses `console=hvc0` & **bold**".into()),
            Block::Table(t),
            Block::Pre("line </pre>".into()),
        ];
        let md = markdown(&blocks);
        assert_eq!(md, "# Study <x>\n\nuses `console=hvc0` & **bold**\n\n| metric | A |\n|:--|--:|\n| a\\|b | 1 |\n| status | PASS |\n\n```text\nline </pre>\n```\n");
        let h = html("t", &blocks);
        assert!(h.contains("<h1>Study &lt;x&gt;</h1>"));
        assert!(h.contains("<p>uses <code>console=hvc0</code> &amp; <strong>bold</strong></p>"));
        assert!(h.contains("<td class=\"PASS\">PASS</td>"));
        assert!(h.contains("<pre>line &lt;/pre&gt;</pre>"));
        assert!(
            !h.contains(" src=") && !h.contains(" href="),
            "no external resource"
        );
    }

    #[test]
    fn charts_scale_to_the_largest_value() {
        let c = Chart {
            title: "cycles".into(),
            unit: "cycles".into(),
            series: vec!["A".into(), "B".into()],
            categories: vec![("echo".into(), vec![100.0, 50.0])],
            stacked: false,
        };
        let svg = svg_chart(&c);
        assert!(svg.contains("width=\"610.00\""), "A fills the plot: {svg}");
        assert!(svg.contains("width=\"305.00\""), "B is half as long");
        let s = svg_chart(&Chart { stacked: true, ..c });
        assert!(
            s.contains("width=\"406.67\"") && s.contains("width=\"203.33\""),
            "{s}"
        );
        let empty = svg_chart(&Chart {
            title: "x".into(),
            unit: String::new(),
            series: vec![],
            categories: vec![],
            stacked: false,
        });
        assert!(empty.starts_with("<svg") && empty.ends_with("</svg>\n"));
    }
}
