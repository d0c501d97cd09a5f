//! Random schemas and their rows: 2-4 tables `t0..`, each with a few
//! columns of the supported types, some NOT NULL, PRIMARY KEY or UNIQUE,
//! and rows drawn from small pools so that equal values, duplicate rows,
//! join partners, LIKE matches and NULLs all occur.
//!
//! Values are chosen so that no engine difference is a legitimate one:
//! integers are small (no overflow in the generator's arithmetic), floats
//! are multiples of 0.25 (every sum of them is exact, so the order of
//! summation cannot change a result), texts come from a vocabulary with
//! shared prefixes and letters of both cases (C collation on both
//! engines), dates lie within a few weeks.

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus;

/// What an expression's value is, as far as the generator types it. The
/// integer widths matter only for storage; expressions mix them freely.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Int,
    Num,
    Float,
    Bool,
    Date,
    Text,
}

impl Kind {
    /// Integer, numeric or float: comparable and summable with each other.
    pub fn is_number(self) -> bool {
        matches!(self, Kind::Int | Kind::Num | Kind::Float)
    }
}

/// A column's declared SQL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    Small,
    Int,
    Big,
    Numeric(u8, u8),
    Float,
    Bool,
    Date,
    Varchar(u8),
    Text,
}

impl SqlType {
    pub fn kind(self) -> Kind {
        match self {
            SqlType::Small | SqlType::Int | SqlType::Big => Kind::Int,
            SqlType::Numeric(..) => Kind::Num,
            SqlType::Float => Kind::Float,
            SqlType::Bool => Kind::Bool,
            SqlType::Date => Kind::Date,
            SqlType::Varchar(_) | SqlType::Text => Kind::Text,
        }
    }

    pub fn sql(self) -> String {
        match self {
            SqlType::Small => "smallint".into(),
            SqlType::Int => "integer".into(),
            SqlType::Big => "bigint".into(),
            SqlType::Numeric(p, s) => format!("numeric({p},{s})"),
            SqlType::Float => "double precision".into(),
            SqlType::Bool => "boolean".into(),
            SqlType::Date => "date".into(),
            SqlType::Varchar(n) => format!("varchar({n})"),
            SqlType::Text => "text".into(),
        }
    }
}

const TYPES: &[SqlType] = &[
    SqlType::Small,
    SqlType::Int,
    SqlType::Int,
    SqlType::Big,
    SqlType::Numeric(8, 2),
    SqlType::Numeric(12, 3),
    SqlType::Float,
    SqlType::Bool,
    SqlType::Date,
    SqlType::Varchar(12),
    SqlType::Text,
    SqlType::Text,
];

/// Texts: shared prefixes and suffixes for LIKE, both cases, blanks for
/// trim, `%`/`_` as data, the empty string. None longer than 12 bytes.
pub const VOCABULARY: &[&str] =
    &["", "a", "ab", "abc", "abd", "b", "ba", "bab", "B", "Ab", "x y", " a ", "hello", "Hello", "a%b", "a_b", "zz"];

/// LIKE patterns over the vocabulary.
pub const PATTERNS: &[&str] = &["a%", "%b", "_b%", "a_", "%", "%l%", "hello", "H%", "%\\%%", "a\\_b", "", "%a%b"];

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    pub not_null: bool,
    pub unique: bool,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// Index of the PRIMARY KEY column, if any.
    pub primary_key: Option<usize>,
    /// Each row as SQL literals (`NULL`, `3`, `'ab'`, ...).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn create_sql(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut s = format!("{} {}", c.name, c.ty.sql());
                if self.primary_key == Some(i) {
                    s.push_str(" PRIMARY KEY");
                } else {
                    if c.not_null {
                        s.push_str(" NOT NULL");
                    }
                    if c.unique {
                        s.push_str(" UNIQUE");
                    }
                }
                s
            })
            .collect();
        format!("CREATE TABLE {} ({})", self.name, cols.join(", "))
    }

    /// The INSERT of all rows (None for an empty table).
    pub fn insert_sql(&self) -> Option<String> {
        if self.rows.is_empty() {
            return None;
        }
        let rows: Vec<String> = self.rows.iter().map(|r| format!("({})", r.join(", "))).collect();
        Some(format!("INSERT INTO {} VALUES {}", self.name, rows.join(", ")))
    }
}

/// A generated database: its tables, with rows.
#[derive(Debug, Clone)]
pub struct Schema {
    pub tables: Vec<Table>,
}

impl Schema {
    /// Every statement that builds it, in order.
    pub fn setup_sql(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.tables {
            out.push(t.create_sql());
            out.extend(t.insert_sql());
        }
        out
    }
}

/// Quotes a text literal.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A random literal of a declared type (never NULL).
pub fn literal(rng: &mut Xoshiro256PlusPlus, ty: SqlType) -> String {
    match ty {
        SqlType::Small => rng.random_range(-5i32..=12).to_string(),
        SqlType::Int | SqlType::Big if rng.random_ratio(1, 12) => rng.random_range(-1000i32..=1000).to_string(),
        SqlType::Int | SqlType::Big => rng.random_range(-5i32..=12).to_string(),
        SqlType::Numeric(_, s) => {
            let cents = rng.random_range(-2000i64..=2000);
            let v =
                if s >= 2 { format!("{}.{:02}", cents / 100, (cents % 100).abs()) } else { (cents / 100).to_string() };
            if cents < 0 && !v.starts_with('-') { format!("-{v}") } else { v }
        }
        SqlType::Float => format!("{}", f64::from(rng.random_range(-200i32..=200)) * 0.25),
        SqlType::Bool => if rng.random_bool(0.5) { "true" } else { "false" }.into(),
        SqlType::Date => format!("'2024-01-{:02}'", rng.random_range(1u32..=31)),
        SqlType::Varchar(_) | SqlType::Text => quote(VOCABULARY[rng.random_range(0..VOCABULARY.len())]),
    }
}

/// A random schema of `tables` tables with up to `rows_max` rows each.
pub fn generate(rng: &mut Xoshiro256PlusPlus, tables: usize, rows_max: usize) -> Schema {
    let tables = (0..tables).map(|i| table(rng, i, rows_max)).collect();
    Schema { tables }
}

fn table(rng: &mut Xoshiro256PlusPlus, index: usize, rows_max: usize) -> Table {
    let mut columns = Vec::new();
    let primary_key = rng.random_bool(0.4).then_some(0);
    if primary_key.is_some() {
        columns.push(Column { name: "id".into(), ty: SqlType::Int, not_null: true, unique: true });
    }
    for c in 0..rng.random_range(2..=5usize) {
        let ty = TYPES[rng.random_range(0..TYPES.len())];
        let unique = ty.kind() == Kind::Int && rng.random_ratio(1, 8);
        columns.push(Column { name: format!("c{c}"), ty, not_null: rng.random_ratio(1, 5), unique });
    }
    let n = if rng.random_ratio(1, 15) { 0 } else { rng.random_range(1..=rows_max.max(1)) };
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(n);
    for r in 0..n {
        let row = if r > 0 && rng.random_ratio(1, 6) {
            rows[rng.random_range(0..r)].clone()
        } else {
            columns.iter().map(|c| value(rng, c)).collect()
        };
        rows.push(row);
    }
    let mut t = Table { name: format!("t{index}"), columns, primary_key, rows };
    make_keys_unique(&mut t);
    t
}

fn value(rng: &mut Xoshiro256PlusPlus, c: &Column) -> String {
    if !c.not_null && rng.random_ratio(1, 6) { "NULL".into() } else { literal(rng, c.ty) }
}

/// Unique and key columns get distinct values: the row's number (NULLs
/// stay where allowed, as UNIQUE permits several).
fn make_keys_unique(t: &mut Table) {
    for (i, c) in t.columns.iter().enumerate() {
        if !c.unique {
            continue;
        }
        for (r, row) in t.rows.iter_mut().enumerate() {
            if row[i] != "NULL" || c.not_null {
                // Spread out so that joins on them still find partners.
                row[i] = ((r as i64 * 3) % 17 + (r as i64 / 17) * 17 - 2).to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn schemas_are_deterministic_and_keys_unique() {
        let a = generate(&mut Xoshiro256PlusPlus::seed_from_u64(7), 4, 20);
        let b = generate(&mut Xoshiro256PlusPlus::seed_from_u64(7), 4, 20);
        assert_eq!(a.setup_sql(), b.setup_sql());
        for t in &a.tables {
            for (i, c) in t.columns.iter().enumerate() {
                if c.unique {
                    let mut seen: Vec<&String> = t.rows.iter().map(|r| &r[i]).filter(|v| *v != "NULL").collect();
                    let n = seen.len();
                    seen.sort();
                    seen.dedup();
                    assert_eq!(seen.len(), n, "{}.{} not unique", t.name, c.name);
                }
            }
        }
    }

    #[test]
    fn literals_fit_their_types() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for _ in 0..200 {
            let n = literal(&mut rng, SqlType::Numeric(8, 2));
            assert!(n.parse::<f64>().is_ok_and(|v| v.abs() <= 20.0), "{n}");
            let f = literal(&mut rng, SqlType::Float);
            assert!(f.parse::<f64>().is_ok_and(|v| (v * 4.0).fract() == 0.0), "{f}");
        }
    }
}
