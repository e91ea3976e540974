//! The plain-text conventions shared by every input file
//! ([`docs/formats.md`](tpl_core::guide::formats) §1): `-` as a file name is standard input; blank
//! lines and `#` comments are ignored. Two styles: *numeric text* (matrices, budgets, priors,
//! initial distributions: values separated by commas and/or whitespace, `#` starts a comment
//! anywhere on a line; [`docs/formats.md`](tpl_core::guide::formats) §2–4) keeps the small
//! tokenizer of [`read_records`], since no CSV reader splits on whitespace or ends a line at `#`;
//! *CSV* (counts, releases, streams; §5–7) goes through the `csv` crate. Also the one parser of
//! numbers typed by people, in files and in flags ([`finite_f64`], [`integral_literal`]).

use std::io::Read as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{IoError, Result};

/// The file name that means standard input ([`docs/formats.md`](tpl_core::guide::formats) §1).
pub const STDIN: &str = "-";

/// How errors name standard input ([`docs/formats.md`](tpl_core::guide::formats) §1).
pub const STDIN_NAME: &str = "<stdin>";

/// True once standard input has been read (it can be read only once).
static STDIN_TAKEN: AtomicBool = AtomicBool::new(false);

/// True when `path` is `-`, standard input ([`docs/formats.md`](tpl_core::guide::formats) §1).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// How messages name the file `path`: `<stdin>` for `-`, the path otherwise
/// ([`docs/formats.md`](tpl_core::guide::formats) §1).
pub fn name(path: &Path) -> String {
    if is_stdin(path) { STDIN_NAME.to_string() } else { path.display().to_string() }
}

/// The most characters of a file's text that a message echoes ([`clipped`]).
pub const ECHO_CHARS: usize = 40;

/// `text` as a message echoes it: whole up to [`ECHO_CHARS`] characters, else its first
/// [`ECHO_CHARS`] and `…`, so that a field of thousands of characters (a damaged header, a
/// line without separators) does not fill the terminal and the one line of the error stays
/// readable.
pub fn clipped(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(ECHO_CHARS) {
        None => text.into(),
        Some((cut, _)) => format!("{}…", &text[..cut]).into(),
    }
}

/// A finite number from `token` as typed, or why not: the value parser of every float flag
/// and of every number in an input file ([`docs/formats.md`](tpl_core::guide::formats) §1). "inf",
/// "NaN", numbers beyond the largest double (1e400, which would round to inf) and non-zero numbers
/// below the smallest (1e-400, which would round to 0) are refused with the token as typed.
pub fn finite_f64(token: &str) -> std::result::Result<f64, String> {
    // Most counts are small integers, cut from a file already trimmed.
    if let Some(value) = small_integer(token) {
        return Ok(value);
    }
    // Skip the Unicode trim when both ends are ASCII and not whitespace.
    let bare = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii() && !b.is_ascii_whitespace());
    let trimmed =
        if bare(token.as_bytes().first()) && bare(token.as_bytes().last()) { token } else { token.trim() };
    if let Some(value) = small_integer(trimmed) {
        return Ok(value);
    }
    let value: f64 = trimmed.parse().map_err(|_| format!("{:?} is not a number", clipped(token)))?;
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

/// A plain integer of at most 15 digits with an optional sign (the counts of most files),
/// read digit by digit: every such integer is an exact double, so this is the value
/// `str::parse` gives (−0 for "-0"), without its general algorithm.
fn small_integer(token: &str) -> Option<f64> {
    let (negative, digits) = match token.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        all => (false, all),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut value = 0u64;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        value = value * 10 + u64::from(d);
    }
    let value = value as f64;
    Some(if negative { -value } else { value })
}

/// Whether the decimal literal `token` (a count of a counts file,
/// [`docs/formats.md`](tpl_core::guide::formats) §5) denotes an integer, decided from its digits
/// and exponent rather than from the double it parses to (which rounds: 4503599627370496.5 and
/// 1.00000000000000001 parse to integers). `None` for a token that is not a plain decimal literal
/// (`inf`, `nan`, hexadecimal, …).
///
/// The literal's value is D·10^(e − f), D its digits, f the number of digits after the point
/// and e its exponent: an integer exactly when D is 0 or D's trailing zeros are at least
/// f − e.
pub fn integral_literal(token: &str) -> Option<bool> {
    let t = token.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = || whole.bytes().chain(fraction.bytes());
    if whole.len() + fraction.len() == 0 || !digits().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let exponent: i64 = match exponent {
        // An exponent beyond ±10^18 makes the value 0 or infinite: clamp it.
        Some(e) => {
            let (sign, body) = match e.as_bytes().first() {
                Some(b'-') => (-1, &e[1..]),
                Some(b'+') => (1, &e[1..]),
                _ => (1, e),
            };
            if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            sign * body.parse::<i64>().unwrap_or(i64::MAX / 2)
        }
        None => 0,
    };
    if digits().all(|b| b == b'0') {
        return Some(true);
    }
    let zeros = |part: &str| part.bytes().rev().take_while(|&b| b == b'0').count();
    let trailing = match zeros(fraction) {
        all if all == fraction.len() => all + zeros(whole),
        some => some,
    };
    Some(trailing as i64 >= fraction.len() as i64 - exponent)
}

/// True when the decimal literal `token` (already known to parse) has a non-zero digit
/// before its exponent: a number that is not 0 as typed.
fn nonzero_literal(token: &str) -> bool {
    let mantissa = token.trim().split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// One non-blank line of a numeric text file ([`docs/formats.md`](tpl_core::guide::formats) §1–4):
/// its 1-based number and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number in the file.
    pub line: usize,
    /// The numbers on the line, in order.
    pub values: Vec<f64>,
}

/// The UTF-8 byte-order mark some editors write at the start of a text file.
pub(crate) const BOM: char = '\u{feff}';

/// Reads a whole file (`-`: standard input, once per process) to a string, without a
/// leading UTF-8 byte-order mark ([`docs/formats.md`](tpl_core::guide::formats) §1); names the file
/// on failure, and the line and column of the first byte that is not UTF-8. Every text input held
/// whole (matrices, budgets, counts, releases, priors, JSON) is read here.
pub fn read(path: &Path) -> Result<String> {
    let failed = |source| IoError::read(path, source);
    let mut bytes = Vec::new();
    if is_stdin(path) {
        open(path)?.read_to_end(&mut bytes).map_err(failed)?;
    } else {
        bytes = std::fs::read(path).map_err(failed)?;
    }
    let mut text = String::from_utf8(bytes).map_err(|e| {
        // Name the line and column of the first byte that is not UTF-8.
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + good.iter().rev().take_while(|&&b| b != b'\n').count();
        IoError::parse(
            path,
            line,
            format!("byte {column} of the line is not UTF-8 text (the file must be UTF-8)"),
        )
    })?;
    if text.starts_with(BOM) {
        text.drain(..BOM.len_utf8());
    }
    Ok(text)
}

/// Opens a file (`-`: standard input, once per process) for reading as it comes, for
/// inputs too large to hold whole (user streams, [`docs/formats.md`](tpl_core::guide::formats) §6);
/// names the file on failure. The reader gets the bytes as they are, a byte-order mark included.
pub fn open(path: &Path) -> Result<Box<dyn std::io::Read>> {
    if is_stdin(path) {
        if STDIN_TAKEN.swap(true, Ordering::SeqCst) {
            return Err(IoError::parse(path, 0, "standard input is already read for another file"));
        }
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = std::fs::File::open(path).map_err(|source| IoError::read(path, source))?;
    Ok(Box::new(file))
}

/// Splits `text` into records of numbers. A token that is not a number is an error naming
/// the line, the 1-based value position and the token; an empty field between two commas
/// too; so is a non-finite number ("inf", "NaN", 1e400), see [`finite_f64`].
pub(crate) fn records(path: &Path, text: &str) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for_each_record(path, text, |r| {
        out.push(r);
        Ok(())
    })?;
    Ok(out)
}

/// [`records`] one at a time, without keeping them: `f` sees each record in file order.
pub(crate) fn for_each_record(path: &Path, text: &str, f: impl FnMut(Record) -> Result<()>) -> Result<()> {
    for_each_record_from(path, text, 1, f)
}

/// [`for_each_record`] on a part of a file that starts at line `first_line`.
pub(crate) fn for_each_record_from(
    path: &Path,
    text: &str,
    first_line: usize,
    mut f: impl FnMut(Record) -> Result<()>,
) -> Result<()> {
    let mut last = Repeat::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + first_line;
        let content = raw.split('#').next().unwrap_or("");
        // On an ASCII line without a vertical tab, Unicode and ASCII whitespace are the
        // same characters: a byte scan gives the same tokens, faster.
        let values = if content.is_ascii() && !content.contains('\x0b') {
            ascii_values(path, line, content.trim_ascii(), &mut last)?
        } else {
            values(path, line, content.trim())?
        };
        if let Some(values) = values {
            f(Record { line, values })?;
        }
    }
    Ok(())
}

/// The numbers of a trimmed record `content` (`None` when it is empty): split at commas,
/// each field trimmed and non-empty, split at whitespace.
fn values(path: &Path, line: usize, content: &str) -> Result<Option<Vec<f64>>> {
    if content.is_empty() {
        return Ok(None);
    }
    let mut values = Vec::new();
    for field in content.split(',') {
        let field = field.trim();
        if field.is_empty() {
            return Err(empty_field(path, line, values.len()));
        }
        for token in field.split_whitespace() {
            values.push(value(path, line, values.len(), token)?);
        }
    }
    Ok(Some(values))
}

/// The last token read and its value: a matrix of smoothed sparse counts repeats its rows'
/// floor in most of its entries, and a token equal to the last one has its value without
/// being parsed again.
#[derive(Default)]
struct Repeat<'t> {
    token: &'t str,
    value: f64,
}

/// [`values`] for ASCII `content` without a vertical tab, in one scan of its bytes.
fn ascii_values<'t>(
    path: &Path,
    line: usize,
    content: &'t str,
    last: &mut Repeat<'t>,
) -> Result<Option<Vec<f64>>> {
    if content.is_empty() {
        return Ok(None);
    }
    let bytes = content.as_bytes();
    let mut values = Vec::new();
    let (mut i, mut in_field) = (0, 0);
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == bytes.len() || bytes[i] == b',' {
            if in_field == 0 {
                return Err(empty_field(path, line, values.len()));
            }
            if i == bytes.len() {
                return Ok(Some(values));
            }
            in_field = 0;
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b',' {
            i += 1;
        }
        let token = &content[start..i];
        if token != last.token {
            *last = Repeat { token, value: value(path, line, values.len(), token)? };
        }
        values.push(last.value);
        in_field += 1;
    }
}

/// The error of an empty field before value `count` + 1.
fn empty_field(path: &Path, line: usize, count: usize) -> IoError {
    IoError::parse(path, line, format!("value {}: empty field between commas", count + 1))
}

/// Value `count` + 1 of a record, from its token.
fn value(path: &Path, line: usize, count: usize, token: &str) -> Result<f64> {
    finite_f64(token).map_err(|why| IoError::parse(path, line, format!("value {}: {why}", count + 1)))
}

/// True when `path` ends in `.json` (any case): matrix, budget and prior files are then
/// JSON ([`docs/formats.md`](tpl_core::guide::formats) §2–4); standard input is read as text.
pub fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Reads a file of numeric text ([`docs/formats.md`](tpl_core::guide::formats) §1: values separated
/// by commas and/or whitespace, `#` comments, blank lines ignored) as its non-blank lines of
/// numbers: the format of matrix rows, budgets, priors and initial distributions (§2–4).
///
/// # Errors
/// A file that cannot be read; a token that is not a finite number ([`finite_f64`]) or an
/// empty field between commas, naming the line, the 1-based value position and the token.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    records(path, &read(path)?)
}

/// Reads a `.json` file holding one array of numbers (a prior row,
/// [`docs/formats.md`](tpl_core::guide::formats) §4).
///
/// # Errors
/// A file that cannot be read, or text that is not such an array, naming the line and
/// column serde_json stopped at.
pub fn read_json_numbers(path: &Path) -> Result<Vec<f64>> {
    serde_json::from_str(&read(path)?).map_err(|e| json_error(path, &e))
}

/// serde_json's error as "line L column C: reason" (1-based column; serde_json's column 0,
/// "before the first character", as in an error at the end of the text, is named as no column).
pub(crate) fn json_error(path: &Path, e: &serde_json::Error) -> IoError {
    // serde_json's message ends with " at line L column C"; we put the position up front.
    let full = e.to_string();
    let reason = full.rsplit_once(" at line ").map_or(full.as_str(), |(r, _)| r);
    let column = if e.column() > 0 { format!("column {}: ", e.column()) } else { String::new() };
    IoError::parse(path, e.line(), format!("{column}invalid JSON: {reason}"))
}

/// The records of a CSV-style file, each with its 1-based line: fields split by the `csv`
/// crate (RFC 4180 quoting) and trimmed; blank lines, lines of spaces and lines whose first
/// non-blank character is `#` are skipped. A record is one line: a quoted field that runs
/// past the end of its line is an error naming the line.
///
/// `text` is a piece of a file whose first line is line `first_line` of the file (1 for a
/// whole file; a reader that goes through a file too large to hold gives its offset).
pub(crate) fn for_each_csv_record_from(
    path: &Path,
    text: &str,
    first_line: usize,
    f: impl FnMut(usize, &csv::StringRecord) -> Result<()>,
) -> Result<()> {
    if plain_csv(text) {
        return for_each_plain_csv_record(text, first_line, f);
    }
    for_each_reader_record(path, text, first_line, f)
}

/// [`for_each_csv_record_from`] through the CSV reader: any text.
fn for_each_reader_record(
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
            IoError::parse(path, line, format!("not CSV: {e}"))
        })?;
        if !more {
            return Ok(());
        }
        let line = lines.next().unwrap_or(0);
        if record.iter().any(|field| field.contains(['\n', '\r'])) {
            return Err(IoError::parse(path, line, "a quoted field runs past the end of the line"));
        }
        if skipped(record.len(), record.get(0).unwrap_or("")) {
            continue;
        }
        f(line, &record)?;
    }
}

/// Whether the CSV reader would only split `text` at its commas and line ends: ASCII (so
/// that its whitespace trims are the byte-wise ones), no quote, and no carriage return but
/// in a CRLF line end (a lone one ends a record for the CSV reader, not for `lines`).
fn plain_csv(text: &str) -> bool {
    text.is_ascii() && !text.contains('"') && text.split('\r').skip(1).all(|rest| rest.starts_with('\n'))
}

/// [`for_each_csv_record_from`] on [`plain_csv`] text, split directly: the same records (fields
/// trimmed; empty lines, lines of spaces and lines whose first non-blank character is `#`
/// skipped) on the same lines, without the CSV reader's state machine.
fn for_each_plain_csv_record(
    text: &str,
    first_line: usize,
    mut f: impl FnMut(usize, &csv::StringRecord) -> Result<()>,
) -> Result<()> {
    let mut record = csv::StringRecord::new();
    for (i, raw) in text.lines().enumerate() {
        record.clear();
        plain_fields(raw, |field| record.push_field(field));
        if !skipped(record.len(), &record[0]) {
            f(i + first_line, &record)?;
        }
    }
    Ok(())
}

/// [`for_each_csv_record_from`] with each record as the list of its fields: on [`plain_csv`] text
/// they are slices of `text` itself, cut without a copy (the readers of large files).
pub(crate) fn for_each_csv_fields(
    path: &Path,
    text: &str,
    mut f: impl FnMut(usize, &[&str]) -> Result<()>,
) -> Result<()> {
    if !plain_csv(text) {
        return for_each_reader_record(path, text, 1, |line, record| {
            f(line, &record.iter().collect::<Vec<_>>())
        });
    }
    let mut fields = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        fields.clear();
        plain_fields(raw, |field| fields.push(field));
        if !skipped(fields.len(), fields[0]) {
            f(i + 1, &fields)?;
        }
    }
    Ok(())
}

/// The fields of one line of [`plain_csv`] text, trimmed, in order (at least one). Fields
/// are short: a plain scan for the commas beats a search per field.
fn plain_fields<'t>(raw: &'t str, mut push: impl FnMut(&'t str)) {
    let mut start = 0;
    for (j, &b) in raw.as_bytes().iter().enumerate() {
        if b == b',' {
            push(raw[start..j].trim_ascii());
            start = j + 1;
        }
    }
    push(raw[start..].trim_ascii());
}

/// Whether a record of `len` fields whose first is `first` is skipped: a blank line, or a
/// comment (first non-blank character `#`).
fn skipped(len: usize, first: &str) -> bool {
    (len == 1 && first.is_empty()) || first.starts_with('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A callback of [`for_each_csv_record_from`].
    type Visit<'a> = &'a mut dyn FnMut(usize, &csv::StringRecord) -> Result<()>;

    /// Every record of `text` as (line, fields), or the error message.
    fn csv_records(
        text: &str,
        read: fn(&Path, &str, Visit<'_>) -> Result<()>,
    ) -> std::result::Result<Vec<(usize, Vec<String>)>, String> {
        let mut out = Vec::new();
        read(Path::new("t.csv"), text, &mut |line, r| {
            out.push((line, r.iter().map(str::to_string).collect()));
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok(out)
    }

    #[test]
    fn echoed_text_is_cut_after_forty_characters() {
        let exact = "x".repeat(ECHO_CHARS);
        assert_eq!(clipped(&exact), exact.as_str());
        assert_eq!(clipped(&"９".repeat(5000)), format!("{}…", "９".repeat(ECHO_CHARS)));
        let e = finite_f64(&"y".repeat(5000)).unwrap_err();
        assert_eq!(e, format!("\"{}…\" is not a number", "y".repeat(ECHO_CHARS)));
    }

    /// The direct split of plain CSV gives the CSV reader's records on the same lines.
    #[test]
    fn integrality_is_read_from_the_digits_not_the_rounded_double() {
        for (token, integral) in [
            ("4503599627370496.5", false),
            ("2251799813685248.25", false),
            ("1.00000000000000001", false),
            ("1e-400", false),
            ("12", true),
            ("-12.000", true),
            ("1.5e1", true),
            ("1.25e1", false),
            ("120e-1", true),
            ("0.0", true),
            ("0e-999999999999999999999", true),
            ("+3.", true),
            (".5", false),
            ("1e999999999999999999999", true),
        ] {
            assert_eq!(integral_literal(token), Some(integral), "{token}");
        }
        for token in ["inf", "NaN", "0x10", "", "1e", "e5", "1.2.3", "--1"] {
            assert_eq!(integral_literal(token), None, "{token}");
        }
    }

    #[test]
    fn plain_csv_is_read_as_the_csv_reader_reads_it() {
        let texts = [
            "1,2,3\n4,5,6\n",
            "# a\n\n1, 2 ,3\n   \n  # indented\n\r\n3,x\n",
            "timestamp_bucket,c0,c1\r\n0,3,-4\r\n1, 5,6",
            "1,,2\n,\n\t7\t,8 \n",
            "a b,\tc\x0cd\n#x,y\n9\n",
        ];
        for text in texts {
            assert!(plain_csv(text), "{text:?}");
            let plain = csv_records(text, |p, t, f| {
                let _ = p;
                for_each_plain_csv_record(t, 1, f)
            });
            let reader = csv_records(text, |p, t, f| for_each_reader_record(p, t, 1, f));
            assert_eq!(plain, reader, "{text:?}");
            let mut fields = Vec::new();
            for_each_csv_fields(Path::new("t.csv"), text, |line, r| {
                fields.push((line, r.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
                Ok(())
            })
            .unwrap();
            assert_eq!(Ok(fields), reader, "{text:?}");
        }
        for text in ["1,\"2\"\n", "1,2\r3\n", "1,\u{a0}2\n", "1,2\r"] {
            assert!(!plain_csv(text), "{text:?}");
        }
    }

    /// Every record of `text` as (line, values), or the error message.
    fn numbers(text: &str) -> std::result::Result<Vec<(usize, Vec<f64>)>, String> {
        records(Path::new("t.txt"), text)
            .map(|rs| rs.into_iter().map(|r| (r.line, r.values)).collect())
            .map_err(|e| e.to_string())
    }

    /// The byte scan of an ASCII line gives the tokens (and errors) of the general split.
    #[test]
    fn ascii_lines_are_split_as_any_line() {
        let lines = [
            "1, 2 ,3",
            " 0.5\t0.25 0.25 ",
            "1,,2",
            ",1",
            "1,",
            "1 2,3 4 # c",
            "  # only",
            "",
            "x,1",
            "1e400",
            "-0,+7,007",
            "1\x0c2",
            "1 ,\t,2",
        ];
        for line in lines {
            let path = Path::new("t.txt");
            let content = line.split('#').next().unwrap_or("");
            let fast = ascii_values(path, 1, content.trim_ascii(), &mut Repeat::default())
                .map_err(|e| e.to_string());
            let general = values(path, 1, content.trim()).map_err(|e| e.to_string());
            assert_eq!(fast, general, "{line:?}");
        }
        // Repeated tokens (a smoothed matrix's floor) keep their value across lines.
        assert_eq!(
            numbers("0.5,0.5\n0.5 0.25\n1e-3,0.001\n").unwrap(),
            vec![(1, vec![0.5, 0.5]), (2, vec![0.5, 0.25]), (3, vec![0.001, 0.001])]
        );
        // A vertical tab and a no-break space are whitespace to the general split only.
        assert_eq!(numbers("1\x0b2\n").unwrap(), vec![(1, vec![1.0, 2.0])]);
        assert_eq!(numbers("1\u{a0}2,3\n").unwrap(), vec![(1, vec![1.0, 2.0, 3.0])]);
    }

    /// Small integers are read digit by digit, as the general parser reads them.
    #[test]
    fn small_integers_are_the_parsed_values() {
        for token in ["0", "-0", "+0", "7", "-42", "007", "999999999999999", "-123456789012345", " 12 "] {
            let want: f64 = token.trim().parse().unwrap();
            assert_eq!(finite_f64(token).unwrap().to_bits(), want.to_bits(), "{token:?}");
        }
        for token in ["1234567890123456", "1.5", "1e3", "", "-", "+", "0x10", "١"] {
            assert_eq!(small_integer(token), None, "{token:?}");
        }
    }
}
