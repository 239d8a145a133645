"""games.resources.memory.ParkedArrays: arrays out of memory and back, always cleaned up."""

import os

import numpy as np
import pytest

from efce.games.resources import memory
from efce.games.resources.memory import ParkedArrays


def _arrays():
    return {"columns": np.arange(1000, dtype=np.int32), "values": np.linspace(0.0, 1.0, 500)}


def _parked_dirs(directory):
    return [name for name in os.listdir(directory) if name.startswith("efce-parked-")]


def test_round_trip_through_disk_removes_the_files(tmp_path):
    arrays = _arrays()
    with ParkedArrays(min_bytes=0, directory=str(tmp_path), **arrays) as parked:
        assert parked.on_disk and len(_parked_dirs(tmp_path)) == 1
        back = parked.restore()
        assert not _parked_dirs(tmp_path)  # the files go as soon as they are read
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and np.array_equal(back[name], array)
        assert back[name] is not array
    with pytest.raises(RuntimeError, match="already restored"):
        parked.restore()


@pytest.mark.parametrize("min_bytes", [0, 2**62])
def test_arrays_come_back_one_at_a_time(tmp_path, min_bytes):
    arrays = _arrays()
    with ParkedArrays(min_bytes=min_bytes, directory=str(tmp_path), **arrays) as parked:
        first = parked.restore("values")
        assert list(first) == ["values"] and np.array_equal(first["values"], arrays["values"])
        assert len(_parked_dirs(tmp_path)) == (1 if parked.on_disk else 0)  # "columns" still out
        with pytest.raises(RuntimeError, match="values: already restored"):
            parked.restore("values")
        rest = parked.restore()
        assert list(rest) == ["columns"] and np.array_equal(rest["columns"], arrays["columns"])
        assert not _parked_dirs(tmp_path)


def test_small_arrays_stay_in_memory(tmp_path):
    arrays = _arrays()
    with ParkedArrays(directory=str(tmp_path), **arrays) as parked:  # far below PARK_MIN_BYTES
        assert not parked.on_disk and not _parked_dirs(tmp_path)
        back = parked.restore()
    assert all(back[name] is arrays[name] for name in arrays)


def test_a_short_disk_keeps_the_arrays_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "PARK_DISK_RESERVE", 2**62)  # no disk is that large
    arrays = _arrays()
    with ParkedArrays(min_bytes=0, directory=str(tmp_path), **arrays) as parked:
        assert not parked.on_disk and not _parked_dirs(tmp_path)
        assert np.array_equal(parked.restore()["columns"], arrays["columns"])


def test_ram_backed_file_systems_are_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "file_system_type", lambda path: "tmpfs")
    with ParkedArrays(min_bytes=0, directory=str(tmp_path), **_arrays()) as parked:
        assert not parked.on_disk


def test_the_directory_goes_on_an_exception_or_interrupt(tmp_path):
    for error in (ValueError, KeyboardInterrupt):
        with (
            pytest.raises(error),
            ParkedArrays(min_bytes=0, directory=str(tmp_path), **_arrays()) as parked,
        ):
            assert parked.on_disk and _parked_dirs(tmp_path)
            raise error()
        assert not _parked_dirs(tmp_path)


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    def failing_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(memory.np, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        ParkedArrays(min_bytes=0, directory=str(tmp_path), **_arrays())
    assert not _parked_dirs(tmp_path)


def test_arrays_read_back_own_their_memory_in_every_layout(tmp_path):
    arrays = {
        "c_order": np.arange(12.0).reshape(3, 4),
        "fortran_order": np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4)),
        "empty": np.zeros((0, 2)),
        "flags": np.array([True, False, True]),
    }
    with ParkedArrays(min_bytes=0, directory=str(tmp_path), **arrays) as parked:
        assert parked.on_disk
        back = parked.restore()
    for name, array in arrays.items():
        assert back[name].base is None, name  # not a view of a buffer: parked again as it was
        assert back[name].dtype == array.dtype and back[name].shape == array.shape
        assert back[name].flags.f_contiguous == array.flags.f_contiguous and np.array_equal(back[name], array)


def test_a_mapped_array_equals_the_parked_one_and_outlives_its_file(tmp_path):
    arrays = _arrays()
    parked = ParkedArrays(min_bytes=0, directory=str(tmp_path), **arrays)
    mapped = parked.mapped("columns")
    assert isinstance(mapped.base, np.memmap) and not mapped.flags.writeable
    parked.close()  # the file is removed: the map still reads it
    assert np.array_equal(mapped, arrays["columns"])
    with pytest.raises(RuntimeError, match="already restored"):
        parked.mapped("columns")


def test_read_gives_a_copy_of_its_own_and_keeps_the_array_parked(tmp_path):
    arrays = _arrays()
    with ParkedArrays(min_bytes=0, directory=str(tmp_path), **arrays) as parked:
        copy = parked.read("values")
        assert copy.base is None and np.array_equal(copy, arrays["values"])
        assert len(_parked_dirs(tmp_path)) == 1  # the file stays until restore or close
        assert np.array_equal(parked.restore("values")["values"], arrays["values"])
        with pytest.raises(RuntimeError, match="values: already restored"):
            parked.read("values")
    assert not _parked_dirs(tmp_path)
