//! SVG charts (plotters, SVG backend only, no font files: text is left to the viewer's
//! fonts). The one place that draws: line charts over time, labelled scatter plots and the
//! per-cell estimate panels of `tpl postprocess --chart`.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use crate::error::{CliError, Result};
use crate::output_dir::write_file;
use crate::render::human;

/// Size of every chart, in pixels.
const SIZE: (u32, u32) = (960, 600);
const FONT: &str = "sans-serif";

/// Colours of successive series, distinguishable in colour and in grey.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

/// One line of a line chart: its legend name and its points (t, y_t).
struct Line<'a> {
    /// Legend entry.
    name: &'a str,
    /// Points (t, y_t), t ascending from 1.
    points: Vec<(f64, f64)>,
}

/// Most points drawn per line: longer series are shown by the largest value of each of this
/// many consecutive blocks of steps (a leakage chart must not hide a peak).
const MAX_POINTS: usize = 2000;

/// A labelled point of a scatter plot.
pub struct Point {
    /// Label written next to the point.
    pub label: String,
    /// Horizontal position (> 0: the axis is logarithmic).
    pub x: f64,
    /// Vertical position (> 0: the axis is logarithmic).
    pub y: f64,
    /// Group index: points of one group share a colour and a legend entry.
    pub group: usize,
}

/// Draws `lines` over t = 1..T (linear axes) and writes the SVG to `path`.
fn line_chart(path: &Path, title: &str, y_label: &str, lines: &[Line<'_>]) -> Result<()> {
    let horizon = lines.iter().filter_map(|l| l.points.last()).map(|p| p.0).fold(2.0, f64::max);
    let top =
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.08 } else { 1.0 };
    let svg = render(|root| {
        let mut chart =
            page_chart(root, title, 72).build_cartesian_2d(1f64..horizon, 0f64..top).map_err(draw_error)?;
        draw_mesh(&mut chart, "step t", y_label)?;
        for (k, line) in lines.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))
                .map_err(draw_error)?
                .label(line.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
        }
        draw_legend(&mut chart)
    })?;
    write_file(path, &svg)
}

/// The BPL/FPL/TPL chart of `tpl allocate --chart` and the demo: the budget ε_t and the
/// three leakages over time.
pub fn leakage_chart(path: &Path, title: &str, series: &tpl_core::LeakageSeries) -> Result<()> {
    let s = series;
    leakage_chart_of(path, title, s.len(), |t| [s.tpl()[t], s.bpl()[t], s.fpl()[t], s.epsilon()[t]])
}

/// [`leakage_chart`] of a [`tpl_core::CompactSeries`] (`tpl leakage --chart`).
pub fn compact_leakage_chart(path: &Path, title: &str, s: &tpl_core::CompactSeries) -> Result<()> {
    leakage_chart_of(path, title, s.len(), |t| [s.tpl_at(t), s.bpl()[t], s.fpl()[t], s.budgets().get(t)])
}

/// The leakage chart of `len` steps whose (TPL, BPL, FPL, ε) at 0-based step t is `at(t)`;
/// at most [`MAX_POINTS`] points a line (block maxima).
fn leakage_chart_of(path: &Path, title: &str, len: usize, at: impl Fn(usize) -> [f64; 4]) -> Result<()> {
    let blocks = len.clamp(1, MAX_POINTS);
    let mut points: Vec<Vec<(f64, f64)>> = (0..4).map(|_| Vec::with_capacity(blocks)).collect();
    for b in 0..blocks {
        let (lo, hi) = (b * len / blocks, (b + 1) * len / blocks);
        let mut best = [(0.0, f64::NEG_INFINITY); 4];
        for t in lo..hi {
            for (k, v) in at(t).into_iter().enumerate() {
                if v > best[k].1 {
                    best[k] = ((t + 1) as f64, v);
                }
            }
        }
        for (k, p) in best.into_iter().enumerate() {
            points[k].push(p);
        }
    }
    let names = ["TPL_t (temporal)", "BPL_t (backward)", "FPL_t (forward)", "ε_t (budget spent)"];
    let lines: Vec<Line<'_>> = names.iter().zip(points).map(|(name, points)| Line { name, points }).collect();
    line_chart(path, title, "privacy leakage (ε units)", &lines)
}

/// The series of one cell in [`estimate_chart`], over steps 1..T.
pub struct CellSeries<'a> {
    /// The cell's name (`c7`).
    pub name: String,
    /// The raw releases r_t.
    pub releases: Vec<f64>,
    /// The estimates x̂_t.
    pub estimates: Vec<f64>,
    /// The true counts, when known.
    pub truth: Option<Vec<f64>>,
    /// The estimates' interval band (lower, upper) and its level.
    pub band: Option<(Vec<f64>, Vec<f64>, f64)>,
    /// The estimator's name, for the legend.
    pub estimator: &'a str,
}

/// `tpl postprocess --chart`: one panel per cell, stacked, each with the raw release, the
/// estimate, its interval band and the truth when given, over time. Long series are thinned
/// to at most [`MAX_POINTS`] evenly spaced steps.
pub fn estimate_chart(path: &Path, title: &str, cells: &[CellSeries<'_>]) -> Result<()> {
    let svg = render(|root| {
        let root = root.titled(title, (FONT, 22)).map_err(draw_error)?;
        let panels = root.split_evenly((cells.len().max(1), 1));
        for (k, (cell, area)) in cells.iter().zip(&panels).enumerate() {
            draw_cell(area, cell, k == 0)?;
        }
        Ok(())
    })?;
    write_file(path, &svg)
}

/// One panel of [`estimate_chart`], its vertical axis fitted to its own values; the legend
/// on the first panel only.
fn draw_cell(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    cell: &CellSeries<'_>,
    legend: bool,
) -> std::result::Result<(), String> {
    let len = cell.estimates.len();
    let stride = len.div_ceil(MAX_POINTS).max(1);
    let steps: Vec<usize> = (0..len).step_by(stride).collect();
    let points = |v: &[f64]| -> Vec<(f64, f64)> { steps.iter().map(|&t| ((t + 1) as f64, v[t])).collect() };
    let all = cell
        .releases
        .iter()
        .chain(&cell.estimates)
        .chain(cell.truth.iter().flatten())
        .chain(cell.band.iter().flat_map(|(lo, hi, _)| lo.iter().chain(hi)))
        .copied()
        .filter(|v| v.is_finite());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.08).max(0.5);
    let mut chart = ChartBuilder::on(area)
        .caption(&cell.name, (FONT, 16))
        .margin(8)
        .x_label_area_size(32)
        .y_label_area_size(64)
        .build_cartesian_2d(1f64..(len.max(2) as f64), (lo - pad)..(hi + pad))
        .map_err(draw_error)?;
    draw_mesh(&mut chart, "step t", "count")?;
    let grey = PALETTE[PALETTE.len() - 1];
    if let Some((lower, upper, level)) = &cell.band {
        let blue = PALETTE[0];
        let outline: Vec<(f64, f64)> =
            points(lower).into_iter().chain(points(upper).into_iter().rev()).collect();
        chart
            .draw_series(std::iter::once(Polygon::new(outline, blue.mix(0.18).filled())))
            .map_err(draw_error)?
            .label(format!("{} % interval", human(100.0 * level)))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 22, y + 5)], blue.mix(0.18).filled()));
    }
    let mut line =
        |name: String, v: &[f64], color: RGBColor, width: u32| -> std::result::Result<(), String> {
            chart
                .draw_series(LineSeries::new(points(v), color.stroke_width(width)))
                .map_err(draw_error)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
            Ok(())
        };
    line("raw release".into(), &cell.releases, grey, 1)?;
    if let Some(truth) = &cell.truth {
        line("truth".into(), truth, BLACK, 2)?;
    }
    line(format!("estimate ({})", cell.estimator), &cell.estimates, PALETTE[0], 2)?;
    if legend { draw_legend(&mut chart) } else { Ok(()) }
}

/// Draws labelled points on logarithmic axes, one legend entry per group name, and an
/// optional dashed horizontal reference line (name, y); writes the SVG to `path`. Points
/// with a non-positive or non-finite coordinate are left out (a log axis cannot show them).
pub fn scatter_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: &[&str],
    points: &[Point],
    reference: Option<(&str, f64)>,
) -> Result<()> {
    let shown: Vec<&Point> =
        points.iter().filter(|p| p.x.is_finite() && p.y.is_finite() && p.x > 0.0 && p.y > 0.0).collect();
    let range = |f: fn(&Point) -> f64| {
        let lo = shown.iter().map(|p| f(p)).fold(f64::INFINITY, f64::min);
        let hi = shown.iter().map(|p| f(p)).fold(0.0, f64::max);
        if shown.is_empty() { (0.1, 10.0) } else { (lo / 2.0, hi * 2.0) }
    };
    let (x0, x1) = range(|p| p.x);
    let (mut y0, mut y1) = range(|p| p.y);
    let reference = reference.filter(|r| r.1.is_finite() && r.1 > 0.0);
    if let Some((_, y)) = reference {
        (y0, y1) = (y0.min(y / 2.0), y1.max(y * 2.0));
    }
    let svg = render(|root| {
        let mut chart = page_chart(root, title, 80)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(draw_error)?;
        draw_mesh(&mut chart, x_label, y_label)?;
        if let Some((name, y)) = reference {
            draw_reference(&mut chart, name, y, (x0, x1))?;
        }
        for (g, name) in groups.iter().enumerate() {
            let color = PALETTE[g % PALETTE.len()];
            let members = shown.iter().filter(|p| p.group == g);
            chart
                .draw_series(members.map(|p| {
                    EmptyElement::at((p.x, p.y))
                        + Circle::new((0, 0), 5, color.filled())
                        + Text::new(p.label.clone(), (8, -7), (FONT, 13).into_font().color(&BLACK))
                }))
                .map_err(draw_error)?
                .label(*name)
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
        }
        draw_legend(&mut chart)
    })?;
    write_file(path, &svg)
}

/// A chart's coordinate system, linear or logarithmic on either axis.
type Chart<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// The grid, ticks and axis titles every chart draws, in the same fonts.
fn draw_mesh<'a, 'b: 'a, X, Y>(
    chart: &mut Chart<'a, 'b, X, Y>,
    x_label: &str,
    y_label: &str,
) -> std::result::Result<(), String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| human(*v))
        .y_label_formatter(&|v| human(*v))
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .max_light_lines(4)
        .draw()
        .map_err(draw_error)
}

/// The legend box of every chart, upper right.
fn draw_legend<'a, 'b: 'a, X, Y>(chart: &mut Chart<'a, 'b, X, Y>) -> std::result::Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw_error)
}

/// A dashed grey horizontal line at `y` across the logarithmic x range `(x0, x1)`, with its
/// legend entry `name`.
fn draw_reference<'a, 'b: 'a, X, Y>(
    chart: &mut Chart<'a, 'b, X, Y>,
    name: &str,
    y: f64,
    (x0, x1): (f64, f64),
) -> std::result::Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let grey = PALETTE[PALETTE.len() - 1];
    let dashes = (0..60).map(|k| {
        let at = |j: f64| x0 * (x1 / x0).powf(j / 120.0);
        PathElement::new(vec![(at(2.0 * k as f64), y), (at(2.0 * k as f64 + 1.0), y)], grey.stroke_width(2))
    });
    chart
        .draw_series(dashes)
        .map_err(draw_error)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], grey.stroke_width(2)));
    Ok(())
}

/// The frame of a chart that fills the page: its title, margin and x label area; the y label
/// area is as wide as its tick labels need.
fn page_chart<'a, 'b, 'c>(
    root: &'a DrawingArea<SVGBackend<'c>, Shift>,
    title: &'b str,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'c>> {
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, (FONT, 22)).margin(16).x_label_area_size(48).y_label_area_size(y_label_area);
    builder
}

/// Runs `draw` on a white SVG canvas and returns the document.
fn render(
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> std::result::Result<(), String>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error).map_err(CliError::Usage)?;
        draw(&root).map_err(|e| CliError::Usage(format!("cannot draw the chart: {e}")))?;
        root.present().map_err(draw_error).map_err(CliError::Usage)?;
    }
    Ok(svg)
}

fn draw_error<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}
