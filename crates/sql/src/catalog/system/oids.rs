//! OIDs, type codes and type names of the system catalogs.
//!
//! ```text
//!  0 ..= 16383          PostgreSQL's own: types (23 int4, 1043 varchar, ..),
//!                       namespaces (11 pg_catalog, 2200 public, 13207
//!                       information_schema), access methods (403 btree),
//!                       the catalogs (1259 pg_class, ..; views 12000+),
//!                       the role (10) and the database (5)
//!  16384 + id           a table, id = its store table id (< 2^24)
//!  2^24 ..< 2^31        an index, view or constraint: 2^24 + FNV-1a(kind, name)
//!                       mod (2^31 - 2^24)
//! ```
//!
//! Table OIDs follow the store's table ids, which never change or get
//! reused. Indexes, views and constraints have no id of their own, so their
//! OIDs hash the name (names are unique among relations): stable across
//! sessions and restarts, and two names collide with a chance of about
//! n²/2^32 among n objects (a collision would make the catalogs show one
//! object under the other's OID; no statement of ndpdb itself reads OIDs).

use crate::types::DataType;

pub const PG_CATALOG: i64 = 11;
pub const PUBLIC: i64 = 2200;
pub const INFORMATION_SCHEMA: i64 = 13207;
pub const OWNER_OID: i64 = 10;
pub const DATABASE_OID: i64 = 5;
pub const HEAP_AM: i64 = 2;
pub const BTREE_AM: i64 = 403;
/// The OID of the default collation (`pg_collation`'s "default").
pub const DEFAULT_COLLATION: i64 = 100;
/// The first OID of user objects, as PostgreSQL's `FirstNormalObjectId`.
pub const FIRST_USER_OID: i64 = 16384;
const HASHED_BASE: i64 = 1 << 24;

/// The namespaces: (oid, name).
pub const NAMESPACES: [(i64, &str); 4] =
    [(PG_CATALOG, "pg_catalog"), (99, "pg_toast"), (PUBLIC, "public"), (INFORMATION_SCHEMA, "information_schema")];

pub fn namespace_oid(name: &str) -> Option<i64> {
    NAMESPACES.iter().find(|(_, n)| *n == name).map(|(o, _)| *o)
}

pub fn table_oid(store_id: u32) -> i64 {
    FIRST_USER_OID + store_id as i64
}

pub fn index_oid(name: &str) -> i64 {
    hashed(b'i', name)
}

pub fn view_oid(name: &str) -> i64 {
    hashed(b'v', name)
}

/// The OID of the PRIMARY KEY or UNIQUE constraint whose index is `index`.
pub fn constraint_oid(index: &str) -> i64 {
    hashed(b'c', index)
}

fn hashed(kind: u8, name: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(kind).chain(name.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    HASHED_BASE + (h % ((1u64 << 31) - HASHED_BASE as u64)) as i64
}

/// A type of `pg_type`: (oid, typname, typlen, typbyval, typcategory,
/// typispreferred, typarray, typcollation, typalign, typstorage, the I/O
/// functions' prefix), as PostgreSQL 15 has them.
pub type TypeRow = (i64, &'static str, i16, bool, &'static str, bool, i64, i64, &'static str, &'static str);

pub const TYPES: [TypeRow; 21] = [
    (16, "bool", 1, true, "B", true, 1000, 0, "c", "p"),
    (18, "char", 1, true, "Z", false, 1002, 0, "c", "p"),
    (19, "name", 64, false, "S", false, 1003, 950, "c", "p"),
    (20, "int8", 8, true, "N", false, 1016, 0, "d", "p"),
    (21, "int2", 2, true, "N", false, 1005, 0, "s", "p"),
    (22, "int2vector", -1, false, "A", false, 1006, 0, "i", "p"),
    (23, "int4", 4, true, "N", false, 1007, 0, "i", "p"),
    (24, "regproc", 4, true, "N", false, 1008, 0, "i", "p"),
    (25, "text", -1, false, "S", true, 1009, 100, "i", "x"),
    (26, "oid", 4, true, "N", true, 1028, 0, "i", "p"),
    (700, "float4", 4, true, "N", false, 1021, 0, "i", "p"),
    (701, "float8", 8, true, "N", true, 1022, 0, "d", "p"),
    (705, "unknown", -2, false, "X", false, 0, 0, "c", "p"),
    (1042, "bpchar", -1, false, "S", false, 1014, 100, "i", "x"),
    (1043, "varchar", -1, false, "S", false, 1015, 100, "i", "x"),
    (1082, "date", 4, true, "D", false, 1182, 0, "i", "p"),
    (1114, "timestamp", 8, true, "D", false, 1115, 0, "d", "p"),
    (1186, "interval", 16, false, "T", true, 1187, 0, "d", "p"),
    (1700, "numeric", -1, false, "N", false, 1231, 0, "i", "m"),
    (2205, "regclass", 4, true, "N", false, 2210, 0, "i", "p"),
    (2206, "regtype", 4, true, "N", false, 2211, 0, "i", "p"),
];

/// `pg_attribute.atttypmod` of a column of type `ty`: PostgreSQL's
/// encoding (length + 4 for character types, `(p << 16 | s) + 4` for
/// numeric), -1 where the type has none.
pub fn typmod(ty: DataType) -> i32 {
    match ty {
        DataType::Char(n) | DataType::Varchar(Some(n)) => n as i32 + 4,
        DataType::Numeric { precision: Some(p), scale } => (((p as i32) << 16) | scale as i32) + 4,
        _ => -1,
    }
}

/// `format_type(oid, typmod)`: PostgreSQL's SQL name of a type, with the
/// modifier when one is given (None: `typmod` NULL).
pub fn format_type(oid: i64, typmod: Option<i64>) -> String {
    let m = typmod.filter(|m| *m >= 0);
    match (oid, m) {
        (1043, Some(m)) => format!("character varying({})", m - 4),
        (1043, None) => "character varying".into(),
        (1042, Some(m)) => format!("character({})", m - 4),
        (1042, None) if typmod.is_none() => "bpchar".into(),
        (1042, None) => "character".into(),
        (1700, Some(m)) => format!("numeric({},{})", (m - 4) >> 16, (m - 4) & 0xffff),
        (16, _) => "boolean".into(),
        (18, _) => "\"char\"".into(),
        (20, _) => "bigint".into(),
        (21, _) => "smallint".into(),
        (23, _) => "integer".into(),
        (700, _) => "real".into(),
        (701, _) => "double precision".into(),
        (1114, _) => "timestamp without time zone".into(),
        (oid, _) => TYPES.iter().find(|t| t.0 == oid).map_or_else(|| "???".into(), |t| t.1.to_string()),
    }
}

/// A column's DEFAULT as PostgreSQL prints it (`pg_get_expr` of
/// `pg_attrdef.adbin`): a quoted literal carries a cast to the column's
/// type (`'x'::character varying`); anything else is the stored text.
pub fn deparse_default(sql: &str, ty: DataType) -> String {
    let s = sql.trim();
    let quoted =
        s.len() >= 2 && s.starts_with('\'') && s.ends_with('\'') && !s[1..s.len() - 1].replace("''", "").contains('\'');
    if !quoted {
        return s.to_string();
    }
    let name = match ty {
        DataType::Char(_) => "bpchar".to_string(),
        DataType::Varchar(_) => "character varying".into(),
        DataType::Numeric { .. } => "numeric".into(),
        t => format_type(t.pg_oid() as i64, None),
    };
    format!("{s}::{name}")
}

/// `pg_encoding_to_char`: PostgreSQL's encoding names by number (ndpdb's
/// text is UTF-8, number 6).
pub fn encoding_name(code: i64) -> &'static str {
    match code {
        0 => "SQL_ASCII",
        6 => "UTF8",
        8 => "LATIN1",
        _ => "",
    }
}
