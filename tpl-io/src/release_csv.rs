//! The release CSV ([`docs/formats.md`](tpl_core::guide::formats) §7): what `tpl release --format
//! csv` and `tpl stream push|export --format csv` print, and what `tpl postprocess` reads back as a
//! counts file ([`crate::read_counts`] with `allow_negative`, §8).

use crate::csv_write::csv_text;

/// One step of a release CSV ([`docs/formats.md`](tpl_core::guide::formats) §7).
#[derive(Debug, Clone, Copy)]
pub struct ReleaseRow<'a> {
    /// The `timestamp_bucket` column: the counts row's bucket, the stream key, or t.
    pub key: i128,
    /// Whether the step is a fresh noisy release (1) or repeats the previous one (0).
    pub published: bool,
    /// ε_t, everything the step spent.
    pub budget: f64,
    /// The budget that set the noise of a fresh release, 0 at a repeated step.
    pub publication_budget: f64,
    /// The release r_t, one value per cell.
    pub release: &'a [f64],
    /// With `--interval`, the lower and upper end per cell.
    pub interval: Option<(&'a [f64], &'a [f64])>,
}

/// The release CSV text ([`docs/formats.md`](tpl_core::guide::formats) §7): the `# provenance`
/// line, the header `timestamp_bucket,published,budget,publication_budget,c0…c{d−1}` (then `lo_c…`,
/// `hi_c…` when `intervals`) for `cells` = d cells, and one line per row.
pub fn release_csv_text<'a>(
    provenance: &str,
    cells: usize,
    intervals: bool,
    rows: impl IntoIterator<Item = ReleaseRow<'a>>,
) -> String {
    // A `#` line first: counts files skip it, so the CSV still reads back.
    let mut out = format!("# {provenance}\n");
    out.push_str(&csv_text(|w| {
        for name in ["timestamp_bucket", "published", "budget", "publication_budget"] {
            w.field(name)?;
        }
        for j in 0..cells {
            w.value(format_args!("c{j}"))?;
        }
        if intervals {
            for side in ["lo", "hi"] {
                for j in 0..cells {
                    w.value(format_args!("{side}_c{j}"))?;
                }
            }
        }
        w.end()?;
        for row in rows {
            w.value(row.key)?;
            w.value(u8::from(row.published))?;
            w.value(row.budget)?;
            w.value(row.publication_budget)?;
            for v in row.release {
                w.value(v)?;
            }
            if let Some((lower, upper)) = row.interval {
                for v in lower.iter().chain(upper) {
                    w.value(v)?;
                }
            }
            w.end()?;
        }
        Ok(())
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_csv_of_the_format_document_reads_back_as_counts() {
        let release = [13.0, 6.0];
        let row = |key, published, budget, publication_budget| ReleaseRow {
            key,
            published,
            budget,
            publication_budget,
            release: &release,
            interval: None,
        };
        let rows = [row(1, true, 0.25, 0.25), row(2, false, 0.05, 0.0)];
        let text = release_csv_text("tpl 0.1.0 release", 2, false, rows);
        assert_eq!(
            text,
            "# tpl 0.1.0 release\ntimestamp_bucket,published,budget,publication_budget,c0,c1\n\
             1,1,0.25,0.25,13,6\n2,0,0.05,0,13,6\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        std::fs::write(&path, &text).unwrap();
        let counts = crate::read_counts(&path, true).unwrap();
        assert_eq!(counts.publication_budget, Some(vec![0.25, 0.0]));
        assert_eq!(counts.rows, vec![vec![13.0, 6.0]; 2]);
    }
}
