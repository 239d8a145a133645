"""One import namespace: the install puts only ``efce`` into site-packages, and the command line
runs from any folder, whatever packages that folder holds."""

import json
import subprocess
import sys
import zipfile

from tests.paths import ROOT

FOLDERS = ("games", "polytopes", "solvers", "baselines", "experiments")


def test_the_wheel_has_exactly_one_top_level_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("efce_toolkit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"efce"}
    # Every module of every folder and subfolder is in the wheel, under its efce name.
    modules = [
        module
        for folder in FOLDERS
        for module in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in module.parts
    ]
    assert any(len(module.relative_to(ROOT).parts) > 2 for module in modules)  # rooms are walked
    for module in modules:
        assert f"efce/{module.relative_to(ROOT).as_posix()}" in names


def test_python_m_efce_runs_from_a_folder_with_packages_named_like_the_toolkits_folders(tmp_path):
    for name in FOLDERS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ImportError('the user folder {name} was imported')\n"
        )
    child = subprocess.run(
        [sys.executable, "-m", "efce", "info", "kuhn", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert json.loads(child.stdout)["players"] == 2


def test_importing_a_subpackage_does_not_load_the_experiment_runner():
    code = "import sys, efce.games; print(any(m.startswith('efce.experiments') for m in sys.modules))"
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert child.stdout.strip() == "False", child.stderr[-2000:]
