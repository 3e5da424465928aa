#!/usr/bin/env bash
# grstats's Spark jobs on a real cluster with spark-submit: ingest the collector's spool into
# the table, then write the report. Run it from a machine with Spark (spark-submit on PATH or
# in $SPARK_HOME) that can reach the master; the driver runs here (client mode).
#
# What the cluster needs:
#   * Shared storage. The executors read the spool's segments and write the table's files
#     themselves, and the driver moves and commits them: SPOOL and TABLE must be the same
#     paths on this machine and on every worker (NFS, CephFS, a shared volume). The report's
#     OUT only needs to be writable here.
#   * Python 3.11+ with grstats and its spark extra (pyspark, pyarrow, deltalake; msgpack comes with
#     grstats) on every executor. --py-files cannot carry compiled modules, so this script
#     ships a whole virtual environment: it packs one with venv-pack (built once, reused),
#     installing the wheel as grstats[spark], and passes it with --archives; executors unpack
#     it and run ./environment/bin/python. The driver uses the same environment unpacked here.
#     If grstats[spark] is already installed on every node at the same path, set
#     GRSTATS_PYTHON to that interpreter instead and nothing is shipped.
#   * Java 17 and Spark 4.x matching the pyspark in the environment (pyspark 4.3.0).
#
# It runs two jobs, one after the other: grstats spark ingest (loads the sealed segments no
# earlier run loaded, exactly once, so running it again after a failure is safe), then
# grstats spark report over the table. Run it from cron or a timer as often as reports are
# wanted (deploy/README.md).
#
# Usage (deploy/spark/submit.sh --help prints this):
#   MASTER=spark://spark-master:7077 SPOOL=/mnt/shared/grstats/spool \
#   TABLE=/mnt/shared/grstats/table OUT=/var/www/grstats/report deploy/spark/submit.sh
#
# Optional: WHEEL (a grstats wheel, default: built from this checkout with 'pip wheel'),
# ENV_ARCHIVE (default: grstats-env.tar.gz here), GRSTATS_PYTHON (see above),
# REPORT_ARGS (e.g. "--from 2026-01-31T00:00Z --to 2026-02-01T00:00Z"),
# SUBMIT_ARGS (more spark-submit options, e.g. "--executor-memory 2g --total-executor-cores 8").
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi
if [[ $# -gt 0 ]]; then
    echo "submit.sh: takes no arguments but --help (settings come from the environment): $*" >&2
    exit 2
fi

: "${MASTER:?set MASTER, e.g. spark://spark-master:7077}"
: "${SPOOL:?set SPOOL, the spool directory of grstats collect, on shared storage}"
: "${TABLE:?set TABLE, the table directory on shared storage}"
: "${OUT:?set OUT, where the report goes}"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ENV_ARCHIVE=${ENV_ARCHIVE:-$PWD/grstats-env.tar.gz}
SPARK_SUBMIT=${SPARK_HOME:+$SPARK_HOME/bin/}spark-submit
read -r -a extra <<<"${SUBMIT_ARGS:-}"
read -r -a report_args <<<"${REPORT_ARGS:-}"

ship=()
if [[ -n "${GRSTATS_PYTHON:-}" ]]; then
    driver_python=$GRSTATS_PYTHON
    executor_python=$GRSTATS_PYTHON
else
    env_dir=${ENV_ARCHIVE%.tar.gz}
    if [[ ! -f "$ENV_ARCHIVE" ]]; then
        echo "packing grstats and its dependencies into $ENV_ARCHIVE" >&2
        wheel=${WHEEL:-}
        if [[ -z "$wheel" ]]; then
            python3 -m pip wheel --no-deps --wheel-dir "$env_dir-wheel" "$REPO" >&2
            wheel=$(ls "$env_dir-wheel"/grstats-*.whl)
        fi
        python3 -m venv "$env_dir"
        "$env_dir/bin/pip" install --quiet "${wheel}[spark]" venv-pack
        "$env_dir/bin/venv-pack" --quiet --python-prefix ./environment -p "$env_dir" -o "$ENV_ARCHIVE"
    fi
    driver_python=$env_dir/bin/python
    executor_python=./environment/bin/python
    ship=(--archives "$ENV_ARCHIVE#environment")
fi

# The job's driver program is grstats's own command line (grstats_driver.py).
main=$REPO/deploy/spark/grstats_driver.py
submit() {
    PYSPARK_DRIVER_PYTHON=$driver_python PYSPARK_PYTHON=$executor_python \
        "$SPARK_SUBMIT" --master "$MASTER" --deploy-mode client \
        --conf "spark.pyspark.python=$executor_python" \
        --conf "spark.pyspark.driver.python=$driver_python" \
        "${ship[@]}" "${extra[@]}" "$main" spark "$@"
}

submit ingest --spool "$SPOOL" --table "$TABLE" --master "$MASTER"
submit report --table "$TABLE" --out "$OUT" --master "$MASTER" "${report_args[@]}"
