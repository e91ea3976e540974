//! The reading of a user stream file a block at a time
//! ([`docs/formats.md`](tpl_core::guide::formats) §6): rows of three plain whole numbers are parsed
//! in place, every other line (the header, comments, quoted fields, errors) goes through the `csv`
//! crate as every CSV input does (§1).

use std::io::Read;
use std::path::Path;

use super::{COLUMNS, HEADER};
use crate::error::{IoError, Result};
use crate::text;

/// Bytes read at a time.
pub(super) const BLOCK: usize = 1 << 18;

/// Reads the stream file `input` (named `path` in errors) a block at a time and calls
/// `row(bucket, user, cell, line)` for each data row after the header, in file order; stops
/// when `row` returns false. Returns whether it read to the end. Lines are those of
/// `text::for_each_csv_record_from`; a row of three plain whole numbers is parsed in place, any
/// other line goes through the `csv` crate.
pub(super) fn scan(
    path: &Path,
    input: &mut dyn Read,
    mut row: impl FnMut(u64, u64, u64, usize) -> Result<bool>,
) -> Result<bool> {
    let mut buf = vec![0u8; BLOCK];
    let (mut start, mut end, mut eof) = (0, 0, false);
    let mut line = 0;
    let mut header = false;
    let mut bom_checked = false;
    let mut bom = [0; 4];
    let bom = text::BOM.encode_utf8(&mut bom).as_bytes();
    loop {
        let data = &buf[start..end];
        if !bom_checked && (data.len() >= bom.len() || eof) {
            if let Some(rest) = data.strip_prefix(bom) {
                start = end - rest.len();
            }
            bom_checked = true;
            continue;
        }
        if header && let Some((values, used)) = plain_row(data) {
            line += 1;
            start += used;
            if !row(values[0], values[1], values[2], line)? {
                return Ok(false);
            }
            continue;
        }
        let newline = data.iter().position(|&b| b == b'\n');
        if !bom_checked || (newline.is_none() && !eof) {
            eof = refill(path, input, &mut buf, &mut start, &mut end)?;
            continue;
        }
        if data.is_empty() {
            return Ok(true);
        }
        let len = newline.map_or(data.len(), |i| i + 1);
        line += 1;
        if !other_line(path, line, &data[..len], &mut header, &mut row)? {
            return Ok(false);
        }
        start += len;
    }
}

/// Moves the unread bytes `buf[start..end]` to the front and reads more after them (the
/// buffer doubles when one line fills it); true at the end of the input.
fn refill(
    path: &Path,
    input: &mut dyn Read,
    buf: &mut Vec<u8>,
    start: &mut usize,
    end: &mut usize,
) -> Result<bool> {
    buf.copy_within(*start..*end, 0);
    *end -= *start;
    *start = 0;
    if *end == buf.len() {
        buf.resize(2 * buf.len(), 0);
    }
    loop {
        match input.read(&mut buf[*end..]) {
            Ok(0) => return Ok(true),
            Ok(k) => {
                *end += k;
                return Ok(false);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(IoError::read(path, source)),
        }
    }
}

/// The row at the start of `data` when its line is three plain whole numbers (digits only,
/// each below 2⁶⁴, separated by commas, spaces or tabs around them) ended by `\n` or
/// `\r\n`: the numbers and the length of the line. `None` for any other line, or one that
/// does not end within `data`.
#[inline]
fn plain_row(data: &[u8]) -> Option<([u64; 3], usize)> {
    let blank = |b: u8| b == b' ' || b == b'\t';
    let mut i = 0;
    let mut values = [0u64; 3];
    for (k, value) in values.iter_mut().enumerate() {
        while data.get(i).copied().is_some_and(blank) {
            i += 1;
        }
        let digits = i;
        while let Some(&b) = data.get(i).filter(|b| b.is_ascii_digit()) {
            *value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            i += 1;
        }
        if i == digits {
            return None;
        }
        while data.get(i).copied().is_some_and(blank) {
            i += 1;
        }
        i += match (k, data.get(i), data.get(i + 1)) {
            (0 | 1, Some(b','), _) | (2, Some(b'\n'), _) => 1,
            (2, Some(b'\r'), Some(b'\n')) => 2,
            _ => return None,
        };
    }
    Some((values, i))
}

/// Any line but a plain row (`raw`, with its line end): the header, comments, blank lines,
/// quoted fields, and every error, through the `csv` crate as `text::for_each_csv_record_from`
/// reads a whole file. Returns false when `row` does.
fn other_line(
    path: &Path,
    line: usize,
    raw: &[u8],
    header: &mut bool,
    row: &mut impl FnMut(u64, u64, u64, usize) -> Result<bool>,
) -> Result<bool> {
    let content = std::str::from_utf8(raw).map_err(|e| {
        IoError::parse(path, line, format!("byte {} of the line is not UTF-8 text", e.valid_up_to() + 1))
    })?;
    let mut more = true;
    text::for_each_csv_record_from(path, content, line, |line, fields| {
        if !*header {
            if fields.iter().ne(COLUMNS) {
                let found = content.lines().next().unwrap_or_default().trim();
                let message = format!("the header must be {HEADER:?}, found {found:?}");
                return Err(IoError::parse(path, line, message));
            }
            *header = true;
            return Ok(());
        }
        if fields.len() != 3 {
            return Err(IoError::parse(path, line, format!("{} fields, but the header has 3", fields.len())));
        }
        let mut v = [0u64; 3];
        for (k, name) in COLUMNS.iter().enumerate() {
            v[k] = fields[k].parse().map_err(|_| {
                let message = format!(
                    "column {} ({name}): {:?} is not a whole number from 0 to {}",
                    k + 1,
                    &fields[k],
                    u64::MAX
                );
                IoError::parse(path, line, message)
            })?;
        }
        if more {
            more = row(v[0], v[1], v[2], line)?;
        }
        Ok(())
    })?;
    Ok(more)
}
