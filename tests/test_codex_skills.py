"""Where the pinned Codex finds skills, and how a run reports them (docs/vendor-facts.md): the pure
roots, the shell's search over real directories, and the attestation."""

from __future__ import annotations

from pathlib import Path

from metaharness.pure.codex.skills import skill_ambient, skill_roots, skills_h2_why
from metaharness.shell.codex.run import found_skills


def test_roots_are_home_then_the_cwd_up_to_the_repository_root() -> None:
    assert skill_roots("/h", "/r/a/b", "/r") == ("/h/.agents/skills", "/r/a/b/.agents/skills",
                                                   "/r/a/.agents/skills", "/r/.agents/skills")  # fmt: skip
    assert skill_roots("/h", "/r/a/b", None) == ("/h/.agents/skills", "/r/a/b/.agents/skills")
    assert skill_roots(None, None, None) == ()
    assert skill_roots("/h", None, None) == ("/h/.agents/skills",)


def test_a_confined_run_reads_only_the_working_directorys_own_root() -> None:
    assert skill_roots("/h", "/r/a/b", "/r", confined=True) == ("/r/a/b/.agents/skills",)
    assert skill_roots("/h", None, None, confined=True) == ()


def test_found_skills_are_reported_and_make_h2_unavailable(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    cwd = repo / "sub"
    for skill in (home / ".agents/skills/h", cwd / ".agents/skills/c", repo / ".agents/skills/r"):
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: x\n---\n")
    (home / ".agents/skills/no-file").mkdir()
    assert found_skills(str(home), str(cwd)) == (str(home / ".agents/skills/h/SKILL.md"),
                                                 str(cwd / ".agents/skills/c/SKILL.md"))  # fmt: skip
    (repo / ".git").mkdir()
    found = found_skills(str(home), str(cwd))
    assert found[-1] == str(repo / ".agents/skills/r/SKILL.md") and len(found) == 3
    assert skill_ambient(found[:1]) == (f"codex skill loaded into the model's instructions: {found[0]}",)
    why = skills_h2_why(found)
    assert why is not None and all(path in why for path in found)
    assert skills_h2_why(()) is None
    assert found_skills(None, None) == ()
    assert found_skills(str(home), str(cwd), confined=True) == (str(cwd / ".agents/skills/c/SKILL.md"),)
