//! The report: a Markdown section per scenario in `BENCHMARKS.md`, and an SVG chart beside it.
//!
//! A section is everything needed to trust and repeat its numbers: date, machine (`nproc`, CPU
//! model, kernel), the exact command, CPU pressure before and after, the tables, the ratios, the
//! chart. Each section sits between `<!-- weir-bench:<scenario>:begin/end -->` markers; running a
//! scenario again replaces its section and leaves the others as they were.

pub mod chart;
pub mod table;

use crate::procfs::{self, Pressure};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

/// The machine and the moment a scenario started, captured before it runs.
pub struct Context {
    date: String,
    pressure_before: Option<Pressure>,
    started: Instant,
    /// Machine busy time, and this process's and its waited children's CPU time, at the start.
    busy_before: Option<f64>,
    own_before: f64,
}

/// CPU seconds used by the bench: this process and the server children it has stopped.
fn own_cpu_seconds() -> f64 {
    crate::clock::process_cpu_ns() as f64 / 1e9 + procfs::waited_children_cpu_seconds()
}

impl Context {
    /// Captures the date and the CPU pressure before the scenario.
    pub fn capture() -> Self {
        Self {
            date: httpdate::fmt_http_date(SystemTime::now()),
            pressure_before: procfs::cpu_pressure(),
            started: Instant::now(),
            busy_before: procfs::machine_busy_seconds(),
            own_before: own_cpu_seconds(),
        }
    }

    /// CPU that processes other than the bench took during the run, in % of one CPU; call once
    /// every server has been stopped (and so waited for).
    fn others_percent(&self, secs: f64) -> Option<f64> {
        let busy = procfs::machine_busy_seconds()? - self.busy_before?;
        let own = own_cpu_seconds() - self.own_before;
        Some((busy - own).max(0.0) / secs * 100.0)
    }

    /// The header lines of a section: date, machine, command, pressure.
    fn header(&self, command: &str) -> String {
        let uname = rustix::system::uname();
        let kernel = uname.release().to_string_lossy();
        let mut s = format!(
            "- Date: {}\n- Machine: {} CPUs (`nproc`), {}, Linux {kernel}\n- Command: `{command}`\n",
            self.date,
            procfs::nproc(),
            procfs::cpu_model(),
        );
        let secs = self.started.elapsed().as_secs_f64();
        s.push_str(&pressure_line(
            self.pressure_before,
            procfs::cpu_pressure(),
            secs,
        ));
        if let Some(pct) = self.others_percent(secs) {
            s.push_str(&format!(
                "- Other processes' CPU during the run: {pct:.0}% of one CPU on average (the \
                 machine's busy time from `/proc/stat` minus the bench's client and servers; \
                 kernel work for the bench's own traffic that is charged to no process counts \
                 here too, so it is not 0 on an idle machine)\n"
            ));
        }
        s
    }
}

fn pressure_line(before: Option<Pressure>, after: Option<Pressure>, secs: f64) -> String {
    match (before, after) {
        (Some(b), Some(a)) => {
            let during = (a.total_us.saturating_sub(b.total_us)) as f64 / 1e6 / secs * 100.0;
            format!(
                "- CPU pressure (`/proc/pressure/cpu`, some): before avg10 {:.2}% avg60 {:.2}%; \
                 after avg10 {:.2}% avg60 {:.2}%; a task waited for a CPU {during:.0}% of the \
                 run's {secs:.0} s (the bench's own client and servers share the CPUs, so some \
                 waiting is expected; a high *before* figure means another tenant was busy)\n",
                b.avg10, b.avg60, a.avg10, a.avg60
            )
        }
        _ => "- CPU pressure: `/proc/pressure/cpu` not available on this kernel\n".into(),
    }
}

/// One scenario's section.
pub struct Section {
    /// Scenario name: the marker key and the chart's file name.
    pub scenario: &'static str,
    /// Heading.
    pub title: String,
    /// Markdown after the header: settings, tables, ratios, notes.
    pub body: String,
    /// Charts to draw next to the report, with their Markdown alt text.
    pub charts: Vec<chart::Chart>,
}

/// Where the report goes.
#[derive(Clone, Debug)]
pub struct Target {
    /// The Markdown file.
    pub path: PathBuf,
    /// The command line to print beside the figures.
    pub command: String,
}

impl Target {
    fn chart_path(&self, name: &str) -> PathBuf {
        self.path
            .parent()
            .unwrap_or(Path::new("."))
            .join(format!("bench-{name}.svg"))
    }
}

/// Prints the section, writes its charts, and puts it into the report file.
pub fn publish(target: &Target, ctx: &Context, section: &Section) -> io::Result<()> {
    let mut text = format!(
        "## {}\n\n{}\n{}",
        section.title,
        ctx.header(&target.command),
        section.body
    );
    if let Some(dir) = target.path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    for c in &section.charts {
        let path = target.chart_path(&c.name);
        chart::draw(&path, c).map_err(io::Error::other)?;
        text.push_str(&format!("\n![{}](bench-{}.svg)\n", c.title, c.name));
    }
    println!("{text}");
    let old = std::fs::read_to_string(&target.path).unwrap_or_default();
    let new = replace_section(&old, section.scenario, &text);
    std::fs::write(&target.path, new)
}

/// `old` with the section for `scenario` replaced by `text`, or `text` appended.
pub fn replace_section(old: &str, scenario: &str, text: &str) -> String {
    let begin = format!("<!-- weir-bench:{scenario}:begin -->");
    let end = format!("<!-- weir-bench:{scenario}:end -->");
    let block = format!("{begin}\n{}\n{end}", text.trim_end());
    if let (Some(b), Some(e)) = (old.find(&begin), old.find(&end))
        && b < e
    {
        return format!("{}{block}{}", &old[..b], &old[e + end.len()..]);
    }
    let mut out = if old.trim().is_empty() {
        PREAMBLE.to_string()
    } else {
        old.trim_end().to_string() + "\n"
    };
    out.push('\n');
    out.push_str(&block);
    out.push('\n');
    out
}

const PREAMBLE: &str = "# Benchmarks\n\n\
Written by `weir-bench` (`crates/weir-bench`); each section is replaced when its scenario runs \
again. Every figure comes from the run whose command is printed beside it. Systems are \
interleaved round by round, forward then backward (A B C, C B A, …), and each cell shows the \
median and, in brackets, the min–max over the rounds; ratios are taken round by round against \
the baseline of the same round, which is what to trust on a shared machine. Only full runs \
write here: `--quick` and `--tiny` runs go to a scratch report unless given `--report`.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_or_appends_sections() {
        let a = replace_section("", "upload", "## up\n1");
        assert!(a.starts_with("# Benchmarks"));
        let b = replace_section(&a, "local", "## local\n2");
        let c = replace_section(&b, "upload", "## up\n3");
        assert!(c.contains("## up\n3") && !c.contains("## up\n1") && c.contains("## local\n2"));
        assert!(c.find("## up").unwrap() < c.find("## local").unwrap());
    }
}
