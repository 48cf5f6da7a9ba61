//! A self-contained flamegraph SVG: one rectangle per frame, a `<title>`
//! for hover text, CSS hover highlight, no JavaScript. Colours come from a
//! hash of the frame name, so the same function has the same colour in
//! every graph.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::text::xml_escape;

#[derive(Clone, Debug, PartialEq)]
pub struct FlamegraphOptions {
    pub title: String,
    /// Image width in pixels.
    pub width: u32,
    pub frame_height: u32,
    pub font_size: u32,
    /// Frames narrower than this many pixels are not drawn.
    pub min_width_px: f64,
}

impl Default for FlamegraphOptions {
    fn default() -> Self {
        FlamegraphOptions {
            title: "Flame Graph".into(),
            width: 1200,
            frame_height: 16,
            font_size: 12,
            min_width_px: 0.1,
        }
    }
}

#[derive(Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn depth(&self) -> usize {
        self.children
            .values()
            .map(|c| 1 + c.depth())
            .max()
            .unwrap_or(0)
    }
}

/// FNV-1a: small, stable across platforms and runs.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A warm colour (reds, oranges, yellows) chosen by the name.
fn colour(name: &str) -> (u8, u8, u8) {
    let h = fnv1a(name);
    let v = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0;
    (
        205 + (50.0 * v(0)) as u8,
        (230.0 * v(8)) as u8,
        (55.0 * v(16)) as u8,
    )
}

struct Layout<'a> {
    opts: &'a FlamegraphOptions,
    px_per_sample: f64,
    total: u64,
    bottom: f64,
    char_width: f64,
}

impl Layout<'_> {
    fn frame(&self, out: &mut String, name: &str, node: &Node, depth: usize, x_samples: u64) {
        let w = node.value as f64 * self.px_per_sample;
        if w < self.opts.min_width_px {
            return;
        }
        let x = 10.0 + x_samples as f64 * self.px_per_sample;
        let y = self.bottom - (depth as f64 + 1.0) * self.opts.frame_height as f64;
        let (r, g, b) = colour(name);
        let pct = node.value as f64 * 100.0 / self.total as f64;
        let samples = if node.value == 1 { "sample" } else { "samples" };
        let _ = write!(
            out,
            "<g><title>{} ({} {samples}, {pct:.2}%)</title><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{}\" fill=\"rgb({r},{g},{b})\" rx=\"2\" ry=\"2\"/>",
            xml_escape(name),
            node.value,
            self.opts.frame_height.saturating_sub(1),
        );
        let fits = ((w - 6.0) / self.char_width).floor();
        if fits >= 3.0 {
            let fits = fits as usize;
            let label: String = if name.chars().count() > fits {
                name.chars().take(fits - 2).chain("..".chars()).collect()
            } else {
                name.to_string()
            };
            let _ = write!(
                out,
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                x + 3.0,
                y + self.opts.frame_height as f64 - 4.5,
                xml_escape(&label)
            );
        }
        out.push_str("</g>\n");
        let mut child_x = x_samples;
        for (child_name, child) in &node.children {
            self.frame(out, child_name, child, depth + 1, child_x);
            child_x += child.value;
        }
    }
}

/// Draw folded stacks (`(stack, count)` as [`super::fold`] makes them).
/// Children are ordered by name, as flamegraphs conventionally are.
pub fn flamegraph_svg(folded: &[(String, u64)], opts: &FlamegraphOptions) -> String {
    let mut root = Node::default();
    for (stack, count) in folded {
        root.value = root.value.saturating_add(*count);
        let mut node = &mut root;
        for frame in stack.split(';').filter(|f| !f.is_empty()) {
            node = node.children.entry(frame.to_string()).or_default();
            node.value = node.value.saturating_add(*count);
        }
    }
    let depth = root.depth() + 1;
    let top = opts.font_size as f64 * 3.0;
    let bottom_pad = opts.font_size as f64;
    let height = top + depth as f64 * opts.frame_height as f64 + bottom_pad;
    let width = opts.width.max(40);

    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" standalone=\"no\"?>\n");
    let _ = writeln!(
        out,
        "<svg version=\"1.1\" width=\"{width}\" height=\"{height:.0}\" viewBox=\"0 0 {width} {height:.0}\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    let _ = writeln!(
        out,
        "<style>text {{ font-family: Verdana, sans-serif; font-size: {}px; fill: rgb(0,0,0); }} g:hover rect {{ stroke: rgb(0,0,0); stroke-width: 0.5; }}</style>",
        opts.font_size
    );
    let _ = writeln!(out, "<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height:.0}\" fill=\"rgb(248,248,248)\"/>");
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"font-size: {}px\">{}</text>",
        width as f64 / 2.0,
        opts.font_size as f64 * 2.0,
        opts.font_size + 5,
        xml_escape(&opts.title)
    );
    if root.value == 0 {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">no samples</text>",
            width as f64 / 2.0,
            top + 12.0
        );
    } else {
        let layout = Layout {
            opts,
            px_per_sample: (width - 20) as f64 / root.value as f64,
            total: root.value,
            bottom: height - bottom_pad,
            char_width: opts.font_size as f64 * 0.59,
        };
        layout.frame(&mut out, "all", &root, 0, 0);
    }
    out.push_str("</svg>\n");
    out
}
