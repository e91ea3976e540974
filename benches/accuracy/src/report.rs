//! What the grid prints and writes: the table (worst cell first), the CSV (one row per
//! cell and estimator) and the summary per estimator.

use std::fmt::Write as _;
use std::path::Path;

use crate::grid::Row;

/// The fields that say which cell and estimator a row is (the CSV's and the table's first
/// seven columns).
fn row_key(r: &Row) -> [String; 7] {
    let key: [&dyn std::fmt::Display; 7] =
        [&r.stream, &r.population, &r.shape, &r.matrices, &r.scheme, &r.epsilon, &r.estimator];
    key.map(|v| v.to_string())
}

/// Writes `cells` (each a cell's rows) to `path` as CSV, creating its folder.
///
/// # Errors
/// The file or folder cannot be written.
pub fn write_csv(path: &Path, cells: &[Vec<Row>]) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut w = csv::Writer::from_path(path)?;
    for r in cells.iter().flatten() {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(())
}

/// A number for the table: 4 significant figures, `-` when absent.
fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if !v.is_finite() => v.to_string(),
        Some(v) if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-3) => format!("{v:.3e}"),
        Some(v) => {
            let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
            format!("{v:.digits$}")
        }
    }
}

/// Writes one line of `fields`, each padded as its column of `columns` says, separated by
/// one space: the header and every row of a table share its columns. A column is written as
/// in a format string, `<W` (text, to the left) or `>W` (a number, to the right) for width W.
fn aligned_line(out: &mut String, columns: &str, fields: impl IntoIterator<Item = String>) {
    let columns: Vec<&str> = columns.split(' ').collect();
    let fields: Vec<String> = fields.into_iter().collect();
    assert_eq!(fields.len(), columns.len(), "one field per column");
    let padded: Vec<String> = fields
        .iter()
        .zip(columns)
        .map(|(field, column)| {
            let width: usize = column[1..].parse().expect("a column is <W or >W");
            if column.starts_with('<') { format!("{field:<width$}") } else { format!("{field:>width$}") }
        })
        .collect();
    let _ = writeln!(out, "{}", padded.join(" "));
}

/// The columns of [`table`].
const TABLE: &str = "<13 >6 <12 <12 <8 >5 <10 >10 >10 >7 >8 >7 >7 >7 >7 >7 >6 >6 >6 >6 >6 >6";

/// The columns of [`summary`].
const SUMMARY: &str = "<12 >7 >7 >7 >11 >9 >8 >8 >8 >7 >10 >10 >11 >11 >11 >11 >11 >11 >11";

/// The table of `cells` (the first `top`, or all), one line per estimator, a blank line
/// between cells.
pub fn table(cells: &[Vec<Row>], top: Option<usize>) -> String {
    let mut out = String::new();
    let header = [
        "stream",
        "N",
        "shape",
        "matrices",
        "scheme",
        "eps",
        "estimator",
        "mse",
        "raw_mse",
        "/raw",
        "ma(w)",
        "/ma",
        "/kalman",
        "/kf",
        "/kc",
        "/mle",
        "cov",
        "cov>0",
        "covdom",
        "mcov",
        "mcov>0",
        "mcovd",
    ];
    aligned_line(&mut out, TABLE, header.map(String::from));
    for rows in cells.iter().take(top.unwrap_or(usize::MAX)) {
        for r in rows {
            let fields = row_key(r).into_iter().chain([
                num(Some(r.mse)),
                num(Some(r.raw_mse)),
                num(Some(r.ratio_raw)),
                format!("{}({})", num(Some(r.best_ma_mse)), r.best_ma_window),
                num(Some(r.ratio_ma)),
                num(r.ratio_kalman),
                num(r.ratio_kalman_filter),
                num(r.ratio_kalman_causal),
                num(Some(r.ratio_mle)),
                num(r.coverage_all),
                num(r.coverage_nonempty),
                num(r.coverage_dominant),
                num(r.model_coverage_all),
                num(r.model_coverage_nonempty),
                num(r.model_coverage_dominant),
            ]);
            aligned_line(&mut out, TABLE, fields);
        }
        out.push('\n');
    }
    out
}

/// The summary per estimator (in the order of the first cell's rows): cells with a finite
/// score, how many have ratio_raw ≤ 1, ratio_mle ≤ 1, ratio_kalman ≤ 1.1 and ≤ 1.0,
/// ratio_kalman_filter ≤ 1.1, ratio_kalman_causal ≤ 1.1 and ≤ 1.5, ratio_ma ≤ 1, the worst
/// ratio_raw and ratio_mle, and the range of each coverage (bootstrap and model intervals; all
/// cell-steps, those with people, the dominant cell).
pub fn summary(cells: &[Vec<Row>]) -> String {
    let mut out = String::new();
    let header = [
        "estimator",
        "cells",
        "raw<=1",
        "mle<=1",
        "kalman<=1.1",
        "kalman<=1",
        "kf<=1.1",
        "kc<=1.1",
        "kc<=1.5",
        "ma<=1",
        "worst/raw",
        "worst/mle",
        "cov",
        "cov>0",
        "cov dom",
        "model cov",
        "mcov>0",
        "mcov dom",
        "worst/kc",
    ];
    aligned_line(&mut out, SUMMARY, header.map(String::from));
    let Some(first) = cells.first() else {
        return out;
    };
    for name in first.iter().map(|r| r.estimator) {
        let rows: Vec<&Row> = cells.iter().flatten().filter(|r| r.estimator == name).collect();
        let finite: Vec<&&Row> = rows.iter().filter(|r| r.mse.is_finite()).collect();
        let count = |f: &dyn Fn(&Row) -> bool| finite.iter().filter(|r| f(r)).count();
        let with_kalman = finite.iter().any(|r| r.ratio_kalman.is_some());
        let kalman = |limit: f64| {
            if with_kalman {
                count(&|r: &Row| r.ratio_kalman.is_some_and(|k| k <= limit)).to_string()
            } else {
                "-".into()
            }
        };
        let within = |pick: &dyn Fn(&Row) -> Option<f64>, limit: f64| {
            if finite.iter().any(|r| pick(r).is_some()) {
                count(&|r: &Row| pick(r).is_some_and(|k| k <= limit)).to_string()
            } else {
                "-".into()
            }
        };
        let range = |pick: &dyn Fn(&Row) -> Option<f64>| {
            let v: Vec<f64> = rows.iter().filter_map(|r| pick(r)).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if v.is_empty() { "-".into() } else { format!("{lo:.3}-{hi:.3}") }
        };
        let worst = |pick: &dyn Fn(&Row) -> Option<f64>| {
            let v = finite.iter().filter_map(|r| pick(r)).fold(f64::NEG_INFINITY, f64::max);
            num((v > f64::NEG_INFINITY).then_some(v))
        };
        let fields = [
            name.to_string(),
            format!("{}/{}", finite.len(), rows.len()),
            count(&|r: &Row| r.ratio_raw <= 1.0).to_string(),
            count(&|r: &Row| r.ratio_mle <= 1.0).to_string(),
            kalman(1.1),
            kalman(1.0),
            within(&|r| r.ratio_kalman_filter, 1.1),
            within(&|r| r.ratio_kalman_causal, 1.1),
            within(&|r| r.ratio_kalman_causal, 1.5),
            count(&|r: &Row| r.ratio_ma <= 1.0).to_string(),
            worst(&|r| Some(r.ratio_raw)),
            worst(&|r| Some(r.ratio_mle)),
            range(&|r: &Row| r.coverage_all),
            range(&|r: &Row| r.coverage_nonempty),
            range(&|r: &Row| r.coverage_dominant),
            range(&|r: &Row| r.model_coverage_all),
            range(&|r: &Row| r.model_coverage_nonempty),
            range(&|r: &Row| r.model_coverage_dominant),
            worst(&|r| r.ratio_kalman_causal),
        ];
        aligned_line(&mut out, SUMMARY, fields);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::aligned_line;

    #[test]
    fn aligned_line_pads_as_a_format_string_would() {
        let mut out = String::new();
        aligned_line(&mut out, "<4 >3 >2", ["ab".to_string(), "7".to_string(), "wide".to_string()]);
        assert_eq!(out, format!("{:<4} {:>3} {:>2}\n", "ab", "7", "wide"));
    }
}
