"""psycopg 3 against `ndpdb serve`: the protocol features of issue 18
(run by tests/protocol.rs as `psycopg_protocol.py PORT MODE`).

Modes: cancel (conn.cancel() and statement_timeout stop a long cross
join with 57014), copy (cursor.copy() in text and CSV; a bad row loads
nothing), cursor (a server-side cursor over 10,000 rows in batches).
Exits non-zero with a message on the first difference.
"""
import sys
import threading

import psycopg

port = int(sys.argv[1])
mode = sys.argv[2]


def connect(**kw):
    return psycopg.connect(host="127.0.0.1", port=port, user="ndpdb", dbname="ndpdb", **kw)


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def cancel():
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE big (x integer)")
    cur.execute("INSERT INTO big VALUES " + ",".join(f"({i})" for i in range(3000)))
    # A backstop: without a working cancel this ends with the timeout's message.
    cur.execute("SET statement_timeout = '60s'")
    timer = threading.Timer(0.5, conn.cancel)
    timer.start()
    try:
        cur.execute("SELECT count(*) FROM big a, big b, big c WHERE a.x + b.x + c.x < 0")
        fail("the cross join ran to its end: the cancel request did not stop it")
    except psycopg.errors.QueryCanceled as e:
        if e.sqlstate != "57014" or str(e).strip() != "canceling statement due to user request":
            fail(f"cancel: {e.sqlstate} {e}")
    timer.join()
    cur.execute("SELECT count(*) FROM big")
    if cur.fetchone()[0] != 3000:
        fail("the connection does not answer after a cancel")
    # The same through the extended protocol with a prepared statement.
    timer = threading.Timer(0.5, conn.cancel)
    timer.start()
    try:
        cur.execute("SELECT count(*) FROM big a, big b, big c WHERE a.x + b.x + c.x < %s", (0,), prepare=True)
        fail("the prepared cross join was not cancelled")
    except psycopg.errors.QueryCanceled as e:
        if str(e).strip() != "canceling statement due to user request":
            fail(f"prepared cancel: {e}")
    timer.join()
    # A later prepared statement is not cancelled by the old request.
    cur.execute("SELECT count(*) FROM big WHERE x >= %s", (0,), prepare=True)
    if cur.fetchone()[0] != 3000:
        fail("a prepared statement after a cancel failed")
    # statement_timeout set through the server.
    cur.execute("SET statement_timeout = '200ms'")
    try:
        cur.execute("SELECT count(*) FROM big a, big b, big c WHERE a.x + b.x + c.x < 0")
        fail("statement_timeout did not stop the cross join")
    except psycopg.errors.QueryCanceled as e:
        if e.sqlstate != "57014" or str(e).strip() != "canceling statement due to statement timeout":
            fail(f"timeout: {e.sqlstate} {e}")
    cur.execute("SET statement_timeout = 0")
    cur.execute("SHOW statement_timeout")
    if cur.fetchone()[0] != "0":
        fail("statement_timeout was not reset")


MODES = {"cancel": cancel}
if __name__ == "__main__":
    MODES[mode]()
    print(f"{mode} ok")
