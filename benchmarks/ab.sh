#!/usr/bin/env bash
# A B A B comparison of two checkouts of the toolkit, one process at a time (on a 2-core machine
# nothing else may run meanwhile).  A and B are the Pythons of two venvs, each with one commit
# installed editable, e.g. for A = a named commit:
#     git worktree add /tmp/a COMMIT && python3 -m venv /tmp/a/.venv && /tmp/a/.venv/bin/pip install -e /tmp/a
# Every step runs this checkout's benchmarks/timing.py (or efce itself) under A and B in the
# order ORDER gives and appends JSON lines to $OUT/measure.jsonl, each run preceded by a line
# naming the step, the side and the load.
#     A_PY=/tmp/a/.venv/bin/python B_PY=.venv/bin/python STEPS="small medium" benchmarks/ab.sh
# Steps: small, medium (time to max deviation 1e-3), per_iteration and small_per_iteration
# (seconds per iteration of rm on medium / small Battleship; ITERATIONS, REPEATS and THREADS
# override 4, 3 and "1,2"), cfr_leduc (seconds per iteration of CFR+ on two-player Leduc),
# memory (peak of efce solve on small and medium), memory_large, large (the large instance to 1e-3
# on B, with its trace and figure in $OUT/large), large_per_iteration (B).
set -u
A_PY=${A_PY:?the Python of the venv holding commit A}
B_PY=${B_PY:-.venv/bin/python}
OUT=${OUT:-docs/results/perf_threads}
HERE=$(dirname "$0")
SMALL="battleship:rows=3,cols=2,ship_sizes=[1],shots=3"
MEDIUM="battleship:rows=3,cols=2,ship_sizes=[1],shots=4"
LARGE="battleship:rows=3,cols=2,ship_sizes=[2],shots=4"
mkdir -p "$OUT"
log() { echo "{\"step\": \"$1\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"at\": \"$(date -u +%H:%M:%S)\"}" >> "$OUT/measure.jsonl"; }
python_of() { if [ "$1" = A ]; then echo "$A_PY"; else echo "$B_PY"; fi; }
for step in ${STEPS:-small medium per_iteration memory}; do
  case $step in
    small|medium)
      spec=$SMALL; [ "$step" = medium ] && spec=$MEDIUM
      for side in ${ORDER:-A B A B}; do
        log "$step $side"; "$(python_of "$side")" "$HERE/timing.py" to-target "$spec" >> "$OUT/measure.jsonl"
      done ;;
    per_iteration|small_per_iteration)
      spec=$MEDIUM; [ "$step" = small_per_iteration ] && spec=$SMALL
      for side in ${ORDER:-A B A B}; do
        log "$step $side"
        "$(python_of "$side")" "$HERE/timing.py" iterations "$spec" --iterations "${ITERATIONS:-4}" \
          --repeats "${REPEATS:-3}" --threads "${THREADS:-1,2}" >> "$OUT/measure.jsonl"
      done ;;
    cfr_leduc)
      for side in ${ORDER:-A B A B}; do
        log "cfr+ leduc per iteration $side"
        "$(python_of "$side")" "$HERE/timing.py" cfr-iterations "leduc:players=2" >> "$OUT/measure.jsonl"
      done ;;
    memory|memory_large)
      specs="$SMALL $MEDIUM"; [ "$step" = memory_large ] && specs=$LARGE
      for spec in $specs; do
        for side in ${ORDER:-A B A B}; do
          log "memory $spec $side"
          "$(dirname "$(python_of "$side")")/efce" solve "$spec" --method rm --iterations 3 --target-gap 0 --json >> "$OUT/measure.jsonl"
        done
      done ;;
    large)
      log "large run B"; mkdir -p "$OUT/large"
      "$B_PY" "$HERE/run_large_battleship.py" --seconds 3600 --target-gap 1e-3 --out "$OUT/large" 2> "$OUT/large/log.txt" || true
      "$B_PY" "$HERE/run_large_battleship.py" --plot --out "$OUT/large" ;;
    large_per_iteration)
      log "large per iteration B"
      "$B_PY" "$HERE/timing.py" iterations "$LARGE" --iterations 2 --repeats 2 >> "$OUT/measure.jsonl" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
log done
