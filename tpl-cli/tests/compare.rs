//! `tpl simulate | estimate | compare | demo` and the charts, through the built binary: the
//! real AIS week (a copy in `testdata/`), the raw matrices that make two allocators
//! impossible, the smoothed ones that make quantified exact, MAP's gain, and bad inputs.

mod common;

use common::*;
use serde_json::Value;

/// A parsed SVG document, with the texts it shows.
fn svg_texts(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc =
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{path} is not well-formed XML: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_string())
        .collect()
}

#[test]
fn compare_on_the_ais_week_with_raw_matrices() {
    let d = Scratch::new("compare_raw");
    let chart = d.path("c.svg");
    let out = json(&cmd(
        "compare --counts {} --backward {} --forward {} --epsilon 1 --window 10 --runs 2 --postprocess map --seed 5 --chart {}",
        &[&week("counts.csv"), &week("transition_backward.csv"), &week("transition_forward.csv"), &chart],
    ));
    let rows = out["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 28, "9 strategies, 9 MAP rows, 9 Kalman baseline rows, the prior mean");
    let names: Vec<&str> = rows.iter().map(|r| r["strategy"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["laplace", "laplace+map", "laplace+kalman"]);
    let keys: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    let leading = "strategy mae mse mre max_window_budget max_tpl max_window_leakage guaranteed_max_tpl \
                   guaranteed_max_window_leakage published_fraction";
    assert_eq!(keys[..10], leading.split_whitespace().collect::<Vec<_>>()[..]);
    for scheme in ["uniform", "sample", "bd", "ba", "pba"] {
        let r = row(&out, scheme);
        assert!(num(r, "max_window_budget") <= 1.0 + 1e-12, "{scheme}: (W) holds: {r}");
        assert!(num(r, "max_window_leakage") > 1.0, "{scheme}: correlation makes it leak more than ε: {r}");
        // MAP lowers the error of every w-event scheme on this stream.
        let map = row(&out, &format!("{scheme}+map"));
        assert!(num(map, "mse") < num(r, "mse"), "{scheme}: MAP {map} vs raw {r}");
    }
    for impossible in ["upper-bound", "quantified", "upper-bound+map", "quantified+map", "quantified+kalman"]
    {
        let r = row(&out, impossible);
        assert!(r["mse"].is_null(), "{r}");
        let why = r["error"].as_str().unwrap_or_else(|| panic!("{impossible} must say why: {r}"));
        assert!(why.contains("Theorem 7"), "{why}");
    }
    let window = row(&out, "window");
    assert_close(num(window, "max_window_leakage"), 1.0, 1e-9, "window allocator meets α = ε");
    assert!(row(&out, "prior-mean")["mse"].is_number());
    let texts = svg_texts(&chart);
    for label in ["bd", "window", "w-event schemes", "TPL allocators"] {
        assert!(texts.iter().any(|t| t == label), "chart shows {label:?}: {texts:?}");
    }
}

#[test]
fn compare_rows_carry_the_guaranteed_leakage_on_the_ais_week() {
    let d = Scratch::new("compare_guaranteed");
    let smoothed = d.path("smoothed");
    json(&["estimate", "--stream", &week("stream.csv"), "--smoothing", "0.01", "--out", &smoothed]);
    let (pb, pf) =
        (format!("{smoothed}/transition_backward.csv"), format!("{smoothed}/transition_forward.csv"));
    let chart = d.path("c.svg");
    let args = || {
        vec![
            "compare".to_string(),
            "--counts".into(),
            week("counts.csv"),
            "--backward".into(),
            pb.clone(),
            "--forward".into(),
            pf.clone(),
            "--epsilon".into(),
            "1".into(),
            "--window".into(),
            "10".into(),
            "--runs".into(),
            "3".into(),
            "--seed".into(),
            "1".into(),
        ]
    };
    let mut with_chart = args();
    with_chart.extend(["--chart".to_string(), chart.clone()]);
    let out = json(&with_chart.iter().map(String::as_str).collect::<Vec<_>>());
    let rows = out["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9, "{out}");
    for r in rows {
        let name = r["strategy"].as_str().unwrap();
        for (realised, guaranteed) in
            [("max_tpl", "guaranteed_max_tpl"), ("max_window_leakage", "guaranteed_max_window_leakage")]
        {
            let (a, g) = (num(r, realised), num(r, guaranteed));
            match name {
                // Budgets fixed in advance: every run spends them, the bound is attained.
                "laplace" | "uniform" | "sample" | "upper-bound" | "quantified" | "window" => {
                    assert_eq!(a.to_bits(), g.to_bits(), "{name} {guaranteed}: {r}")
                }
                // Data-dependent schemes: the runs drawn spend less than the worst run.
                "bd" | "ba" | "pba" => assert!(g > a, "{name} {guaranteed}: {r}"),
                other => panic!("unexpected row {other}"),
            }
        }
    }
    // Every window of a w-event scheme spends ≤ ε: the guaranteed bound of bd, ba and pba is
    // the same, and below that of the event-level laplace.
    let g = |s: &str| num(row(&out, s), "guaranteed_max_window_leakage");
    assert_eq!(g("bd"), g("ba"));
    assert_eq!(g("bd"), g("pba"));
    assert!(g("bd") < g("laplace"));
    assert!(num(row(&out, "window"), "guaranteed_max_window_leakage") <= 1.0);

    let (header, csv_rows) = csv(&args().iter().map(String::as_str).collect::<Vec<_>>());
    let at =
        |key: &str| header.iter().position(|h| h == key).unwrap_or_else(|| panic!("{key} in {header:?}"));
    let (gt, gw) = (at("guaranteed_max_tpl"), at("guaranteed_max_window_leakage"));
    assert_eq!(gw, at("max_window_leakage") + 2);
    // Each standard deviation follows its mean; MRE comes after MSE.
    assert_eq!((at("mre"), at("mre_std")), (at("mse_std") + 1, at("mse_std") + 2));
    let (mre, mre_std) = (at("mre"), at("mre_std"));
    for (r, j) in csv_rows.iter().zip(rows) {
        assert_close(r[gt].parse().unwrap(), num(j, "guaranteed_max_tpl"), 1e-12, "csv guaranteed_max_tpl");
        assert_close(r[gw].parse().unwrap(), num(j, "guaranteed_max_window_leakage"), 1e-12, "csv");
        if j["error"].is_null() {
            assert_close(r[mre].parse().unwrap(), num(j, "mre"), 1e-12, "csv mre");
            assert_close(r[mre_std].parse().unwrap(), num(j, "mre_std"), 1e-12, "csv mre_std");
            assert!(num(j, "mre") > 0.0, "{j}");
        }
    }
    let text = table(&args().iter().map(String::as_str).collect::<Vec<_>>());
    assert!(text.contains("guar. max TPL") && text.contains("guar. max w-leakage"), "{text}");
    let texts = svg_texts(&chart);
    for label in ["bd (guaranteed)", "schemes: guaranteed over every run", "bd"] {
        assert!(texts.iter().any(|t| t == label), "chart shows {label:?}: {texts:?}");
    }
    assert!(!texts.iter().any(|t| t == "uniform (guaranteed)"), "no second marker where they coincide");
}

#[test]
fn estimate_reproduces_the_reference_matrix_and_smoothing_makes_quantified_exact() {
    let d = Scratch::new("compare_smooth");
    let out = d.path("est");
    let summary = json(&["estimate", "--stream", &week("stream.csv"), "--out", &out]);
    assert_eq!(summary["cells"], 23);
    assert_eq!(summary["users"], 140);
    let read = |path: &str| -> Vec<Vec<f64>> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
            .collect()
    };
    for side in ["forward", "backward"] {
        let ours = read(&format!("{out}/transition_{side}.csv"));
        let reference = read(&week(&format!("transition_{side}.csv")));
        assert_eq!(ours.len(), reference.len());
        for (a, b) in ours.iter().flatten().zip(reference.iter().flatten()) {
            assert!((a - b).abs() <= 1e-12, "{side}: {a} vs {b}");
        }
    }
    let smoothed = d.path("smoothed");
    json(&["estimate", "--stream", &week("stream.csv"), "--smoothing", "0.01", "--out", &smoothed]);
    let cmp = json(&cmd(
        "compare --counts {} --backward {} --forward {} --epsilon 1 --window 10 --runs 2 --schemes quantified,upper-bound,bd --seed 1",
        &[
            &week("counts.csv"),
            &format!("{smoothed}/transition_backward.csv"),
            &format!("{smoothed}/transition_forward.csv"),
        ],
    ));
    assert_eq!(cmp["rows"].as_array().unwrap().len(), 3);
    assert_close(num(row(&cmp, "quantified"), "max_tpl"), 1.0, 1e-9, "quantified: max TPL = α");
    assert!(num(row(&cmp, "upper-bound"), "max_tpl") <= 1.0 + 1e-12);
}

#[test]
fn simulate_then_estimate_round_trip() {
    let d = Scratch::new("simulate");
    let out = d.path("sim");
    let summary =
        json(&cmd("simulate --cells 4 --smoothing 0.05 --users 300 --horizon 60 --seed 3 --out {}", &[&out]));
    assert_eq!(summary["users"], 300);
    let counts = std::fs::read_to_string(format!("{out}/counts.csv")).unwrap();
    let mut lines = counts.lines();
    assert_eq!(lines.next(), Some("timestamp_bucket,c0,c1,c2,c3"));
    for line in lines {
        let sum: f64 = line.split(',').skip(1).map(|v| v.parse::<f64>().unwrap()).sum();
        assert_eq!(sum, 300.0, "every row counts every user");
    }
    // Same seed, same bytes.
    let again = d.path("again");
    json(&cmd("simulate --cells 4 --smoothing 0.05 --users 300 --horizon 60 --seed 3 --out {}", &[&again]));
    assert_eq!(
        std::fs::read(format!("{out}/stream.csv")).unwrap(),
        std::fs::read(format!("{again}/stream.csv")).unwrap()
    );
    // Estimating the matrices back: the diagonal of the smoothed identity is 1.05/1.2 = 0.875.
    let est = d.path("est");
    json(&["estimate", "--stream", &format!("{out}/stream.csv"), "--out", &est]);
    let forward = std::fs::read_to_string(format!("{est}/transition_forward.csv")).unwrap();
    let first: Vec<f64> = forward
        .lines()
        .find(|l| !l.starts_with('#'))
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!((first[0] - 0.875).abs() < 0.05, "{first:?}");
    // A simulation from a given matrix and initial distribution.
    let pf = d.file("pf.csv", "0.9 0.1\n0.2 0.8\n");
    let init = d.file("init.csv", "1 0\n");
    let out2 = d.path("sim2");
    json(&cmd("simulate --forward {} --initial {} --users 10 --horizon 2 --out {}", &[&pf, &init, &out2]));
    let first_step = std::fs::read_to_string(format!("{out2}/counts.csv")).unwrap();
    assert_eq!(first_step.lines().nth(1), Some("0,10,0"), "everyone starts in cell 0");
}

#[test]
fn leakage_and_allocate_charts_are_svg_with_labels() {
    let d = Scratch::new("charts");
    let pb = d.file("pb.csv", FIG8_FORWARD);
    let chart = d.path("leak.svg");
    json(&cmd(
        "leakage --backward {} --forward {} --epsilon 0.1 --horizon 30 --chart {}",
        &[&pb, &pb, &chart],
    ));
    let texts = svg_texts(&chart);
    for label in ["TPL_t (temporal)", "BPL_t (backward)", "step t"] {
        assert!(texts.iter().any(|t| t == label), "{label:?} in {texts:?}");
    }
    // A chart goes into an existing folder (only `--out DIR` folders are created).
    std::fs::create_dir(d.dir.join("sub")).unwrap();
    let chart = d.path("sub/alloc.svg");
    json(&cmd(
        "allocate --strategy quantified --backward {} --forward {} --alpha 1 --horizon 50 --chart {}",
        &[&pb, &pb, &chart],
    ));
    assert!(svg_texts(&chart).iter().any(|t| t.contains("quantified")));
}

#[test]
fn demo_writes_report_and_charts() {
    let d = Scratch::new("demo");
    let out = d.path("demo");
    let text = table(&["demo", "--out", &out, "--runs", "2"]);
    assert!(text.contains("prior-mean") && text.contains("Theorem 7"), "{text}");
    for chart in ["leakage_example.svg", "compare_synthetic.svg", "compare_ais_hour.svg"] {
        assert!(svg_texts(&format!("{out}/{chart}")).len() > 5, "{chart}");
    }
    let report = html_page(&format!("{out}/report.html"));
    let charts = inline_charts(&report);
    let titles: Vec<&String> = charts.iter().flat_map(|c| &c.1).collect();
    assert!(
        titles.iter().any(|t| t.contains("New York harbour, 1 hour")),
        "the AIS chart is inline: {titles:?}"
    );
    let j = json(&["demo", "--out", &out, "--runs", "2"]);
    assert_eq!(j["synthetic"]["rows"].as_array().unwrap().len(), 28, "with the +kalman baseline rows");
    // The synthetic matrices are estimated from a dense stream: every strategy runs.
    assert!(j["synthetic"]["rows"].as_array().unwrap().iter().all(|r| r["error"].is_null()));
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let d = Scratch::new("compare_bad");
    let [counts, neg, empty, frac, p3, gap] = d.files([
        ("counts.csv", "timestamp_bucket,c0,c1\n0,3,4\n1,4,3\n2,5,2\n"),
        ("neg.csv", "3,4\n4,-3\n"),
        ("empty.csv", "timestamp_bucket,c0,c1\n"),
        ("frac.csv", "3,4.5\n"),
        ("p3.csv", "1 0 0\n0 1 0\n0 0 1\n"),
        ("gap.csv", "timestamp_bucket,user_id,location_cell\n0,0,1\n0,2,0\n1,0,1\n"),
    ]);
    let out = d.path("o");
    let cmp = |c: &str| -> Vec<String> {
        ["compare", "--counts", c, "--epsilon", "1", "--window", "2"].iter().map(|s| s.to_string()).collect()
    };
    let run = |args: Vec<String>, needles: &[&str], values: &[&str]| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bad_input(&refs, needles, values);
    };
    let mut a = cmp(&counts);
    a.extend(["--forward".into(), p3.clone()]);
    run(a, &["p3.csv", "counts.csv"], &["2"]);
    run(cmp(&neg), &["neg.csv:2"], &["-3"]);
    run(cmp(&empty), &["empty.csv", "no data rows"], &[]);
    run(cmp(&frac), &["frac.csv:1"], &["4.5"]);
    let mut a = cmp(&counts);
    a[6] = "9".into();
    run(a, &["--window"], &["9"]);
    let mut a = cmp(&counts);
    a.extend(["--runs".into(), "0".into()]);
    run(a, &["--runs"], &["0"]);
    run(
        ["estimate", "--stream", &gap, "--out", &out].iter().map(|s| s.to_string()).collect(),
        &["gap.csv", "user 2 never appears in bucket 1"],
        &[],
    );
    run(
        ["simulate", "--cells", "3", "--smoothing", "0.1", "--users", "0", "--horizon", "5", "--out", &out]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        &["--users"],
        &["0"],
    );
    usage_error(&cmd("compare --counts {} --epsilon 1 --window 2 --schemes bd,magic", &[&counts]));
    usage_error(&["simulate", "--users", "3", "--horizon", "3", "--out", &out]);
}

/// 2 cells × 12 steps of small integer counts.
fn small_counts() -> String {
    let mut s = String::from("timestamp_bucket,c0,c1\n");
    for t in 0..12 {
        s.push_str(&format!("{t},{},{}\n", 10 + t % 3, 20 - t % 4));
    }
    s
}

/// Regression: the audit used ε_t whatever `--sensitivity` was, so Δ = 1 (half the noise)
/// reported the same leakage as Δ = 2. A step now spends ε_t·2/Δ against one person's
/// change: without correlation, uniform's leakage doubles exactly at Δ = 1; with it, it
/// grows; the allocators still keep α (their budgets are per-step leakages); the output
/// shows Δ.
#[test]
fn leakage_is_audited_with_the_sensitivity() {
    let d = Scratch::new("compare_sensitivity");
    let counts = d.file("counts.csv", &small_counts());
    let pm = d.file("p.csv", FIG8_FORWARD);
    let run = |delta: &str, matrices: bool| -> Value {
        let mut args = cmd(
            "compare --counts {} --epsilon 1 --window 4 --runs 1 --seed 5 --schemes uniform,laplace,upper-bound,window --sensitivity {}",
            &[&counts, delta],
        );
        if matrices {
            args.extend(["--backward", &pm, "--forward", &pm]);
        }
        json(&args)
    };
    let (one, two) = (run("1", false), run("2", false));
    assert_eq!(one["sensitivity"], 1.0);
    assert_eq!(two["sensitivity"], 2.0);
    for strategy in ["uniform", "laplace"] {
        for key in ["max_tpl", "max_window_leakage"] {
            let (a, b) = (num(row(&one, strategy), key), num(row(&two, strategy), key));
            assert_close(a, 2.0 * b, 1e-12, &format!("{strategy} {key}: Δ = 1 leaks twice Δ = 2"));
        }
        assert_close(
            num(row(&two, strategy), "max_tpl"),
            if strategy == "uniform" { 0.25 } else { 1.0 },
            1e-12,
            strategy,
        );
    }
    let (one, two) = (run("1", true), run("2", true));
    assert!(num(row(&one, "uniform"), "max_tpl") > num(row(&two, "uniform"), "max_tpl") * 1.5);
    for out in [&one, &two] {
        assert!(num(row(out, "upper-bound"), "max_tpl") <= 1.0, "{out}");
        assert!(num(row(out, "window"), "max_window_leakage") <= 1.0, "{out}");
    }
    let text = table(&cmd(
        "compare --counts {} --epsilon 1 --window 4 --runs 1 --schemes uniform --sensitivity 1",
        &[&counts],
    ));
    assert!(text.contains("Δ = 1"), "{text}");
}

/// Regression: `compare --seed` said nothing although seeded runs are reproducible, hence
/// not private. It now says so on stderr (like `release`) and in the JSON (`seeded`).
#[test]
fn seeded_compare_says_it_is_not_private() {
    let d = Scratch::new("compare_seeded");
    let counts = d.file("counts.csv", &small_counts());
    let base =
        ["compare", "--counts", &counts, "--epsilon", "1", "--window", "4", "--runs", "1", "--schemes", "bd"];
    let mut args = base.to_vec();
    args.extend(["--seed", "9", "--format", "json"]);
    let seeded = tpl_ok(&args);
    assert!(seeded.stderr.contains("NOT private"), "{}", seeded.describe());
    let out = stdout_json(&seeded);
    assert_eq!(out["seeded"], true);
    let mut args = base.to_vec();
    args.extend(["--format", "json"]);
    let unseeded = tpl_ok(&args);
    assert!(!unseeded.stderr.contains("NOT private"), "{}", unseeded.describe());
    let out = stdout_json(&unseeded);
    assert_eq!(out["seeded"], false);
}

/// Regression: run r of the i-th strategy in `--schemes` drew its noise from task i·R + r,
/// so the same seed gave a strategy different rows when the list was reordered. The noise
/// now depends on the seed, the strategy's name and the run only.
#[test]
fn a_strategys_rows_do_not_depend_on_its_place_in_schemes() {
    let d = Scratch::new("compare_order");
    let counts = d.file("counts.csv", &small_counts());
    let rows = |schemes: &str| -> Vec<Value> {
        let out = json(&cmd(
            "compare --counts {} --epsilon 1 --window 4 --runs 3 --seed 5 --schemes {}",
            &[&counts, schemes],
        ));
        let mut rows = out["rows"].as_array().unwrap().clone();
        rows.sort_by_key(|r| r["strategy"].as_str().unwrap_or_default().to_owned());
        rows
    };
    let (ab, ba) = (rows("bd,uniform"), rows("uniform,bd"));
    assert_eq!(ab.len(), 2);
    assert_eq!(ab, ba);
    assert!(ab.iter().all(|r| r["mse"].is_number()), "both strategies ran: {ab:?}");
}

#[test]
fn the_kalman_baseline_rows_come_with_postprocessing_unless_left_out() {
    let d = Scratch::new("compare_baseline");
    let counts = d.file("counts.csv", &small_counts());
    let forward = d.file("p.csv", "0.9,0.1\n0.2,0.8\n");
    let names = |extra: &str| -> Vec<String> {
        let out = json(&cmd(
            &format!(
                "compare --counts {{}} --forward {{}} --epsilon 1 --window 4 --runs 2 --seed 5 --schemes bd,uniform {extra}"
            ),
            &[&counts, &forward],
        ));
        out["rows"].as_array().unwrap().iter().map(|r| r["strategy"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(
        names("--postprocess smooth"),
        ["bd", "bd+smooth", "bd+kalman", "uniform", "uniform+smooth", "uniform+kalman", "prior-mean"]
    );
    assert_eq!(
        names("--postprocess smooth --no-baseline"),
        ["bd", "bd+smooth", "uniform", "uniform+smooth", "prior-mean"]
    );
    // The baseline itself is not repeated.
    assert_eq!(names("--postprocess kalman"), ["bd", "bd+kalman", "uniform", "uniform+kalman", "prior-mean"]);
    usage_error(&cmd("compare --counts {} --epsilon 1 --window 4 --no-baseline", &[&counts]));
}

#[test]
fn compare_report_is_one_page_with_the_table_chart_and_provenance_and_the_json_is_unchanged() {
    let d = Scratch::new("compare_report");
    let page = d.path("c.html");
    let args = "compare --stream {} --train-steps ..972 --epsilon 1 --window 10 --runs 1 --schemes bd,window --seed 3";
    let plain = json(&cmd(args, &[&week("stream.csv")]));
    let with_report = json(&cmd(&format!("{args} --report {{}}"), &[&week("stream.csv"), &page]));
    assert_eq!(with_report, plain, "--report adds a page, not a field");

    let html = html_page(&page);
    assert!(html.contains("<title>tpl compare: stream.csv, steps 973..1944</title>"), "{html}");
    for strategy in ["bd", "window"] {
        assert!(html.contains(&format!("<td>{strategy}</td>")), "{strategy} row");
    }
    // Numbers as the terminal's table shows them, right-aligned.
    let text = table(&cmd(args, &[&week("stream.csv")]));
    let bd: Vec<&str> =
        text.lines().find(|l| l.trim_start().starts_with("bd ")).unwrap().split_whitespace().collect();
    // MAE, MRE, MSE ± sd, max w-budget, max TPL.
    for value in [bd[1], bd[2], bd[6], bd[7]] {
        assert!(html.contains(&format!("<td class=\"num\">{value}</td>")), "bd's {value}");
    }
    assert!(html.contains(&format!("<td class=\"num\">{} ± {}</td>", bd[3], bd[5])), "bd's MSE");
    for column in ["MAE", "MRE"] {
        assert!(html.contains(&format!("<th scope=\"col\" class=\"num\">{column}</th>")), "{column}");
    }
    // Provenance and parameters: the command, the input, the seed and the matrices' origin.
    assert!(html.contains("<dt>command</dt><dd>tpl compare --stream "), "{html}");
    assert!(html.contains("--report ") && html.contains("<dt>user stream</dt>"));
    assert!(html.contains("<dd>3 (given: the releases are reproducible, hence NOT private)</dd>"));
    assert!(html.contains("out of sample"));
    assert!(
        html.contains("<p class=\"note\">Note: forward rows without data in steps 1..972"),
        "the notes too"
    );
    let charts = inline_charts(&html);
    assert_eq!(charts.len(), 1);
    assert!(
        charts[0].1.iter().any(|t| t == "bd")
            && charts[0].1.iter().any(|t| t.starts_with("Error vs. leakage"))
    );
    // Nothing else is left behind: the page only (the chart is inline).
    let files: Vec<_> = std::fs::read_dir(&d.dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, ["c.html"]);
}

#[test]
fn compare_report_must_be_html_in_an_existing_folder_said_before_running() {
    let d = Scratch::new("compare_report_bad");
    let counts = d.file("counts.csv", "timestamp_bucket,c0,c1\n0,3,4\n1,4,3\n2,5,2\n");
    for (report, needle) in [
        (d.path("out.csv"), "ending in .html"),
        (d.path("report"), "ending in .html"),
        (d.path("missing/r.html"), "does not exist"),
    ] {
        let run =
            usage_error(&cmd("compare --counts {} --epsilon 1 --window 2 --report {}", &[&counts, &report]));
        assert!(run.stderr.contains("--report") && run.stderr.contains(needle), "{}", run.describe());
        assert!(!std::path::Path::new(&report).exists());
    }
    // Checked before the inputs are read: a bad counts file is not what is reported.
    let run = usage_error(&cmd(
        "compare --counts {} --epsilon 1 --window 2 --report {}",
        &[&d.path("none.csv"), &d.path("r.txt")],
    ));
    assert!(run.stderr.contains("--report"), "{}", run.describe());
    // Any case of .html or .htm is a page.
    json(&cmd(
        "compare --counts {} --epsilon 1 --window 2 --runs 1 --report {}",
        &[&counts, &d.path("R.HTM")],
    ));
    html_page(&d.path("R.HTM"));
}

/// `dsat` and `fast` run when named (they are not in the default set), keep (W) and carry
/// their realised and guaranteed leakage like the other schemes; a window of 10 holds at most
/// C = 2 dsat releases and M = 1 fast sample.
#[test]
fn the_benchmark_schemes_are_compared_when_named_with_their_leakage() {
    let out = json(&cmd(
        "compare --counts {} --backward {} --forward {} --epsilon 1 --window 10 --runs 2 --seed 4 --schemes bd,dsat,fast",
        &[&week("counts.csv"), &week("transition_backward.csv"), &week("transition_forward.csv")],
    ));
    let names: Vec<&str> =
        out["rows"].as_array().unwrap().iter().map(|r| r["strategy"].as_str().unwrap()).collect();
    assert_eq!(names, ["bd", "dsat", "fast"]);
    for (scheme, most) in [("dsat", 0.2), ("fast", 0.1)] {
        let r = row(&out, scheme);
        assert!(num(r, "max_window_budget") <= 1.0, "(W): {r}");
        assert!(num(r, "guaranteed_max_window_leakage") >= num(r, "max_window_leakage"), "{r}");
        let fraction = num(r, "published_fraction");
        assert!(fraction > 0.0 && fraction <= most + 0.01, "{scheme}: {r}");
    }
    let default =
        json(&cmd("compare --counts {} --epsilon 1 --window 10 --runs 1 --seed 4", &[&week("counts.csv")]));
    let rows = default["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["strategy"] != "dsat" && r["strategy"] != "fast"), "not run by default");
}

/// `--suite standard` runs the field's standard comparison, in its order, on the two
/// registry series kept for it: every w-event row keeps (W) and is scored (pba, which needs a
/// matrix, says why it cannot run); the suite and --schemes exclude each other.
#[test]
fn the_standard_suite_runs_the_benchmark_set_on_the_registry_series() {
    let standard = ["laplace", "uniform", "sample", "bd", "ba", "pba", "dsat", "fast"];
    for (set, window) in [("us_unemployment_monthly", "40"), ("nyc_departures_hourly_2013", "24")] {
        let counts = testdata(set, "counts.csv");
        let out = json(&cmd(
            "compare --suite standard --counts {} --epsilon 1 --window {} --runs 2 --seed 3",
            &[&counts, window],
        ));
        let rows = out["rows"].as_array().unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r["strategy"].as_str().unwrap()).collect();
        assert_eq!(names, standard, "{set}");
        for r in &rows[1..] {
            if r["strategy"] == "pba" {
                // Without a correlation matrix pba says why it cannot run.
                assert!(r["error"].as_str().is_some_and(|e| e.contains("matrix")), "{r}");
                continue;
            }
            assert!(num(r, "max_window_budget") <= 1.0, "{set}: (W): {r}");
            assert!(num(r, "mae") > 0.0 && num(r, "mre") > 0.0, "{set}: scored: {r}");
        }
    }
    let counts = testdata("us_unemployment_monthly", "counts.csv");
    let refused = |extra: &[&str]| {
        let mut args = cmd("compare --counts {} --epsilon 1 --window 4", &[&counts]);
        args.extend_from_slice(extra);
        usage_error(&args)
    };
    refused(&["--suite", "standard", "--schemes", "bd"]);
    let e = refused(&["--suite", "everything"]);
    assert!(e.stderr.contains("standard"), "{}", e.stderr);
}
