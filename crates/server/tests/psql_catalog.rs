//! psql's `\d` family through `ndpdb serve`: the output lines equal
//! PostgreSQL 15's for the same DDL (`psql_catalog/*.out`, made with
//! `psql -X -A` against a private PostgreSQL), with the owner column
//! normalised (PostgreSQL's role is `postgres`, and `public` belongs to
//! `pg_database_owner`; ndpdb has the one role `ndpdb`) and, for `\l`,
//! only the current database (PostgreSQL has `postgres`, `template0`, ...).

mod common;

use common::{TestServer, have, psql};

const DDL: &str =
    "create table t (id integer primary key, name varchar(20) not null default 'x', v numeric(10,2), d date);
create index t_name on t(name); create unique index t_v_key on t(v);
create view w as select id, name from t; create table u (a int, b text unique);";

/// PostgreSQL's output for `file`, owners normalised to `ndpdb`.
fn expected(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(common::script(&format!("psql_catalog/{file}"))).unwrap();
    text.lines().map(|l| l.replace("|pg_database_owner", "|ndpdb").replace("|postgres", "|ndpdb")).collect()
}

fn lines(out: &str) -> Vec<String> {
    out.lines().map(str::to_string).collect()
}

#[test]
fn psql_describe_commands_print_what_postgresql_prints() {
    if !have("psql", &["--version"]) {
        return;
    }
    let server = TestServer::start(10);
    let (_, err, ok) = psql(server.addr, &["-v", "ON_ERROR_STOP=1"], Some(DDL));
    assert!(ok, "DDL: {err}");
    for (command, file) in [
        ("\\dt", "dt.out"),
        ("\\di", "di.out"),
        ("\\dv", "dv.out"),
        ("\\d", "d.out"),
        ("\\dn", "dn.out"),
        ("\\d t_pkey", "d_t_pkey.out"),
    ] {
        let (out, err, ok) = psql(server.addr, &["-A", "-c", command], None);
        assert!(ok && err.is_empty(), "{command}: {err}");
        assert_eq!(lines(&out), expected(file), "{command}");
    }
    // \l: the header and the one database.
    let (out, err, ok) = psql(server.addr, &["-A", "-c", "\\l"], None);
    assert!(ok && err.is_empty(), "\\l: {err}");
    let pg = expected("l.out");
    let ours = lines(&out);
    assert_eq!(ours[..2], pg[..2], "\\l header");
    let cat = pg.iter().find(|l| l.starts_with("cat|")).unwrap().replacen("cat|", "ndpdb|", 1);
    assert_eq!(ours[2..], [cat, "(1 row)".to_string()], "\\l rows");
}
