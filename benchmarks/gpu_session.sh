#!/usr/bin/env bash
# One device session, as one command, on a machine with an NVIDIA GPU whose Python has numba,
# numba-cuda, numpy, scipy, networkx, psutil and tqdm but none of cvxpy, highspy, ortools or dask
# and no network (the rm path needs none of them): install the toolkit without its dependencies,
# check the CUDA backend against the CPU on the papers' small games on the real GPU, then run
# benchmarks/gpu_rm.py (small, medium and large Battleship; --quick: small and medium only).
#     bash benchmarks/gpu_session.sh [--quick] [OUT_DIR]
# Results: OUT_DIR/gpu_rm.json and OUT_DIR/log.txt (default OUT_DIR: $OUT, else gpu_results).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=""; [ "${1:-}" = "--quick" ] && { quick="--quick"; shift; }
out=${1:-${OUT:-gpu_results}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
exec > >(tee "$out/log.txt") 2>&1
started=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . 2>&1 | tail -2 || true
python3 -c "import efce, numba, numba_cuda; print('efce', efce.__file__, 'numba', numba.__version__)"
echo "== refusal and estimate, then rm on a tiny game on the GPU against the CPU ($((SECONDS - started)) s)"
python3 - <<'PY'
import efce
from efce.solvers.methods.efce import solve_efce

for spec in ("farina-fig1", "sheriff:max_bribe=2,max_items=1,rounds=1"):
    game = efce.games.make_game(spec)
    cpu = solve_efce(game, target_gap=1e-4, iterations=20000)
    gpu = solve_efce(game, target_gap=1e-4, iterations=20000, backend="cuda")
    print(spec, "cpu", cpu.status, cpu.iterations, cpu.final_gap, "gpu", gpu.status, gpu.iterations,
          gpu.final_gap, "plan violation", gpu.info.get("plan_violation"), "compile s", gpu.compile_seconds)
    assert gpu.status == "converged" and gpu.final_gap <= 1e-4, (gpu.status, gpu.final_gap)
PY
echo "== benchmarks/gpu_rm.py $quick ($((SECONDS - started)) s)"
python3 benchmarks/gpu_rm.py $quick --out "$out/gpu_rm.json"
echo "== done in $((SECONDS - started)) s"
