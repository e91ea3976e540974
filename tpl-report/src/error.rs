//! The error type of the reports.

use std::path::PathBuf;

use thiserror::Error;

/// What can go wrong making a page or a chart.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReportError {
    /// plotters could not draw a chart (the message says why).
    #[error("{0}")]
    Draw(String),
    /// A chart that is not an SVG document cannot be embedded in a page.
    #[error("cannot embed the chart: {0}")]
    Embed(&'static str),
    /// A page or chart that could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The result of the reports.
pub type Result<T> = std::result::Result<T, ReportError>;
