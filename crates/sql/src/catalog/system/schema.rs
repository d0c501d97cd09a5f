//! The system tables' names and columns (PostgreSQL 15's, in its order;
//! columns no client of ours reads are left out), each with the function
//! that builds its rows (`rows.rs`).

use super::Relations;
use super::rows;
use crate::types::{DataType, Value};

/// A virtual table of `pg_catalog` or `information_schema`.
#[derive(Debug)]
pub struct SystemTable {
    pub schema: &'static str,
    pub name: &'static str,
    pub columns: &'static [(&'static str, DataType)],
    /// PostgreSQL's OID of the catalog, 0 for one given by position.
    fixed_oid: i64,
    build: fn(&Relations) -> Vec<Vec<Value>>,
}

impl SystemTable {
    /// Rows, each with one value per column.
    pub fn rows(&self, rels: &Relations) -> Vec<Vec<Value>> {
        let rows = (self.build)(rels);
        debug_assert!(rows.iter().all(|r| r.len() == self.columns.len()), "{}: row width", self.name);
        rows
    }

    /// The catalog's OID; `position` is its index in [`tables`].
    pub fn oid(&self, position: usize) -> i64 {
        if self.fixed_oid != 0 { self.fixed_oid } else { 12000 + position as i64 }
    }
}

const OID: DataType = DataType::Int64;
const NAME: DataType = DataType::Text;
const T: DataType = DataType::Text;
const B: DataType = DataType::Bool;
const I2: DataType = DataType::Int16;
const I4: DataType = DataType::Int32;
const I8: DataType = DataType::Int64;
const F: DataType = DataType::Float64;
const TS: DataType = DataType::Timestamp;

macro_rules! table {
    ($schema:literal, $name:literal, $oid:expr, $build:path, [$(($c:literal, $t:expr)),* $(,)?]) => {
        SystemTable { schema: $schema, name: $name, columns: &[$(($c, $t)),*], fixed_oid: $oid, build: $build }
    };
}

static TABLES: [SystemTable; 27] = [
    table!(
        "pg_catalog",
        "pg_namespace",
        2615,
        rows::namespaces,
        [("oid", OID), ("nspname", NAME), ("nspowner", OID), ("nspacl", T)]
    ),
    table!(
        "pg_catalog",
        "pg_class",
        1259,
        rows::classes,
        [
            ("oid", OID),
            ("relname", NAME),
            ("relnamespace", OID),
            ("reltype", OID),
            ("reloftype", OID),
            ("relowner", OID),
            ("relam", OID),
            ("relfilenode", OID),
            ("reltablespace", OID),
            ("relpages", I4),
            ("reltuples", F),
            ("relallvisible", I4),
            ("reltoastrelid", OID),
            ("relhasindex", B),
            ("relisshared", B),
            ("relpersistence", T),
            ("relkind", T),
            ("relnatts", I2),
            ("relchecks", I2),
            ("relhasrules", B),
            ("relhastriggers", B),
            ("relhassubclass", B),
            ("relrowsecurity", B),
            ("relforcerowsecurity", B),
            ("relispopulated", B),
            ("relreplident", T),
            ("relispartition", B),
            ("relrewrite", OID),
            ("relacl", T),
            ("reloptions", T),
            ("relpartbound", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_attribute",
        1249,
        rows::attributes,
        [
            ("attrelid", OID),
            ("attname", NAME),
            ("atttypid", OID),
            ("attstattarget", I4),
            ("attlen", I2),
            ("attnum", I2),
            ("attndims", I4),
            ("attcacheoff", I4),
            ("atttypmod", I4),
            ("attbyval", B),
            ("attalign", T),
            ("attstorage", T),
            ("attcompression", T),
            ("attnotnull", B),
            ("atthasdef", B),
            ("atthasmissing", B),
            ("attidentity", T),
            ("attgenerated", T),
            ("attisdropped", B),
            ("attislocal", B),
            ("attinhcount", I4),
            ("attcollation", OID),
            ("attacl", T),
            ("attoptions", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_type",
        1247,
        rows::types,
        [
            ("oid", OID),
            ("typname", NAME),
            ("typnamespace", OID),
            ("typowner", OID),
            ("typlen", I2),
            ("typbyval", B),
            ("typtype", T),
            ("typcategory", T),
            ("typispreferred", B),
            ("typisdefined", B),
            ("typdelim", T),
            ("typrelid", OID),
            ("typelem", OID),
            ("typarray", OID),
            ("typinput", T),
            ("typoutput", T),
            ("typreceive", T),
            ("typsend", T),
            ("typalign", T),
            ("typstorage", T),
            ("typnotnull", B),
            ("typbasetype", OID),
            ("typtypmod", I4),
            ("typndims", I4),
            ("typcollation", OID),
            ("typdefault", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_index",
        2610,
        rows::indexes,
        [
            ("indexrelid", OID),
            ("indrelid", OID),
            ("indnatts", I2),
            ("indnkeyatts", I2),
            ("indisunique", B),
            ("indnullsnotdistinct", B),
            ("indisprimary", B),
            ("indisexclusion", B),
            ("indimmediate", B),
            ("indisclustered", B),
            ("indisvalid", B),
            ("indcheckxmin", B),
            ("indisready", B),
            ("indislive", B),
            ("indisreplident", B),
            ("indkey", T),
            ("indcollation", T),
            ("indclass", T),
            ("indoption", T),
            ("indexprs", T),
            ("indpred", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_database",
        1262,
        rows::databases,
        [
            ("oid", OID),
            ("datname", NAME),
            ("datdba", OID),
            ("encoding", I4),
            ("datlocprovider", T),
            ("datistemplate", B),
            ("datallowconn", B),
            ("datconnlimit", I4),
            ("dattablespace", OID),
            ("datcollate", T),
            ("datctype", T),
            ("daticulocale", T),
            ("datcollversion", T),
            ("datacl", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_settings",
        0,
        rows::settings,
        [
            ("name", T),
            ("setting", T),
            ("unit", T),
            ("category", T),
            ("short_desc", T),
            ("extra_desc", T),
            ("context", T),
            ("vartype", T),
            ("source", T),
            ("min_val", T),
            ("max_val", T),
            ("enumvals", T),
            ("boot_val", T),
            ("reset_val", T),
            ("sourcefile", T),
            ("sourceline", I4),
            ("pending_restart", B),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_stat_activity",
        0,
        rows::activity,
        [
            ("datid", OID),
            ("datname", NAME),
            ("pid", I4),
            ("leader_pid", I4),
            ("usesysid", OID),
            ("usename", NAME),
            ("application_name", T),
            ("client_addr", T),
            ("client_hostname", T),
            ("client_port", I4),
            ("backend_start", TS),
            ("xact_start", TS),
            ("query_start", TS),
            ("state_change", TS),
            ("wait_event_type", T),
            ("wait_event", T),
            ("state", T),
            ("backend_xid", T),
            ("backend_xmin", T),
            ("query_id", I8),
            ("query", T),
            ("backend_type", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_am",
        2601,
        rows::access_methods,
        [("oid", OID), ("amname", NAME), ("amhandler", T), ("amtype", T)]
    ),
    table!(
        "pg_catalog",
        "pg_attrdef",
        2604,
        rows::defaults,
        [("oid", OID), ("adrelid", OID), ("adnum", I2), ("adbin", T)]
    ),
    table!(
        "pg_catalog",
        "pg_constraint",
        2606,
        rows::constraints,
        [
            ("oid", OID),
            ("conname", NAME),
            ("connamespace", OID),
            ("contype", T),
            ("condeferrable", B),
            ("condeferred", B),
            ("convalidated", B),
            ("conrelid", OID),
            ("contypid", OID),
            ("conindid", OID),
            ("conparentid", OID),
            ("confrelid", OID),
            ("confupdtype", T),
            ("confdeltype", T),
            ("confmatchtype", T),
            ("conislocal", B),
            ("coninhcount", I4),
            ("connoinherit", B),
            ("conkey", T),
            ("confkey", T),
            ("conbin", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_inherits",
        2611,
        rows::empty,
        [("inhrelid", OID), ("inhparent", OID), ("inhseqno", I4), ("inhdetachpending", B),]
    ),
    table!(
        "pg_catalog",
        "pg_partitioned_table",
        3350,
        rows::empty,
        [
            ("partrelid", OID),
            ("partstrat", T),
            ("partnatts", I2),
            ("partdefid", OID),
            ("partattrs", T),
            ("partclass", T),
            ("partcollation", T),
            ("partexprs", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_roles",
        0,
        rows::roles,
        [
            ("rolname", NAME),
            ("rolsuper", B),
            ("rolinherit", B),
            ("rolcreaterole", B),
            ("rolcreatedb", B),
            ("rolcanlogin", B),
            ("rolreplication", B),
            ("rolconnlimit", I4),
            ("rolpassword", T),
            ("rolvaliduntil", TS),
            ("rolbypassrls", B),
            ("rolconfig", T),
            ("oid", OID),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_user",
        0,
        rows::users,
        [
            ("usename", NAME),
            ("usesysid", OID),
            ("usecreatedb", B),
            ("usesuper", B),
            ("userepl", B),
            ("usebypassrls", B),
            ("passwd", T),
            ("valuntil", TS),
            ("useconfig", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_description",
        2609,
        rows::empty,
        [("objoid", OID), ("classoid", OID), ("objsubid", I4), ("description", T),]
    ),
    table!(
        "pg_catalog",
        "pg_collation",
        3456,
        rows::collations,
        [
            ("oid", OID),
            ("collname", NAME),
            ("collnamespace", OID),
            ("collowner", OID),
            ("collprovider", T),
            ("collisdeterministic", B),
            ("collencoding", I4),
            ("collcollate", T),
            ("collctype", T),
            ("colliculocale", T),
            ("collversion", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_tablespace",
        1213,
        rows::tablespaces,
        [("oid", OID), ("spcname", NAME), ("spcowner", OID), ("spcacl", T), ("spcoptions", T),]
    ),
    table!(
        "pg_catalog",
        "pg_policy",
        3256,
        rows::empty,
        [
            ("oid", OID),
            ("polname", NAME),
            ("polrelid", OID),
            ("polcmd", T),
            ("polpermissive", B),
            ("polroles", T),
            ("polqual", T),
            ("polwithcheck", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_statistic_ext",
        3381,
        rows::empty,
        [
            ("oid", OID),
            ("stxrelid", OID),
            ("stxname", NAME),
            ("stxnamespace", OID),
            ("stxowner", OID),
            ("stxstattarget", I4),
            ("stxkeys", T),
            ("stxkind", T),
            ("stxexprs", T),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_publication",
        6104,
        rows::empty,
        [
            ("oid", OID),
            ("pubname", NAME),
            ("pubowner", OID),
            ("puballtables", B),
            ("pubinsert", B),
            ("pubupdate", B),
            ("pubdelete", B),
            ("pubtruncate", B),
            ("pubviaroot", B),
        ]
    ),
    table!(
        "pg_catalog",
        "pg_publication_rel",
        6106,
        rows::empty,
        [("oid", OID), ("prpubid", OID), ("prrelid", OID), ("prqual", T), ("prattrs", T),]
    ),
    table!(
        "pg_catalog",
        "pg_publication_namespace",
        6237,
        rows::empty,
        [("oid", OID), ("pnpubid", OID), ("pnnspid", OID),]
    ),
    table!(
        "pg_catalog",
        "pg_trigger",
        2620,
        rows::empty,
        [
            ("oid", OID),
            ("tgrelid", OID),
            ("tgparentid", OID),
            ("tgname", NAME),
            ("tgfoid", OID),
            ("tgtype", I2),
            ("tgenabled", T),
            ("tgisinternal", B),
            ("tgconstrrelid", OID),
        ]
    ),
    table!(
        "information_schema",
        "tables",
        0,
        rows::info_tables,
        [
            ("table_catalog", NAME),
            ("table_schema", NAME),
            ("table_name", NAME),
            ("table_type", T),
            ("self_referencing_column_name", NAME),
            ("reference_generation", T),
            ("user_defined_type_catalog", NAME),
            ("user_defined_type_schema", NAME),
            ("user_defined_type_name", NAME),
            ("is_insertable_into", T),
            ("is_typed", T),
            ("commit_action", T),
        ]
    ),
    table!(
        "information_schema",
        "columns",
        0,
        rows::info_columns,
        [
            ("table_catalog", NAME),
            ("table_schema", NAME),
            ("table_name", NAME),
            ("column_name", NAME),
            ("ordinal_position", I4),
            ("column_default", T),
            ("is_nullable", T),
            ("data_type", T),
            ("character_maximum_length", I4),
            ("character_octet_length", I4),
            ("numeric_precision", I4),
            ("numeric_precision_radix", I4),
            ("numeric_scale", I4),
            ("datetime_precision", I4),
            ("udt_catalog", NAME),
            ("udt_schema", NAME),
            ("udt_name", NAME),
            ("is_identity", T),
            ("is_generated", T),
            ("is_updatable", T),
        ]
    ),
    table!(
        "information_schema",
        "schemata",
        0,
        rows::info_schemata,
        [
            ("catalog_name", NAME),
            ("schema_name", NAME),
            ("schema_owner", NAME),
            ("default_character_set_catalog", NAME),
            ("default_character_set_schema", NAME),
            ("default_character_set_name", NAME),
            ("sql_path", T),
        ]
    ),
];

/// Every system table.
pub fn tables() -> &'static [SystemTable] {
    &TABLES
}

/// The system table `name` names: `schema` given (`pg_catalog.pg_class`,
/// `information_schema.tables`) or not (pg_catalog's tables only: it is
/// first on the search path, as in PostgreSQL).
pub fn lookup(schema: Option<&str>, name: &str) -> Option<&'static SystemTable> {
    let schema = schema.unwrap_or("pg_catalog");
    TABLES.iter().find(|t| t.schema == schema && t.name == name)
}
