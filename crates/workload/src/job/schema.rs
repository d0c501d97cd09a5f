//! The JOB schema as the generator sees it: `schema.sql` parsed with
//! sqlparser into tables of integer and text columns (with their NOT NULL
//! and `varchar(n)` limits), plus the foreign keys IMDB has but the schema
//! does not declare ([`FOREIGN_KEYS`]), checked against the parsed tables.

use sqlparser::ast::{CharacterLength, ColumnOption, DataType, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::JobError;

/// A column's type, as far as generation cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    /// PostgreSQL `integer` (32 bits).
    Int,
    /// `text` (no limit) or `character varying(n)` (at most n characters).
    Text { max_chars: Option<usize> },
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    pub nullable: bool,
    /// The table this column references, if it is a foreign key.
    pub references: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// All tables of `schema.sql`, in its order.
#[derive(Debug, Clone)]
pub struct Schema {
    pub tables: Vec<Table>,
}

/// IMDB's foreign keys in JOB's schema: (table, column, referenced table).
/// Every referenced column is the table's `id`.
pub const FOREIGN_KEYS: &[(&str, &str, &str)] = &[
    ("aka_name", "person_id", "name"),
    ("aka_title", "movie_id", "title"),
    ("aka_title", "kind_id", "kind_type"),
    ("cast_info", "person_id", "name"),
    ("cast_info", "movie_id", "title"),
    ("cast_info", "person_role_id", "char_name"),
    ("cast_info", "role_id", "role_type"),
    ("complete_cast", "movie_id", "title"),
    ("complete_cast", "subject_id", "comp_cast_type"),
    ("complete_cast", "status_id", "comp_cast_type"),
    ("movie_companies", "movie_id", "title"),
    ("movie_companies", "company_id", "company_name"),
    ("movie_companies", "company_type_id", "company_type"),
    ("movie_info", "movie_id", "title"),
    ("movie_info", "info_type_id", "info_type"),
    ("movie_info_idx", "movie_id", "title"),
    ("movie_info_idx", "info_type_id", "info_type"),
    ("movie_keyword", "movie_id", "title"),
    ("movie_keyword", "keyword_id", "keyword"),
    ("movie_link", "movie_id", "title"),
    ("movie_link", "linked_movie_id", "title"),
    ("movie_link", "link_type_id", "link_type"),
    ("person_info", "person_id", "name"),
    ("person_info", "info_type_id", "info_type"),
    ("title", "kind_id", "kind_type"),
    ("title", "episode_of_id", "title"),
];

impl Schema {
    /// Parses `schema.sql`'s CREATE TABLE statements (other statements are
    /// refused) and attaches [`FOREIGN_KEYS`].
    pub fn parse(file: &str, sql: &str) -> Result<Schema, JobError> {
        let bad = |detail: String| JobError::Schema { file: file.to_string(), detail };
        let statements =
            Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| bad(format!("cannot parse: {e}")))?;
        let mut tables = Vec::new();
        for st in statements {
            let Statement::CreateTable(ct) = st else {
                return Err(bad(format!("expected only CREATE TABLE statements, found `{st}`")));
            };
            let mut columns = Vec::new();
            for c in &ct.columns {
                let ty = match &c.data_type {
                    DataType::Integer(_) | DataType::Int(_) => ColType::Int,
                    DataType::Text => ColType::Text { max_chars: None },
                    DataType::CharacterVarying(len) | DataType::Varchar(len) => ColType::Text {
                        max_chars: match len {
                            Some(CharacterLength::IntegerLength { length, .. }) => Some(*length as usize),
                            _ => None,
                        },
                    },
                    other => return Err(bad(format!("{}.{}: unsupported type {other}", ct.name, c.name))),
                };
                let not_null =
                    c.options.iter().any(|o| matches!(o.option, ColumnOption::NotNull | ColumnOption::PrimaryKey(_)));
                columns.push(Column { name: c.name.value.clone(), ty, nullable: !not_null, references: None });
            }
            tables.push(Table { name: ct.name.to_string(), columns });
        }
        let mut schema = Schema { tables };
        schema.attach_foreign_keys().map_err(bad)?;
        Ok(schema)
    }

    fn attach_foreign_keys(&mut self) -> Result<(), String> {
        for t in &self.tables {
            if t.column("id").is_none_or(|i| t.columns[i].ty != ColType::Int || t.columns[i].nullable) {
                return Err(format!("table {} has no `id integer NOT NULL` key", t.name));
            }
        }
        for &(table, column, target) in FOREIGN_KEYS {
            let missing = || format!("the generator's foreign key {table}.{column} -> {target} is not in the schema");
            let t = self.table(table).ok_or_else(missing)?;
            let c = self.tables[t].column(column).ok_or_else(missing)?;
            let r = self.table(target).ok_or_else(missing)?;
            if self.tables[t].columns[c].ty != ColType::Int {
                return Err(format!("foreign key {table}.{column} is not an integer column"));
            }
            self.tables[t].columns[c].references = Some(r);
        }
        Ok(())
    }

    pub fn table(&self, name: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_schema_without_the_foreign_keys_tables() {
        let err = Schema::parse("s.sql", "CREATE TABLE title (id integer NOT NULL PRIMARY KEY, title text);")
            .unwrap_err()
            .to_string();
        assert!(err.contains("aka_name.person_id"), "{err}");
    }

    #[test]
    fn refuses_other_statements() {
        let err = Schema::parse("s.sql", "DROP TABLE x;").unwrap_err().to_string();
        assert!(err.contains("only CREATE TABLE"), "{err}");
    }
}
