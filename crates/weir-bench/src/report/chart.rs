//! SVG charts: one horizontal bar per row, the median as the bar and min–max as a whisker.
//!
//! plotters with its SVG backend only (no font rasterising, no bitmap), to keep compile time
//! down; text is emitted as SVG `<text>` and laid out by the viewer.

use plotters::prelude::*;
use std::path::Path;

/// One bar.
pub struct Bar {
    /// Row label.
    pub label: String,
    /// Median, min and max; `None` when the row has no figure (a system not available).
    pub value: Option<(f64, f64, f64)>,
}

/// A chart to draw as `bench-<name>.svg`.
pub struct Chart {
    /// File name stem.
    pub name: String,
    /// Caption.
    pub title: String,
    /// Axis description, with the unit.
    pub unit: String,
    /// The bars, top to bottom.
    pub bars: Vec<Bar>,
}

/// Draws `chart` to `path`.
pub fn draw(path: &Path, chart: &Chart) -> Result<(), String> {
    draw_inner(path, chart).map_err(|e| format!("chart {}: {e}", path.display()))
}

fn draw_inner(path: &Path, chart: &Chart) -> Result<(), Box<dyn std::error::Error>> {
    let n = chart.bars.len().max(1);
    let height = 90 + 26 * n as u32;
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = chart
        .bars
        .iter()
        .filter_map(|b| b.value.map(|(m, _, x)| m.max(x)))
        .fold(0.0, f64::max);
    let x_max = if top > 0.0 { top * 1.08 } else { 1.0 };
    let labels: Vec<String> = chart
        .bars
        .iter()
        .map(|b| match b.value {
            Some(_) => b.label.clone(),
            None => format!("{} (n/a)", b.label),
        })
        .collect();
    let mut c = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(300)
        .build_cartesian_2d(0f64..x_max, (0..n).into_segmented())?;
    let x_label = |v: &f64| {
        if x_max >= 1e4 {
            format!("{:.0}k", v / 1e3)
        } else {
            format!("{}", (v * 1e3).round() / 1e3)
        }
    };
    c.configure_mesh()
        .disable_y_mesh()
        .x_label_formatter(&x_label)
        .light_line_style(WHITE)
        .x_desc(chart.unit.as_str())
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            // Row 0 is drawn at the top.
            SegmentValue::CenterOf(j) if *j < n => labels[n - 1 - *j].clone(),
            _ => String::new(),
        })
        .draw()?;
    let color = RGBColor(70, 110, 180);
    // Row 0 at the top: bar i sits in segment n - 1 - i.
    c.draw_series(chart.bars.iter().enumerate().filter_map(|(i, b)| {
        let (m, _, _) = b.value?;
        let y = n - 1 - i;
        let mut r = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y)),
                (m, SegmentValue::Exact(y + 1)),
            ],
            color.mix(0.75).filled(),
        );
        r.set_margin(4, 4, 0, 0);
        Some(r)
    }))?;
    c.draw_series(chart.bars.iter().enumerate().filter_map(|(i, b)| {
        let (_, lo, hi) = b.value?;
        let y = SegmentValue::CenterOf(n - 1 - i);
        Some(PathElement::new(
            vec![(lo, y.clone()), (hi, y)],
            BLACK.stroke_width(2),
        ))
    }))?;
    root.present()?;
    Ok(())
}
