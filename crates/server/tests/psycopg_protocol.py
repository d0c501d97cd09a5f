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


def copy():
    import datetime
    import decimal

    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE c (id integer PRIMARY KEY, name text, price numeric(10,2), d date)")
    rows = [
        (1, "tab\there", decimal.Decimal("1.50"), datetime.date(2024, 1, 2)),
        (2, None, None, None),
        (3, "back\\slash\nnewline \\N", decimal.Decimal("-3.25"), datetime.date(1999, 12, 31)),
        (4, "", decimal.Decimal("0.00"), None),
    ]
    # Text format: psycopg escapes tabs, newlines, backslashes; None is \N.
    with cur.copy("COPY c (id, name, price, d) FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)
    cur.execute("SELECT id, name, price, d FROM c ORDER BY id")
    got = [tuple(r) for r in cur.fetchall()]
    if got != rows:
        fail(f"text COPY: wrote {rows}, read {got}")
    # CSV with the options, raw data; pgbench's (freeze on) spelling.
    with cur.copy("COPY c FROM STDIN WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'NA')") as cp:
        cp.write('id;name;price;d\n10;"a;b ""q""";NA;2024-03-01\n11;"";2.00;NA\n')
    cur.execute("SELECT name, price FROM c WHERE id IN (10, 11) ORDER BY id")
    if cur.fetchall() != [('a;b "q"', None), ("", decimal.Decimal("2.00"))]:
        fail("CSV COPY read other values")
    with cur.copy("copy c from stdin with (freeze on)") as cp:
        cp.write("20\tfrozen\t1\t2024-01-01\n")
    # 30,000 rows in many CopyData messages.
    with cur.copy("COPY c (id, name, price, d) FROM STDIN") as cp:
        for i in range(1000, 31000):
            cp.write_row((i, f"n{i}", i % 100, None))
    cur.execute("SELECT count(*), sum(id) FROM c")
    count, total = cur.fetchone()
    if count != 4 + 2 + 1 + 30000:
        fail(f"count after loads: {count}")
    # A bad row in the middle of a big load loads nothing, with the line as CONTEXT.
    try:
        with cur.copy("COPY c (id, name, price, d) FROM STDIN") as cp:
            for i in range(100000, 120000):
                cp.write_row((i, "x", 1, None))
            cp.write_row(("bad", "x", 1, None))
            for i in range(120000, 130000):
                cp.write_row((i, "x", 1, None))
        fail("a bad row was accepted")
    except psycopg.errors.InvalidTextRepresentation as e:
        if "line 20001" not in (e.diag.context or ""):
            fail(f"the error's context does not name the line: {e.diag.context!r}")
    # A row with a missing column: 22P04.
    try:
        with cur.copy("COPY c (id, name, price, d) FROM STDIN") as cp:
            cp.write("500\tshort\n")
        fail("a short row was accepted")
    except psycopg.errors.BadCopyFileFormat as e:
        if "missing data for column" not in str(e):
            fail(f"short row: {e}")
    # CopyFail from the client rolls back too.
    try:
        with cur.copy("COPY c (id, name, price, d) FROM STDIN") as cp:
            cp.write_row((600, "x", 1, None))
            raise RuntimeError("client gave up")
    except RuntimeError:
        pass
    cur.execute("SELECT count(*), sum(id) FROM c")
    if cur.fetchone() != (count, total):
        fail("a failed COPY left rows behind")
    # Inside a transaction: rolled back with it.
    conn.autocommit = False
    with cur.copy("COPY c (id, name, price, d) FROM STDIN") as cp:
        cp.write_row((700, "in txn", 1, None))
    cur.execute("SELECT count(*) FROM c WHERE id = 700")
    if cur.fetchone()[0] != 1:
        fail("a COPY in a transaction is not visible in it")
    conn.rollback()
    cur.execute("SELECT count(*) FROM c WHERE id = 700")
    if cur.fetchone()[0] != 0:
        fail("a rolled-back COPY kept its row")
    conn.rollback()


def cursor():
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE s (id integer PRIMARY KEY, v text)")
    with cur.copy("COPY s FROM STDIN") as cp:
        for i in range(10000):
            cp.write_row((i, f"v{i}"))
    conn.autocommit = False
    # A server-side cursor: DECLARE, FETCH FORWARD in batches, CLOSE.
    with conn.cursor(name="big_scan") as sc:
        sc.itersize = 700
        sc.execute("SELECT id, v FROM s WHERE id >= %s ORDER BY id", (0,))
        seen = 0
        for row in sc:
            if row != (seen, f"v{seen}"):
                fail(f"row {seen}: {row}")
            seen += 1
        if seen != 10000:
            fail(f"the cursor gave {seen} rows")
    with conn.cursor(name="batches") as sc:
        sc.execute("SELECT id FROM s ORDER BY id")
        first = sc.fetchmany(3)
        rest = sc.fetchall()
        if [r[0] for r in first] != [0, 1, 2] or len(rest) != 9997:
            fail("fetchmany/fetchall over a cursor")
    conn.commit()
    # WITH HOLD survives the commit; without hold a cursor needs a transaction.
    with conn.cursor(name="held", withhold=True) as sc:
        sc.execute("SELECT id FROM s WHERE id < 10 ORDER BY id")
        conn.commit()
        if [r[0] for r in sc.fetchall()] != list(range(10)):
            fail("a WITH HOLD cursor lost its rows at commit")
    conn.commit()
    conn.autocommit = True
    try:
        cur.execute("DECLARE nohold CURSOR FOR SELECT 1")
        fail("DECLARE without hold outside a transaction was accepted")
    except psycopg.errors.NoActiveSqlTransaction:
        pass
    try:
        cur.execute("FETCH 1 FROM nosuch")
        fail("FETCH from a missing cursor was accepted")
    except psycopg.errors.InvalidCursorName:
        pass


def load():
    """100 connections for NDPDB_LOAD_SECONDS (default 5): transfers between
    accounts (half the connections REPEATABLE READ, where 40001 is retried;
    40P01 is retried everywhere),
    inserts whose commits are recorded, and reads of the balance total."""
    import os
    import random
    import time

    seconds = float(os.environ.get("NDPDB_LOAD_SECONDS", "5"))
    clients, accounts = 100, 200
    setup = connect(autocommit=True)
    cur = setup.cursor()
    cur.execute("CREATE TABLE acc (id integer PRIMARY KEY, bal integer)")
    cur.execute("CREATE TABLE ins (client integer, seq integer, PRIMARY KEY (client, seq))")
    with cur.copy("COPY acc FROM STDIN") as cp:
        for i in range(accounts):
            cp.write_row((i, 1000))
    total = accounts * 1000
    conns = [connect() for _ in range(clients)]
    results = [None] * clients
    start = time.time()
    deadline = start + seconds

    def worker(k):
        rng = random.Random(k)
        conn = conns[k]
        if k % 2 and os.environ.get("NDPDB_LOAD_RR", "1") == "1":
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        cur = conn.cursor()
        r = {"transfers": 0, "inserts": [], "reads": 0, "retries": 0, "deadlocks": 0, "errors": []}
        seq = 0
        while time.time() < deadline:
            op = rng.random()
            try:
                if op < 0.6:
                    a, b = sorted(rng.sample(range(accounts), 2))
                    amount = rng.randint(-50, 50)
                    cur.execute("UPDATE acc SET bal = bal - %s WHERE id = %s", (amount, a))
                    cur.execute("UPDATE acc SET bal = bal + %s WHERE id = %s", (amount, b))
                    conn.commit()
                    r["transfers"] += 1
                elif op < 0.8:
                    seq += 1
                    cur.execute("INSERT INTO ins VALUES (%s, %s)", (k, seq))
                    conn.commit()
                    r["inserts"].append(seq)
                else:
                    cur.execute("SELECT sum(bal), count(*) FROM acc")
                    got = cur.fetchone()
                    conn.commit()
                    if got != (total, accounts):
                        r["errors"].append(f"a read saw {got}, not ({total}, {accounts})")
                    r["reads"] += 1
            except psycopg.errors.SerializationFailure:
                conn.rollback()
                r["retries"] += 1
            except psycopg.errors.DeadlockDetected:
                # Tuple locks share hashed buckets (and key on the version),
                # so transfers in id order may still deadlock: retried.
                conn.rollback()
                r["deadlocks"] += 1
            except Exception as e:  # noqa: BLE001 - every other error fails the run
                conn.rollback()
                r["errors"].append(f"{type(e).__name__}: {e}")
        results[k] = r

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - start
    errors = [e for r in results for e in r["errors"]]
    cur.execute("SELECT sum(bal) FROM acc")
    final = cur.fetchone()[0]
    if errors:
        kinds = sorted({e.split(":")[0] if not e.startswith("a read saw") else "inconsistent read" for e in errors})
        fail(f"{len(errors)} errors (final sum {final} of {total}), kinds {kinds}, first: {errors[:3]}")
    if final != total:
        fail(f"the sum of balances changed: {final}, not {total}")
    lost = 0
    for k, r in enumerate(results):
        cur.execute("SELECT seq FROM ins WHERE client = %s", (k,))
        present = {row[0] for row in cur.fetchall()}
        lost += len(set(r["inserts"]) - present)
    if lost:
        fail(f"{lost} acknowledged inserts are missing")
    transfers = sum(r["transfers"] for r in results)
    inserts = sum(len(r["inserts"]) for r in results)
    reads = sum(r["reads"] for r in results)
    retries = sum(r["retries"] for r in results)
    deadlocks = sum(r["deadlocks"] for r in results)
    print(
        f"load: {clients} connections, {elapsed:.1f} s: {transfers} transfers, {inserts} inserts, "
        f"{reads} reads committed ({(transfers + inserts + reads) / elapsed:.0f} txn/s), "
        f"{retries} serialization failures and {deadlocks} deadlocks retried, 0 errors, 0 lost commits"
    )
    for c in conns:
        c.close()


MODES = {"cancel": cancel, "copy": copy, "cursor": cursor, "load": load}
if __name__ == "__main__":
    MODES[mode]()
    print(f"{mode} ok")
