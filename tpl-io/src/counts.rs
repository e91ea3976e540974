//! Counts files ([`docs/formats.md`](tpl_core::guide::formats) §5), and the releases read back as
//! counts (§7–8): the one counts parser and writer.
//!
//! CSV (the `csv` crate: quoted fields may hold commas), fields trimmed, blank lines and `#`
//! lines ignored ([`docs/formats.md`](tpl_core::guide::formats) §1). If the first field
//! of the first line is `timestamp_bucket`, that line is a header: cell j is the column named
//! `cj`, wherever it stands, and the names must be exactly c0…c{n−1}, each once (a
//! duplicate, a gap, a name like `c01` or a header without cell columns is refused, never
//! taken by position). Other columns (labels) are ignored; row t is step t. The buckets must be
//! integers ≥ 0 that increase strictly from row to row (gaps are allowed: a curator may skip
//! a bucket). Without that header every field is a cell. The release CSV of `tpl release --format csv` is a releases file (read
//! with `allow_negative`), not a counts file: its noisy values may be negative.

use std::path::Path;

use tpl_core::Short;

use crate::error::{IoError, Result};
use crate::{npy, text};

/// A counts file read ([`docs/formats.md`](tpl_core::guide::formats) §5): one count vector per
/// step, with the file lines (and columns) they came from, to name them in later errors.
#[derive(Debug, Clone)]
pub struct Counts {
    /// c_t for t = 1..T.
    pub rows: Vec<Vec<f64>>,
    /// The 1-based file line of each row.
    pub lines: Vec<usize>,
    /// The `timestamp_bucket` of each row, when the file has that header: integers ≥ 0,
    /// strictly increasing (gaps allowed).
    pub buckets: Option<Vec<u64>>,
    /// The `publication_budget` column, when the header has one (the CSV of `tpl release`:
    /// the budget that set each step's noise, 0 where a release repeats an earlier one).
    pub publication_budget: Option<Vec<f64>>,
    /// The file's text, kept to echo a value as typed in an error message.
    text: String,
    /// The 0-based file column of each cell.
    columns: Vec<usize>,
}

impl Counts {
    /// The 1-based file column of cell `cell`.
    pub fn column(&self, cell: usize) -> usize {
        self.columns.get(cell).copied().unwrap_or(cell) + 1
    }

    /// The count of row `row` (0-based), cell `cell`, as typed in the file.
    pub fn token(&self, row: usize, cell: usize) -> String {
        let typed = self.lines.get(row).and_then(|&line| {
            let text = self.text.lines().nth(line.checked_sub(1)?)?;
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .trim(csv::Trim::All)
                .from_reader(text.as_bytes());
            let record = reader.records().next()?.ok()?;
            Some(record.get(self.column(cell) - 1)?.to_string())
        });
        typed.unwrap_or_else(|| {
            self.rows.get(row).and_then(|r| r.get(cell)).map_or_else(String::new, |&v| Short(v).to_string())
        })
    }
}

/// Reads a counts file ([`docs/formats.md`](tpl_core::guide::formats) §5; `-`: standard input;
/// a path ending in `.npy`: a T × d array, §12); `allow_negative` accepts negative values
/// (noisy releases, §7–8).
///
/// # Errors
/// The first bad row, naming file, line and value.
pub fn read_counts(path: &Path, allow_negative: bool) -> Result<Counts> {
    match read_counts_prefix(path, allow_negative)? {
        (counts, None) => Ok(counts),
        (_, Some(bad_row)) => Err(bad_row),
    }
}

/// The valid rows of a counts file ([`docs/formats.md`](tpl_core::guide::formats) §5) up to its
/// first bad row, and that row's error (for a durable stream, whose valid steps before a bad row
/// stand).
///
/// # Errors
/// A file that cannot be read, or whose first data row is already bad.
pub fn read_counts_prefix(path: &Path, allow_negative: bool) -> Result<(Counts, Option<IoError>)> {
    if npy::is_npy(path) {
        return npy_counts(path, allow_negative).map(|counts| (counts, None));
    }
    let content = text::read(path)?;
    let mut layout: Option<Layout> = None;
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut buckets: Vec<(u64, usize)> = Vec::new();
    let mut budgets = Vec::new();
    let outcome = text::for_each_csv_fields(path, &content, |line, fields| {
        let layout = match &mut layout {
            Some(layout) => layout,
            None => {
                let first = Layout::of_first_record(path, line, fields)?;
                let is_header = first.header;
                let layout = layout.insert(first);
                if is_header {
                    return Ok(());
                }
                layout
            }
        };
        layout.check_width(path, line, fields.len())?;
        // The whole row is checked before any of it is kept.
        let mut row = Vec::with_capacity(layout.cells.len());
        for &k in &layout.cells {
            match text::finite_f64(fields[k]) {
                Ok(value) if value.fract() == 0.0 && text::integral_literal(fields[k]) == Some(false) => {
                    return Err(IoError::parse(
                        path,
                        line,
                        format!(
                            "column {}: count {} is not an integer, and no double holds it exactly (it would \
                             be read as the integer {}): counts are refused, never rounded",
                            k + 1,
                            fields[k],
                            Short(value)
                        ),
                    ));
                }
                Ok(value) if value >= 0.0 || allow_negative => row.push(value),
                _ => return Err(bad_cell(path, line, k, fields[k])),
            }
        }
        if layout.header {
            let bucket = bucket(path, line, fields[0])?;
            if let Some(&(previous, at)) = buckets.last()
                && bucket <= previous
            {
                return Err(IoError::parse(
                    path,
                    line,
                    format!(
                        "column 1: timestamp_bucket {bucket} is not after {previous} (line {at}): buckets must \
                         increase strictly (gaps are allowed)"
                    ),
                ));
            }
            buckets.push((bucket, line));
        }
        if let Some(k) = layout.budget_column {
            budgets.push(publication_budget(path, line, k, fields[k])?);
        }
        rows.push(row);
        lines.push(line);
        Ok(())
    });
    let bad_row = outcome.err();
    let Some(layout) = layout.filter(|_| !rows.is_empty()) else {
        return Err(bad_row.unwrap_or_else(|| IoError::parse(path, 0, "no data rows")));
    };
    buckets.truncate(rows.len());
    budgets.truncate(rows.len());
    let counts = Counts {
        rows,
        lines,
        buckets: layout.header.then(|| buckets.into_iter().map(|(b, _)| b).collect()),
        publication_budget: layout.budget_column.map(|_| budgets),
        text: content,
        columns: layout.cells,
    };
    Ok((counts, bad_row))
}

/// A counts array from a `.npy` file (§12): T × d (a step per row) or d (one step); every
/// value finite, and ≥ 0 unless `allow_negative`. A bad value names its step and cell.
fn npy_counts(path: &Path, allow_negative: bool) -> Result<Counts> {
    let array = npy::read_npy(path)?;
    let width = array.shape.last().copied().unwrap_or(0);
    let values = array.to_f64_at(path, |k| format!("step {}, cell {}", k / width + 1, k % width + 1))?;
    if let Some(k) = values.iter().position(|v| !(v.is_finite() && (*v >= 0.0 || allow_negative))) {
        let why = if values[k].is_finite() { "is negative" } else { "is not a finite number" };
        let message =
            format!("step {}, cell {}: count {} {why}", k / width + 1, k % width + 1, Short(values[k]));
        return Err(IoError::parse(path, 0, message));
    }
    let rows: Vec<Vec<f64>> = values.chunks(width).map(<[f64]>::to_vec).collect();
    Ok(Counts {
        lines: vec![0; rows.len()],
        rows,
        buckets: None,
        publication_budget: None,
        text: String::new(),
        columns: (0..width).collect(),
    })
}

/// Which columns of a counts file hold what, as its first record says.
struct Layout {
    /// True when the first record is a header (its first field is `timestamp_bucket`).
    header: bool,
    /// Fields per record.
    width: usize,
    /// The 0-based cell columns (every column when there is no header).
    cells: Vec<usize>,
    /// The `publication_budget` column, when the header has one.
    budget_column: Option<usize>,
}

impl Layout {
    /// The layout of a file whose first record is `fields`, on `line`.
    fn of_first_record(path: &Path, line: usize, fields: &[&str]) -> Result<Self> {
        let width = fields.len();
        if fields[0] != "timestamp_bucket" {
            return Ok(Self { header: false, width, cells: (0..width).collect(), budget_column: None });
        }
        let cells = cell_columns(fields).map_err(|why| IoError::parse(path, line, why))?;
        let budget_column = fields.iter().position(|f| *f == "publication_budget");
        Ok(Self { header: true, width, cells, budget_column })
    }

    /// Checks that a data record has as many fields as the first record.
    fn check_width(&self, path: &Path, line: usize, fields: usize) -> Result<()> {
        if fields == self.width {
            return Ok(());
        }
        let first = if self.header { "header" } else { "first row" };
        Err(IoError::parse(path, line, format!("{fields} fields, but the {first} has {}", self.width)))
    }
}

/// The `timestamp_bucket` of a data record (its first field): an integer ≥ 0.
fn bucket(path: &Path, line: usize, token: &str) -> Result<u64> {
    token.parse().map_err(|_| {
        IoError::parse(
            path,
            line,
            format!("column 1: timestamp_bucket {token:?} is not an integer from 0 to 18446744073709551615"),
        )
    })
}

/// Why the count in 0-based column `k` is refused: not a finite number
/// ([`text::finite_f64`]), or negative where counts must be ≥ 0 (formed only for a bad
/// value).
fn bad_cell(path: &Path, line: usize, k: usize, token: &str) -> IoError {
    let why = match text::finite_f64(token) {
        Err(why) => why,
        Ok(_) => format!("count {token} is negative"),
    };
    IoError::parse(path, line, format!("column {}: {why}", k + 1))
}

/// The publication budget in 0-based column `k`: a finite number ≥ 0.
fn publication_budget(path: &Path, line: usize, k: usize, token: &str) -> Result<f64> {
    text::finite_f64(token).ok().filter(|b| *b >= 0.0).ok_or_else(|| {
        IoError::parse(
            path,
            line,
            format!("column {}: publication budget {token:?} is not a number ≥ 0", k + 1),
        )
    })
}

/// Whether a header name that is not exactly `c` + ASCII digits would be taken for a cell
/// name by a reader: `c` or `C` followed by something that starts with no letter and holds
/// a digit (`c+1`, `c1.0`, `c 1`, `c1a`, the full-width `c１`, `C1`). Such a column is
/// refused rather than ignored as a label, which would drop that cell without a word;
/// labels such as `count`, `city` or `cells_total` start with a word.
fn looks_like_a_cell(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(['c', 'C']) else { return false };
    rest.chars().next().is_some_and(|first| !first.is_alphabetic()) && rest.chars().any(char::is_numeric)
}

/// The 0-based column of each cell j, from a header's names: cell j is the column named
/// `cj`. Other names are labels, unless they look like a cell name ([`looks_like_a_cell`]).
///
/// # Errors
/// No cell column, a name `c` + digits that is not canonical (`c01`), a name that looks like
/// a cell's but is not one (`c1.0`, `C1`), a cell named twice, or a gap (the names must be
/// c0…c{n−1}) — each naming the 1-based column and the name.
fn cell_columns(fields: &[&str]) -> std::result::Result<Vec<usize>, String> {
    let mut named: Vec<(usize, usize)> = Vec::new();
    for (k, field) in fields.iter().enumerate() {
        let digits =
            field.strip_prefix('c').filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
        let Some(digits) = digits else {
            if looks_like_a_cell(field) {
                return Err(format!(
                    "column {}: {:?} is not a cell name: cells are named exactly c0, c1, … (a lower-case c \
                     and ASCII digits), and a label must not look like one",
                    k + 1,
                    text::clipped(field)
                ));
            }
            continue;
        };
        let index = digits.parse::<usize>().ok().filter(|&j| j.to_string() == digits);
        let Some(j) = index else {
            return Err(format!(
                "column {}: {:?} is not a cell name (cells are c0, c1, …, without leading zeros)",
                k + 1,
                text::clipped(field)
            ));
        };
        named.push((j, k));
    }
    if named.is_empty() {
        return Err("header has no cell columns: name them c0, c1, …, c{n−1}".into());
    }
    let n = named.len();
    let mut cells = vec![usize::MAX; n];
    for &(j, k) in &named {
        if let Some(&other) = cells.get(j).filter(|&&other| other != usize::MAX) {
            return Err(format!("column {}: c{j} is named twice (also column {})", k + 1, other + 1));
        }
        if j < n {
            cells[j] = k;
        }
    }
    if let Some(&(j, k)) = named.iter().find(|&&(j, _)| j >= n) {
        let missing = cells.iter().position(|&c| c == usize::MAX).unwrap_or(0);
        return Err(format!(
            "column {}: c{j} among {n} cell columns, but they must be named c0…c{}: c{missing} is missing",
            k + 1,
            n - 1
        ));
    }
    Ok(cells)
}

/// The counts file text ([`docs/formats.md`](tpl_core::guide::formats) §5: header
/// `timestamp_bucket,c0,…`, row t at bucket t) of a histogram, each count printed with the shortest
/// round-trip digits: what `tpl simulate` writes (§10).
pub fn counts_text(counts: &[Vec<f64>]) -> String {
    use std::fmt::Write as _;
    let n = counts.first().map_or(0, Vec::len);
    let mut out = String::from("timestamp_bucket");
    for i in 0..n {
        let _ = write!(out, ",c{i}");
    }
    out.push('\n');
    for (t, row) in counts.iter().enumerate() {
        let _ = write!(out, "{t}");
        for v in row {
            let _ = write!(out, ",{v}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Counts> {
        // A folder of its own per call: tests run in parallel.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.csv");
        std::fs::write(&path, text).unwrap();
        read_counts(&path, false)
    }

    #[test]
    fn header_with_named_cells_and_labels() {
        let c = parse("timestamp_bucket,local_hour_start,c0,c1\n0,2024-01-01 06:00,3,4\n1,x,5,6\n").unwrap();
        assert_eq!(c.rows, vec![vec![3.0, 4.0], vec![5.0, 6.0]]);
        assert_eq!(c.lines, vec![2, 3]);
    }

    #[test]
    fn release_csv_gives_its_publication_budgets() {
        let text = "timestamp_bucket,published,budget,publication_budget,c0,c1\n1,1,0.25,0.25,3,-4\n2,0,0.05,0,3,-4\n";
        let dir = std::env::temp_dir().join(format!("tpl-counts-pub-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.csv");
        std::fs::write(&path, text).unwrap();
        let c = read_counts(&path, true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(c.rows, vec![vec![3.0, -4.0], vec![3.0, -4.0]]);
        assert_eq!(c.publication_budget, Some(vec![0.25, 0.0]));
    }

    #[test]
    fn quoted_labels_may_hold_commas() {
        let c = parse("timestamp_bucket,label,c0\n0,\"Mon, 06:00\",3\n1,\"Mon, 07:00\",5\n").unwrap();
        assert_eq!(c.rows, vec![vec![3.0], vec![5.0]]);
    }

    #[test]
    fn lines_are_counted_across_blank_and_comment_lines() {
        let e = parse("# a\n\n1,2\n   \n  # indented\n\r\n3,x\n").err().unwrap().to_string();
        assert!(e.contains(":7:") && e.contains("column 2"), "{e}");
        let e = parse("1,2\n\"3\n4\",5\n").err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("quoted field"), "{e}");
    }

    /// Regression: cell columns were taken by position whatever the header said (`c1,c0`
    /// put c1's counts under c0; `c0,c0` and `c0,c5` were relabelled).
    #[test]
    fn cells_are_mapped_by_name_and_bad_names_are_refused() {
        let c = parse("timestamp_bucket,c1,label,c0\n0,5,x,7\n").unwrap();
        assert_eq!(c.rows, vec![vec![7.0, 5.0]]);
        assert_eq!((c.column(0), c.column(1)), (4, 2));
        for (header, words) in [
            ("timestamp_bucket,c0,c0", "c0 is named twice"),
            ("timestamp_bucket,c0,c5", "c1 is missing"),
            ("timestamp_bucket,c5,c0", "c1 is missing"),
            ("timestamp_bucket,c0,c01", "\"c01\" is not a cell name"),
            ("timestamp_bucket,a,b", "no cell columns"),
        ] {
            let e = parse(&format!("{header}\n0,1,2\n")).err().unwrap().to_string();
            assert!(e.contains(":1:") && e.contains(words), "{header}: {e}");
        }
    }

    /// Regression: a header name that looks like a cell's but is not exactly `c` + ASCII
    /// digits was taken as a label, and its column's counts dropped without a word.
    #[test]
    fn names_that_look_like_cells_are_refused_naming_the_column() {
        for name in ["c+1", "c1.0", "c 1", "c1a", "c\u{ff11}", "C1", "c-1"] {
            let e = parse(&format!("timestamp_bucket,c0,{name}\n0,1,2\n")).err().unwrap().to_string();
            let want =
                format!(":1: column 3: {name:?} is not a cell name: cells are named exactly c0, c1, …");
            assert!(e.contains(&want), "{name}: {e}");
        }
        // Labels that start with a c but with a word, or hold no digit, stay labels.
        let c = parse("timestamp_bucket,count,city,c_note,c,label,c0\n0,9,x,y,z,w,4\n").unwrap();
        assert_eq!(c.rows, vec![vec![4.0]]);
    }

    /// Regression: fractional counts that no double holds were rounded to integers and
    /// released as if typed so.
    #[test]
    fn a_fraction_that_rounds_to_an_integer_is_refused() {
        for token in ["4503599627370496.5", "2251799813685248.25", "1.00000000000000001"] {
            let e = parse(&format!("1,{token}\n")).err().unwrap().to_string();
            assert!(e.contains("column 2") && e.contains(token) && e.contains("not an integer"), "{e}");
        }
        assert_eq!(parse("1.5e1,120e-1\n").unwrap().rows, vec![vec![15.0, 12.0]]);
    }

    #[test]
    fn headerless_and_comments() {
        let c = parse("# counts\n\n1, 2\n3,4\n").unwrap();
        assert_eq!(c.rows, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse("1,2\n3\n").err().unwrap().to_string();
        assert!(e.contains(":2:"), "{e}");
        let e = parse("1,2\n3,-1\n").err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("column 2") && e.contains("-1"), "{e}");
        let e = parse("1,x\n").err().unwrap().to_string();
        assert!(e.contains("column 2") && e.contains("\"x\""), "{e}");
        assert!(parse("# nothing\n").is_err());
    }
}
