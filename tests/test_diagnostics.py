from amldist.diagnostics import ERROR, NOTE, WARNING, Diagnostic, errors_in, has_errors


def _d(severity, code="c"):
    return Diagnostic("f.yml", 3, 5, severity, code, "msg", hint="do x", field="a.b")


def test_text_line_is_file_line_col_severity_code_message_hint():
    assert _d(ERROR, "unknown-key").to_text() == "f.yml:3:5: error unknown-key: msg (hint: do x)"


def test_errors_in_keeps_only_errors_in_order():
    found = [_d(WARNING), _d(ERROR, "one"), _d(NOTE), _d(ERROR, "two")]
    assert [d.code for d in errors_in(found)] == ["one", "two"]


def test_strict_makes_warnings_count():
    found = [_d(WARNING), _d(NOTE)]
    assert not has_errors(found) and has_errors(found, strict=True)
    assert not has_errors([_d(NOTE)], strict=True)
