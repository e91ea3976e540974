//! The chart of `tpl compare --chart` on the AIS week, through the built binary: its labels
//! do not overlap, its log axes label each tick once, its axis titles say their units, and the
//! guaranteed point of a scheme is joined to its realised one (the unit tests of
//! `src/chart/tests.rs` test the drawing itself on made-up points).

mod common;

use common::*;

/// A `<text>` of the document: x, y, font size, anchor, whether rotated, content, whether it
/// hangs above its y (a negative `dy`) rather than below.
type SvgText = (f64, f64, f64, String, bool, String, bool);

fn texts(doc: &roxmltree::Document<'_>) -> Vec<SvgText> {
    let num = |n: &roxmltree::Node<'_, '_>, a: &str| {
        n.attribute(a).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    };
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            let anchor = n.attribute("text-anchor").unwrap_or("start").to_string();
            let text = n.text().unwrap_or("").trim().to_string();
            (
                num(&n, "x"),
                num(&n, "y"),
                num(&n, "font-size"),
                anchor,
                n.attribute("transform").is_some(),
                text,
                n.attribute("dy").is_some_and(|dy| dy.starts_with('-')),
            )
        })
        .collect()
}

/// The box a text covers, its characters taken 0.6 of the font size wide: left-aligned or
/// centred labels, and a centred title turned a quarter (the y axis's, read upwards).
fn text_box((x, y, size, anchor, rotated, text, above): &SvgText) -> [f64; 4] {
    let width = text.chars().count() as f64 * size * 0.6;
    let (top, bottom) = if *above { (y - size, *y) } else { (*y, y + size) };
    match (anchor.as_str(), rotated) {
        (_, true) => [*x, y - width / 2.0, x + size, y + width / 2.0],
        ("middle", false) => [x - width / 2.0, top, x + width / 2.0, bottom],
        _ => [*x, top, x + width, bottom],
    }
}

/// Fails when two labels of `svg` meet — the points' labels and legend entries (left-aligned),
/// the title and the axis titles (centred, the y axis's turned) — or an axis repeats a tick
/// label; returns the document's texts.
fn check_readable(name: &str, svg: &str) -> Vec<SvgText> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
    let all = texts(&doc);
    let tick = |t: &SvgText| (t.2 - 13.0 / 1.24).abs() < 1e-6;
    let boxes: Vec<(&str, [f64; 4])> = (all.iter())
        .filter(|t| t.3 == "start" || ((t.3 == "middle" || t.4) && !tick(t)))
        .map(|t| (t.5.as_str(), text_box(t)))
        .collect();
    for (i, (a, ra)) in boxes.iter().enumerate() {
        for (b, rb) in &boxes[i + 1..] {
            let meet = ra[0] < rb[2] && rb[0] < ra[2] && ra[1] < rb[3] && rb[1] < ra[3];
            assert!(!meet, "{name}: {a:?} {ra:?} overlaps {b:?} {rb:?}");
        }
    }
    // Tick labels (13 / 1.24 px): centred under the x axis, right-aligned left of the y axis.
    for anchor in ["middle", "end"] {
        let ticks: Vec<&str> = (all.iter())
            .filter(|t| t.3 == anchor && !t.4 && (t.2 - 13.0 / 1.24).abs() < 1e-6)
            .map(|t| t.5.as_str())
            .collect();
        assert!(ticks.len() >= 2, "{name}: {ticks:?}");
        for (i, t) in ticks.iter().enumerate() {
            assert!(!ticks[i + 1..].contains(t), "{name}: tick {t} twice: {ticks:?}");
        }
    }
    all
}

#[test]
fn the_three_charts_of_the_demo_are_readable() {
    let d = Scratch::new("charts_demo");
    let out = d.path("demo");
    let run = tpl(&["demo", "--out", &out]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    for chart in ["leakage_example.svg", "compare_synthetic.svg", "compare_ais_hour.svg"] {
        let svg = std::fs::read_to_string(std::path::Path::new(&out).join(chart)).unwrap();
        check_readable(chart, &svg);
    }
}

#[test]
fn the_comparison_chart_is_readable() {
    let d = Scratch::new("charts_compare");
    let chart = d.path("c.svg");
    json(&cmd(
        "compare --counts {} --backward {} --forward {} --epsilon 1 --window 10 --runs 1 --postprocess map --seed 5 --chart {}",
        &[&week("counts.csv"), &week("transition_backward.csv"), &week("transition_forward.csv"), &chart],
    ));
    let svg = std::fs::read_to_string(&chart).unwrap();
    let all = check_readable("compare", &svg);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let shown = |needle: &str| all.iter().any(|t| t.5.contains(needle));
    assert!(shown("(ε units, log scale)") && shown("(people², log scale)"), "axis titles say their units");
    assert!(shown("bd+kalman") && shown("pba (guaranteed)") && shown("w-event schemes"));
    // bd, ba and pba spend less than their caps on the runs drawn: their guaranteed points
    // are joined to the realised ones by thin lines in the schemes' colour.
    let joins = (doc.descendants())
        .filter(|n| n.has_tag_name("polyline"))
        .filter(|n| n.attribute("stroke") == Some("#0072B2") && n.attribute("stroke-width") == Some("1"))
        .count();
    assert!(joins >= 3, "{joins} joining lines");
}

/// The check itself: a point's label over the y axis's title (turned a quarter, centred on
/// its point) fails it, as one beside the title passes.
#[test]
fn a_label_over_the_y_axis_title_fails_the_check() {
    let page = |x: u32| {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg"><text x="16" y="289" dy="0.76em" text-anchor="middle" font-size="12.9" transform="rotate(270, 16, 289)">mean squared error per cell and step</text><text x="{x}" y="300" dy="0.76em" font-size="11.29">window+kalman</text><text x="300" y="600" text-anchor="middle" font-size="10.483870967741936">1</text><text x="400" y="600" text-anchor="middle" font-size="10.483870967741936">10</text><text x="50" y="500" text-anchor="end" font-size="10.483870967741936">1</text><text x="50" y="400" text-anchor="end" font-size="10.483870967741936">10</text></svg>"#
        )
    };
    check_readable("beside", &page(40));
    let over = std::panic::catch_unwind(|| check_readable("over", &page(20)));
    let message = over.err().and_then(|e| e.downcast_ref::<String>().cloned()).unwrap_or_default();
    assert!(message.contains("window+kalman") && message.contains("mean squared error"), "{message}");
}
