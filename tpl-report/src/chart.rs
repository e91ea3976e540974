//! SVG charts (plotters, SVG backend only, no font files: text is left to the viewer's
//! fonts). The one place that draws: line charts over time, labelled scatter plots and the
//! per-cell estimate panels of `tpl postprocess --chart`.
//!
//! Every chart uses the Okabe–Ito colours ([`PALETTE`]), readable with the common forms of
//! colour blindness, and grey for reference lines. Each public chart comes twice: a
//! `…_svg` function returning the document, and a `…_chart` function writing it to a file
//! (the `--chart FILE.svg` flags of docs/cli.md). Labels of a scatter plot are placed so that
//! no two overlap (see [`Scatter`]), and a logarithmic axis labels each of its ticks once.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use crate::text::human;
use crate::{ReportError, Result, write_file};

#[cfg(test)]
mod tests;

/// Size of every chart, in pixels (a scatter plot grows downwards by its legend).
const SIZE: (u32, u32) = (960, 600);
const FONT: &str = "sans-serif";
/// plotters' SVG backend writes a font of size `s` as `font-size="s / 1.24"` (pixels).
const SVG_FONT_SCALE: f64 = 1.24;
/// Font size (plotters units) of the point labels and legend entries of a scatter plot.
const LABEL_FONT: f64 = 14.0;
/// Font size (plotters units) of tick labels.
const TICK_FONT: f64 = 13.0;
/// Half the width of a scatter plot's marker, in pixels.
const MARKER: i32 = 6;

/// The Okabe–Ito colours (Okabe & Ito 2008, *Color Universal Design*), in the order
/// successive series take them: blue, vermillion, bluish green, orange, reddish purple, sky
/// blue, black, yellow (last: faint on white). Distinguishable with deuteranopia,
/// protanopia and tritanopia.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xF0, 0xE4, 0x42),
];

/// Reference lines, leader lines and raw releases: a neutral grey.
pub const GREY: RGBColor = RGBColor(0x88, 0x88, 0x88);

/// The colour of series (or group) `k`: [`PALETTE`] in turn.
fn color(k: usize) -> RGBColor {
    PALETTE[k % PALETTE.len()]
}

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
    /// Group index: points of one group share a colour, a marker shape and a legend entry.
    pub group: usize,
}

/// Draws `lines` over t = 1..T (linear axes) and returns the SVG document.
fn line_svg(title: &str, y_label: &str, lines: &[Line<'_>]) -> Result<String> {
    let horizon = lines.iter().filter_map(|l| l.points.last()).map(|p| p.0).fold(2.0, f64::max);
    let top =
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.08 } else { 1.0 };
    render(SIZE, |root| {
        let mut chart =
            page_chart(root, title, 72).build_cartesian_2d(1f64..horizon, 0f64..top).map_err(draw_error)?;
        draw_mesh(&mut chart, "step t", y_label, human)?;
        for (k, line) in lines.iter().enumerate() {
            let color = color(k);
            chart
                .draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))
                .map_err(draw_error)?
                .label(line.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
        }
        draw_legend(&mut chart)
    })
}

/// The BPL/FPL/TPL chart of `tpl allocate --chart` and the demo (docs/cli.md §2.3, §2.5):
/// the budget ε_t and the three leakages over time, as an SVG document.
pub fn leakage_svg(title: &str, series: &tpl_core::LeakageSeries) -> Result<String> {
    let s = series;
    leakage_svg_of(title, s.len(), |t| [s.tpl()[t], s.bpl()[t], s.fpl()[t], s.epsilon()[t]])
}

/// [`leakage_svg`] of a [`tpl_core::CompactSeries`] (`tpl leakage --chart`, `tpl allocate
/// --chart`), as an SVG document.
pub fn compact_leakage_svg(title: &str, s: &tpl_core::CompactSeries) -> Result<String> {
    leakage_svg_of(title, s.len(), |t| [s.tpl_at(t), s.bpl()[t], s.fpl()[t], s.budgets().get(t)])
}

/// [`compact_leakage_svg`], written to `path`.
pub fn compact_leakage_chart(path: &Path, title: &str, s: &tpl_core::CompactSeries) -> Result<()> {
    write_file(path, &compact_leakage_svg(title, s)?)
}

/// The leakage chart of `len` steps whose (TPL, BPL, FPL, ε) at 0-based step t is `at(t)`;
/// at most [`MAX_POINTS`] points a line (block maxima).
fn leakage_svg_of(title: &str, len: usize, at: impl Fn(usize) -> [f64; 4]) -> Result<String> {
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
    line_svg(title, "leakage and budget at step t (ε units)", &lines)
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

/// `tpl postprocess --chart` (docs/cli.md §2.7) as an SVG document: one panel per cell,
/// stacked, each with the raw release, the estimate, its interval band and the truth when
/// given, over time. Long series are thinned to at most 2,000 evenly spaced steps.
pub fn estimate_svg(title: &str, cells: &[CellSeries<'_>]) -> Result<String> {
    render(SIZE, |root| {
        let root = root.titled(title, (FONT, 22)).map_err(draw_error)?;
        let panels = root.split_evenly((cells.len().max(1), 1));
        for (k, (cell, area)) in cells.iter().zip(&panels).enumerate() {
            draw_cell(area, cell, k == 0)?;
        }
        Ok(())
    })
}

/// [`estimate_svg`], written to `path`.
pub fn estimate_chart(path: &Path, title: &str, cells: &[CellSeries<'_>]) -> Result<()> {
    write_file(path, &estimate_svg(title, cells)?)
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
    let points = |v: &[f64]| -> Vec<(f64, f64)> {
        steps.iter().filter_map(|&t| Some(((t + 1) as f64, *v.get(t)?))).collect()
    };
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
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(1f64..(len.max(2) as f64), (lo - pad)..(hi + pad))
        .map_err(draw_error)?;
    draw_mesh(&mut chart, "step t", "count (people in the cell)", human)?;
    let blue = PALETTE[0];
    if let Some((lower, upper, level)) = &cell.band {
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
    line("raw release".into(), &cell.releases, GREY, 1)?;
    if let Some(truth) = &cell.truth {
        line("truth".into(), truth, PALETTE[1], 2)?;
    }
    line(format!("estimate ({})", cell.estimator), &cell.estimates, blue, 2)?;
    if legend { draw_legend(&mut chart) } else { Ok(()) }
}

/// The size of the charts of a report page: as wide as the others, less tall.
const REPORT_SIZE: (u32, u32) = (960, 380);

/// A named line of [`time_series_svg`]: (x, y) points, x ascending.
pub struct TimeSeries {
    /// Legend entry.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

impl TimeSeries {
    /// The line `name` through `points`.
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.to_string(), points }
    }
}

/// A shaded band of [`time_series_svg`] between two lines of (x, y) points (the x of
/// `lower` and `upper` alike, ascending), drawn in the first line's colour.
pub struct Band {
    /// Legend entry.
    pub name: String,
    /// The lower edge.
    pub lower: Vec<(f64, f64)>,
    /// The upper edge.
    pub upper: Vec<(f64, f64)>,
}

/// A chart of `series` over a linear step axis, with shaded `bands` (band k in the colour of
/// line k) and dashed horizontal `references` (name, y), each with its legend entry: the charts
/// of `tpl stream report` (docs/stream.md §10), as an SVG document. The vertical axis starts at 0
/// unless a value is negative, and holds every line, band and reference.
///
/// # Errors
/// A chart plotters cannot draw.
pub fn time_series_svg(
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[TimeSeries],
    bands: &[Band],
    references: &[(&str, f64)],
) -> Result<String> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).filter(|v| v.is_finite());
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let (x0, x1) = if x0 < x1 {
        (x0, x1)
    } else if x0.is_finite() {
        (x0 - 0.5, x0 + 0.5)
    } else {
        (0.0, 1.0)
    };
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(bands.iter().flat_map(|b| b.lower.iter().chain(&b.upper).map(|p| p.1)))
        .chain(references.iter().map(|r| r.1))
        .filter(|v| v.is_finite());
    let (lo, hi) = ys.fold((0.0f64, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let hi = if hi > lo { hi + (hi - lo) * 0.08 } else { lo + 1.0 };
    render(REPORT_SIZE, |root| {
        let mut chart = page_chart(root, title, 72).build_cartesian_2d(x0..x1, lo..hi).map_err(draw_error)?;
        draw_mesh(&mut chart, x_label, y_label, human)?;
        for (k, band) in bands.iter().enumerate() {
            let shade = color(k).mix(0.18);
            let outline: Vec<(f64, f64)> =
                band.lower.iter().chain(band.upper.iter().rev()).copied().collect();
            chart
                .draw_series(std::iter::once(Polygon::new(outline, shade.filled())))
                .map_err(draw_error)?
                .label(band.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 22, y + 5)], shade.filled()));
        }
        for (k, line) in series.iter().enumerate() {
            let c = color(k);
            chart
                .draw_series(LineSeries::new(line.points.iter().copied(), c.stroke_width(2)))
                .map_err(draw_error)?
                .label(line.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        }
        for (k, &(name, y)) in references.iter().enumerate() {
            let c = if k == 0 { GREY } else { color(series.len() + k) };
            chart
                .draw_series(DashedLineSeries::new([(x0, y), (x1, y)], 8, 6, c.stroke_width(2)))
                .map_err(draw_error)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2)));
        }
        draw_legend(&mut chart)
    })
}

/// A scatter plot of labelled points on logarithmic axes (the chart of `tpl compare --chart`,
/// docs/cli.md §2.9). Points with a non-positive or non-finite coordinate are left out (a log
/// axis cannot show them).
///
/// Each group has a colour of [`PALETTE`] and a marker shape. Each label is placed beside its
/// point where its box (estimated as characters × font size × 0.6 by the font size) meets no
/// other label, no marker, no joining line and stays inside the plotting area: right, left,
/// above, below, the diagonals, then farther out with a thin leader line to the point. A label
/// that fits nowhere is replaced by a number, listed with its label below the chart. The
/// legend (groups, reference line, numbered labels) is drawn below the plotting area. The
/// same input always gives the same document.
pub struct Scatter<'a> {
    /// Title above the chart.
    pub title: &'a str,
    /// Horizontal axis title (with its unit).
    pub x_label: &'a str,
    /// Vertical axis title (with its unit).
    pub y_label: &'a str,
    /// Legend names of the groups `0..groups.len()`.
    pub groups: &'a [&'a str],
    /// The points.
    pub points: &'a [Point],
    /// A dashed horizontal reference line (legend name, y).
    pub reference: Option<(&'a str, f64)>,
    /// Pairs of indices into `points` joined by a thin line in the colour of the first one's
    /// group (two points of one strategy); pairs with a point not drawn are left out.
    pub joins: &'a [(usize, usize)],
}

/// An axis-aligned box in pixels, y downwards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    /// Left.
    pub x0: f64,
    /// Top.
    pub y0: f64,
    /// Right.
    pub x1: f64,
    /// Bottom.
    pub y1: f64,
}

impl Rect {
    /// The square of half side `half` centred on `(x, y)`.
    fn around((x, y): (f64, f64), half: f64) -> Rect {
        Rect { x0: x - half, y0: y - half, x1: x + half, y1: y + half }
    }

    /// The box of `text` written with its top-left corner at `(x, y)` in a font of `px`
    /// pixels: characters × `px` × 0.6 wide, `px` high (a deterministic, generous estimate:
    /// the viewer's font is unknown).
    pub(crate) fn of_text(text: &str, (x, y): (f64, f64), px: f64) -> Rect {
        Rect { x0: x, y0: y, x1: x + text.chars().count() as f64 * px * 0.6, y1: y + px }
    }

    /// Whether the two boxes share interior points.
    pub(crate) fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// The box grown by `d` on every side.
    fn grown(&self, d: f64) -> Rect {
        Rect { x0: self.x0 - d, y0: self.y0 - d, x1: self.x1 + d, y1: self.y1 + d }
    }

    /// Whether `o` lies inside this box.
    fn contains(&self, o: &Rect) -> bool {
        self.x0 <= o.x0 && o.x1 <= self.x1 && self.y0 <= o.y0 && o.y1 <= self.y1
    }

    /// Whether the segment a–b passes through the box (Liang–Barsky clipping).
    fn crossed_by(&self, (ax, ay): (f64, f64), (bx, by): (f64, f64)) -> bool {
        let (dx, dy) = (bx - ax, by - ay);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [(-dx, ax - self.x0), (dx, self.x1 - ax), (-dy, ay - self.y0), (dy, self.y1 - ay)] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else if p < 0.0 {
                t0 = t0.max(q / p);
            } else {
                t1 = t1.min(q / p);
            }
        }
        t0 < t1
    }
}

/// A point in pixels, y downwards.
type Pixel = (f64, f64);

/// A line segment in pixels.
type Segment = (Pixel, Pixel);

/// A position tried for a text: its top-left corner and, away from the point, the end of
/// its leader line.
type Candidate = (Pixel, Option<Pixel>);

/// A position away from the point: leader length, top-left corner, leader end.
type Away = (f64, Pixel, Pixel);

/// Legend entries: key and text.
type Entries = Vec<(Key, String)>;

/// Where one point's label went.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Placed {
    /// The point's index among those placed.
    pub point: usize,
    /// The text drawn: the label, or its number in the legend below the chart.
    pub text: String,
    /// The text's box (its top-left corner is where it is drawn).
    pub rect: Rect,
    /// The leader line from the point to the text, when the text is not beside the point.
    pub leader: Option<Segment>,
}

/// The labels of a scatter plot, placed: those drawn in the plotting area, and the numbered
/// legend entries (number, label) of the labels replaced by a number or, where not even a
/// number fits, by nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Labels {
    /// Texts drawn beside (or led to) their points.
    pub placed: Vec<Placed>,
    /// Legend entries below the chart: (number, text).
    pub numbered: Vec<(usize, String)>,
}

/// The positions tried for a text of `w` × `h` pixels labelling the point `p`: top-left
/// corners, each with the leader line's end when the text is away from the point, up to
/// `reach` pixels away.
///
/// A point alone: beside it first (right, left, above, below, the diagonals), then, nearest
/// leader first, on rings in 16 directions and in columns right and left of it, one text
/// height apart. A point of a clump of touching markers spanning `clump` = (left, right)
/// pixels: in the columns right and left of the whole clump first, nearest leader first (the
/// leaders of a clump then fan out to stacks of labels instead of crossing them), then on the
/// rings.
fn candidates(
    (px, py): (f64, f64),
    (w, h): (f64, f64),
    reach: f64,
    clump: Option<(f64, f64)>,
) -> Vec<Candidate> {
    let g = f64::from(MARKER) + 3.0;
    let d = g * 0.7;
    let beside = [
        (px + g, py - h / 2.0),
        (px - g - w, py - h / 2.0),
        (px - w / 2.0, py - g - h),
        (px - w / 2.0, py + g),
        (px + d, py - d - h),
        (px - d - w, py - d - h),
        (px + d, py + d),
        (px - d - w, py + d),
    ];
    let mut rings: Vec<Away> = Vec::new();
    const DIRECTIONS: [f64; 16] = [
        0.0, 180.0, 90.0, 270.0, 45.0, 135.0, 225.0, 315.0, 22.5, 157.5, 202.5, 337.5, 67.5, 112.5, 247.5,
        292.5,
    ];
    let mut r = 22.0;
    while r <= reach {
        for deg in DIRECTIONS {
            let (sin, cos) = deg.to_radians().sin_cos();
            let (qx, qy) = (px + r * cos, py - r * sin);
            let x = if cos > 0.3 {
                qx
            } else if cos < -0.3 {
                qx - w
            } else {
                qx - w / 2.0
            };
            let y = if sin > 0.3 {
                qy - h
            } else if sin < -0.3 {
                qy
            } else {
                qy - h / 2.0
            };
            rings.push((r, (x, y), (qx, qy)));
        }
        r *= 1.3;
    }
    let (left, right) = clump.unwrap_or((px, px));
    let row = h + 4.0;
    let rows = (reach / row).ceil() as i32;
    let mut columns = Vec::new();
    for dx in [24.0, 40.0, 64.0, 100.0, 150.0, 220.0, 320.0, 460.0] {
        for m in (0..=rows).flat_map(|m| if m == 0 { vec![0] } else { vec![-m, m] }) {
            let qy = py + f64::from(m) * row;
            for (qx, x) in [(right + dx, right + dx), (left - dx, left - dx - w)] {
                columns.push(((qx - px).hypot(qy - py), (x, qy - h / 2.0), (qx, qy)));
            }
        }
    }
    let by_length = |v: &mut Vec<Away>| v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut far = if clump.is_some() {
        by_length(&mut columns);
        by_length(&mut rings);
        columns.extend(rings);
        columns
    } else {
        rings.extend(columns);
        by_length(&mut rings);
        rings
    };
    far.retain(|c| c.0 <= reach);
    let beside = if clump.is_some() { &beside[..0] } else { &beside[..] };
    beside
        .iter()
        .map(|&c| (c, None))
        .chain(far.into_iter().map(|(_, corner, end)| (corner, Some(end))))
        .collect()
}

/// The horizontal extent (left, right) of the clump of touching markers holding each point,
/// `None` for a point whose marker touches no other.
fn clumps(anchors: &[(f64, f64)]) -> Vec<Option<(f64, f64)>> {
    let mut clump: Vec<usize> = (0..anchors.len()).collect();
    // Merge until stable: each point takes the smallest clump index of the points it touches.
    loop {
        let mut changed = false;
        for i in 0..anchors.len() {
            for j in 0..anchors.len() {
                if near(anchors[i], anchors[j]) && clump[j] < clump[i] {
                    clump[i] = clump[j];
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    (0..anchors.len())
        .map(|i| {
            let members: Vec<f64> =
                (0..anchors.len()).filter(|&j| clump[j] == clump[i]).map(|j| anchors[j].0).collect();
            (members.len() > 1).then(|| {
                let half = f64::from(MARKER);
                (
                    members.iter().copied().fold(f64::INFINITY, f64::min) - half,
                    members.iter().copied().fold(f64::NEG_INFINITY, f64::max) + half,
                )
            })
        })
        .collect()
}

/// Whether two markers touch (a leader line may leave a clump of markers through its
/// neighbours).
fn near((ax, ay): (f64, f64), (bx, by): (f64, f64)) -> bool {
    (ax - bx).abs().max((ay - by).abs()) <= 2.0 * f64::from(MARKER) + 2.0
}

/// Places the texts `labels[i]` of the points at pixels `anchors[i]` (in this order: same
/// input, same placement) inside `area`, each where its box (away from the point, with a
/// leader line, when the point's marker touches another) meets no placed box (with 2 pixels
/// to spare), no marker, no segment of `lines` and no leader line already drawn, and its
/// leader line crosses no placed box and no marker outside the point's own clump. A label
/// that fits nowhere becomes its number in the legend; a number that fits nowhere is left out
/// (the legend says so).
pub(crate) fn place_labels(anchors: &[(f64, f64)], labels: &[&str], area: Rect, lines: &[Segment]) -> Labels {
    let px = LABEL_FONT / SVG_FONT_SCALE;
    let markers: Vec<Rect> = anchors.iter().map(|&a| Rect::around(a, f64::from(MARKER) + 1.0)).collect();
    let reach = (area.x1 - area.x0).hypot(area.y1 - area.y0);
    let mut out = Labels::default();
    let mut leaders: Vec<Segment> = Vec::new();
    let clumps = clumps(anchors);
    for (i, (&anchor, &label)) in anchors.iter().zip(labels).enumerate() {
        let fits = |text: &str, out: &Labels, leaders: &[Segment]| -> Option<Placed> {
            let w = Rect::of_text(text, (0.0, 0.0), px).x1;
            candidates(anchor, (w, px), reach, clumps[i]).into_iter().find_map(|((x, y), end)| {
                let rect = Rect::of_text(text, (x.round(), y.round()), px);
                let spaced = rect.grown(2.0);
                let leader = end.map(|(qx, qy)| {
                    let (dx, dy) = (qx - anchor.0, qy - anchor.1);
                    let r = dx.hypot(dy).max(1.0);
                    let edge = f64::from(MARKER) + 2.0;
                    ((anchor.0 + dx / r * edge, anchor.1 + dy / r * edge), (qx, qy))
                });
                let free = area.contains(&rect)
                    && !out.placed.iter().any(|p| spaced.overlaps(&p.rect))
                    && !markers.iter().any(|m| rect.overlaps(m))
                    && !lines.iter().chain(leaders).any(|&(a, b)| rect.crossed_by(a, b))
                    && leader.is_none_or(|(a, b)| {
                        !out.placed.iter().any(|p| p.rect.crossed_by(a, b))
                            && !(markers.iter().zip(anchors))
                                .any(|(m, &c)| !near(c, anchor) && m.crossed_by(a, b))
                    });
                free.then(|| Placed { point: i, text: text.to_string(), rect, leader })
            })
        };
        if let Some(p) = fits(label, &out, &leaders) {
            leaders.extend(p.leader);
            out.placed.push(p);
            continue;
        }
        let number = out.numbered.len() + 1;
        match fits(&number.to_string(), &out, &leaders) {
            Some(p) => {
                leaders.extend(p.leader);
                out.placed.push(p);
                out.numbered.push((number, label.to_string()));
            }
            None => out.numbered.push((number, format!("{label} (not marked: no room)"))),
        }
    }
    out
}

/// The ticks of a logarithmic axis over `[lo, hi]`: (labelled, grid lines only), each value
/// once. Under two decades, the 1, 2 and 5 multiples of the powers of ten (every single-digit
/// multiple when that gives fewer than three); otherwise the powers of ten, every k-th one so
/// that at most eight are labelled.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && hi > lo) {
        return (Vec::new(), Vec::new());
    }
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-12) && *v <= hi * (1.0 + 1e-12);
    let multiples = |mults: &[u32], every: i32| -> Vec<f64> {
        (k0..=k1)
            .filter(|k| k.rem_euclid(every) == 0)
            .flat_map(|k| mults.iter().map(move |&m| f64::from(m) * 10f64.powi(k)))
            .filter(inside)
            .collect()
    };
    let decades = (hi / lo).log10();
    let digits: Vec<u32> = (1..=9).collect();
    let mut bold = if decades < 2.0 {
        let b = multiples(&[1, 2, 5], 1);
        if b.len() >= 3 { b } else { multiples(&digits, 1) }
    } else {
        let powers = multiples(&[1], 1).len();
        let every = i32::try_from(powers.div_ceil(8).max(1)).unwrap_or(i32::MAX);
        multiples(&[1], every)
    };
    if bold.is_empty() {
        bold.push((lo * hi).sqrt());
    }
    let light = if decades <= 6.0 { multiples(&digits, 1) } else { multiples(&[1], 1) };
    let light = light.into_iter().filter(|v| !bold.iter().any(|b| (b - v).abs() <= 1e-9 * v)).collect();
    (bold, light)
}

/// The label of a tick of a logarithmic axis: plain (`0.002`, `500`) from 10⁻³ to 10⁴,
/// otherwise `2e-5`, `1e7`.
pub(crate) fn tick_label(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return human(v);
    }
    let k = (v.log10() + 1e-9).floor();
    let m = (v / 10f64.powf(k)).round();
    if (1e-3..=1e4).contains(&v) || (m * 10f64.powf(k) - v).abs() > 1e-9 * v {
        human(v)
    } else {
        format!("{m}e{k}")
    }
}

/// Everything of a scatter plot in pixels: the points drawn (index into the input, pixel,
/// group), the plotting area and the labels placed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScatterLayout {
    /// (index into [`Scatter::points`], pixel position, group) of each point drawn.
    pub points: Vec<(usize, (i32, i32), usize)>,
    /// The plotting area.
    pub area: Rect,
    /// The joining lines, in pixels, with the group whose colour they take.
    pub joins: Vec<(Segment, usize)>,
    /// The labels.
    pub labels: Labels,
}

/// The coordinate system of a scatter plot: both axes logarithmic, with the ticks of
/// [`log_ticks`].
type LogAxis = plotters::coord::combinators::WithKeyPoints<LogCoord<f64>>;

impl Scatter<'_> {
    /// The SVG document of the chart.
    pub fn svg(&self) -> Result<String> {
        self.render().map(|(svg, _)| svg)
    }

    /// The ranges of the axes: the points' (and the reference's) extent, a factor 2 wider on
    /// each side.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let shown: Vec<&Point> = self.points.iter().filter(|p| shown(p)).collect();
        let range = |f: fn(&Point) -> f64| {
            let lo = shown.iter().map(|p| f(p)).fold(f64::INFINITY, f64::min);
            let hi = shown.iter().map(|p| f(p)).fold(0.0, f64::max);
            if shown.is_empty() { (0.1, 10.0) } else { (lo / 2.0, hi * 2.0) }
        };
        let x = range(|p| p.x);
        let (mut y0, mut y1) = range(|p| p.y);
        if let Some((_, y)) = self.reference() {
            (y0, y1) = (y0.min(y / 2.0), y1.max(y * 2.0));
        }
        (x, (y0, y1))
    }

    /// The reference line, when its y can be drawn.
    fn reference(&self) -> Option<(&str, f64)> {
        self.reference.filter(|r| r.1.is_finite() && r.1 > 0.0)
    }

    /// The chart frame on the `SIZE` area at the top of `root`: title, axes, ticks.
    fn frame<'a, 'b>(
        &self,
        root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    ) -> std::result::Result<Chart<'a, 'b, LogAxis, LogAxis>, String> {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let axis = |lo: f64, hi: f64| {
            let (bold, light) = log_ticks(lo, hi);
            (lo..hi).log_scale().with_key_points(bold).with_light_points(light)
        };
        page_chart(root, self.title, 80).build_cartesian_2d(axis(x0, x1), axis(y0, y1)).map_err(draw_error)
    }

    /// Where everything goes on `chart` (built by [`Scatter::frame`]).
    fn layout(&self, chart: &Chart<'_, '_, LogAxis, LogAxis>) -> ScatterLayout {
        let points: Vec<(usize, (i32, i32), usize)> = (self.points.iter().enumerate())
            .filter(|(_, p)| shown(p))
            .map(|(i, p)| (i, chart.backend_coord(&(p.x, p.y)), p.group))
            .collect();
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let area = Rect {
            x0: f64::from(xs.start),
            y0: f64::from(ys.start),
            x1: f64::from(xs.end),
            y1: f64::from(ys.end),
        };
        let pixel = |i: usize| points.iter().find(|p| p.0 == i).map(|p| (f64::from(p.1.0), f64::from(p.1.1)));
        let joins: Vec<(Segment, usize)> = (self.joins.iter())
            .filter_map(|&(a, b)| Some(((pixel(a)?, pixel(b)?), self.points.get(a)?.group)))
            .collect();
        let anchors: Vec<(f64, f64)> = points.iter().map(|p| (f64::from(p.1.0), f64::from(p.1.1))).collect();
        let labels: Vec<&str> = points.iter().map(|p| self.points[p.0].label.as_str()).collect();
        let segments: Vec<Segment> = joins.iter().map(|j| j.0).collect();
        let labels = place_labels(&anchors, &labels, area, &segments);
        ScatterLayout { points, area, joins, labels }
    }

    /// The legend below the chart: (marker shape and colour, or the reference's dashes, or a
    /// number; text).
    fn legend(&self, layout: &ScatterLayout) -> (Entries, Entries) {
        let mut keys: Entries =
            self.groups.iter().enumerate().map(|(g, name)| (Key::Marker(g), name.to_string())).collect();
        if let Some((name, _)) = self.reference() {
            keys.push((Key::Dashes, name.to_string()));
        }
        let numbered =
            layout.labels.numbered.iter().map(|(n, text)| (Key::Number(*n), text.clone())).collect();
        (keys, numbered)
    }

    /// The document and its layout (two passes: the first finds how tall the legend is).
    pub(crate) fn render(&self) -> Result<(String, ScatterLayout)> {
        let mut scratch = String::new();
        let first = {
            let root = SVGBackend::with_string(&mut scratch, SIZE).into_drawing_area();
            let chart =
                self.frame(&root).map_err(|e| ReportError::Draw(format!("cannot draw the chart: {e}")))?;
            self.layout(&chart)
        };
        let (keys, numbered) = self.legend(&first);
        let legend_height = grid(&keys, 0).1 + grid(&numbered, 0).1;
        let size = (SIZE.0, SIZE.1 + legend_height + 8);
        let mut layout = None;
        let svg = render(size, |root| {
            let (top, _) = root.split_vertically(SIZE.1);
            let mut chart = self.frame(&top)?;
            let l = self.layout(&chart);
            draw_mesh(&mut chart, self.x_label, self.y_label, tick_label)?;
            if let Some((_, y)) = self.reference() {
                let (x0, x1) = self.ranges().0;
                let (a, b) = (chart.backend_coord(&(x0, y)), chart.backend_coord(&(x1, y)));
                draw_dashes(root, a, b)?;
            }
            for &(((ax, ay), (bx, by)), g) in &l.joins {
                let path = vec![(ax as i32, ay as i32), (bx as i32, by as i32)];
                root.draw(&PathElement::new(path, color(g).stroke_width(1))).map_err(draw_error)?;
            }
            for &(_, at, g) in &l.points {
                draw_marker(root, g, at)?;
            }
            for p in &l.labels.placed {
                if let Some(((ax, ay), (bx, by))) = p.leader {
                    let path =
                        vec![(ax.round() as i32, ay.round() as i32), (bx.round() as i32, by.round() as i32)];
                    root.draw(&PathElement::new(path, GREY.stroke_width(1))).map_err(draw_error)?;
                }
                draw_text(root, &p.text, (p.rect.x0 as i32, p.rect.y0 as i32))?;
            }
            let (keys, numbered) = self.legend(&l);
            let top = SIZE.1 as i32 + 4;
            let (positions, height) = grid(&keys, top);
            draw_keys(root, &keys, &positions)?;
            let (positions, _) = grid(&numbered, top + height as i32);
            draw_keys(root, &numbered, &positions)?;
            layout = Some(l);
            Ok(())
        })?;
        let layout = layout.ok_or_else(|| ReportError::Draw("cannot draw the chart".into()))?;
        Ok((svg, layout))
    }
}

/// Whether a point can be drawn on log axes.
fn shown(p: &Point) -> bool {
    p.x.is_finite() && p.y.is_finite() && p.x > 0.0 && p.y > 0.0
}

/// What stands before a legend entry of a scatter plot.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    /// The marker of a group.
    Marker(usize),
    /// The reference line's dashes.
    Dashes,
    /// The number of a label drawn as a number.
    Number(usize),
}

/// Width of the key before a legend entry's text, in pixels.
const KEY_WIDTH: f64 = 30.0;
/// Height of a legend row, in pixels.
const ROW: u32 = 20;

/// The top-left corners of the legend entries laid out in columns from `top` (in reading
/// order, row by row, as many columns as fit the chart's width), and the height they take.
fn grid(entries: &[(Key, String)], top: i32) -> (Vec<(i32, i32)>, u32) {
    if entries.is_empty() {
        return (Vec::new(), 0);
    }
    let px = LABEL_FONT / SVG_FONT_SCALE;
    let widest = entries.iter().map(|(_, t)| Rect::of_text(t, (0.0, 0.0), px).x1).fold(0.0, f64::max);
    let column = (KEY_WIDTH + widest + 24.0).ceil() as u32;
    let columns = ((SIZE.0 - 2 * 24) / column.max(1)).max(1) as usize;
    let rows = entries.len().div_ceil(columns);
    let positions = (0..entries.len())
        .map(|k| (24 + (k % columns) as i32 * column as i32, top + (k / columns) as i32 * ROW as i32))
        .collect();
    (positions, rows as u32 * ROW + 4)
}

/// Draws the legend entries at `positions`.
fn draw_keys(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[(Key, String)],
    positions: &[(i32, i32)],
) -> std::result::Result<(), String> {
    let px = LABEL_FONT / SVG_FONT_SCALE;
    let middle = (px / 2.0).round() as i32;
    for ((key, text), &(x, y)) in entries.iter().zip(positions) {
        match *key {
            Key::Marker(g) => draw_marker(root, g, (x + 10, y + middle))?,
            Key::Dashes => draw_dashes(root, (x, y + middle), (x + 22, y + middle))?,
            Key::Number(n) => draw_text(root, &n.to_string(), (x, y))?,
        }
        draw_text(root, text, (x + KEY_WIDTH as i32, y))?;
    }
    Ok(())
}

/// Writes `text` in the label font with its top-left corner at `at` (pixels).
fn draw_text(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    text: &str,
    at: (i32, i32),
) -> std::result::Result<(), String> {
    let style = (FONT, LABEL_FONT).into_font().color(&BLACK);
    root.draw(&Text::new(text.to_string(), at, style)).map_err(draw_error)
}

/// A dashed grey line from `a` to `b` (pixels).
fn draw_dashes(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    (ax, ay): (i32, i32),
    (bx, by): (i32, i32),
) -> std::result::Result<(), String> {
    let length = f64::from(bx - ax).hypot(f64::from(by - ay));
    let dashes = (length / 6.0).ceil().max(1.0) as i32;
    for k in (0..dashes).step_by(2) {
        let at = |j: i32| (ax + (bx - ax) * j / dashes, ay + (by - ay) * j / dashes);
        root.draw(&PathElement::new(vec![at(k), at(k + 1)], GREY.stroke_width(2))).map_err(draw_error)?;
    }
    Ok(())
}

/// The marker of group `g` at `(x, y)` (pixels): its colour, and its shape among filled
/// circle, square, triangle, diamond, ring, downward triangle, open square and cross.
fn draw_marker(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    g: usize,
    (x, y): (i32, i32),
) -> std::result::Result<(), String> {
    let c = color(g);
    let r = MARKER;
    let s = r * 5 / 6;
    let square = vec![(x - s, y - s), (x + s, y - s), (x + s, y + s), (x - s, y + s)];
    let drawn = match g % 8 {
        0 => root.draw(&Circle::new((x, y), r, c.filled())),
        1 => root.draw(&Polygon::new(square, c.filled())),
        2 => root.draw(&Polygon::new(
            vec![(x, y - r), (x + r, y + r * 3 / 4), (x - r, y + r * 3 / 4)],
            c.filled(),
        )),
        3 => root.draw(&Polygon::new(vec![(x, y - r), (x + r, y), (x, y + r), (x - r, y)], c.filled())),
        4 => root.draw(&Circle::new((x, y), r - 1, c.stroke_width(2))),
        5 => root.draw(&Polygon::new(
            vec![(x, y + r), (x + r, y - r * 3 / 4), (x - r, y - r * 3 / 4)],
            c.filled(),
        )),
        6 => {
            let mut closed = square;
            closed.push((x - s, y - s));
            root.draw(&PathElement::new(closed, c.stroke_width(2)))
        }
        _ => root.draw(&PathElement::new(vec![(x - s, y - s), (x + s, y + s)], c.stroke_width(2))).and_then(
            |()| root.draw(&PathElement::new(vec![(x - s, y + s), (x + s, y - s)], c.stroke_width(2))),
        ),
    };
    drawn.map_err(draw_error)
}

/// A chart's coordinate system, linear or logarithmic on either axis.
type Chart<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// The grid, ticks and axis titles every chart draws, in the same fonts; `format` writes the
/// tick labels. The grid lines and labels are the axes' key points, each labelled once.
fn draw_mesh<'a, 'b: 'a, X, Y>(
    chart: &mut Chart<'a, 'b, X, Y>,
    x_label: &str,
    y_label: &str,
    format: fn(f64) -> String,
) -> std::result::Result<(), String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| format(*v))
        .y_label_formatter(&|v| format(*v))
        .axis_desc_style((FONT, 16))
        .label_style((FONT, TICK_FONT))
        .max_light_lines(4)
        .draw()
        .map_err(draw_error)
}

/// The legend box of the line charts, upper right.
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

/// Runs `draw` on a white SVG canvas of `size` pixels and returns the document.
fn render(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> std::result::Result<(), String>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error).map_err(ReportError::Draw)?;
        draw(&root).map_err(|e| ReportError::Draw(format!("cannot draw the chart: {e}")))?;
        root.present().map_err(draw_error).map_err(ReportError::Draw)?;
    }
    Ok(svg)
}

fn draw_error<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}
