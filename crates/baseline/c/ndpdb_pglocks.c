/*
 * ndpdb_pglocks: times PostgreSQL's own lock manager for Exp. 3 of
 * `ndpdb bench locks` (ccSLT, EDBT'22, Fig. 6: "the internal PostgreSQL
 * tuple locking functionality", isolated from the executor).
 *
 * ndpdb compiles this file against the server headers of the PostgreSQL it
 * starts (crates/baseline/src/pglocks.rs) and loads it into that private
 * server only. One call times `n` pairs of LockAcquire + LockRelease of an
 * ExclusiveLock on a tuple lock tag (LOCKTAG_TUPLE: the heavyweight tuple
 * lock that heap_lock_tuple takes for an UPDATE, LockTupleNoKeyExclusive)
 * and returns the n latencies in nanoseconds as little-endian 8-byte words
 * in a bytea.
 *
 * Keys follow ndpdb's `bench_host` exactly: key i is `base + i % keys`
 * (sequential) or `base + splitmix64(rng) % keys` (random), so both tables
 * see the same key sequence; key k is tuple (block k >> 8, offset
 * (k & 255) + 1) of relation `rel`. Each pair is timed with
 * clock_gettime(CLOCK_MONOTONIC), as Rust's Instant is on Linux.
 */
#include "postgres.h"

#include <time.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/block.h"
#include "storage/lock.h"
#include "storage/off.h"

PG_MODULE_MAGIC;

static inline uint64
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64) t.tv_sec * UINT64CONST(1000000000) + (uint64) t.tv_nsec;
}

/* The same generator as ndpdb_locktable::bench::splitmix. */
static inline uint64
splitmix(uint64 *state)
{
	uint64		z;

	*state += UINT64CONST(0x9E3779B97F4A7C15);
	z = *state;
	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

PG_FUNCTION_INFO_V1(ndpdb_tuple_lock_latencies);

/* (n int4, random bool, rng int8, base int8, keys int8, rel oid) -> bytea */
Datum
ndpdb_tuple_lock_latencies(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);
	bool		random = PG_GETARG_BOOL(1);
	uint64		rng = (uint64) PG_GETARG_INT64(2);
	uint64		base = (uint64) PG_GETARG_INT64(3);
	int64		keys = PG_GETARG_INT64(4);
	Oid			rel = PG_GETARG_OID(5);
	bytea	   *out;
	char	   *at;
	int32		i;

	if (n < 0 || n > 20000000)
		ereport(ERROR, (errmsg("ndpdb_tuple_lock_latencies: n = %d, choose 0..20000000", n)));
	if (keys <= 0 || keys > (INT64CONST(1) << 40))
		ereport(ERROR, (errmsg("ndpdb_tuple_lock_latencies: keys = " INT64_FORMAT ", choose 1..2^40", keys)));
	out = (bytea *) palloc(VARHDRSZ + (Size) n * 8);
	SET_VARSIZE(out, VARHDRSZ + (Size) n * 8);
	at = VARDATA(out);
	for (i = 0; i < n; i++)
	{
		uint64		key = base + (random ? splitmix(&rng) % (uint64) keys : (uint64) i % (uint64) keys);
		LOCKTAG		tag;
		uint64		start,
					ns;
		int			b;

		SET_LOCKTAG_TUPLE(tag, MyDatabaseId, rel, (BlockNumber) (key >> 8), (OffsetNumber) ((key & 0xff) + 1));
		start = now_ns();
		if (LockAcquire(&tag, ExclusiveLock, false, false) != LOCKACQUIRE_OK)
			ereport(ERROR, (errmsg("ndpdb_tuple_lock_latencies: tuple lock " UINT64_FORMAT " was already held", key)));
		if (!LockRelease(&tag, ExclusiveLock, false))
			ereport(ERROR, (errmsg("ndpdb_tuple_lock_latencies: tuple lock " UINT64_FORMAT " was not held", key)));
		ns = now_ns() - start;
		for (b = 0; b < 8; b++)
			at[(Size) i * 8 + b] = (char) ((ns >> (8 * b)) & 0xff);
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_BYTEA_P(out);
}
