//! Markdown tables.

/// A table: a header row and rows of cells, all strings.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headings.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are left empty.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as GitHub-flavoured Markdown, columns padded for reading in a terminal.
    pub fn markdown(&self) -> String {
        let cols = self.header.len();
        let cell = |r: &Vec<String>, i: usize| r.get(i).cloned().unwrap_or_default();
        let width: Vec<usize> = (0..cols)
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| cell(r, i).chars().count())
                    .chain([self.header[i].chars().count(), 3])
                    .max()
                    .unwrap_or(3)
            })
            .collect();
        let line = |cells: Vec<String>| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&width)
                .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut s = line(self.header.clone());
        s.push_str(&line(width.iter().map(|w| "-".repeat(*w)).collect()));
        for r in &self.rows {
            s.push_str(&line((0..cols).map(|i| cell(r, i)).collect()));
        }
        s
    }
}
