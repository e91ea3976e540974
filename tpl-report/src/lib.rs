//! The pages and charts of `tpl`, as a library: the self-contained HTML reports of
//! `tpl demo`, `tpl compare --report` and `tpl stream report`, the SVG charts of `--chart`,
//! and the text tables the command line prints. The command line and the Python package
//! `temporal_privacy` both write their reports through this crate, so a page is the same
//! bytes whichever made it, but for the lines that say who made it and from what.
//!
//! - [`html`] — a [`Page`] of [`Section`]s: paragraphs, notes, tables, inline charts and
//!   code, every text escaped, nothing loaded from the network.
//! - [`chart`] — line charts over time, labelled scatter plots whose labels never overlap,
//!   and per-cell estimate panels (plotters' SVG backend, the Okabe–Ito colours).
//! - [`comparison`] — a [`tpl_compare::Comparison`] as a table (text, CSV, HTML) and as an
//!   error-against-leakage chart.
//! - [`demo`] — the report of `tpl demo` ([`demo::Demo`]).
//! - [`matrices`] — where a comparison's matrices came from ([`MatrixSource`]).
//! - [`output`] — the JSON objects of `tpl loss`, `supremum`, `leakage`, `allocate`,
//!   `release` (and `stream push`/`export`), `postprocess`, `estimate` and `stream status`,
//!   shared with Python (one definition of each output's fields).
//! - [`stream`] — the page of a durable stream ([`tpl_stream::DurableStream`]).
//! - [`text`] — numbers and aligned tables for a terminal.
//!
//! ```
//! use tpl_report::{Page, Section};
//!
//! let mut page = Page::new("A report");
//! page.lead("What the page is about.").provenance("made by", "a doctest");
//! let mut section = Section::new("Numbers");
//! section.paragraph("x < y & y > z is escaped.");
//! page.section(section);
//! let html = page.render();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(html.contains("x &lt; y &amp; y &gt; z"));
//! ```

pub mod chart;
pub mod comparison;
pub mod demo;
mod error;
pub mod html;
pub mod matrices;
pub mod output;
pub mod stream;
pub mod text;

pub use comparison::ComparisonReport;
pub use error::{ReportError, Result};
pub use html::{Cell, Page, Section};
pub use matrices::{MatrixOrigin, MatrixSource};
pub use stream::{StreamData, stream_page};
pub use text::{Table, human};

/// The version of this crate, the version of `tpl` every page names.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Writes `text` to `path`, naming the path when it cannot (no missing folder is created:
/// a mistyped path is an error, not a new folder).
pub fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| ReportError::Write { path: path.to_path_buf(), source })
}
