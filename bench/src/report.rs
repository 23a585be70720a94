//! The report: one table per figure, each row with its ratio and, where one is set,
//! its target and whether it is met; then the machine and a summary of the targets.
//!
//! Rendered as aligned text for the terminal and as Markdown for `BENCHMARKS.md`.

use std::fmt::Write as _;

/// A target and where a figure stands against it.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The target, in words (`(a)/(b) >= 0.9`).
    pub target: String,
    /// The figure it was checked against, in words.
    pub figure: String,
    /// Whether the figure meets it.
    pub met: bool,
}

impl Verdict {
    /// The verdict as one cell: `>= 0.9: MET`.
    pub fn cell(&self) -> String {
        format!(
            "{}: {}",
            self.target,
            if self.met { "MET" } else { "MISSED" }
        )
    }
}

/// One figure's table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The figure's title.
    pub title: String,
    /// Column headings.
    pub columns: Vec<String>,
    /// Rows of cells, as many as the columns.
    pub rows: Vec<Vec<String>>,
    /// Sentences printed under the table.
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with these headings.
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Self {
        Self {
            title: title.into(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// Appends a row; missing cells are left empty.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }

    /// Appends a note.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// Everything one run measured.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Lines about the machine and the run.
    pub header: Vec<String>,
    /// One table per figure.
    pub tables: Vec<Table>,
    /// Every target checked.
    pub verdicts: Vec<Verdict>,
}

impl Report {
    /// Aligned text for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            let _ = writeln!(out, "{line}");
        }
        for table in &self.tables {
            let _ = writeln!(out, "\n{}", table.title);
            let widths: Vec<usize> = (0..table.columns.len())
                .map(|i| {
                    table
                        .rows
                        .iter()
                        .map(|r| r[i].chars().count())
                        .chain([table.columns[i].chars().count()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let line = |cells: &[String]| {
                let padded: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .map(|(cell, width)| format!("{cell:<width$}"))
                    .collect();
                format!("  {}", padded.join("  ").trim_end())
            };
            let _ = writeln!(out, "{}", line(&table.columns));
            for row in &table.rows {
                let _ = writeln!(out, "{}", line(row));
            }
            for note in &table.notes {
                let _ = writeln!(out, "  * {note}");
            }
        }
        let _ = writeln!(out, "\nTargets");
        for verdict in &self.verdicts {
            let _ = writeln!(
                out,
                "  {:<7} {}  ({})",
                status(verdict),
                verdict.target,
                verdict.figure
            );
        }
        out
    }

    /// Markdown: a heading and a table per figure, then the targets.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            let _ = writeln!(out, "{line}  ");
        }
        for table in &self.tables {
            let _ = writeln!(out, "\n### {}\n", table.title);
            let _ = writeln!(out, "| {} |", table.columns.join(" | "));
            let _ = writeln!(out, "|{}", " --- |".repeat(table.columns.len()));
            for row in &table.rows {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
            if !table.notes.is_empty() {
                let _ = writeln!(out);
                for note in &table.notes {
                    let _ = writeln!(out, "- {note}");
                }
            }
        }
        let _ = writeln!(out, "\n### Targets\n");
        let _ = writeln!(out, "| target | figure | |\n| --- | --- | --- |");
        for verdict in &self.verdicts {
            let _ = writeln!(
                out,
                "| {} | {} | **{}** |",
                verdict.target,
                verdict.figure,
                status(verdict)
            );
        }
        out
    }
}

fn status(verdict: &Verdict) -> &'static str {
    if verdict.met { "MET" } else { "MISSED" }
}

/// `1234.5` as `1,235`.
pub fn thousands(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".to_owned();
    }
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// A duration in microseconds, shown in the unit that reads best.
pub fn micros(us: f64) -> String {
    if !us.is_finite() {
        "n/a".to_owned()
    } else if us < 1.0 {
        format!("{:.0} ns", us * 1000.0)
    } else if us < 1000.0 {
        format!("{us:.1} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Bytes in decimal megabytes (or kilobytes below one megabyte), as the targets are given.
pub fn bytes(value: f64) -> String {
    if !value.is_finite() {
        "n/a".to_owned()
    } else if value.abs() < 1e6 {
        format!("{:.1} kB", value / 1e3)
    } else {
        format!("{:.1} MB", value / 1e6)
    }
}

/// A ratio with two decimals, `n/a` when undefined.
pub fn ratio(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.2}")
    } else {
        "n/a".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234.6), "1,235");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_000_000.0), "1,000,000");
        assert_eq!(micros(0.25), "250 ns");
        assert_eq!(micros(12.34), "12.3 µs");
        assert_eq!(micros(2500.0), "2.50 ms");
        assert_eq!(bytes(2000.0), "2.0 kB");
        assert_eq!(bytes(3.5e6), "3.5 MB");
        assert_eq!(ratio(f64::NAN), "n/a");
    }

    #[test]
    fn tables_render_in_both_forms() {
        let mut table = Table::new("Figure", &["name", "value"]);
        table.row(vec!["a".into(), "1".into()]);
        table.row(vec!["long name".into()]);
        table.note("a note");
        let report = Report {
            header: vec!["machine".into()],
            tables: vec![table],
            verdicts: vec![Verdict {
                target: "x < 1".into(),
                figure: "x = 0.5".into(),
                met: true,
            }],
        };
        let text = report.to_text();
        assert!(text.contains("  name       value"), "{text}");
        assert!(text.contains("MET"), "{text}");
        let markdown = report.to_markdown();
        assert!(markdown.contains("| name | value |"), "{markdown}");
        assert!(markdown.contains("| long name |  |"), "{markdown}");
    }
}
