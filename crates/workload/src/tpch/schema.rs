//! The TPC-H schema (specification 2.4), in types PostgreSQL and ndpdb
//! share: identifiers `integer` (`bigint` for `l_orderkey`/`o_orderkey`,
//! which pass 2^31 at SF 300 and above), money `numeric(15,2)`, dates
//! `date`, fixed text `char(n)`, variable text `varchar(n)`. Primary keys
//! as the specification's clause 1.4.2.2; no foreign keys (neither engine
//! needs them to plan, and the loader writes tables in any order).

/// The eight tables in load order (small first), with their columns in
/// the order of the CSV files.
pub const TABLES: [&str; 8] = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"];

/// `CREATE TABLE` of one table, or None for a name not in TPC-H.
pub fn create_table(table: &str) -> Option<&'static str> {
    Some(match table {
        "region" => {
            "CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL, \
             r_comment varchar(152), PRIMARY KEY (r_regionkey))"
        }
        "nation" => {
            "CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL, \
             n_regionkey integer NOT NULL, n_comment varchar(152), PRIMARY KEY (n_nationkey))"
        }
        "supplier" => {
            "CREATE TABLE supplier (s_suppkey integer NOT NULL, s_name char(25) NOT NULL, \
             s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, s_phone char(15) NOT NULL, \
             s_acctbal numeric(15,2) NOT NULL, s_comment varchar(101) NOT NULL, PRIMARY KEY (s_suppkey))"
        }
        "customer" => {
            "CREATE TABLE customer (c_custkey integer NOT NULL, c_name varchar(25) NOT NULL, \
             c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, c_phone char(15) NOT NULL, \
             c_acctbal numeric(15,2) NOT NULL, c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL, \
             PRIMARY KEY (c_custkey))"
        }
        "part" => {
            "CREATE TABLE part (p_partkey integer NOT NULL, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL, \
             p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL, \
             p_container char(10) NOT NULL, p_retailprice numeric(15,2) NOT NULL, p_comment varchar(23) NOT NULL, \
             PRIMARY KEY (p_partkey))"
        }
        "partsupp" => {
            "CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, \
             ps_availqty integer NOT NULL, ps_supplycost numeric(15,2) NOT NULL, ps_comment varchar(199) NOT NULL, \
             PRIMARY KEY (ps_partkey, ps_suppkey))"
        }
        "orders" => {
            "CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey integer NOT NULL, \
             o_orderstatus char(1) NOT NULL, o_totalprice numeric(15,2) NOT NULL, o_orderdate date NOT NULL, \
             o_orderpriority char(15) NOT NULL, o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, \
             o_comment varchar(79) NOT NULL, PRIMARY KEY (o_orderkey))"
        }
        "lineitem" => {
            "CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey integer NOT NULL, \
             l_suppkey integer NOT NULL, l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL, \
             l_extendedprice numeric(15,2) NOT NULL, l_discount numeric(15,2) NOT NULL, \
             l_tax numeric(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, \
             l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL, \
             l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL, \
             PRIMARY KEY (l_orderkey, l_linenumber))"
        }
        _ => return None,
    })
}

/// `CREATE TABLE` for all eight tables, in [`TABLES`] order.
pub fn create_statements() -> Vec<&'static str> {
    TABLES.iter().filter_map(|t| create_table(t)).collect()
}

/// `COPY <table> FROM '<file>'` as both engines read the generated CSV
/// files (comma separated, a header line, text fields quoted).
pub fn copy_statement(table: &str, file: &std::path::Path) -> String {
    format!("COPY {table} FROM '{}' WITH (FORMAT csv, HEADER true)", file.display().to_string().replace('\'', "''"))
}
