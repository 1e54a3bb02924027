"""``fastdata convert --engine``'s refusals, made before any cluster is joined:
an engine spreads the shards itself, so a static split across launched
copies (``--num-nodes``, or ``WORLD_SIZE`` from torchrun) would convert
everything several times."""

from __future__ import annotations

import pytest

from fastdata.converters.cli import main


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_engine_with_num_nodes_is_refused(engine, tmp_path, capsys):
    code = main(["convert", str(tmp_path), str(tmp_path / "out"), "--format", "recordio", "--engine", engine,
                 "--num-nodes", "2", "--node-rank", "0"])
    assert code == 2
    assert "leave out --num-nodes" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_engine_under_a_launcher_with_world_size_is_refused(engine, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "1")
    code = main(["convert", str(tmp_path), str(tmp_path / "out"), "--format", "recordio", "--engine", engine])
    assert code == 2
    err = capsys.readouterr().err
    assert "WORLD_SIZE=4" in err and "run the command once" in err
    assert not (tmp_path / "out").exists()


def test_world_size_1_is_no_launch(tmp_path, monkeypatch, capsys):
    """WORLD_SIZE=1 (a single launched copy) is not refused: the error is the next one, the missing engine
    or here the empty source, never the launcher's."""
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setattr("fastdata.converters.workers.engines.connect", lambda engine: 2)
    code = main(["convert", str(tmp_path / "nothing"), str(tmp_path / "out"), "--format", "recordio",
                 "--engine", "spark"])
    assert code == 2
    assert "WORLD_SIZE" not in capsys.readouterr().err
