-- SPDX-License-Identifier: LGPL-2.1-or-later
-- sqlite workload for `make bench`: build and query 120,000 rows in an
-- in-memory database (run as: sqlite3 :memory: ".read bench/sqlite.sql").
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 120000)
INSERT INTO t
  SELECT x, x % 97,
         printf('name-%08d-%x', (x * 7919) % 120000, (x * 2654435761) % 4294967296),
         ((x * 31) % 1000) / 7.0
  FROM c;
CREATE INDEX t_name ON t(name);
SELECT grp, count(*), round(sum(val), 2), max(name) FROM t GROUP BY grp ORDER BY 3 DESC LIMIT 5;
SELECT substr(name, 6, 3) AS k, count(*), round(avg(val), 3) FROM t GROUP BY k ORDER BY k LIMIT 5;
SELECT name, val FROM t ORDER BY val DESC, name LIMIT 5;
CREATE TABLE u AS SELECT grp, name || '/' || id AS s, val * 2 AS v FROM t ORDER BY (id * 7919) % 120000;
SELECT a.grp, count(*) FROM t a JOIN u b ON a.grp = b.grp AND a.id = b.grp * 1000 GROUP BY a.grp ORDER BY 2 DESC LIMIT 3;
SELECT count(DISTINCT substr(s, 6, 6)), count(DISTINCT v) FROM u;
SELECT s FROM u ORDER BY substr(s, 15), v DESC LIMIT 3;
UPDATE t SET name = upper(name) WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
SELECT grp % 10 AS g, count(*), group_concat(DISTINCT substr(name, 1, 6)) FROM t GROUP BY g ORDER BY g LIMIT 3;
SELECT group_concat(name, ',') IS NOT NULL, length(group_concat(name, ',')) FROM (SELECT name FROM t ORDER BY name DESC);
DROP TABLE u;
DROP TABLE t;
