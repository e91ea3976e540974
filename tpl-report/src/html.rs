//! Self-contained HTML pages for people: the reports of `tpl demo`, `tpl compare --report`
//! (and any other command that writes a page). One file opens offline in any browser: the
//! style sheet is inline, the charts are inline SVG, and nothing is fetched — no script, no
//! external font, style sheet or image, and a content security policy that forbids the
//! browser to load any (`scripts/browser-check` verifies it in a real browser).
//!
//! A page is a title, a lead paragraph, a provenance list (how the page was made) and
//! [`Section`]s of paragraphs, notes, definition lists, [`Table`]s, charts and code. Every
//! piece of text given to the builder is escaped; only the SVG of a chart is embedded as
//! markup (it comes from `crate::chart`, never from a user).

use std::fmt::Write as _;

use crate::text::human;
use crate::{ReportError, Result, VERSION};

/// Escapes `text` for HTML element content and attribute values (`&`, `<`, `>`, `"`, `'`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The style sheet of every page: the system's fonts (no font is fetched), readable line
/// length, numbers right-aligned in tabular figures, charts scaled to the page width.
const STYLE: &str = "\
:root{color-scheme:light;--ink:#1f2328;--muted:#59636e;--rule:#d1d9e0;--band:#f6f8fa;--accent:#0b5cad}
*{box-sizing:border-box}
body{margin:0;padding:2rem 1.25rem 3rem;color:var(--ink);background:#fff;line-height:1.5;\
font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,\"Noto Sans\",sans-serif}
main{max-width:76rem;margin:0 auto}
h1{font-size:1.75rem;margin:0 0 .5rem;line-height:1.25}
h2{font-size:1.3rem;margin:2.5rem 0 .75rem;padding-bottom:.3rem;border-bottom:1px solid var(--rule)}
p{max-width:48rem;margin:.6rem 0}
.lead{font-size:1.05rem;color:var(--muted)}
.note{max-width:48rem;border-left:4px solid var(--accent);background:var(--band);padding:.5rem .9rem;margin:.9rem 0}
dl.params{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1.25rem;margin:.75rem 0;max-width:60rem}
dl.params dt{font-weight:600}
dl.params dd{margin:0;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto;margin:.9rem 0}
table{border-collapse:collapse;font-size:.9rem}
caption{caption-side:top;text-align:left;font-weight:600;padding:0 0 .4rem}
th,td{padding:.3rem .6rem;border-bottom:1px solid var(--rule);text-align:left;vertical-align:top}
thead th{border-bottom:2px solid var(--ink);vertical-align:bottom}
tbody td:first-child{white-space:nowrap}
tbody tr:nth-child(even){background:var(--band)}
.num{text-align:right;font-variant-numeric:tabular-nums}
td.num{white-space:nowrap}
figure{margin:1.25rem 0}
figure svg{display:block;width:100%;max-width:960px;height:auto;border:1px solid var(--rule)}
figcaption{color:var(--muted);font-size:.9rem;margin-top:.35rem;max-width:60rem}
pre{background:var(--band);padding:.75rem 1rem;overflow-x:auto;font-size:.88rem}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,\"Liberation Mono\",monospace}
footer{margin-top:3rem;color:var(--muted);font-size:.85rem}
";

/// The content security policy of every page: nothing may be loaded from anywhere; only the
/// page's own inline style sheet applies (no script runs, not even an inline one).
const POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// One cell of a [`Table`]: text (left-aligned) or a number (right-aligned).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text, left-aligned.
    Text(String),
    /// A number already written for people (`1.23 ± 0.4`, `50.0 %`, `-`), right-aligned.
    Number(String),
}

impl Cell {
    /// A text cell.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A number written as the CLI's tables write it ([`human`]: 6 significant digits).
    pub fn number(x: f64) -> Self {
        Self::Number(human(x))
    }

    /// Text that reads as a number (a count, `1.2 ± 0.3`, `50.0 %`): right-aligned as one.
    pub fn numeric(text: impl Into<String>) -> Self {
        Self::Number(text.into())
    }

    fn is_number(&self) -> bool {
        matches!(self, Self::Number(_))
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Self {
        Self::number(x)
    }
}

impl From<usize> for Cell {
    fn from(n: usize) -> Self {
        Self::Number(n.to_string())
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

/// An HTML table: column titles, rows of [`Cell`]s, an optional caption. A column that
/// holds numbers has its title right-aligned too.
#[derive(Debug, Clone, Default)]
pub struct Table {
    caption: Option<String>,
    header: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Self { caption: None, header: header.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }

    /// The same table with a caption above it.
    pub fn with_caption(mut self, caption: &str) -> Self {
        self.caption = Some(caption.to_string());
        self
    }

    /// Appends a row: one cell per title (missing cells are left empty, extra ones dropped).
    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// Whether column `c` holds numbers (some of its cells are; the others are then marks
    /// such as `-`): its title is right-aligned over them.
    fn numeric_column(&self, c: usize) -> bool {
        self.rows.iter().any(|r| r.get(c).is_some_and(Cell::is_number))
    }

    /// Writes the table's markup to `out`.
    fn write(&self, out: &mut String) {
        out.push_str("<div class=\"table-wrap\"><table>");
        if let Some(caption) = &self.caption {
            let _ = write!(out, "<caption>{}</caption>", escape(caption));
        }
        out.push_str("<thead><tr>");
        for (c, title) in self.header.iter().enumerate() {
            let class = if self.numeric_column(c) { " class=\"num\"" } else { "" };
            let _ = write!(out, "<th scope=\"col\"{class}>{}</th>", escape(title));
        }
        out.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            out.push_str("<tr>");
            for c in 0..self.header.len() {
                match row.get(c) {
                    Some(Cell::Text(t)) => {
                        let _ = write!(out, "<td>{}</td>", escape(t));
                    }
                    Some(Cell::Number(n)) => {
                        let _ = write!(out, "<td class=\"num\">{}</td>", escape(n));
                    }
                    None => out.push_str("<td></td>"),
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>\n");
    }
}

/// The markup of an SVG document to embed in a page: the XML prolog, document type and
/// comments before the root element dropped, the root's namespace declarations removed (an
/// SVG element inside HTML is in the SVG namespace without them, and the page then names no
/// URL), and `role="img"` with `aria-label` = `label` added to the root. Refused when `svg`
/// holds no `<svg` root element.
pub fn inline_svg(svg: &str, label: &str) -> Result<String> {
    let start = svg
        .find("<svg")
        .filter(|&i| svg[i + 4..].starts_with(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/'))
        .ok_or(ReportError::Embed("no <svg> element in it"))?;
    let body = &svg[start..];
    let tag_end = body.find('>').ok_or(ReportError::Embed("unterminated <svg> tag"))?;
    let (tag, rest) = body.split_at(tag_end);
    let (tag, closed) = match tag.strip_suffix('/') {
        Some(t) => (t, "/"),
        None => (tag, ""),
    };
    let mut kept = String::from("<svg");
    for attribute in attributes(&tag[4..]) {
        let name = attribute.split('=').next().unwrap_or_default().trim();
        if name == "xmlns" || name.starts_with("xmlns:") || name == "role" || name == "aria-label" {
            continue;
        }
        kept.push(' ');
        kept.push_str(attribute);
    }
    let _ = write!(kept, " role=\"img\" aria-label=\"{}\"{closed}", escape(label));
    kept.push_str(rest);
    Ok(kept.trim_end().to_string())
}

/// The attributes of a start tag's inside (`name="value"` or bare `name`), as written.
fn attributes(mut inside: &str) -> Vec<&str> {
    let mut out = Vec::new();
    loop {
        inside = inside.trim_start();
        if inside.is_empty() {
            return out;
        }
        // The name, then optionally `=` and a quoted or bare value.
        let name_end = inside.find(|c: char| c.is_ascii_whitespace() || c == '=').unwrap_or(inside.len());
        let after_name = inside[name_end..].trim_start();
        let end = if let Some(value) = after_name.strip_prefix('=') {
            let value = value.trim_start();
            let value_start = inside.len() - value.len();
            let value_len = match value.chars().next() {
                Some(q @ ('"' | '\'')) => value[1..].find(q).map_or(value.len(), |i| i + 2),
                _ => value.find(|c: char| c.is_ascii_whitespace()).unwrap_or(value.len()),
            };
            value_start + value_len
        } else {
            name_end
        };
        out.push(&inside[..end]);
        inside = &inside[end..];
    }
}

/// A section of a page: a heading and its content, in the order added.
#[derive(Debug, Clone)]
pub struct Section {
    heading: String,
    body: String,
}

impl Section {
    /// An empty section under `heading`.
    pub fn new(heading: &str) -> Self {
        Self { heading: heading.to_string(), body: String::new() }
    }

    /// A paragraph of text.
    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
        self
    }

    /// A note set apart from the text (a caveat, a warning, a conclusion).
    pub fn note(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(text));
        self
    }

    /// A definition list of (term, value): parameters, provenance.
    pub fn definitions<T: AsRef<str>, V: AsRef<str>>(&mut self, items: &[(T, V)]) -> &mut Self {
        write_definitions(&mut self.body, items);
        self
    }

    /// A table.
    pub fn table(&mut self, table: &Table) -> &mut Self {
        table.write(&mut self.body);
        self
    }

    /// A chart: the SVG document `svg` inline ([`inline_svg`]), labelled `label` for screen
    /// readers and captioned with it below.
    pub fn chart(&mut self, svg: &str, label: &str) -> Result<&mut Self> {
        let svg = inline_svg(svg, label)?;
        let _ = writeln!(self.body, "<figure>{svg}<figcaption>{}</figcaption></figure>", escape(label));
        Ok(self)
    }

    /// Preformatted text (commands to try, a file's lines).
    pub fn code(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<pre><code>{}</code></pre>", escape(text.trim_end()));
        self
    }

    /// A bulleted list.
    pub fn list<T: AsRef<str>>(&mut self, items: &[T]) -> &mut Self {
        self.body.push_str("<ul>");
        for item in items {
            let _ = write!(self.body, "<li>{}</li>", escape(item.as_ref()));
        }
        self.body.push_str("</ul>\n");
        self
    }
}

/// Writes a definition list of (term, value) to `out`.
fn write_definitions<T: AsRef<str>, V: AsRef<str>>(out: &mut String, items: &[(T, V)]) {
    out.push_str("<dl class=\"params\">");
    for (term, value) in items {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(term.as_ref()), escape(value.as_ref()));
    }
    out.push_str("</dl>\n");
}

/// A whole page: title, lead paragraph, provenance, sections, and a footer naming the
/// version of `tpl` that wrote it. [`Page::render`] gives the document.
#[derive(Debug, Clone)]
pub struct Page {
    title: String,
    lead: Option<String>,
    provenance: Vec<(String, String)>,
    sections: Vec<Section>,
}

impl Page {
    /// An empty page titled `title` (the document's title and its first heading).
    pub fn new(title: &str) -> Self {
        Self { title: title.to_string(), lead: None, provenance: Vec::new(), sections: Vec::new() }
    }

    /// The paragraph under the title: what the page shows.
    pub fn lead(&mut self, text: &str) -> &mut Self {
        self.lead = Some(text.to_string());
        self
    }

    /// Adds (term, value) to the list of how the page was made (command, version, inputs,
    /// seed), shown under the lead paragraph.
    pub fn provenance(&mut self, term: &str, value: impl Into<String>) -> &mut Self {
        self.provenance.push((term.to_string(), value.into()));
        self
    }

    /// Appends a section.
    pub fn section(&mut self, section: Section) -> &mut Self {
        self.sections.push(section);
        self
    }

    /// The HTML document.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(
            STYLE.len() + self.sections.iter().map(|s| s.body.len() + 64).sum::<usize>(),
        );
        let title = escape(&self.title);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\n\
             <meta name=\"generator\" content=\"tpl {VERSION}\">\n\
             <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{title}</h1>\n"
        );
        if let Some(lead) = &self.lead {
            let _ = writeln!(out, "<p class=\"lead\">{}</p>", escape(lead));
        }
        if !self.provenance.is_empty() {
            write_definitions(&mut out, &self.provenance);
        }
        for section in &self.sections {
            let _ = writeln!(out, "<section>\n<h2>{}</h2>", escape(&section.heading));
            out.push_str(&section.body);
            out.push_str("</section>\n");
        }
        let _ = write!(
            out,
            "<footer>Written by tpl {VERSION}. A self-contained page: it loads nothing from the network.</footer>\n\
             </main>\n</body>\n</html>\n"
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SVG document as the chart module writes it (with a prolog, as other writers do).
    const SVG: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- drawn -->\n\
        <svg width=\"960\" height=\"600\" viewBox=\"0 0 960 600\" xmlns=\"http://www.w3.org/2000/svg\" \
        xmlns:xlink='http://www.w3.org/1999/xlink'>\n<text x=\"1\" y=\"2\">a &lt; b</text>\n</svg>\n";

    fn page() -> String {
        let mut table = Table::new(&["strategy", "MSE", "published"]).with_caption("Errors <per cell>");
        table.row(vec!["bd".into(), 0.123456789.into(), Cell::numeric("50.0 %")]);
        table.row(vec!["a<b & \"c\"".into(), Cell::number(1e-9), Cell::numeric("-")]);
        let mut s = Section::new("Error & leakage");
        s.paragraph("x < y").note("NOT private").definitions(&[("ε", "1"), ("w", "5")]);
        s.table(&table).code("tpl demo --out 'a b'").list(&["one", "two"]);
        s.chart(SVG, "Error vs. leakage").unwrap();
        let mut p = Page::new("tpl <compare>");
        p.lead("What leaks.").provenance("command", "tpl compare --counts c.csv").section(s);
        p.render()
    }

    #[test]
    fn escapes_every_markup_character() {
        assert_eq!(escape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
        assert_eq!(escape("ε = 0.1 · Σ"), "ε = 0.1 · Σ");
    }

    #[test]
    fn a_page_names_no_url_and_runs_no_script() {
        let html = page();
        for forbidden in ["http://", "https://", "<script", "<link", "<img", "@import", "url("] {
            assert!(!html.contains(forbidden), "{forbidden:?} in\n{html}");
        }
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(html.contains("<meta charset=\"utf-8\">"));
        assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none';"));
        assert!(html.trim_end().ends_with("</html>"));
    }

    /// Fails naming the first of `needles` that `html` does not hold.
    fn holds(html: &str, needles: &[&str]) {
        if let Some(missing) = needles.iter().find(|n| !html.contains(**n)) {
            panic!("{missing} not in\n{html}");
        }
    }

    #[test]
    fn text_is_escaped_everywhere() {
        holds(
            &page(),
            &[
                "<title>tpl &lt;compare&gt;</title>",
                "<h1>tpl &lt;compare&gt;</h1>",
                "<h2>Error &amp; leakage</h2>",
                "<p>x &lt; y</p>",
                "<caption>Errors &lt;per cell&gt;</caption>",
                "<td>a&lt;b &amp; &quot;c&quot;</td>",
                "<pre><code>tpl demo --out &#39;a b&#39;</code></pre>",
                "<dt>command</dt><dd>tpl compare --counts c.csv</dd>",
                "<p class=\"note\">NOT private</p>",
                "<ul><li>one</li><li>two</li></ul>",
            ],
        );
    }

    #[test]
    fn numbers_are_human_and_right_aligned_with_their_titles() {
        let cells = [
            "<td class=\"num\">0.123457</td>",
            "<td class=\"num\">1.00000e-9</td>",
            "<td class=\"num\">50.0 %</td>",
        ];
        holds(&page(), &cells);
        let titles = ["<th scope=\"col\">strategy</th>", "<th scope=\"col\" class=\"num\">MSE</th>"];
        holds(&page(), &titles);
        holds(&page(), &[".num{text-align:right"]);
    }

    #[test]
    fn a_chart_is_inline_svg_without_prolog_or_namespaces_and_labelled() {
        let svg = inline_svg(SVG, "Error \"vs\" leakage").unwrap();
        assert!(
            svg.starts_with(
                "<svg width=\"960\" height=\"600\" viewBox=\"0 0 960 600\" role=\"img\" \
                 aria-label=\"Error &quot;vs&quot; leakage\">\n<text"
            ),
            "{svg}"
        );
        assert!(svg.ends_with("</svg>"));
        assert!(!svg.contains("<?xml") && !svg.contains("xmlns") && !svg.contains("<!--"));
        // The chart's own markup stays as it was.
        assert!(svg.contains("<text x=\"1\" y=\"2\">a &lt; b</text>"));
        let html = page();
        assert!(html.contains("<figure><svg "));
        assert!(html.contains("<figcaption>Error vs. leakage</figcaption></figure>"));
        assert_eq!(html.matches("<svg").count(), 1);
        // An existing label is replaced, not doubled; a self-closing root stays closed.
        let svg = inline_svg("<svg role=\"x\" aria-label=\"old\" width=\"2\"/>", "new").unwrap();
        assert_eq!(svg, "<svg width=\"2\" role=\"img\" aria-label=\"new\"/>");
    }

    #[test]
    fn what_is_not_an_svg_document_is_refused() {
        for bad in ["", "<svgx width=\"1\"></svgx>", "<html></html>", "<svg width=\"1\""] {
            assert!(inline_svg(bad, "x").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn attributes_are_split_as_written() {
        assert_eq!(
            attributes(" a=\"1 2\" b='x' c=3 d  e = \"y\""),
            vec!["a=\"1 2\"", "b='x'", "c=3", "d", "e = \"y\""]
        );
        assert!(attributes("  ").is_empty());
    }

    #[test]
    fn a_table_without_rows_or_with_short_rows_is_well_formed() {
        let mut out = String::new();
        Table::new(&["a", "b"]).write(&mut out);
        assert!(out.contains("<th scope=\"col\">a</th>") && out.contains("<tbody></tbody>"));
        let mut t = Table::new(&["a", "b"]);
        t.row(vec![Cell::text("x")]);
        let mut out = String::new();
        t.write(&mut out);
        assert!(out.contains("<tr><td>x</td><td></td></tr>"));
    }
}
