//! The chart of `tpl compare --chart` on the AIS week, through the built binary: its labels
//! do not overlap, its log axes label each tick once, its axis titles say their units, and the
//! guaranteed point of a scheme is joined to its realised one (the unit tests of
//! `src/chart/tests.rs` test the drawing itself on made-up points).

mod common;

use common::*;

/// A `<text>` of the document: x, y, font size, anchor, whether rotated, content.
type SvgText = (f64, f64, f64, String, bool, String);

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
            )
        })
        .collect()
}

/// Fails when two left-aligned labels of `svg` meet (boxes of characters × size × 0.6 by
/// size) or an axis repeats a tick label; returns the document's texts.
fn check_readable(name: &str, svg: &str) -> Vec<SvgText> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
    let all = texts(&doc);
    // Labels, numbers and legend entries (left-aligned, top-anchored): no two boxes meet.
    let boxes: Vec<(&str, [f64; 4])> = (all.iter())
        .filter(|t| t.3 == "start" && !t.4)
        .map(|(x, y, size, _, _, text)| {
            (text.as_str(), [*x, *y, x + text.chars().count() as f64 * size * 0.6, y + size])
        })
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
