-- The queries psql 15 sends for `\dn` (psql -E), one per statement;
-- '{oid}' stands for the OID the first query returned.

SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;
