//! The plain-text conventions shared by every input file (`docs/formats.md` §1): `-` as a
//! file name is standard input; blank lines and `#` comments are ignored. Two styles:
//! *numeric text* (matrices, budgets, priors: values separated by commas and/or whitespace,
//! `#` starts a comment anywhere on a line) keeps the small tokenizer [`for_each_record`],
//! since no CSV reader splits on whitespace or ends a line at `#`; *CSV* (counts, releases,
//! streams) goes through the `csv` crate, [`for_each_csv_record`]. Also the one parser of
//! numbers typed by people, in files and in flags.

use std::io::Read as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{CliError, Result};

/// The file name that means standard input.
pub const STDIN: &str = "-";

/// How errors name standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// True once standard input has been read (it can be read only once).
static STDIN_TAKEN: AtomicBool = AtomicBool::new(false);

/// True when `path` is `-`, standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// How messages name `path`: `<stdin>` for `-`, the path otherwise.
pub fn name(path: &Path) -> String {
    if is_stdin(path) { STDIN_NAME.to_string() } else { path.display().to_string() }
}

/// A finite number from `token` as typed, or why not: the value parser of every float flag
/// and of every number in an input file. "inf", "NaN", numbers beyond the largest double
/// (1e400, which would round to inf) and non-zero numbers below the smallest (1e-400, which
/// would round to 0) are refused with the token as typed.
pub fn finite_f64(token: &str) -> std::result::Result<f64, String> {
    let value: f64 = token.trim().parse().map_err(|_| format!("{token:?} is not a number"))?;
    if value == 0.0 && nonzero_literal(token) {
        Err(format!("{token} rounds to 0: it is below the smallest positive double (4.9e-324)"))
    } else if value.is_nan() {
        Err(format!("{token} is not a number"))
    } else if value.is_infinite() {
        let literal = token.trim().trim_start_matches(['+', '-']).to_ascii_lowercase();
        if literal.starts_with("inf") {
            Err(format!("{token} is not a finite number"))
        } else {
            Err(format!("{token} is beyond the largest double (±1.8e308)"))
        }
    } else {
        Ok(value)
    }
}

/// True when the decimal literal `token` (already known to parse) has a non-zero digit
/// before its exponent: a number that is not 0 as typed.
fn nonzero_literal(token: &str) -> bool {
    let mantissa = token.trim().split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// One non-blank line of a text file: its 1-based number and its values.
pub struct Record {
    /// 1-based line number in the file.
    pub line: usize,
    /// The numbers on the line, in order.
    pub values: Vec<f64>,
}

/// The UTF-8 byte-order mark some editors write at the start of a text file.
pub const BOM: char = '\u{feff}';

/// Reads a whole file (`-`: standard input, once) to a string, without a leading UTF-8
/// byte-order mark; names the file on failure. Every text input of the binary (matrices,
/// budgets, counts, streams, releases, priors, JSON) is read here.
pub fn read(path: &Path) -> Result<String> {
    let failed = |source| CliError::Read { path: path.to_path_buf(), source };
    let mut text = if is_stdin(path) {
        let mut text = String::new();
        open(path)?.read_to_string(&mut text).map_err(failed)?;
        text
    } else {
        std::fs::read_to_string(path).map_err(failed)?
    };
    if text.starts_with(BOM) {
        text.drain(..BOM.len_utf8());
    }
    Ok(text)
}

/// Opens a file (`-`: standard input, once) for reading as it comes, for inputs too large
/// to hold whole (streams); names the file on failure. The reader gets the bytes as they
/// are, a byte-order mark included.
pub fn open(path: &Path) -> Result<Box<dyn std::io::Read>> {
    if is_stdin(path) {
        if STDIN_TAKEN.swap(true, Ordering::SeqCst) {
            return Err(CliError::parse(path, 0, "standard input is already read for another file"));
        }
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file =
        std::fs::File::open(path).map_err(|source| CliError::Read { path: path.to_path_buf(), source })?;
    Ok(Box::new(file))
}

/// Splits `text` into records of numbers. A token that is not a number is an error naming
/// the line, the 1-based value position and the token; an empty field between two commas
/// too; so is a non-finite number ("inf", "NaN", 1e400), see [`finite_f64`].
pub fn records(path: &Path, text: &str) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for_each_record(path, text, |r| {
        out.push(r);
        Ok(())
    })?;
    Ok(out)
}

/// [`records`] one at a time, without keeping them: `f` sees each record in file order.
pub fn for_each_record(path: &Path, text: &str, mut f: impl FnMut(Record) -> Result<()>) -> Result<()> {
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut values = Vec::new();
        for field in content.split(',') {
            let field = field.trim();
            if field.is_empty() {
                return Err(CliError::parse(
                    path,
                    line,
                    format!("value {}: empty field between commas", values.len() + 1),
                ));
            }
            for token in field.split_whitespace() {
                let value = finite_f64(token).map_err(|why| {
                    CliError::parse(path, line, format!("value {}: {why}", values.len() + 1))
                })?;
                values.push(value);
            }
        }
        f(Record { line, values })?;
    }
    Ok(())
}

/// True when `path` ends in `.json` (any case); standard input is read as text.
pub fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// serde_json's error as "line L column C: reason" (1-based column; serde_json's column 0,
/// "before the first character", as in an error at the end of the text, is named as no column).
pub fn json_error(path: &Path, e: &serde_json::Error) -> CliError {
    // serde_json's message ends with " at line L column C"; we put the position up front.
    let full = e.to_string();
    let reason = full.rsplit_once(" at line ").map_or(full.as_str(), |(r, _)| r);
    let column = if e.column() > 0 { format!("column {}: ", e.column()) } else { String::new() };
    CliError::parse(path, e.line(), format!("{column}invalid JSON: {reason}"))
}

/// The records of a CSV-style file, each with its 1-based line: fields split by the `csv`
/// crate (RFC 4180 quoting) and trimmed; blank lines, lines of spaces and lines whose first
/// non-blank character is `#` are skipped. A record is one line: a quoted field that runs
/// past the end of its line is an error naming the line.
pub fn for_each_csv_record(
    path: &Path,
    text: &str,
    f: impl FnMut(usize, &csv::StringRecord) -> Result<()>,
) -> Result<()> {
    for_each_csv_record_from(path, text, 1, f)
}

/// [`for_each_csv_record`] of a piece of a file whose first line is line `first_line` of
/// the file (what a reader that goes line by line through a file too large to hold calls).
pub fn for_each_csv_record_from(
    path: &Path,
    text: &str,
    first_line: usize,
    mut f: impl FnMut(usize, &csv::StringRecord) -> Result<()>,
) -> Result<()> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    // The reader skips exactly the empty lines and the lines starting with `#`; every other
    // line is one record, so the k-th record is on the k-th of these lines. (The reader's own
    // positions count a skipped line as the start of the next record.)
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(i, _)| i + first_line);
    let mut record = csv::StringRecord::new();
    loop {
        let more = reader.read_record(&mut record).map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize + first_line - 1);
            CliError::parse(path, line, format!("not CSV: {e}"))
        })?;
        if !more {
            return Ok(());
        }
        let line = lines.next().unwrap_or(0);
        if record.iter().any(|field| field.contains(['\n', '\r'])) {
            return Err(CliError::parse(path, line, "a quoted field runs past the end of the line"));
        }
        let blank = record.len() == 1 && record[0].is_empty();
        if blank || record.get(0).unwrap_or("").starts_with('#') {
            continue;
        }
        f(line, &record)?;
    }
}
