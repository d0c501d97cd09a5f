//! The rows of each system table, from the session's [`Relations`]. Values
//! are PostgreSQL 15's for what ndpdb has in common with it (a heap table
//! per table, a B-tree per index, the C collation, UTF-8) and its defaults
//! for what ndpdb has not (no TOAST, triggers, rules, row security,
//! partitions or comments).

use super::oids::{self, *};
use super::{DATABASE, OWNER, RelKind, Relation, Relations};
use crate::types::{DataType, Value};

fn o(x: i64) -> Value {
    Value::Int64(x)
}
fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}
fn b(x: bool) -> Value {
    Value::Bool(x)
}
fn i2(x: i64) -> Value {
    Value::Int16(x as i16)
}
fn i4(x: i64) -> Value {
    Value::Int32(x as i32)
}
const N: Value = Value::Null;

pub fn empty(_: &Relations) -> Vec<Vec<Value>> {
    vec![]
}

pub fn namespaces(_: &Relations) -> Vec<Vec<Value>> {
    NAMESPACES.iter().map(|(oid, name)| vec![o(*oid), t(name), o(OWNER_OID), N]).collect()
}

fn user_relation(r: &Relation) -> bool {
    !matches!(r.kind, RelKind::System(_))
}

pub fn classes(rels: &Relations) -> Vec<Vec<Value>> {
    rels.all.iter().map(class_row).collect()
}

fn class_row(r: &Relation) -> Vec<Value> {
    let (am, has_index, tuples) = match &r.kind {
        RelKind::Table(td) => (HEAP_AM, !td.indexes.is_empty(), td.stats.as_ref().map_or(-1.0, |s| s.rows)),
        RelKind::Index(..) => (BTREE_AM, false, -1.0),
        RelKind::View(_) => (0, false, -1.0),
        RelKind::System(_) => (if r.relkind() == "r" { HEAP_AM } else { 0 }, false, -1.0),
    };
    let filenode = if r.relkind() == "v" { 0 } else { r.oid };
    vec![
        o(r.oid),
        t(&r.name),
        o(r.namespace),
        o(0),
        o(0),
        o(OWNER_OID),
        o(am),
        o(filenode),
        o(0),
        i4(0),
        Value::Float64(tuples),
        i4(0),
        o(0),
        b(has_index),
        b(false),
        t("p"),
        t(r.relkind()),
        i2(r.columns.len() as i64),
        i2(0),
        b(r.relkind() == "v"),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        t(if r.relkind() == "r" { "d" } else { "n" }),
        b(false),
        o(0),
        N,
        N,
        N,
    ]
}

/// `pg_attribute`: the columns of every relation (system columns, whose
/// numbers are negative in PostgreSQL, are not listed).
pub fn attributes(rels: &Relations) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in &rels.all {
        for (i, c) in r.columns.iter().enumerate() {
            let ty = type_row(c.ty);
            let collation = if ty.7 != 0 { DEFAULT_COLLATION } else { 0 };
            out.push(vec![
                o(r.oid),
                t(&c.name),
                o(ty.0),
                i4(-1),
                i2(ty.2 as i64),
                i2(i as i64 + 1),
                i4(0),
                i4(-1),
                i4(oids::typmod(c.ty) as i64),
                b(ty.3),
                t(ty.8),
                t(ty.9),
                t(""),
                b(c.not_null),
                b(c.default.is_some()),
                b(false),
                t(""),
                t(""),
                b(false),
                b(true),
                i4(0),
                o(collation),
                N,
                N,
            ]);
        }
    }
    out
}

/// The `pg_type` row of a column type.
fn type_row(ty: DataType) -> &'static TypeRow {
    let oid = ty.pg_oid() as i64;
    TYPES.iter().find(|r| r.0 == oid).unwrap_or(&TYPES[12])
}

pub fn types(_: &Relations) -> Vec<Vec<Value>> {
    TYPES
        .iter()
        .map(|&(oid, name, len, byval, cat, preferred, array, collation, align, storage)| {
            let io = |suffix: &str| {
                let sep = if matches!(name, "date" | "timestamp" | "interval" | "numeric") { "_" } else { "" };
                t(&format!("{name}{sep}{suffix}"))
            };
            vec![
                o(oid),
                t(name),
                o(PG_CATALOG),
                o(OWNER_OID),
                i2(len as i64),
                b(byval),
                t(if cat == "P" { "p" } else { "b" }),
                t(cat),
                b(preferred),
                b(true),
                t(","),
                o(0),
                o(0),
                o(array),
                io("in"),
                io("out"),
                io("recv"),
                io("send"),
                t(align),
                t(storage),
                b(false),
                o(0),
                i4(-1),
                i4(0),
                o(collation),
                N,
            ]
        })
        .collect()
}

pub fn indexes(rels: &Relations) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in &rels.all {
        let RelKind::Index(ix, table) = &r.kind else { continue };
        let primary = table.primary_key.as_ref() == Some(&ix.columns) && ix.name == format!("{}_pkey", table.name);
        let key: Vec<String> = ix.columns.iter().map(|c| (c + 1).to_string()).collect();
        let n = ix.columns.len() as i64;
        let zeros = vec!["0"; ix.columns.len()].join(" ");
        out.push(vec![
            o(r.oid),
            o(oids::table_oid(table.id)),
            i2(n),
            i2(n),
            b(ix.unique),
            b(false),
            b(primary),
            b(false),
            b(true),
            b(false),
            b(true),
            b(false),
            b(true),
            b(true),
            b(false),
            t(&key.join(" ")),
            t(&zeros),
            t(&zeros),
            t(&zeros),
            N,
            N,
        ]);
    }
    out
}

pub fn databases(_: &Relations) -> Vec<Vec<Value>> {
    vec![vec![
        o(DATABASE_OID),
        t(DATABASE),
        o(OWNER_OID),
        i4(6),
        t("c"),
        b(false),
        b(true),
        i4(-1),
        o(1663),
        t("C"),
        t("C"),
        N,
        N,
        N,
    ]]
}

/// The settings clients ask about at connect, with the values ndpdb has.
const SETTINGS: [(&str, &str, &str); 8] = [
    ("server_version", "15.0", "Preset Options"),
    ("server_version_num", "150000", "Preset Options"),
    ("server_encoding", "UTF8", "Preset Options"),
    ("client_encoding", "UTF8", "Client Connection Defaults / Locale and Formatting"),
    ("DateStyle", "ISO, MDY", "Client Connection Defaults / Locale and Formatting"),
    ("TimeZone", "UTC", "Client Connection Defaults / Locale and Formatting"),
    ("standard_conforming_strings", "on", "Version and Platform Compatibility"),
    ("integer_datetimes", "on", "Preset Options"),
];

pub fn settings(_: &Relations) -> Vec<Vec<Value>> {
    SETTINGS
        .iter()
        .map(|(name, value, category)| {
            let vartype = if value.parse::<i64>().is_ok() { "integer" } else { "string" };
            vec![
                t(name),
                t(value),
                N,
                t(category),
                N,
                N,
                t("user"),
                t(vartype),
                t("default"),
                N,
                N,
                N,
                t(value),
                t(value),
                N,
                N,
                b(false),
            ]
        })
        .collect()
}

/// The live sessions (`activity.rs`).
pub fn activity(rels: &Relations) -> Vec<Vec<Value>> {
    super::activity::rows(&rels.activity)
}

pub fn access_methods(_: &Relations) -> Vec<Vec<Value>> {
    vec![
        vec![o(HEAP_AM), t("heap"), t("heap_tableam_handler"), t("t")],
        vec![o(BTREE_AM), t("btree"), t("bthandler"), t("i")],
    ]
}

pub fn defaults(rels: &Relations) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in rels.all.iter().filter(|r| user_relation(r)) {
        for (i, c) in r.columns.iter().enumerate() {
            if let Some(d) = &c.default {
                out.push(vec![o(r.oid + ((i as i64 + 1) << 32)), o(r.oid), i2(i as i64 + 1), t(d)]);
            }
        }
    }
    out
}

/// PRIMARY KEY and UNIQUE constraints (NOT NULL is no constraint row in
/// PostgreSQL 15).
pub fn constraints(rels: &Relations) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in &rels.all {
        let RelKind::Table(table) = &r.kind else { continue };
        for ix in &table.indexes {
            let Some(contype) = constraint_type(table, ix) else { continue };
            let key: Vec<String> = ix.columns.iter().map(|c| (c + 1).to_string()).collect();
            let mut row = vec![o(oids::constraint_oid(&ix.name)), t(&ix.name), o(PUBLIC), t(contype)];
            row.extend([b(false), b(false), b(true), o(r.oid), o(0), o(oids::index_oid(&ix.name)), o(0), o(0)]);
            row.extend([t(" "), t(" "), t(" "), b(true), i4(0), b(true), t(&format!("{{{}}}", key.join(","))), N, N]);
            out.push(row);
        }
    }
    out
}

/// `p` for the primary key's index, `u` for a UNIQUE constraint's; None
/// for a plain CREATE [UNIQUE] INDEX.
pub fn constraint_type(table: &crate::catalog::TableDef, ix: &crate::catalog::IndexDef) -> Option<&'static str> {
    let names: Vec<&str> = ix.columns.iter().filter_map(|&c| table.columns.get(c)).map(|c| c.name.as_str()).collect();
    if table.primary_key.as_ref() == Some(&ix.columns) && ix.name == format!("{}_pkey", table.name) {
        Some("p")
    } else if ix.unique
        && table.unique.contains(&ix.columns)
        && ix.name == format!("{}_{}_key", table.name, names.join("_"))
    {
        Some("u")
    } else {
        None
    }
}

pub fn roles(_: &Relations) -> Vec<Vec<Value>> {
    let mut row = vec![t(OWNER), b(true), b(true), b(true), b(true), b(true), b(true), i4(-1)];
    row.extend([t("********"), N, b(true), N, o(OWNER_OID)]);
    vec![row]
}

pub fn users(_: &Relations) -> Vec<Vec<Value>> {
    vec![vec![t(OWNER), o(OWNER_OID), b(true), b(true), b(true), b(true), t("********"), N, N]]
}

pub fn collations(_: &Relations) -> Vec<Vec<Value>> {
    [(DEFAULT_COLLATION, "default", "d", ""), (950, "C", "c", "C"), (951, "POSIX", "c", "POSIX")]
        .iter()
        .map(|&(oid, name, provider, locale)| {
            let loc = if locale.is_empty() { N } else { t(locale) };
            vec![o(oid), t(name), o(PG_CATALOG), o(OWNER_OID), t(provider), b(true), i4(-1), loc.clone(), loc, N, N]
        })
        .collect()
}

pub fn tablespaces(_: &Relations) -> Vec<Vec<Value>> {
    vec![vec![o(1663), t("pg_default"), o(OWNER_OID), N, N], vec![o(1664), t("pg_global"), o(OWNER_OID), N, N]]
}

fn schema_name(r: &Relation) -> &'static str {
    NAMESPACES.iter().find(|(o, _)| *o == r.namespace).map_or("public", |(_, n)| n)
}

pub fn info_tables(rels: &Relations) -> Vec<Vec<Value>> {
    rels.all
        .iter()
        .filter(|r| matches!(r.relkind(), "r" | "v"))
        .map(|r| {
            let kind = if r.relkind() == "v" { "VIEW" } else { "BASE TABLE" };
            let insertable = if r.relkind() == "r" && user_relation(r) { "YES" } else { "NO" };
            let mut row = vec![t(DATABASE), t(schema_name(r)), t(&r.name), t(kind), N, N, N, N, N];
            row.extend([t(insertable), t("NO"), N]);
            row
        })
        .collect()
}

pub fn info_columns(rels: &Relations) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in rels.all.iter().filter(|r| matches!(r.relkind(), "r" | "v")) {
        for (i, c) in r.columns.iter().enumerate() {
            let (char_len, octets) = match c.ty {
                DataType::Char(n) | DataType::Varchar(Some(n)) => (i4(n as i64), i4(n as i64 * 4)),
                DataType::Varchar(None) | DataType::Text => (N, i4(1_073_741_824)),
                _ => (N, N),
            };
            let (precision, radix, scale) = match c.ty {
                DataType::Int16 => (i4(16), i4(2), i4(0)),
                DataType::Int32 => (i4(32), i4(2), i4(0)),
                DataType::Int64 => (i4(64), i4(2), i4(0)),
                DataType::Float64 => (i4(53), i4(2), N),
                DataType::Numeric { precision: Some(p), scale } => (i4(p as i64), i4(10), i4(scale as i64)),
                DataType::Numeric { .. } => (N, i4(10), N),
                _ => (N, N, N),
            };
            let datetime = if matches!(c.ty, DataType::Date) {
                i4(0)
            } else if matches!(c.ty, DataType::Timestamp | DataType::Interval) {
                i4(6)
            } else {
                N
            };
            let data_type = oids::format_type(c.ty.pg_oid() as i64, Some(-1));
            let mut row = vec![t(DATABASE), t(schema_name(r)), t(&r.name), t(&c.name), i4(i as i64 + 1)];
            row.extend([c.default.as_deref().map_or(N, t), t(if c.not_null { "NO" } else { "YES" }), t(&data_type)]);
            row.extend([char_len, octets, precision, radix, scale, datetime]);
            row.extend([t(DATABASE), t("pg_catalog"), t(type_row(c.ty).1), t("NO"), t("NEVER")]);
            row.push(t(if r.relkind() == "r" && user_relation(r) { "YES" } else { "NO" }));
            out.push(row);
        }
    }
    out
}

pub fn info_schemata(_: &Relations) -> Vec<Vec<Value>> {
    NAMESPACES
        .iter()
        .map(|(_, name)| {
            let owner = if *name == "public" { "pg_database_owner" } else { OWNER };
            vec![t(DATABASE), t(name), t(owner), N, N, N, N]
        })
        .collect()
}
