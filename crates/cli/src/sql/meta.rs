//! The shell's describe commands (`\d`, `\dt`, `\di`, `\dv`), printed as
//! psql prints them, from the session's catalog.

use ndpdb_sql::catalog::{Catalog, TableDef};

use super::print::{Table, aligned};

pub const HELP: &str = "\
General
  \\q                quit
  \\timing [on|off]  show how long each statement took
  \\i FILE           run the statements of FILE
Informational
  \\d [NAME]         list tables, views and indexes, or describe one
  \\dt, \\di, \\dv     list tables, indexes, views
SQL: end each statement with ';'. SET ndp = on | off | auto chooses where
scans run; EXPLAIN [ANALYZE] shows the plan, host and device parts.";

/// Text of a describe command, or the message psql would give.
pub fn describe(catalog: &dyn Catalog, cmd: &str, arg: Option<&str>) -> Result<String, String> {
    match (cmd, arg) {
        ("\\d" | "\\d+", Some(name)) => describe_one(catalog, name),
        ("\\d" | "\\d+", None) => relations(catalog, &["table", "view", "index"]),
        ("\\dt", _) => relations(catalog, &["table"]),
        ("\\di", _) => relations(catalog, &["index"]),
        ("\\dv", _) => relations(catalog, &["view"]),
        _ => Err(format!("invalid command {cmd}")),
    }
}

fn titled(title: &str, table: &Table<'_>, footer: bool) -> String {
    let body = aligned(table);
    let width = body.lines().nth(1).map_or(0, |l| l.chars().count());
    let pad = width.saturating_sub(title.chars().count()) / 2;
    let mut body = if footer {
        body
    } else {
        let mut lines: Vec<&str> = body.lines().collect();
        lines.retain(|l| !(l.is_empty() || l.starts_with('(') && l.ends_with(')')));
        lines.join("\n") + "\n"
    };
    body.insert_str(0, &format!("{}{title}\n", " ".repeat(pad)));
    body
}

fn relations(catalog: &dyn Catalog, kinds: &[&str]) -> Result<String, String> {
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    let row = |name: &str, kind: &str, table: Option<&str>| {
        let mut r = vec![Some("public".to_string()), Some(name.to_string()), Some(kind.to_string())];
        r.push(Some("ndpdb".to_string()));
        if let Some(t) = table {
            r.push(Some(t.to_string()));
        }
        r
    };
    let index_only = kinds == ["index"];
    for t in catalog.tables() {
        if kinds.contains(&"table") {
            rows.push(row(&t.name, "table", index_only.then_some(t.name.as_str())));
        }
        if kinds.contains(&"index") {
            for i in &t.indexes {
                rows.push(row(&i.name, "index", index_only.then_some(t.name.as_str())));
            }
        }
    }
    if kinds.contains(&"view") {
        for v in catalog.view_names() {
            rows.push(row(&v, "view", None));
        }
    }
    if rows.is_empty() {
        return Err("Did not find any relations.".into());
    }
    rows.sort_by(|a, b| a[1].cmp(&b[1]));
    let mut headings: Vec<String> = ["Schema", "Name", "Type", "Owner"].iter().map(|s| s.to_string()).collect();
    if index_only {
        headings.push("Table".into());
    }
    let right = vec![false; headings.len()];
    Ok(titled("List of relations", &Table { headings: &headings, right_aligned: &right, rows: &rows }, true))
}

fn describe_one(catalog: &dyn Catalog, name: &str) -> Result<String, String> {
    if let Some(t) = catalog.table(name) {
        return Ok(describe_table(&t));
    }
    if let Some(v) = catalog.view(name) {
        return Ok(format!("View \"public.{}\"\nView definition:\n {}\n", v.name, v.sql));
    }
    if let Some(i) = catalog.index(name) {
        let t = catalog.table(&i.table);
        let cols: Vec<String> = i
            .columns
            .iter()
            .map(|&c| t.as_ref().and_then(|t| t.columns.get(c)).map_or("?".into(), |c| c.name.clone()))
            .collect();
        return Ok(format!(
            "Index \"public.{}\"\n {}btree, for table \"public.{}\" ({})\n",
            i.name,
            if i.unique { "unique, " } else { "" },
            i.table,
            cols.join(", ")
        ));
    }
    Err(format!("Did not find any relation named \"{name}\"."))
}

fn describe_table(t: &TableDef) -> String {
    let headings: Vec<String> =
        ["Column", "Type", "Collation", "Nullable", "Default"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<Option<String>>> = t
        .columns
        .iter()
        .map(|c| {
            vec![
                Some(c.name.clone()),
                Some(c.ty.pg_name()),
                None,
                c.not_null.then(|| "not null".to_string()),
                c.default.clone(),
            ]
        })
        .collect();
    let right = vec![false; headings.len()];
    let mut out = titled(
        &format!("Table \"public.{}\"", t.name),
        &Table { headings: &headings, right_aligned: &right, rows: &rows },
        false,
    );
    let names = |cols: &[usize]| cols.iter().map(|&c| t.columns[c].name.clone()).collect::<Vec<_>>().join(", ");
    let mut lines = Vec::new();
    if let Some(pk) = &t.primary_key {
        lines.push(format!("    \"{}_pkey\" PRIMARY KEY, btree ({})", t.name, names(pk)));
    }
    // The primary key's index is in `indexes` too (the line above says it).
    for i in t.indexes.iter().filter(|i| t.primary_key.is_none() || i.name != format!("{}_pkey", t.name)) {
        lines.push(format!(
            "    \"{}\" {}btree ({})",
            i.name,
            if i.unique { "UNIQUE, " } else { "" },
            names(&i.columns)
        ));
    }
    if !lines.is_empty() {
        out.push_str("Indexes:\n");
        out.push_str(&lines.join("\n"));
        out.push('\n');
    }
    out
}
