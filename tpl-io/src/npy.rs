//! NumPy's binary array files, `.npy` ([`docs/formats.md`](tpl_core::guide::formats) §11): the
//! main array of a result written without text (`--format npy --out FILE`), and any input path
//! ending in `.npy` read as that array, so that large runs skip printing and parsing decimals.
//!
//! A `.npy` file is the magic bytes `\x93NUMPY`, a version (1.0, 2.0 or 3.0), the length of a
//! header, the header — a Python dict literal such as
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }` — padded with spaces to a
//! multiple of 64 bytes and ended by a newline, and then the raw values. This module reads
//! arrays of one or two dimensions of floats (`f4`, `f8`), signed (`i1`…`i8`) and unsigned
//! (`u1`…`u8`) integers and booleans, in either byte order and either memory order, and writes
//! `<f8` and `<i8` arrays in C order, version 1.0. Nothing is allocated before the file's
//! length has been checked against the shape its header declares.
//!
//! The format is small enough that a strict reader of these few cases is shorter than the
//! general crates' dependency trees (a Python-literal parser among them).

use std::io::Write;
use std::path::Path;

use crate::error::{IoError, Result};
use crate::text;

/// The first bytes of every `.npy` file.
const MAGIC: &[u8] = b"\x93NUMPY";

/// The values of a `.npy` array, in C (row-major) order.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    /// Floating-point values (`f4` widened exactly).
    F64(Vec<f64>),
    /// Signed integers and booleans (as 0 and 1).
    I64(Vec<i64>),
    /// Unsigned integers.
    U64(Vec<u64>),
}

/// A one- or two-dimensional array read from a `.npy` file ([`read_npy`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// The shape: `[len]` or `[rows, columns]`.
    pub shape: Vec<usize>,
    /// The values, row after row.
    pub data: NpyData,
}

/// Whether `path` names a `.npy` file (by its extension, any case).
pub fn is_npy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// Reads the `.npy` file `path` (`-`: standard input).
///
/// # Errors
/// A file that cannot be read; one that is not a `.npy` file, whose header is malformed, whose
/// type is not one of the module's, with more than two dimensions, or whose length differs from
/// what its header declares — each named with the file.
pub fn read_npy(path: &Path) -> Result<NpyArray> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut *text::open(path)?, &mut bytes).map_err(|e| IoError::read(path, e))?;
    parse_npy(path, &bytes)
}

/// [`read_npy`] on the bytes of a `.npy` file held in memory; `path` names it in errors.
///
/// # Errors
/// As [`read_npy`].
pub fn parse_npy(path: &Path, bytes: &[u8]) -> Result<NpyArray> {
    let bad = |message: String| IoError::parse(path, 0, message);
    let rest =
        bytes.strip_prefix(MAGIC).ok_or_else(|| bad("not a .npy file (no \\x93NUMPY magic)".into()))?;
    let (header_len, rest) = match rest {
        [1, _, a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        [2 | 3, _, a, b, c, d, rest @ ..] => {
            let len = u32::from_le_bytes([*a, *b, *c, *d]);
            (usize::try_from(len).map_err(|_| bad(format!("header of {len} bytes")))?, rest)
        }
        [1..=3, ..] | [] => return Err(bad("truncated .npy file".into())),
        [major, ..] => return Err(bad(format!(".npy format version {major} (1, 2 or 3 expected)"))),
    };
    let header = rest.get(..header_len).ok_or_else(|| bad("truncated .npy header".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("the .npy header is not text".into()))?;
    let Header { dtype, fortran, shape } =
        Header::parse(header).map_err(|m| bad(format!("the .npy header: {m}")))?;
    let data = &rest[header_len..];
    let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let expected = count.and_then(|c| c.checked_mul(dtype.size));
    if expected != Some(data.len()) {
        return Err(bad(format!(
            "shape {shape:?} of {} bytes per value needs {} bytes of data, the file has {}",
            dtype.size,
            expected.map_or("more than 2⁶⁴".to_string(), |e| e.to_string()),
            data.len()
        )));
    }
    let mut values = dtype.decode(data);
    if fortran && shape.len() == 2 {
        values.transpose(shape[0], shape[1]);
    }
    Ok(NpyArray { shape, data: values })
}

impl NpyArray {
    /// The values as floats: integers exactly when |v| ≤ 2⁵³.
    ///
    /// # Errors
    /// An integer beyond ±2⁵³, naming its value and its position (row and column of a
    /// two-dimensional array, the 1-based value of a one-dimensional one; `path` names the
    /// file).
    pub fn to_f64(&self, path: &Path) -> Result<Vec<f64>> {
        let width = if self.shape.len() == 2 { Some(self.shape[1]) } else { None };
        self.to_f64_at(path, |k| match width {
            Some(w) => format!("row {}, column {}", k / w + 1, k % w + 1),
            None => format!("value {}", k + 1),
        })
    }

    /// [`NpyArray::to_f64`], a refused integer's position named by `at` (of its 0-based index
    /// in C order).
    pub(crate) fn to_f64_at(&self, path: &Path, at: impl Fn(usize) -> String) -> Result<Vec<f64>> {
        // Beyond 2⁵³ a double no longer holds every integer: 2⁵³ + 1 would be read as 2⁵³.
        // Those that it does hold (2⁶⁰, −2⁶³) are refused too: whether a value is taken must
        // not depend on its low bits.
        const EXACT: u64 = 1 << 53;
        let beyond = |k: usize, v: String| {
            IoError::parse(
                path,
                0,
                format!(
                    "{}: integer {v} is beyond ±2^53 = {EXACT}, the largest integers read (beyond it not \
                     every integer is a double, so none is taken rather than some rounded)",
                    at(k)
                ),
            )
        };
        match &self.data {
            NpyData::F64(v) => Ok(v.clone()),
            NpyData::I64(v) => v
                .iter()
                .enumerate()
                .map(
                    |(k, &x)| {
                        if x.unsigned_abs() <= EXACT { Ok(x as f64) } else { Err(beyond(k, x.to_string())) }
                    },
                )
                .collect(),
            NpyData::U64(v) => v
                .iter()
                .enumerate()
                .map(|(k, &x)| if x <= EXACT { Ok(x as f64) } else { Err(beyond(k, x.to_string())) })
                .collect(),
        }
    }

    /// The array as rows of floats: a two-dimensional array row by row, a one-dimensional
    /// one as a single row.
    ///
    /// # Errors
    /// As [`NpyArray::to_f64`].
    pub fn to_rows(&self, path: &Path) -> Result<Vec<Vec<f64>>> {
        let values = self.to_f64(path)?;
        // Every dimension is at least 1 (an empty shape is refused when read).
        let width = if self.shape.len() == 2 { self.shape[1] } else { values.len() };
        Ok(values.chunks(width.max(1)).map(<[f64]>::to_vec).collect())
    }
}

impl NpyData {
    /// Reorders values read in Fortran (column-major) order of a rows × columns array into C
    /// order.
    fn transpose(&mut self, rows: usize, columns: usize) {
        fn t<T: Copy>(v: &mut Vec<T>, rows: usize, columns: usize) {
            let source = std::mem::take(v);
            *v = (0..rows * columns).map(|k| source[(k % columns) * rows + k / columns]).collect();
        }
        match self {
            NpyData::F64(v) => t(v, rows, columns),
            NpyData::I64(v) => t(v, rows, columns),
            NpyData::U64(v) => t(v, rows, columns),
        }
    }
}

/// What a `.npy` header says.
struct Header {
    dtype: Dtype,
    fortran: bool,
    shape: Vec<usize>,
}

impl Header {
    /// Parses the dict literal `{'descr': …, 'fortran_order': …, 'shape': (…), }` (keys in any
    /// order, single or double quotes).
    fn parse(header: &str) -> std::result::Result<Self, String> {
        let body = header.trim().strip_prefix('{').and_then(|h| h.strip_suffix('}')).ok_or("not a dict")?;
        let (mut dtype, mut fortran, mut shape) = (None, None, None);
        let mut rest = body.trim();
        while !rest.is_empty() {
            let (key, after) = quoted(rest).ok_or_else(|| format!("a key expected at `{}`", clip(rest)))?;
            let after = after.trim_start().strip_prefix(':').ok_or("`:` expected after a key")?.trim_start();
            let after = match key {
                "descr" => {
                    let (v, after) = quoted(after).ok_or("'descr' must be a string")?;
                    dtype = Some(Dtype::parse(v)?);
                    after
                }
                "fortran_order" => {
                    let (v, after) = if let Some(a) = after.strip_prefix("True") {
                        (true, a)
                    } else if let Some(a) = after.strip_prefix("False") {
                        (false, a)
                    } else {
                        return Err("'fortran_order' must be True or False".into());
                    };
                    fortran = Some(v);
                    after
                }
                "shape" => {
                    let close = after.find(')').ok_or("'shape' must be a tuple")?;
                    let tuple = after[..close].strip_prefix('(').ok_or("'shape' must be a tuple")?;
                    let dims = tuple
                        .split(',')
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                        .map(|d| {
                            d.trim_end_matches('L').parse::<usize>().map_err(|_| {
                                format!(
                                    "dimension `{}` is not a whole number from 0 to {}",
                                    clip(d),
                                    usize::MAX
                                )
                            })
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    if dims.is_empty() || dims.len() > 2 {
                        return Err(format!("{} dimensions (1 or 2 are read)", dims.len()));
                    }
                    if dims.contains(&0) {
                        return Err(format!("shape {dims:?} is empty"));
                    }
                    shape = Some(dims);
                    &after[close + 1..]
                }
                other => return Err(format!("unknown key '{}'", clip(other))),
            };
            rest = after.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
        Ok(Self {
            dtype: dtype.ok_or("no 'descr'")?,
            fortran: fortran.ok_or("no 'fortran_order'")?,
            shape: shape.ok_or("no 'shape'")?,
        })
    }
}

/// The start of `s` when it is a quoted string: its content and what follows.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let quote = s.chars().next().filter(|&c| c == '\'' || c == '"')?;
    let end = s[1..].find(quote)? + 1;
    Some((&s[1..end], &s[end + 1..]))
}

/// `s` as a message echoes it ([`text::clipped`]): a header is read from the file, and a
/// field of it may be thousands of characters long.
fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    text::clipped(s)
}

/// A value type of the module's: kind, size in bytes and byte order.
#[derive(Debug, Clone, Copy)]
struct Dtype {
    kind: char,
    size: usize,
    big_endian: bool,
}

impl Dtype {
    /// Parses a type string such as `<f8`, `|u1`, `>i4` or `|b1`.
    fn parse(descr: &str) -> std::result::Result<Self, String> {
        let unsupported =
            || format!("type '{}' (floats f4/f8, integers i1–i8/u1–u8 or b1 are read)", clip(descr));
        let mut chars = descr.chars();
        let order = chars.next().ok_or_else(unsupported)?;
        let kind = chars.next().ok_or_else(unsupported)?;
        let size: usize = chars.as_str().parse().map_err(|_| unsupported())?;
        let big_endian = match order {
            '<' | '|' => false,
            '>' => true,
            '=' => cfg!(target_endian = "big"),
            _ => return Err(unsupported()),
        };
        let ok = match kind {
            'f' => matches!(size, 4 | 8),
            'i' | 'u' => matches!(size, 1 | 2 | 4 | 8),
            'b' => size == 1,
            _ => false,
        };
        if ok { Ok(Self { kind, size, big_endian }) } else { Err(unsupported()) }
    }

    /// The values of `data` (a whole number of values, checked by the caller).
    fn decode(self, data: &[u8]) -> NpyData {
        let word = |chunk: &[u8]| {
            let mut b = [0u8; 8];
            if self.big_endian {
                chunk.iter().rev().enumerate().for_each(|(k, &v)| b[k] = v);
            } else {
                b[..chunk.len()].copy_from_slice(chunk);
            }
            u64::from_le_bytes(b)
        };
        let words = data.chunks_exact(self.size).map(word);
        let bits = 8 * self.size as u32;
        match self.kind {
            'f' if self.size == 4 => {
                NpyData::F64(words.map(|w| f64::from(f32::from_bits(w as u32))).collect())
            }
            'f' => NpyData::F64(words.map(f64::from_bits).collect()),
            'u' => NpyData::U64(words.collect()),
            'b' => NpyData::I64(words.map(|w| i64::from(w != 0)).collect()),
            // Sign-extend from `bits`.
            _ => NpyData::I64(words.map(|w| ((w << (64 - bits)) as i64) >> (64 - bits)).collect()),
        }
    }
}

/// The `.npy` bytes (version 1.0, C order) of an array of `shape` whose values, row after row,
/// are the little-endian words `values`, with type string `descr`.
fn npy_bytes(shape: &[usize], descr: &str, values: impl Iterator<Item = [u8; 8]>) -> Vec<u8> {
    let dims = match shape {
        [len] => format!("({len},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6) + version (2) + length (2) + header + newline: a multiple of 64.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    // The header of a version 1.0 file is under 65536 bytes: two dimensions never come near.
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    values.for_each(|v| out.extend_from_slice(&v));
    out
}

/// The `.npy` bytes of a float array of `shape` (`[len]` or `[rows, columns]`) holding `values`
/// row after row, as `<f8`.
pub fn npy_f64(shape: &[usize], values: &[f64]) -> Vec<u8> {
    npy_bytes(shape, "<f8", values.iter().map(|v| v.to_le_bytes()))
}

/// The `.npy` bytes of an integer array, as `<i8`.
pub fn npy_i64(shape: &[usize], values: &[i64]) -> Vec<u8> {
    npy_bytes(shape, "<i8", values.iter().map(|v| v.to_le_bytes()))
}

/// Writes `bytes` (from [`npy_f64`] or [`npy_i64`]) to `path` (`-`: standard output).
///
/// # Errors
/// A file that cannot be written, named.
pub fn write_npy(path: &Path, bytes: &[u8]) -> Result<()> {
    let written = if text::is_stdin(path) {
        std::io::stdout().lock().write_all(bytes)
    } else {
        std::fs::write(path, bytes)
    };
    written.map_err(|source| IoError::Write { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests;
