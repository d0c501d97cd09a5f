//! psql's aligned output format, so that ndpdb's shell prints results the
//! way its users read them every day:
//!
//! ```text
//!  id | name
//! ----+-------
//!   1 | alice
//!  10 | bob
//! (2 rows)
//! ```
//!
//! Headings are centred; numbers are right-aligned, everything else left;
//! NULL prints as nothing; data cells of the last column get no trailing
//! blank (psql's `print_aligned_text`, border 1).

/// One result to print: headings, whether each column is numeric, rows of
/// cells (None = NULL).
pub struct Table<'a> {
    pub headings: &'a [String],
    pub right_aligned: &'a [bool],
    pub rows: &'a [Vec<Option<String>>],
}

/// Display width of a cell (characters; ndpdb's text is UTF-8).
fn width(s: &str) -> usize {
    s.chars().count()
}

/// The table as psql prints it, footer included, ending in a blank line.
pub fn aligned(t: &Table<'_>) -> String {
    let n = t.headings.len();
    let mut widths: Vec<usize> = t.headings.iter().map(|h| width(h)).collect();
    for row in t.rows {
        for (i, c) in row.iter().enumerate().take(n) {
            widths[i] = widths[i].max(c.as_deref().map_or(0, width));
        }
    }
    let mut out = String::new();
    for (i, h) in t.headings.iter().enumerate() {
        let pad = widths[i] - width(h);
        let left = pad / 2;
        out.push_str(if i == 0 { " " } else { "| " });
        out.push_str(&" ".repeat(left));
        out.push_str(h);
        out.push_str(&" ".repeat(pad - left));
        out.push(' ');
    }
    trim_end_if_empty(&mut out, n);
    out.push('\n');
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            out.push('+');
        }
        out.push_str(&"-".repeat(w + 2));
    }
    out.push('\n');
    for row in t.rows {
        for (i, w) in widths.iter().enumerate() {
            let cell = row.get(i).and_then(|c| c.as_deref()).unwrap_or("");
            let pad = w - width(cell);
            out.push_str(if i == 0 { " " } else { "| " });
            if t.right_aligned.get(i).copied().unwrap_or(false) {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
                if i + 1 < n {
                    out.push(' ');
                }
            } else if i + 1 == n {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
                out.push(' ');
            }
        }
        out.push('\n');
    }
    let rows = t.rows.len();
    out.push_str(&format!("({rows} {})\n\n", if rows == 1 { "row" } else { "rows" }));
    out
}

/// A result without columns prints its heading line empty, as psql does.
fn trim_end_if_empty(out: &mut String, columns: usize) {
    if columns == 0 {
        out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn prints_as_psql_does() {
        let headings = s(&["id", "name"]);
        let rows = vec![vec![Some("1".to_string()), Some("alice".to_string())], vec![Some("10".to_string()), None]];
        let t = Table { headings: &headings, right_aligned: &[true, false], rows: &rows };
        assert_eq!(aligned(&t), " id | name  \n----+-------\n  1 | alice\n 10 | \n(2 rows)\n\n");
    }

    #[test]
    fn one_numeric_column_and_one_row() {
        let headings = s(&["?column?"]);
        let rows = vec![vec![Some("1".to_string())]];
        let t = Table { headings: &headings, right_aligned: &[true], rows: &rows };
        assert_eq!(aligned(&t), " ?column? \n----------\n        1\n(1 row)\n\n");
    }
}
