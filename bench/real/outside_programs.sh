# outside_programs.sh - the programs outside the corpus (perl, sqlite3, jq):
# sourced with dir set (a scratch directory) and scale (1 unless set: the
# sizes below, shrunk by smoke tests); checks their tools (exit 77 when one
# is missing), writes their inputs into $dir and defines outside_programs():
# one program a line, as corpus() (corpus.sh).
#   perl     builds a 300,000-entry hash (1.2M allocations, most live at the end)
#   sqlite3  inserts and indexes 200,000 rows
#   jq       reads a 200,000-object JSON document (2.2M allocations, all live)
# shellcheck shell=sh

for tool in perl sqlite3 jq python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "SKIP: ${bench:-bench}: $tool is missing (apt-get install $tool)"
        exit 77
    }
done
n_rows=$(awk -v s="${scale:-1}" 'BEGIN { n = int(200000 * s); print n < 100 ? 100 : n }')
n_keys=$(awk -v s="${scale:-1}" 'BEGIN { n = int(300000 * s); print n < 100 ? 100 : n }')
python3 - "$dir/big.json" "$n_rows" <<'PY'
import json, sys
rows = [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", str(i % 7)], "score": i * 0.5}
        for i in range(int(sys.argv[2]))]
open(sys.argv[1], "w").write(json.dumps(rows))
PY
cat >"$dir/sql.txt" <<SQL
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL);
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<$n_rows) INSERT INTO t SELECT x, 'name-'||x, x*0.5 FROM c;
COMMIT;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(score) FROM t WHERE name LIKE 'name-1%';
SELECT name, count(*) FROM t GROUP BY substr(name,1,7) ORDER BY 2 DESC LIMIT 3;
SQL
# name|directory|command (no blanks inside an argument, no '|')|before each run
outside_programs() {
    cat <<EOP
perl|$dir|perl -e my%h;for\$i(1..$n_keys){\$h{"key\$i"}=[\$i,"val\$i"]}print(scalar(keys%h),"\\n")|true
sqlite3|$dir|sqlite3 $dir/db.sqlite -init $dir/sql.txt .quit|rm -f $dir/db.sqlite
jq|$dir|jq -c max_by(.score) $dir/big.json|true
EOP
}
