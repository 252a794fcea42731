-- SPDX-License-Identifier: LGPL-2.1-or-later
-- A SQLite workload for the reliability and unwind-check suites: 200,000 rows
-- in memory, an index, and queries over them.
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, 'name' || x, x * 0.5 FROM c;
CREATE INDEX tv ON t(name);
SELECT count(*), sum(v) FROM t;
SELECT name FROM t WHERE id % 60000 = 0 ORDER BY name;
SELECT substr(name, 1, 5) AS p, count(*) FROM t GROUP BY p ORDER BY 2 DESC LIMIT 3;
