//! The harness shared by the CLI integration tests: runs the built `tpl` binary, owns
//! scratch folders, and parses its outputs.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

pub mod stream;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A per-test scratch folder (process id + test name), removed on drop.
pub struct Scratch {
    pub dir: PathBuf,
    /// Removes the folder when the test ends.
    _folder: tempfile::TempDir,
}

impl Scratch {
    pub fn new(test: &str) -> Self {
        let folder = tempfile::Builder::new()
            .prefix(&format!("tpl-cli-test-{test}-"))
            .tempdir()
            .expect("create scratch folder");
        Self { dir: folder.path().to_path_buf(), _folder: folder }
    }

    /// Writes `content` to `name` in the folder and returns the path as a string.
    pub fn file(&self, name: &str, content: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, content).expect("write scratch file");
        path_str(&path)
    }

    /// Writes each `(name, content)` to the folder, in order, and returns the paths.
    pub fn files<const N: usize>(&self, files: [(&str, &str); N]) -> [String; N] {
        files.map(|(name, content)| self.file(name, content))
    }

    /// A path in the folder that is not created.
    pub fn path(&self, name: &str) -> String {
        path_str(&self.dir.join(name))
    }
}

pub fn path_str(p: &Path) -> String {
    p.to_str().expect("temporary paths are UTF-8").to_string()
}

/// The arguments of a command line written as the shell shows it: `template` split at
/// spaces, each `{}` replaced by the next of `values` (paths and values that may hold spaces).
/// `cmd("release --counts {} --scheme bd", &[&path])`.
pub fn cmd<'a>(template: &'a str, values: &[&'a str]) -> Vec<&'a str> {
    let mut values = values.iter().copied();
    let args: Vec<&str> = template
        .split_whitespace()
        .map(|w| if w == "{}" { values.next().expect("a value for every {}") } else { w })
        .collect();
    assert!(values.next().is_none(), "more values than {{}} in {template:?}");
    args
}

/// What one run of the binary produced.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub args: Vec<String>,
}

impl Run {
    pub fn describe(&self) -> String {
        format!(
            "tpl {}\n  exit: {:?}\n  stdout: {:?}\n  stderr: {:?}",
            self.args.join(" "),
            self.code,
            truncate(&self.stdout),
            truncate(&self.stderr)
        )
    }
}

pub fn truncate(s: &str) -> String {
    if s.chars().count() > 1500 {
        format!("{}…", s.chars().take(1500).collect::<String>())
    } else {
        s.into()
    }
}

/// Runs `tpl ARGS`. Whatever the arguments, the binary must end by itself (not by a signal)
/// and must never panic.
pub fn tpl(args: &[&str]) -> Run {
    tpl_with(None, None, args)
}

/// [`tpl`] with the working folder `dir` (default: the test's) and `input` on standard input
/// (default: none).
pub fn tpl_with(dir: Option<&Path>, input: Option<&str>, args: &[&str]) -> Run {
    use std::io::Write as _;
    let mut command = Command::new(env!("CARGO_BIN_EXE_tpl"));
    command.args(args).env("RUST_BACKTRACE", "0").stdout(Stdio::piped()).stderr(Stdio::piped());
    command.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command.spawn().expect("spawn tpl");
    if let Some(text) = input {
        let mut stdin = child.stdin.take().expect("piped stdin");
        // tpl may stop reading early (an error); a closed pipe is not the test's concern.
        let _ = stdin.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for tpl");
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: args.iter().map(|s| s.to_string()).collect(),
    };
    assert!(run.code.is_some(), "tpl was killed by a signal (abort?)\n{}", run.describe());
    assert!(!run.stderr.contains("panicked"), "tpl panicked\n{}", run.describe());
    run
}

/// Runs `tpl ARGS` and expects success (exit 0).
#[track_caller]
pub fn tpl_ok(args: &[&str]) -> Run {
    let run = tpl(args);
    assert_eq!(run.code, Some(0), "expected success\n{}", run.describe());
    run
}

/// Runs `tpl ARGS` with standard output on `/dev/full` (every write fails), expects exit 2
/// and returns standard error.
#[cfg(target_os = "linux")]
#[track_caller]
pub fn tpl_to_full_device(args: &[&str]) -> String {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_tpl")).args(args).stdout(full).output().expect("run tpl");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

/// The standard output of `run` parsed as one JSON value.
#[track_caller]
pub fn stdout_json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e})\n{}", run.describe()))
}

/// Runs `tpl ARGS --format json`, expects success and returns the parsed object.
pub fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let run = tpl_ok(&all);
    let value = stdout_json(&run);
    assert!(value.is_object(), "JSON output must be an object\n{}", run.describe());
    value
}

/// Runs `tpl ARGS --format csv`, expects success, returns (header, rows of fields); leading
/// `#` comment lines (a release's provenance) are skipped.
pub fn csv(args: &[&str]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut all = args.to_vec();
    all.extend(["--format", "csv"]);
    let run = tpl_ok(&all);
    let mut lines = run.stdout.lines().skip_while(|l| l.starts_with('#'));
    let header: Vec<String> = lines
        .next()
        .unwrap_or_else(|| panic!("empty CSV\n{}", run.describe()))
        .split(',')
        .map(String::from)
        .collect();
    let rows: Vec<Vec<String>> = lines.map(|l| l.split(',').map(String::from).collect()).collect();
    for r in &rows {
        assert_eq!(r.len(), header.len(), "CSV row width differs from header\n{}", run.describe());
    }
    (header, rows)
}

/// Runs `tpl release --counts COUNTS FLAGS --format csv` (`flags` split at spaces), expects
/// success and writes the releases to `name` in `d`: the file a post-processing command reads.
pub fn release_file(d: &Scratch, name: &str, counts: &str, flags: &str) -> String {
    let mut args = vec!["release", "--counts", counts];
    args.extend(flags.split_whitespace());
    args.extend(["--format", "csv"]);
    d.file(name, &tpl_ok(&args).stdout)
}

/// Runs `tpl ARGS --format table`, expects success and human text.
pub fn table(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--format", "table"]);
    let run = tpl_ok(&all);
    assert!(!run.stdout.trim().is_empty(), "empty table\n{}", run.describe());
    assert!(
        serde_json::from_str::<Value>(&run.stdout).is_err(),
        "table must not be JSON\n{}",
        run.describe()
    );
    let has_word = run.stdout.split(|c: char| !c.is_alphabetic()).any(|w| w.chars().count() >= 3);
    assert!(has_word, "table should contain words for people\n{}", run.describe());
    run.stdout
}

/// Bad input: exit 2, nothing on stdout, exactly one line on stderr that contains every
/// `needle` (file, file:line, flag) and every `value` as a whole token.
pub fn bad_input(args: &[&str], needles: &[&str], values: &[&str]) -> Run {
    let run = tpl(args);
    assert_eq!(run.code, Some(2), "bad input must exit with 2\n{}", run.describe());
    assert!(run.stdout.is_empty(), "nothing may go to stdout on error\n{}", run.describe());
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line on stderr\n{}", run.describe());
    for n in needles {
        assert!(run.stderr.contains(n), "stderr should name {n:?}\n{}", run.describe());
    }
    for v in values {
        assert!(has_token(&run.stderr, v), "stderr should name the value {v:?}\n{}", run.describe());
    }
    run
}

/// A clap usage error: exit 2 and nothing on stdout (clap's message may span lines).
pub fn usage_error(args: &[&str]) -> Run {
    let run = tpl(args);
    assert_eq!(run.code, Some(2), "usage errors exit with 2\n{}", run.describe());
    assert!(run.stdout.is_empty(), "nothing may go to stdout on error\n{}", run.describe());
    assert!(!run.stderr.trim().is_empty(), "a usage error must say something\n{}", run.describe());
    run
}

/// True when `value` appears in `text` delimited by characters that cannot be part of a
/// number or word (so "0" is not found inside "0.5").
pub fn has_token(text: &str, value: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '+')))
        .any(|t| t == value || t.trim_end_matches('.') == value)
}

/// The row of `strategy` in a `tpl compare` report.
#[track_caller]
pub fn row<'a>(out: &'a Value, strategy: &str) -> &'a Value {
    out["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == strategy)
        .unwrap_or_else(|| panic!("no row {strategy} in {out}"))
}

pub fn nums(v: &Value, key: &str) -> Vec<f64> {
    let arr = v[key].as_array().unwrap_or_else(|| panic!("{key:?} must be an array in {v}"));
    arr.iter()
        .map(|x| x.as_f64().unwrap_or_else(|| panic!("{key:?} must hold only numbers (no null) in {v}")))
        .collect()
}

pub fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key:?} must be a number in {v}"))
}

pub fn close(actual: f64, expected: f64, rel: f64) -> bool {
    approx::relative_eq!(actual, expected, epsilon = 1e-15, max_relative = rel)
}

#[track_caller]
pub fn assert_close(actual: f64, expected: f64, rel: f64, what: &str) {
    assert!(close(actual, expected, rel), "{what}: got {actual:?}, expected {expected:?} (rel {rel:e})");
}

pub fn s(x: f64) -> String {
    x.to_string()
}

pub const EXAMPLE4: &str = "0.1,0.2,0.7\n0.3,0.3,0.4\n0.5,0.3,0.2\n";
pub const FIG3: &str = "[[0.8,0.2],[0,1]]";
pub const FIG8_FORWARD: &str = "0.8 0.2\n0.1 0.9\n";
pub const IDENTITY3: &str = "1 0 0\n0 1 0\n0 0 1\n";

/// An absorbing P_B (any budget above log(1/0.8) leaks without bound) and the Fig. 8 P_F,
/// written in `d`: the matrices of a capped allocation.
pub fn capped_matrices(d: &Scratch) -> (String, String) {
    (d.file("absorbing.csv", "0.8,0.2\n0,1\n"), d.file("pf.csv", FIG8_FORWARD))
}

/// `tpl allocate --strategy STRATEGY` on the [`capped_matrices`] `pb` and `pf` with α = 1e300
/// over 5 steps: far beyond what the capped budget reaches.
pub fn capped_allocation<'a>(strategy: &'a str, pb: &'a str, pf: &'a str) -> Vec<&'a str> {
    cmd("allocate --strategy {} --backward {} --forward {} --alpha 1e300 --horizon 5", &[strategy, pb, pf])
}

// ---------------------------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------------------------

#[track_caller]
pub fn check_leakage(out: &Value, expected_eps: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let t_len = expected_eps.len();
    let t: Vec<u64> = out["t"]
        .as_array()
        .unwrap_or_else(|| panic!("\"t\" must be an array in {out}"))
        .iter()
        .map(|x| x.as_u64().unwrap_or_else(|| panic!("\"t\" must hold integers in {out}")))
        .collect();
    assert_eq!(t, (1..=t_len as u64).collect::<Vec<_>>(), "t = [1..T]");
    let eps = nums(out, "epsilon");
    assert_eq!(eps, expected_eps, "epsilon echoes the audited budget sequence");
    let bpl = nums(out, "bpl");
    let fpl = nums(out, "fpl");
    let tpl = nums(out, "tpl");
    assert_eq!((bpl.len(), fpl.len(), tpl.len()), (t_len, t_len, t_len), "one value per step");
    for i in 0..t_len {
        assert_close(tpl[i], bpl[i] + fpl[i] - eps[i], 1e-12, &format!("TPL_{} = BPL + FPL − ε", i + 1));
        assert!(bpl[i] >= eps[i] - 1e-15 && fpl[i] >= eps[i] - 1e-15, "leakage ≥ ε at t = {}", i + 1);
    }
    assert_eq!(bpl[0], eps[0], "BPL_1 = ε_1");
    assert_eq!(fpl[t_len - 1], eps[t_len - 1], "FPL_T = ε_T");
    (eps, bpl, fpl, tpl)
}

/// L of `matrix` at each α, through `tpl loss`.
pub fn loss_of(matrix: &str, alphas: &[f64]) -> Vec<f64> {
    let strs: Vec<String> = alphas.iter().map(|a| s(*a)).collect();
    let mut args = vec!["loss", "--matrix", matrix];
    for a in &strs {
        args.extend(["--alpha", a.as_str()]);
    }
    let out = json(&args);
    assert_eq!(nums(&out, "alpha"), alphas);
    nums(&out, "loss")
}

/// A CSV field as a double, exactly as printed.
pub fn parse_exact(field: &str) -> f64 {
    field.parse::<f64>().unwrap_or_else(|e| panic!("CSV field {field:?} is not a number: {e}"))
}

/// The path of `file` in the New York harbour week of `testdata/`.
#[allow(dead_code)]
pub fn week(file: &str) -> String {
    testdata("ais_nyharbor_week_5min", file)
}

/// The path of `file` in the folder `set` of `testdata/`.
#[allow(dead_code)]
pub fn testdata(set: &str, file: &str) -> String {
    format!("{}/../testdata/{set}/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// The rows of a JSON array of arrays of numbers (releases, estimates, a matrix).
#[allow(dead_code)]
pub fn number_rows(v: &Value) -> Vec<Vec<f64>> {
    let rows = v.as_array().unwrap_or_else(|| panic!("an array of rows is needed, got {v}"));
    rows.iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect()
}

/// The HTML page at `path`, checked self-contained as every report of `tpl` is: a complete
/// document that names no URL, runs no script and links nothing (`scripts/browser-check`
/// checks the same in a browser).
#[allow(dead_code)]
pub fn html_page(path: &str) -> String {
    let html = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(html.starts_with("<!DOCTYPE html>"), "{path} starts as an HTML document");
    assert!(html.trim_end().ends_with("</html>"), "{path} ends as an HTML document");
    for forbidden in ["http://", "https://", "<script", "<link", "<img", "<iframe", "url("] {
        assert!(!html.contains(forbidden), "{path} holds {forbidden:?}");
    }
    html
}

/// The inline SVG charts of an HTML page: each parsed as XML, its `aria-label` and the
/// texts it shows.
#[allow(dead_code)]
pub fn inline_charts(html: &str) -> Vec<(String, Vec<String>)> {
    html.match_indices("<svg ")
        .map(|(start, _)| {
            let end = html[start..].find("</svg>").expect("a closed <svg> element") + start + "</svg>".len();
            let doc = roxmltree::Document::parse(&html[start..end])
                .unwrap_or_else(|e| panic!("an inline chart is not well-formed XML: {e}"));
            let root = doc.root_element();
            assert_eq!(root.attribute("role"), Some("img"), "a chart is an image to screen readers");
            let label = root.attribute("aria-label").expect("a chart has a label").to_string();
            let texts = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text())
                .map(|t| t.trim().to_string())
                .collect();
            (label, texts)
        })
        .collect()
}

/// A `.npy` file (version 1.0) of type `descr`, header shape `shape` (as Python writes it) and
/// raw values `data`.
pub fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}").into_bytes();
    let unpadded = 10 + header.len() + 1;
    header.resize(header.len() + unpadded.next_multiple_of(64) - unpadded, b' ');
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}
