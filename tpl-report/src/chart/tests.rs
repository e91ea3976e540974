//! Tests of the charts: labels that do not overlap, axes that label each tick once, the
//! Okabe–Ito palette, joined points, deterministic documents. The checks read the SVG
//! documents themselves (roxmltree), so that what is tested is what a viewer shows.

use super::*;

/// A `<text>` element of a document: position, anchoring, font size in pixels, content.
#[derive(Debug)]
struct SvgText {
    x: f64,
    y: f64,
    anchor: String,
    dy: String,
    size: f64,
    rotated: bool,
    text: String,
}

fn texts(svg: &str) -> Vec<SvgText> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let num = |n: &roxmltree::Node<'_, '_>, a: &str| {
        n.attribute(a).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    };
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| SvgText {
            x: num(&n, "x"),
            y: num(&n, "y"),
            anchor: n.attribute("text-anchor").unwrap_or("start").to_string(),
            dy: n.attribute("dy").unwrap_or("").to_string(),
            size: num(&n, "font-size"),
            rotated: n.attribute("transform").is_some(),
            text: n.text().unwrap_or("").trim().to_string(),
        })
        .collect()
}

/// The boxes of the left-aligned, top-anchored texts (point labels, their numbers and the
/// legend entries), estimated as the chart estimates them.
fn text_boxes(svg: &str) -> Vec<(String, Rect)> {
    texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "start" && t.dy == "0.76em" && !t.rotated)
        .map(|t| {
            let rect = Rect::of_text(&t.text, (t.x, t.y), t.size);
            (t.text, rect)
        })
        .collect()
}

/// The pairs of texts whose boxes overlap.
fn overlapping(svg: &str) -> Vec<(String, String)> {
    let boxes = text_boxes(svg);
    let mut out = Vec::new();
    for (i, (a, ra)) in boxes.iter().enumerate() {
        for (b, rb) in &boxes[i + 1..] {
            if ra.overlaps(rb) {
                out.push((a.clone(), b.clone()));
            }
        }
    }
    out
}

/// The tick labels of the horizontal axis (centred, in the tick font) and of the vertical
/// axis (right-aligned, in the tick font), in document order.
fn tick_labels(svg: &str) -> (Vec<String>, Vec<String>) {
    let tick = TICK_FONT / SVG_FONT_SCALE;
    let all = texts(svg);
    let of = |anchor: &str| -> Vec<String> {
        all.iter()
            .filter(|t| t.anchor == anchor && !t.rotated && (t.size - tick).abs() < 1e-6)
            .map(|t| t.text.clone())
            .collect()
    };
    (of("middle"), of("end"))
}

/// The labels that occur more than once.
fn repeated(labels: &[String]) -> Vec<String> {
    let mut seen: Vec<&String> = Vec::new();
    let mut twice = Vec::new();
    for l in labels {
        if seen.contains(&l) {
            twice.push(l.clone());
        }
        seen.push(l);
    }
    twice
}

/// Every `#RRGGBB` colour of a fill or stroke attribute.
fn colours(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    doc.descendants()
        .flat_map(|n| [n.attribute("fill"), n.attribute("stroke")])
        .flatten()
        .filter(|c| c.starts_with('#'))
        .map(str::to_uppercase)
        .collect()
}

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

const OKABE_ITO: [&str; 8] =
    ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"];

const STRATEGIES: [&str; 9] =
    ["laplace", "uniform", "sample", "bd", "ba", "pba", "upper-bound", "quantified", "window"];

/// A crowded comparison: nine strategies and their post-processed rows at almost the same
/// leakage and error, and three schemes' guaranteed points joined to their realised ones.
fn crowded() -> (Vec<Point>, Vec<(usize, usize)>) {
    let mut points = Vec::new();
    for (k, name) in STRATEGIES.iter().enumerate() {
        let group = usize::from(k >= 6);
        let x = 1.0 + 0.002 * k as f64;
        points.push(Point { label: (*name).into(), x, y: 40.0 + 0.1 * k as f64, group });
        points.push(Point { label: format!("{name}+map"), x, y: 39.0 + 0.1 * k as f64, group: group + 2 });
    }
    let mut joins = Vec::new();
    for scheme in ["bd", "ba", "pba"] {
        let i = points.iter().position(|p| p.label == scheme).expect("a scheme");
        joins.push((i, points.len()));
        let y = points[i].y;
        points.push(Point { label: format!("{scheme} (guaranteed)"), x: 1.05, y, group: 4 });
    }
    (points, joins)
}

const GROUPS: [&str; 5] = [
    "w-event schemes",
    "TPL allocators",
    "schemes, post-processed",
    "allocators, post-processed",
    "schemes: guaranteed over every run",
];

fn crowded_chart(points: &[Point], joins: &[(usize, usize)]) -> (String, ScatterLayout) {
    Scatter {
        title: "Error vs. leakage: crowded",
        x_label: "largest leakage of 10 consecutive steps (ε units, log scale)",
        y_label: "mean squared error per cell and step (people², log scale)",
        groups: &GROUPS,
        points,
        reference: Some(("no release: prior mean (leaks 0)", 60.0)),
        joins,
    }
    .render()
    .expect("drawn")
}

#[test]
fn labels_of_a_crowded_comparison_never_overlap() {
    let (points, joins) = crowded();
    assert!(points.len() >= 20);
    let (svg, layout) = crowded_chart(&points, &joins);
    // From the layout: no two label boxes meet, none leaves the plotting area or covers a
    // marker or a joining line.
    let placed = &layout.labels.placed;
    for (i, a) in placed.iter().enumerate() {
        assert!(layout.area.contains(&a.rect), "{a:?} inside {:?}", layout.area);
        for b in &placed[i + 1..] {
            assert!(!a.rect.overlaps(&b.rect), "{a:?} overlaps {b:?}");
        }
        for &(_, (x, y), _) in &layout.points {
            let marker = Rect::around((f64::from(x), f64::from(y)), f64::from(MARKER));
            assert!(!a.rect.overlaps(&marker), "{a:?} covers the marker at {x},{y}");
        }
        for &((p, q), _) in &layout.joins {
            assert!(!a.rect.crossed_by(p, q), "{a:?} lies on a joining line");
        }
    }
    // Every point is marked: by its label, or by a number listed in the legend.
    let marked = placed.len();
    assert_eq!(marked, points.len(), "{:?}", layout.labels.numbered);
    // From the document: no two texts in the label font overlap, labels and legend alike.
    assert_eq!(overlapping(&svg), Vec::<(String, String)>::new());
    let shown: Vec<String> = texts(&svg).into_iter().map(|t| t.text).collect();
    for p in &points {
        assert!(
            shown.iter().any(|t| t == &p.label || t.starts_with(&format!("{} (", p.label))),
            "{}",
            p.label
        );
    }
    for (n, label) in &layout.labels.numbered {
        assert!(shown.contains(&n.to_string()) && shown.contains(label), "legend entry {n} {label}");
    }
    for group in GROUPS {
        assert!(shown.iter().any(|t| t == group), "{group}");
    }
}

#[test]
fn the_overlap_check_catches_labels_at_a_fixed_offset() {
    // The old drawing: every label 8 px right and 7 px above its point. Two points at one
    // pixel, as `upper-bound` and `quantified` often are, then have overlapping labels.
    let svg = render(SIZE, |root| {
        for label in ["upper-bound", "quantified"] {
            draw_text(root, label, (300 + 8, 200 - 7))?;
        }
        Ok(())
    })
    .expect("drawn");
    assert_eq!(overlapping(&svg).len(), 1);
}

#[test]
fn two_points_at_one_pixel_get_separate_labels() {
    let area = Rect { x0: 0.0, y0: 0.0, x1: 600.0, y1: 400.0 };
    let labels = place_labels(&[(300.0, 200.0); 2], &["upper-bound", "quantified"], area, &[]);
    assert!(labels.numbered.is_empty(), "{labels:?}");
    let [a, b] = &labels.placed[..] else { panic!("{labels:?}") };
    assert_eq!((a.text.as_str(), b.text.as_str()), ("upper-bound", "quantified"));
    assert!(!a.rect.overlaps(&b.rect), "{labels:?}");
    // Both away from the point, with a leader line: the first to the right.
    assert!(a.leader.is_some() && b.leader.is_some() && a.rect.x0 > 300.0);
    // A point alone is labelled beside it, to the right.
    let alone = place_labels(&[(300.0, 200.0), (100.0, 100.0)], &["upper-bound", "quantified"], area, &[]);
    assert!(alone.placed[0].leader.is_none() && alone.placed[0].rect.x0 > 300.0, "{alone:?}");
}

#[test]
fn a_label_that_fits_nowhere_becomes_a_number() {
    // A plotting area of 120 × 60 pixels holding twelve points at one pixel.
    let area = Rect { x0: 0.0, y0: 0.0, x1: 120.0, y1: 60.0 };
    let names: Vec<String> = (0..12).map(|k| format!("a long strategy name {k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let labels = place_labels(&[(60.0, 30.0); 12], &names, area, &[]);
    assert!(!labels.numbered.is_empty());
    for (i, p) in labels.placed.iter().enumerate() {
        assert!(area.contains(&p.rect));
        for q in &labels.placed[i + 1..] {
            assert!(!p.rect.overlaps(&q.rect), "{p:?} {q:?}");
        }
    }
    // Numbers go to the legend in order 1, 2, …, each with its label.
    for (k, (n, text)) in labels.numbered.iter().enumerate() {
        assert_eq!(*n, k + 1);
        assert!(text.starts_with("a long strategy name"), "{text}");
    }
}

#[test]
fn the_same_points_give_the_same_document() {
    let (points, joins) = crowded();
    assert_eq!(crowded_chart(&points, &joins).0, crowded_chart(&points, &joins).0);
}

#[test]
fn guaranteed_and_realised_points_are_joined_in_the_strategys_colour() {
    let (points, joins) = crowded();
    let (svg, layout) = crowded_chart(&points, &joins);
    assert_eq!(layout.joins.len(), 3);
    let doc = roxmltree::Document::parse(&svg).expect("SVG");
    for &(((ax, ay), (bx, by)), group) in &layout.joins {
        assert_eq!(group, 0, "bd, ba and pba are w-event schemes");
        let want = format!("{ax},{ay} {bx},{by}");
        let line = doc
            .descendants()
            .find(|n| n.has_tag_name("polyline") && n.attribute("points").is_some_and(|p| p.trim() == want));
        let line = line.unwrap_or_else(|| panic!("a line {want} in the document"));
        assert_eq!(line.attribute("stroke"), Some(hex(PALETTE[0]).as_str()));
        assert_eq!(line.attribute("stroke-width"), Some("1"));
    }
}

#[test]
fn a_log_axis_labels_each_tick_once() {
    // x from 0.5 to 20: plotters' own log key points label 10 twice there.
    let points: Vec<Point> = [(1.0, 3e-4), (3.0, 2.0), (10.0, 5e4)]
        .iter()
        .enumerate()
        .map(|(k, &(x, y))| Point { label: format!("p{k}"), x, y, group: k })
        .collect();
    let scatter = Scatter {
        title: "t",
        x_label: "x (ε units)",
        y_label: "y (people²)",
        groups: &["a", "b", "c"],
        points: &points,
        reference: None,
        joins: &[],
    };
    let svg = scatter.svg().expect("drawn");
    let (x, y) = tick_labels(&svg);
    assert!(x.len() >= 3 && y.len() >= 3, "{x:?} {y:?}");
    assert_eq!(repeated(&x), Vec::<String>::new(), "{x:?}");
    assert_eq!(repeated(&y), Vec::<String>::new(), "{y:?}");
    assert!(x.contains(&"10".to_string()) && x.contains(&"1".to_string()), "{x:?}");
}

#[test]
fn the_tick_check_catches_plotters_own_log_ticks() {
    // The old mesh: plotters' key points on a log axis from 0.5 to 20 hold 10 twice (the
    // last light point of the first decade and the next decade's bold one).
    let svg = render(SIZE, |root| {
        let mut chart = page_chart(root, "t", 80)
            .build_cartesian_2d((0.5f64..20.0).log_scale(), (0.5f64..20.0).log_scale())
            .map_err(draw_error)?;
        draw_mesh(&mut chart, "x", "y", human)
    })
    .expect("drawn");
    let (x, _) = tick_labels(&svg);
    assert!(repeated(&x).contains(&"10".to_string()), "{x:?}");
}

#[test]
fn log_ticks_are_distinct_inside_and_few() {
    let mut lo = 1e-7;
    while lo < 1e7 {
        for factor in [4.0, 9.5, 40.0, 99.0, 150.0, 1e3, 1e5, 1e9, 1e14] {
            let hi = lo * factor;
            let (bold, light) = log_ticks(lo, hi);
            let labels: Vec<String> = bold.iter().map(|&v| tick_label(v)).collect();
            assert!((1..=10).contains(&bold.len()), "[{lo}, {hi}]: {labels:?}");
            assert!(factor < 9.0 || bold.len() >= 2, "[{lo}, {hi}]: {labels:?}");
            assert_eq!(repeated(&labels), Vec::<String>::new(), "[{lo}, {hi}]");
            for v in bold.iter().chain(&light) {
                assert!(*v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9), "{v} in [{lo}, {hi}]");
            }
            assert!(!light.iter().any(|l| bold.contains(l)));
        }
        lo *= 3.7;
    }
    assert_eq!(log_ticks(0.0, 1.0), (Vec::new(), Vec::new()));
    assert_eq!(log_ticks(f64::NAN, 1.0), (Vec::new(), Vec::new()));
    assert_eq!(
        [1e-5, 2e-4, 0.002, 0.5, 1.0, 20.0, 1e4, 5e4, 2e6, 1e12].map(tick_label),
        ["1e-5", "2e-4", "0.002", "0.5", "1", "20", "10000", "5e4", "2e6", "1e12"]
    );
}

fn series() -> tpl_core::LeakageSeries {
    let pb = tpl_core::TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).expect("matrix");
    tpl_core::LeakageSeries::new(&tpl_core::test_util::both_sides(&pb), &[0.1; 30]).expect("series")
}

fn cell() -> CellSeries<'static> {
    let t = 40;
    CellSeries {
        name: "c7".into(),
        releases: (0..t).map(|k| 10.0 + (k % 7) as f64).collect(),
        estimates: (0..t).map(|k| 11.0 + (k % 3) as f64).collect(),
        truth: Some(vec![12.0; t]),
        band: Some((vec![9.0; t], vec![14.0; t], 0.9)),
        estimator: "map",
    }
}

#[test]
fn line_charts_label_each_tick_once_and_say_their_units() {
    let charts = [
        leakage_svg("leakage", &series()).expect("drawn"),
        estimate_svg("estimates", &[cell()]).expect("drawn"),
    ];
    for svg in &charts {
        let (x, y) = tick_labels(svg);
        assert!(x.len() >= 3 && y.len() >= 3, "{x:?} {y:?}");
        assert_eq!(repeated(&x), Vec::<String>::new(), "{x:?}");
        assert_eq!(repeated(&y), Vec::<String>::new(), "{y:?}");
    }
    let shown = |svg: &str| -> Vec<String> { texts(svg).into_iter().map(|t| t.text).collect() };
    let leakage = shown(&charts[0]);
    assert!(leakage.contains(&"step t".to_string()));
    assert!(leakage.iter().any(|t| t.contains("(ε units)")), "{leakage:?}");
    assert!(shown(&charts[1]).contains(&"count (people in the cell)".to_string()));
}

#[test]
fn the_palette_is_okabe_ito_without_repeats() {
    let palette: Vec<String> = PALETTE.iter().map(|&c| hex(c)).collect();
    for (i, c) in palette.iter().enumerate() {
        assert!(OKABE_ITO.contains(&c.as_str()), "{c} is not an Okabe–Ito colour");
        assert!(!palette[i + 1..].contains(c), "{c} twice");
    }
    assert_eq!(palette.len(), OKABE_ITO.len());
    assert!(!palette.contains(&hex(GREY)));
    let (r, g, b) = (GREY.0, GREY.1, GREY.2);
    assert!(r == g && g == b, "grey is grey");
}

#[test]
fn every_chart_draws_in_the_palette() {
    let (points, joins) = crowded();
    let charts = [
        crowded_chart(&points, &joins).0,
        leakage_svg("leakage", &series()).expect("drawn"),
        estimate_svg("estimates", &[cell(), cell()]).expect("drawn"),
    ];
    let mut allowed: Vec<String> = OKABE_ITO.iter().map(|c| c.to_string()).collect();
    allowed.extend([hex(GREY), "#FFFFFF".into()]);
    for svg in &charts {
        for c in colours(svg) {
            assert!(allowed.contains(&c), "{c} is not in the palette");
        }
    }
    // Groups have markers of distinct shapes: circle, square, triangle, diamond, ring.
    let doc = roxmltree::Document::parse(&charts[0]).expect("SVG");
    let circles = doc.descendants().filter(|n| n.has_tag_name("circle")).count();
    let polygons = doc.descendants().filter(|n| n.has_tag_name("polygon")).count();
    assert!(circles > 0 && polygons > 0, "{circles} circles, {polygons} polygons");
}
