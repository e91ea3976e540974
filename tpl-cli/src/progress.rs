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

/// Below this many steps a leakage series takes well under a second (measured: about 50 ns
/// a step for a small matrix), so no bar is drawn.
const SERIES_MIN_STEPS: usize = 1_000_000;

/// A bar for the leakage series of a `steps`-step horizon that a command computes one
/// after another (an allocator's search steps and audits, or the one series of `tpl
/// leakage`): each series fills it from 0 and the message counts them. Hidden below
/// [`SERIES_MIN_STEPS`] steps and when stderr is not a terminal.
pub struct SeriesBar {
    bar: ProgressBar,
    series: std::cell::Cell<u64>,
    last: std::cell::Cell<usize>,
}

impl SeriesBar {
    /// The bar, labelled `what` ("allocating", "computing leakage").
    pub fn new(steps: usize, what: &str) -> Self {
        let bar = if steps < SERIES_MIN_STEPS || !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::new(2 * steps as u64);
            let template = format!("  {what}: series {{msg}} {{wide_bar}} {{percent}}%, {{elapsed}} elapsed");
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            bar
        };
        Self { bar, series: std::cell::Cell::new(0), last: std::cell::Cell::new(usize::MAX) }
    }

    /// The progress hook of `tpl_core::CompactSeries::compute_with_progress` and of the
    /// allocators: `done` of `total` units of the current series (a smaller `done` than
    /// the last one starts the next series).
    pub fn update(&self, done: usize, total: usize) {
        if self.bar.is_hidden() {
            return;
        }
        if done < self.last.get() || self.last.get() == usize::MAX {
            self.series.set(self.series.get() + 1);
            self.bar.set_message(self.series.get().to_string());
        }
        self.last.set(done);
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A bar for writing `rows` output rows of a `steps`-step series (JSON arrays or CSV lines),
/// hidden below [`SERIES_MIN_STEPS`] steps and when stderr is not a terminal. Advance it
/// with [`tick`] per row.
pub fn writing_bar(rows: usize, steps: usize) -> ProgressBar {
    if steps < SERIES_MIN_STEPS {
        return ProgressBar::hidden();
    }
    bar(rows as u64, "writing", "values")
}

/// Moves `bar` to `done` rows every 65 536 rows (cheap enough to call per value).
pub fn tick(bar: &ProgressBar, done: usize) {
    if done.is_multiple_of(1 << 16) {
        bar.set_position(done as u64);
    }
}
