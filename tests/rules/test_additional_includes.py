"""additional_includes read as azure-ai-ml reads them: from the component's folder, each under its
own name in the snapshot root; what only Azure can do, or what Azure refuses, is one line."""

from __future__ import annotations

import pytest

from amldist.errors import UserError
from amldist.rules.additional_includes import Include, resolve


def test_entries_resolve_from_the_component_folder_each_under_its_own_name(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "comp").mkdir()
    (tmp_path / "comp" / "cfg.txt").write_text("x")
    found = resolve(["../lib", "./cfg.txt", "../shared.zip"], str(tmp_path / "comp"), None)
    assert found == (Include(str(tmp_path / "lib"), "lib"), Include(str(tmp_path / "comp" / "cfg.txt"), "cfg.txt"),
                     Include(str(tmp_path / "shared"), "shared.zip", zipped=True))


@pytest.mark.parametrize("entries, message", [
    ([{"type": "artifact", "feed": "f", "name": "n", "version": "1"}], "Azure DevOps artifact"),
    (["../nope"], "does not exist"),
    (["../lib"], "already has 'lib'"),
    ("../lib", "is not a list"),
])
def test_what_cannot_be_included_here_is_one_line_naming_the_entry(tmp_path, entries, message):
    (tmp_path / "lib").mkdir()
    (tmp_path / "comp" / "src" / "lib").mkdir(parents=True)
    with pytest.raises(UserError, match=message) as info:
        resolve(entries, str(tmp_path / "comp"), str(tmp_path / "comp" / "src"), "comp.yml")
    assert "\n" not in str(info.value) and "comp.yml" in str(info.value)
