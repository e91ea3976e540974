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

/// From this many steps a series command says up front what it will cost.
pub const ANNOUNCE_MIN_STEPS: usize = 10_000_000;

/// What one step of a long series command costs, measured on a 2-core machine with the
/// 23-state matrices of the New York harbour week (larger matrices take longer).
pub struct StepCost {
    /// Seconds a step, output included.
    pub seconds: f64,
    /// Bytes of JSON output a step.
    pub output: f64,
    /// Bytes of memory a step.
    pub memory: f64,
}

/// Says on standard error, before the work starts, how large a `steps`-step run of `what`
/// is and what it is expected to cost — for runs of [`ANNOUNCE_MIN_STEPS`] steps or more, so
/// that nobody waits minutes without a word (the bar is drawn only on a terminal).
pub fn announce_steps(steps: usize, what: &str, cost: &StepCost) {
    if steps < ANNOUNCE_MIN_STEPS {
        return;
    }
    let n = steps as f64;
    announce(&format!(
        "{what} over {steps} steps: expect about {} (2 cores; longer for larger matrices), {} of memory and {} of \
         JSON output",
        duration(n * cost.seconds),
        bytes(n * cost.memory),
        bytes(n * cost.output)
    ));
}

/// One line on standard error, before long work: what it is and what it costs.
pub fn announce(text: &str) {
    eprintln!("tpl: note: {text}");
}

/// A duration for people: seconds, minutes or hours, two significant digits.
pub fn duration(seconds: f64) -> String {
    match seconds {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5400.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// A size for people: MB or GB.
fn bytes(b: f64) -> String {
    if b < 1e9 { format!("{:.0} MB", b / 1e6) } else { format!("{:.1} GB", b / 1e9) }
}
