//! A self-contained flamegraph SVG: one rectangle per frame, a `<title>`
//! for hover text, CSS hover highlight. Colours come from a hash of the
//! frame name, so the same function has the same colour in every graph.
//!
//! Opened in a browser, a small inline script (no external resources) makes
//! it interactive: click a frame to zoom into it (it fills the width, its
//! ancestors stay below it, dimmed, everything else is hidden), "Reset
//! zoom" (or Escape) to go back, "Search" (or Ctrl-F) for a regular
//! expression whose frames are highlighted and whose share of the samples
//! is shown. The controls are hidden until the script shows them, so
//! without JavaScript (an `<img>`, an image viewer) the picture is the
//! static graph alone. Each frame's `<g>` carries `data-o`, its first
//! sample's offset, so zooming is exact however many samples there are.
//! Frames narrower than `min_width_px` at full width are not in the file,
//! so zooming does not bring them back and search does not count them.

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
            "<g data-o=\"{x_samples}\"><title>{} ({} {samples}, {pct:.2}%)</title><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{}\" fill=\"rgb({r},{g},{b})\" rx=\"2\" ry=\"2\"/>",
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
        "<style>text {{ font-family: Verdana, sans-serif; font-size: {}px; fill: rgb(0,0,0); }} g:hover rect {{ stroke: rgb(0,0,0); stroke-width: 0.5; }} g[data-o], .control {{ cursor: pointer; }} .control:hover {{ text-decoration: underline; }}</style>",
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
        controls(&mut out, opts, width, height);
    }
    out.push_str("</svg>\n");
    out
}

/// The controls (hidden until the script shows them) and the script itself.
fn controls(out: &mut String, opts: &FlamegraphOptions, width: u32, height: f64) {
    let y = opts.font_size as f64 * 2.0;
    let _ = writeln!(
        out,
        "<text id=\"unzoom\" class=\"control\" x=\"10.0\" y=\"{y:.1}\" opacity=\"0.3\" display=\"none\">Reset zoom</text>"
    );
    let _ = writeln!(
        out,
        "<text id=\"search\" class=\"control\" x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"end\" display=\"none\">Search</text>",
        width as f64 - 10.0
    );
    let _ = writeln!(
        out,
        "<text id=\"matched\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" display=\"none\"></text>",
        width as f64 - 10.0,
        height - 2.0
    );
    out.push_str("<script type=\"text/ecmascript\"><![CDATA[\n");
    let _ = writeln!(
        out,
        "var FLAME = {{ width: {width}, pad: 10, charWidth: {:.3}, frameHeight: {} }};",
        opts.font_size as f64 * 0.59,
        opts.frame_height
    );
    out.push_str(SCRIPT);
    out.push_str("]]></script>\n");
}

/// Zoom and search. Frames are found by their `data-o` attribute; a frame's
/// name and samples are read back from its `<title>`.
const SCRIPT: &str = r#"(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var HIGHLIGHT = "rgb(230,0,230)";
  var span = FLAME.width - 2 * FLAME.pad;
  var frames = [];
  var nodes = document.querySelectorAll("g[data-o]");
  for (var i = 0; i < nodes.length; i++) {
    var g = nodes[i];
    var title = g.querySelector("title").textContent;
    var m = /^([\s\S]*) \((\d+) samples?, [0-9.]+%\)$/.exec(title);
    var rect = g.querySelector("rect");
    var text = g.querySelector("text");
    frames.push({
      g: g, rect: rect, text: text,
      name: m ? m[1] : title, n: m ? Number(m[2]) : 0,
      o: Number(g.getAttribute("data-o")), y: Number(rect.getAttribute("y")),
      x0: rect.getAttribute("x"), w0: rect.getAttribute("width"),
      fill: rect.getAttribute("fill"), label: text ? text.textContent : ""
    });
  }
  var total = frames.length ? frames[0].n : 0;
  var zoomed = null, searching = null;
  var unzoomControl = document.getElementById("unzoom");
  var searchControl = document.getElementById("search");
  var matchedText = document.getElementById("matched");

  // The label a frame of width w has room for, as the static graph draws it.
  function label(name, w) {
    var fits = Math.floor((w - 6) / FLAME.charWidth);
    if (fits < 3) return "";
    var chars = Array.from(name);
    return chars.length > fits ? chars.slice(0, fits - 2).join("") + ".." : name;
  }
  function place(f, x, w, text) {
    f.rect.setAttribute("x", typeof x === "number" ? x.toFixed(2) : x);
    f.rect.setAttribute("width", typeof w === "number" ? w.toFixed(2) : w);
    if (!f.text && text) {
      f.text = document.createElementNS(NS, "text");
      f.text.setAttribute("y", (f.y + FLAME.frameHeight - 4.5).toFixed(1));
      f.g.appendChild(f.text);
    }
    if (f.text) {
      f.text.setAttribute("x", (Number(f.rect.getAttribute("x")) + 3).toFixed(2));
      f.text.textContent = text;
    }
  }
  function zoom(z) {
    if (z === frames[0]) { unzoom(); return; }
    var scale = span / z.n;
    frames.forEach(function (f) {
      var inside = f.o >= z.o && f.o + f.n <= z.o + z.n;
      var around = f.o <= z.o && f.o + f.n >= z.o + z.n;
      if (f.y <= z.y && inside) {
        var w = f.n * scale;
        place(f, FLAME.pad + (f.o - z.o) * scale, w, label(f.name, w));
        f.g.removeAttribute("display");
        f.g.removeAttribute("opacity");
      } else if (f.y > z.y && around) {
        place(f, FLAME.pad, span, label(f.name, span));
        f.g.removeAttribute("display");
        f.g.setAttribute("opacity", "0.5");
      } else {
        f.g.setAttribute("display", "none");
      }
    });
    zoomed = z;
    unzoomControl.setAttribute("opacity", "1");
  }
  function unzoom() {
    frames.forEach(function (f) {
      place(f, f.x0, f.w0, f.label);
      f.g.removeAttribute("display");
      f.g.removeAttribute("opacity");
    });
    zoomed = null;
    unzoomControl.setAttribute("opacity", "0.3");
  }
  // Highlight the frames whose names match; the share counts each sample
  // once, however many matching frames it sits under.
  function search(pattern) {
    var re = null;
    if (pattern) {
      try { re = new RegExp(pattern); } catch (e) { window.alert("Not a regular expression: " + e.message); return null; }
    }
    var hits = [];
    frames.forEach(function (f) {
      var hit = re !== null && re.test(f.name);
      f.rect.setAttribute("fill", hit ? HIGHLIGHT : f.fill);
      if (hit) hits.push(f);
    });
    hits.sort(function (a, b) { return a.o - b.o || b.n - a.n; });
    var samples = 0, end = -1;
    hits.forEach(function (f) {
      if (f.o >= end) { samples += f.n; end = f.o + f.n; }
    });
    searching = re ? pattern : null;
    searchControl.textContent = re ? "Reset search" : "Search";
    var share = total ? samples * 100 / total : 0;
    if (re) {
      matchedText.textContent = "Matched: " + share.toFixed(2) + "% (" + samples + " of " + total + " samples)";
      matchedText.removeAttribute("display");
    } else {
      matchedText.textContent = "";
      matchedText.setAttribute("display", "none");
    }
    return { frames: hits.length, samples: samples, percent: share };
  }
  function ask() {
    if (searching !== null) { search(""); return; }
    var pattern = window.prompt("Search for frames matching (regular expression):", "");
    if (pattern) search(pattern);
  }
  frames.forEach(function (f) {
    f.g.addEventListener("click", function () { zoom(f); });
  });
  unzoomControl.addEventListener("click", unzoom);
  searchControl.addEventListener("click", ask);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) { e.preventDefault(); ask(); }
    else if (e.key === "Escape") unzoom();
  });
  unzoomControl.removeAttribute("display");
  searchControl.removeAttribute("display");
  // For scripts that drive the graph (and tests).
  window.flamegraph = {
    frames: function () { return frames.map(function (f) { return f.name; }); },
    zoom: function (i) { zoom(frames[i]); },
    unzoom: unzoom,
    search: search,
    state: function () {
      return {
        zoomed: zoomed ? zoomed.name : null,
        shown: frames.filter(function (f) { return f.g.getAttribute("display") !== "none"; }).map(function (f) {
          return { name: f.name, x: f.rect.getAttribute("x"), width: f.rect.getAttribute("width"), label: f.text ? f.text.textContent : "", dimmed: f.g.getAttribute("opacity") === "0.5" };
        }),
        matched: matchedText.textContent
      };
    }
  };
})();
"#;
