//! `tpl stream report`: one self-contained page of a stream — no scripts, no network — with
//! its parameters, the busiest cells' releases and estimates, the spend of every window and the
//! leakage over time, and the refused steps; small whatever the stream's length.

mod common;

use common::*;

/// A stream of the New York week's first `steps` steps, with its matrices, α and estimates.
fn week_stream(d: &Scratch, steps: usize, alpha: &str) -> String {
    let db = d.path("s.db");
    let (pb, pf) = (week("transition_backward.csv"), week("transition_forward.csv"));
    json(&cmd(
        "stream init --db {} --scheme bd --epsilon 1 --window 10 --backward {} --forward {} --alpha {} --total 140",
        &[&db, &pb, &pf, alpha],
    ));
    let text = std::fs::read_to_string(week("counts.csv")).unwrap();
    let rows: Vec<&str> = text.lines().take(steps + 1).collect();
    let counts = d.file("c.csv", &format!("{}\n", rows.join("\n")));
    json(&["stream", "push", "--db", &db, "--counts", &counts]);
    db
}

#[test]
fn a_stream_report_is_one_page_that_needs_no_network() {
    let d = Scratch::new("stream_report_page");
    let db = week_stream(&d, 300, "1.2");
    let out = d.path("report.html");
    let j = json(&["stream", "report", "--db", &db, "--out", &out]);
    assert_eq!((j["steps"].as_u64(), j["out"].as_str()), (Some(300), Some(out.as_str())));
    let page = std::fs::read_to_string(&out).unwrap();
    assert_eq!(j["bytes"].as_u64(), Some(page.len() as u64));
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..60]);
    for external in ["http://", "https://", "<script", "<link", "src="] {
        assert!(!page.contains(external), "the page holds {external:?}");
    }
    for heading in
        ["Parameters", "Busiest cells", "Budget", "Leakage under temporal correlation", "Refused steps"]
    {
        assert!(page.contains(&format!("<h2>{heading}</h2>")), "no section {heading}");
    }
    // Three busiest cells, the window spend, the leakage: five charts.
    assert_eq!(page.matches("<svg").count(), 5);
    assert!(page.contains("map (causal filter), population N = 140"));
    // Each busiest cell shows its estimates' stored interval beside the releases' band.
    assert_eq!(page.matches("estimate 90 % interval").count(), 3);
    assert!(page.len() < 2 << 20);
}

#[test]
fn a_long_stream_is_summarised_not_drawn_point_by_point() {
    let d = Scratch::new("stream_report_long");
    let db = week_stream(&d, 1944, "100");
    let out = d.path("r.html");
    json(&["stream", "report", "--db", &db, "--out", &out]);
    let page = std::fs::read_to_string(&out).unwrap();
    // At most 400 points a series: the page of the whole week is about the size of 400 steps'.
    let short = d.path("short.html");
    let d2 = Scratch::new("stream_report_short");
    let db2 = week_stream(&d2, 400, "100");
    json(&["stream", "report", "--db", &db2, "--out", &short]);
    let short = std::fs::read_to_string(&short).unwrap();
    assert!(page.len() < short.len() * 3 / 2, "{} bytes against {}", page.len(), short.len());
    assert!(page.contains("mean of 5 consecutive steps"), "the summary says how it summarised");
}

#[test]
fn a_stream_without_steps_or_matrices_still_has_a_page() {
    let d = Scratch::new("stream_report_empty");
    let db = d.path("e.db");
    json(&cmd("stream init --db {} --scheme uniform --epsilon 1 --window 4", &[&db]));
    let out = d.path("e.html");
    let j = json(&["stream", "report", "--db", &db, "--out", &out]);
    assert_eq!(j["steps"].as_u64(), Some(0));
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.contains("<h2>Parameters</h2>") && !page.contains("<svg"));
    bad_input(&["stream", "report", "--db", &d.path("missing.db"), "--out", &out], &["missing.db"], &[]);
}

/// The three cells with the largest sums of `rows` (one array per step), largest first.
fn busiest(rows: &[serde_json::Value]) -> Vec<usize> {
    let cells = rows[0].as_array().unwrap().len();
    let total = |c: usize| rows.iter().map(|r| r[c].as_f64().unwrap()).sum::<f64>();
    let mut order: Vec<usize> = (0..cells).collect();
    order.sort_by(|&a, &b| total(b).total_cmp(&total(a)).then(a.cmp(&b)));
    order.truncate(3);
    order
}

/// The report page of `db` (written to the same file each time).
fn page(d: &Scratch, db: &str) -> String {
    let out = d.path("drawn.html");
    json(&["stream", "report", "--db", db, "--out", &out]);
    std::fs::read_to_string(&out).unwrap()
}

/// The cells the report of `db` draws, in order.
fn drawn(d: &Scratch, db: &str) -> Vec<usize> {
    page(d, db)
        .split("aria-label=\"Cell ")
        .skip(1)
        .map(|s| s[..s.find(|ch: char| !ch.is_ascii_digit()).unwrap()].parse().unwrap())
        .collect()
}

/// The cells drawn are the three with the largest sums of stored estimates over the stream,
/// busiest first (as `stream export --estimates` gives them) — or of the releases, for a
/// stream that stores no estimates.
#[test]
fn the_busiest_cells_are_those_with_the_most_estimated_people() {
    let d = Scratch::new("stream_report_busiest");
    let db = week_stream(&d, 300, "1.2");
    let exported = json(&["stream", "export", "--db", &db, "--estimates"]);
    assert_eq!(drawn(&d, &db), busiest(exported["estimates"].as_array().unwrap()));
    let plain = d.path("plain.db");
    json(&cmd("stream init --db {} --scheme uniform --epsilon 1 --window 4", &[&plain]));
    let text = std::fs::read_to_string(week("counts.csv")).unwrap();
    let rows: Vec<&str> = text.lines().take(61).collect();
    let counts = d.file("c60.csv", &format!("{}\n", rows.join("\n")));
    json(&["stream", "push", "--db", &plain, "--counts", &counts]);
    let exported = json(&["stream", "export", "--db", &plain]);
    assert_eq!(drawn(&d, &plain), busiest(exported["releases"].as_array().unwrap()));
}

/// Estimates the stream has no step for (a row at t = 0, one past the last step — a damaged
/// table) are refused by every reader, naming the step, and never drawn.
#[test]
fn estimates_of_no_step_are_refused_naming_the_step() {
    let d = Scratch::new("stream_report_stray");
    let db = week_stream(&d, 300, "1.2");
    let out = d.path("drawn.html");
    for t in [0, 305] {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute("DELETE FROM estimates WHERE t = 0 OR t = 305", []).unwrap();
        conn.execute(
            "INSERT INTO estimates (t, estimate, error, std_error) \
             SELECT ?1, estimate, error, std_error FROM estimates WHERE t = 100",
            [t],
        )
        .unwrap();
        drop(conn);
        let why = format!("an estimate is stored for step {t}, which is not recorded");
        for args in [
            vec!["stream", "report", "--db", &db, "--out", &out],
            vec!["stream", "status", "--db", &db],
            vec!["stream", "export", "--db", &db],
        ] {
            bad_input(&args, &["damaged", &why], &[]);
        }
        assert!(!std::path::Path::new(&out).exists(), "a page was written");
    }
}
