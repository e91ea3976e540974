//! The writer of every CSV file and CSV output ([`docs/formats.md`](tpl_core::guide::formats) §1):
//! the `csv` crate's quoting, `\n` line ends, numbers in Rust's shortest round-trip `Display`.

use std::fmt::Write as _;
use std::io::Write;

/// The one CSV writer of every CSV file and output `tpl` writes
/// ([`docs/formats.md`](tpl_core::guide::formats) §1, §5–7, §9–10): the `csv` crate's RFC 4180
/// quoting (a field is quoted only when it holds a comma, a quote or a line break), `\n` line ends,
/// and numbers in Rust's shortest round-trip `Display` (never exponent notation).
pub struct CsvWriter<W: Write> {
    inner: csv::Writer<W>,
    /// Reused to format numbers without an allocation per field.
    buf: String,
}

impl<W: Write> CsvWriter<W> {
    /// A writer of records to `w`.
    pub fn new(w: W) -> Self {
        Self { inner: csv::WriterBuilder::new().flexible(true).from_writer(w), buf: String::new() }
    }

    /// Appends one text field to the current record.
    pub fn field(&mut self, text: &str) -> std::io::Result<()> {
        self.inner.write_field(text).map_err(io_error)
    }

    /// Appends one field printed with `Display` (numbers: shortest round-trip digits).
    pub fn value(&mut self, v: impl std::fmt::Display) -> std::io::Result<()> {
        self.buf.clear();
        let _ = write!(self.buf, "{v}");
        self.inner.write_field(&self.buf).map_err(io_error)
    }

    /// Ends the current record.
    pub fn end(&mut self) -> std::io::Result<()> {
        self.inner.write_record(None::<&[u8]>).map_err(io_error)
    }

    /// Writes one whole record.
    pub fn record<T: AsRef<str>>(&mut self, fields: impl IntoIterator<Item = T>) -> std::io::Result<()> {
        for f in fields {
            self.field(f.as_ref())?;
        }
        self.end()
    }

    /// Flushes what is buffered to the underlying writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The I/O error inside a CSV write error, so that a closed pipe stays recognisable.
fn io_error(e: csv::Error) -> std::io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    }
}

/// The CSV text that `write` produces (writing to memory cannot fail).
pub fn csv_text(write: impl FnOnce(&mut CsvWriter<&mut Vec<u8>>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    {
        let mut w = CsvWriter::new(&mut out);
        let _ = write(&mut w).and_then(|()| w.flush());
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes the CSV records of `records` to `w` and flushes: the streamed counterpart of
/// [`csv_text`], so that a report writes the same bytes either way.
pub fn write_csv_records(
    w: &mut dyn Write,
    records: impl FnOnce(&mut CsvWriter<&mut dyn Write>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut w = CsvWriter::new(w);
    records(&mut w)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_fields_that_need_it() {
        let text = csv_text(|w| {
            w.record(["a", "b,c", "", "say \"hi\""])?;
            w.value(0.1)?;
            w.value(1e-7)?;
            w.end()
        });
        assert_eq!(text, "a,\"b,c\",,\"say \"\"hi\"\"\"\n0.1,0.0000001\n");
    }
}
