"""CLI polish: --version, plain help with defaults, 4-significant-digit output, torchrun guard."""

from __future__ import annotations

import pytest

from zerolock_theory.app.cli import build_parser, main, plain
from zerolock_theory.app.cli.train import FLAGS


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"] if argv else ["--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


def test_version(capsys) -> None:
    from zerolock_theory import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"zerolock {__version__}"


def test_every_help_is_plain_text_with_defaults(capsys) -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in commands:
        text = _help([name], capsys)
        assert "``" not in text and "::\n" not in text and ":mod:" not in text, name
    train = _help(["train"], capsys)
    assert "[run.steps, default: 200]" in train and "[optim.lr, default: 0.001]" in train
    train_parser = commands["train"]
    helps = {a.dest: a.help for a in train_parser._actions}
    assert all(", default: " in helps[flag] for flag in FLAGS)
    assert plain("``x`` and :mod:`y` Examples::") == "x and y Examples:"


def test_train_refuses_under_torchrun(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(["train", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "zerolock pipeline" in err and "WORLD_SIZE" in err
    assert not (tmp_path / "r").exists()
