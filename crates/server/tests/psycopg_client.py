"""psycopg 3 against `ndpdb serve` (run by tests/psycopg.rs with the port).

Checks: parameters of every supported type in text and binary form,
transactions, an error's SQLSTATE, a prepared statement reused 1,000 times.
Exits non-zero with a message on the first difference.
"""
import datetime
import decimal
import sys

import psycopg

port = int(sys.argv[1])
conn = psycopg.connect(host="127.0.0.1", port=port, user="ndpdb", dbname="ndpdb", autocommit=True)
cur = conn.cursor()

cur.execute(
    "CREATE TABLE v (i2 smallint, i4 integer, i8 bigint, n numeric(12,3), f double precision, "
    "b boolean, d date, ts timestamp, c char(3), vc varchar(10), t text)"
)
row = (
    7, -123456, 9_000_000_000, decimal.Decimal("-1234.567"), 2.5, True,
    datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 45, 1, 250000), "ab ", "xyz", "héllo",
)
for binary in (False, True):
    cur.execute("DELETE FROM v")
    cur.execute("INSERT INTO v VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", row, binary=binary)
    cur.execute("SELECT * FROM v", binary=binary)
    got = cur.fetchone()
    if tuple(got) != row:
        sys.exit(f"binary={binary}: wrote {row}, read {got}")
    cur.execute("SELECT * FROM v WHERE i4 = %s AND t = %s", (-123456, "héllo"), binary=binary)
    if cur.fetchone() is None:
        sys.exit(f"binary={binary}: the parameterised WHERE found nothing")
cur.execute("INSERT INTO v (i4) VALUES (%s)", (None,))
cur.execute("SELECT count(*) FROM v WHERE i4 IS NULL")
if cur.fetchone()[0] != 1:
    sys.exit("NULL parameter was not stored as NULL")

# Transactions.
conn.autocommit = False
cur.execute("CREATE TABLE acc (id integer PRIMARY KEY, bal integer)")
conn.commit()
cur.execute("INSERT INTO acc VALUES (1, 100)")
conn.rollback()
cur.execute("SELECT count(*) FROM acc")
if cur.fetchone()[0] != 0:
    sys.exit("rollback kept a row")
conn.commit()
with conn.transaction():
    cur.execute("INSERT INTO acc VALUES (1, 100), (2, 50)")
cur.execute("SELECT sum(bal) FROM acc")
if cur.fetchone()[0] != 150:
    sys.exit("commit lost rows")
conn.commit()

# An error's SQLSTATE, and the session goes on.
try:
    cur.execute("INSERT INTO acc VALUES (1, 5)")
    sys.exit("duplicate key was accepted")
except psycopg.errors.UniqueViolation as e:
    if e.sqlstate != "23505":
        sys.exit(f"sqlstate {e.sqlstate}")
conn.rollback()
try:
    cur.execute("SELECT nosuchcolumn FROM acc")
    sys.exit("unknown column was accepted")
except psycopg.errors.UndefinedColumn:
    pass
conn.rollback()

# A prepared statement reused 1,000 times.
conn.autocommit = True
total = 0
for k in range(1000):
    cur.execute("SELECT bal + %s FROM acc WHERE id = %s", (k, 1 + k % 2), prepare=True)
    total += cur.fetchone()[0]
expected = sum((100 if k % 2 == 0 else 50) + k for k in range(1000))
if total != expected:
    sys.exit(f"prepared reuse: {total} != {expected}")
print("psycopg ok")
