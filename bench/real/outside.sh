#!/bin/sh
# outside.sh BUILD [ROUNDS] - bench-real's table for programs outside its
# corpus, the ones docs/PERFORMANCE.md reports to show nothing was tuned to
# the corpus: perl building a 300,000-entry hash (1.2M allocations, most
# live at the end), sqlite3 inserting and indexing 200,000 rows, and jq
# reading a 200,000-object JSON document (2.2M allocations, all live). It
# writes their inputs and a BENCH_REAL_PROGRAMS file, then runs run.sh.
set -u
build=${1:-build}
rounds=${2:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in perl sqlite3 jq python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "SKIP: bench-real-outside: $tool is missing (apt-get install $tool)"
        exit 77
    }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir/big.json" <<'EOF'
import json, sys
rows = [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", str(i % 7)], "score": i * 0.5}
        for i in range(200000)]
open(sys.argv[1], "w").write(json.dumps(rows))
EOF
cat >"$dir/sql.txt" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL);
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<200000) INSERT INTO t SELECT x, 'name-'||x, x*0.5 FROM c;
COMMIT;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(score) FROM t WHERE name LIKE 'name-1%';
SELECT name, count(*) FROM t GROUP BY substr(name,1,7) ORDER BY 2 DESC LIMIT 3;
EOF
# name|directory|command (no blanks inside an argument, no '|')|before each run
cat >"$dir/programs.txt" <<EOF
perl|$dir|perl -e my%h;for\$i(1..300000){\$h{"key\$i"}=[\$i,"val\$i"]}print(scalar(keys%h),"\\n")|true
sqlite3|$dir|sqlite3 $dir/db.sqlite -init $dir/sql.txt .quit|rm -f $dir/db.sqlite
jq|$dir|jq -c max_by(.score) $dir/big.json|true
EOF
BENCH_REAL_PROGRAMS="$dir/programs.txt" sh "$src/bench/real/run.sh" "$build" "$rounds" 1
