//! Progress bars on standard error, drawn only when it is a terminal (never in pipes, files
//! or tests), for the commands that can run for more than a couple of seconds.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps, shown as "  `what` [bar] pos/len `unit`, elapsed" on stderr when
/// it is a terminal, hidden otherwise.
pub fn bar(len: u64, what: &str, unit: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template = format!("  {what} {{wide_bar}} {{pos}}/{{len}} {unit}, {{elapsed}} elapsed");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// Below this many states an O(n³) scan of a matrix ends within about a second (measured:
/// about 6 ns per n³ step), so no bar is drawn.
const SCAN_MIN_STATES: usize = 500;

/// A bar counting `rows` matrix rows for the O(n³) scans of an n-state matrix (`states` = n),
/// hidden for matrices small enough to finish at once.
pub fn scan_bar(states: usize, rows: usize, what: &str) -> ProgressBar {
    if states < SCAN_MIN_STATES {
        return ProgressBar::hidden();
    }
    bar(rows as u64, what, "rows")
}
