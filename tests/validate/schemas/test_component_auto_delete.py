"""A component's auto_delete_setting is closed: azure-ai-ml refuses unknown keys there ("Unknown field")."""

from amldist.validate import validate_text

COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: demo
version: "1"
command: echo hi
environment: azureml:env@latest
auto_delete_setting:
  condition: created_greater_than
  {key}: 30d
"""


def test_known_keys_pass():
    assert [d for d in validate_text(COMPONENT.format(key="value"), "c.yml") if d.severity == "error"] == []


def test_unknown_key_is_an_error_naming_it():
    errors = [d for d in validate_text(COMPONENT.format(key="valeu"), "c.yml") if d.severity == "error"]
    assert [(d.code, d.line) for d in errors] == [("unknown-key", 9)]
    assert "valeu" in errors[0].message and "value" in (errors[0].hint or "")
