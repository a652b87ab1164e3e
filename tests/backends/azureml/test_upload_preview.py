"""Before azure-ai-ml uploads a job's code (through the real MLClient, up to the HTTP boundary), amldist says what is
uploaded and warns for what should not be: a virtual environment inside code:."""

from __future__ import annotations

from amldist.submit.prepared import SubmitOptions

from tests.backends.azureml.test_backend import WS, make_project, submit


def test_the_upload_is_announced_with_its_size_and_a_venv_is_warned_about(fake_azure, tmp_path, capsys):
    project = tmp_path / "project"
    prepared = make_project(project)
    venv = project / "src" / ".venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert submit(prepared, SubmitOptions(**WS)) == 0
    err = capsys.readouterr().err
    (line,) = [l for l in err.splitlines() if l.startswith("uploading the code snapshot src/: ")]
    assert line.endswith("file(s)")
    assert "warning: .venv/ is a virtual environment" in err and "add '/.venv/'" in err
    assert err.index("warning: .venv/") < err.index(line)  # said before the upload starts
    assert fake_azure.uploaded_code()  # and the upload went on
