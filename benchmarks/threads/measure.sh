#!/usr/bin/env bash
# Issue 19's measurements in one go, one at a time (a 2-core machine: nothing else may run).
# Needs: the project's venv as $PY, a worktree of 20f5a68 at /tmp/base (git worktree add /tmp/base 20f5a68).
# Steps small_prev / medium_prev time this code against another commit of the efce package
# instead: $PREV_PY is a venv with that commit installed editable (e.g. a copy of $PY's venv,
# then pip install --no-deps -e WORKTREE), in the order ORDER gives with "prev" for it.
# Writes JSON lines to $OUT/measure.jsonl and the large run to $OUT/large/.
set -u
PY=${PY:-python}
OUT=${OUT:-docs/results/perf_threads}
HERE=$(dirname "$0")
SMALL="battleship:rows=3,cols=2,ship_sizes=[1],shots=3"
MEDIUM="battleship:rows=3,cols=2,ship_sizes=[1],shots=4"
LARGE="battleship:rows=3,cols=2,ship_sizes=[2],shots=4"
log() { echo "{\"step\": \"$1\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"at\": \"$(date -u +%H:%M:%S)\"}" >> "$OUT/measure.jsonl"; }
run() { log "$1"; shift; "$@" >> "$OUT/measure.jsonl" 2>> "$OUT/measure.err"; }
for step in ${STEPS:-small medium per_iteration memory memory_large large large_per_iteration}; do
  case $step in
    # A = 20f5a68, B = this code, in the order ORDER gives (default A B A B)
    small|medium)
             spec=$SMALL; [ $step = medium ] && spec=$MEDIUM
             for mode in ${ORDER:-base new base new}; do
               run "$step $mode" $PY "$HERE/time_to_target.py" $mode "$spec"; done ;;
    small_prev|medium_prev)
             spec=$SMALL; [ $step = medium_prev ] && spec=$MEDIUM
             for mode in ${ORDER:-prev new prev new}; do
               py=$PY; [ $mode = prev ] && py=$PREV_PY
               log "$step $mode"
               $py "$HERE/time_to_target.py" new "$spec" | sed "s/\"mode\": \"new\"/\"mode\": \"$mode\"/" \
                 >> "$OUT/measure.jsonl" 2>> "$OUT/measure.err"; done ;;
    per_iteration) run "medium per iteration" $PY "$HERE/per_iteration.py" "$MEDIUM" 4 3 prm+ ;;
    memory)  for g in "$SMALL" "$MEDIUM"; do
               run "memory $g" "$(dirname "$PY")/efce" solve "$g" --method rm --iterations 3 --target-gap 0 --json; done ;;
    memory_large) run "memory $LARGE" "$(dirname "$PY")/efce" solve "$LARGE" --method rm --iterations 3 --target-gap 0 --json ;;
    large)   log "large run"; mkdir -p "$OUT/large"
             $PY benchmarks/run_large_battleship.py --seconds 3600 --target-gap 1e-3 --out "$OUT/large" \
               2> "$OUT/large/log.txt" || true
             $PY benchmarks/run_large_battleship.py --plot --out "$OUT/large" ;;
    large_per_iteration) run "large per iteration" $PY "$HERE/per_iteration.py" "$LARGE" 2 2 prm+ ;;
  esac
done
log done
